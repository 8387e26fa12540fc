"""Executor ``subprocess`` (the default): confined child processes forked from warm zygotes.

Each worker is a zygote (harness.sandbox.zygote) started once; every job runs in a fresh
forked child with rlimits (address space, CPU time, file size), a seccomp filter refusing
new processes and exec, a private temporary working directory, a scrubbed environment,
captured and capped stdout/stderr, and, where the OS allows, no network (a network
namespace of its own). The zygote kills the child at the job's wall-clock deadline.

Options (``--executor-opt KEY=VALUE``): ``preload`` (comma-separated modules imported once
per zygote), ``file_mb`` (largest file the program may write), ``network`` ("isolate" or
"allow"), ``seccomp`` (true/false).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, Sequence

from harness.execution import Executor, PayloadEncoder, RecordStream, parse_records, sandbox_failure
from harness.hookspecs import hookimpl
from harness.records import ExecJob, RawResult
from harness.sandbox.pool import DEFAULT_PRELOAD, ZygotePool


@dataclass
class SubprocessOptions:
    preload: str = ",".join(DEFAULT_PRELOAD)
    file_mb: int = 64
    network: str = "isolate"
    seccomp: bool = True

    def __post_init__(self):
        if self.network not in ("isolate", "allow"):
            raise ValueError(f"network must be 'isolate' or 'allow', not {self.network!r}")


class ZygoteExecutor(Executor):
    """Shared by executors that confine a whole zygote: subclasses supply ``prefix()``."""

    Options = SubprocessOptions

    def __init__(self, options=None, workers=None):
        super().__init__(options or self.Options(), workers)
        opts = self.options
        args = ["--file-mb", str(opts.file_mb)]
        if opts.network == "allow":
            args.append("--no-network-isolation")
        if not opts.seccomp:
            args.append("--no-seccomp")
        self.pool = ZygotePool(self.workers, prefix=self.prefix(),
                               preload=[m for m in opts.preload.split(",") if m], zygote_args=args)

    def prefix(self) -> list[str]:
        return []

    def info(self) -> dict:
        return {"executor": self.name, "workers": self.workers, **self.pool.start()}

    def run(self, jobs: Sequence[ExecJob], early_stop=None) -> Iterator[RawResult]:
        encode = PayloadEncoder()
        for job, (header, result) in self.pool.map_unordered(
                jobs, encode, lambda job, exc: ({"sandbox_error": f"{type(exc).__name__}: {exc}"}, b""),
                job_id=lambda job: job.job_id,
                make_on_chunk=lambda job: RecordStream(job, early_stop) if early_stop else None):
            if "sandbox_error" in header:
                yield sandbox_failure(job, header["sandbox_error"])
            elif header.get("exit", "").startswith("sandbox:"):
                yield sandbox_failure(job, header["exit"])
            else:
                yield parse_records(job, result, header["exit"], header.get("stdout", ""),
                                    header.get("stderr", ""), header.get("wall", 0.0))

    def close(self) -> None:
        self.pool.close()


class SubprocessExecutor(ZygoteExecutor):
    name = "subprocess"
    description = "forked children of warm zygotes: rlimits, seccomp (no fork/exec), private tmp dir, netns"


@hookimpl
def codea1_register_executors(registry):
    registry.add(SubprocessExecutor)
