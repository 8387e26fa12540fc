"""The executor behind ``subprocess``, ``firejail`` and ``bubblewrap``: a pool of zygotes
(``harness.sandbox.zygote``), each job a forked, confined child. The three differ only in the
command that wraps each zygote (``ZygoteExecutor.prefix()``); a third-party executor that
puts the zygote inside its own container or launcher subclasses ``ZygoteExecutor`` the same
way (``codea1.api.ZygoteExecutor``).

Options (``--executor-opt KEY=VALUE``): ``preload`` (comma-separated modules imported once
per zygote), ``file_mb`` (largest file the program may write), ``network`` ("isolate" or
"allow"), ``seccomp`` (true/false), ``landlock`` (true/false: where the kernel has Landlock,
the child may write only beneath its own temporary directory, cannot signal or ptrace
anything outside its sandbox, and, with ``network=isolate``, cannot bind or connect TCP).
"""

from __future__ import annotations

import os
import shutil
import sys
from dataclasses import dataclass
from typing import Iterator, Sequence

from codea1.harness.execution import (
    Executor,
    ExecutorUnavailable,
    PayloadEncoder,
    RecordStream,
    parse_records,
    sandbox_failure,
)
from codea1.harness.records import ExecJob, RawResult
from codea1.harness.sandbox.pool import DEFAULT_PRELOAD, ZygotePool, package_roots


@dataclass
class SubprocessOptions:
    preload: str = ",".join(DEFAULT_PRELOAD)
    file_mb: int = 64
    network: str = "isolate"
    seccomp: bool = True
    landlock: bool = True

    def __post_init__(self):
        if self.network not in ("isolate", "allow"):
            raise ValueError(f"network must be 'isolate' or 'allow', not {self.network!r}")


class ZygoteExecutor(Executor):
    """Shared by executors that confine a whole zygote: subclasses supply ``prefix()``."""

    Options = SubprocessOptions
    streams_results = True

    def __init__(self, options=None, workers=None):
        super().__init__(options or self.Options(), workers)
        opts = self.options
        args = ["--file-mb", str(opts.file_mb)]
        if opts.network == "allow":
            args.append("--no-network-isolation")
        if not opts.seccomp:
            args.append("--no-seccomp")
        if not opts.landlock:
            args.append("--no-landlock")
        self.wrapper = self.prefix()
        self._pool_args = dict(prefix=self.wrapper, preload=[m for m in opts.preload.split(",") if m], zygote_args=args)
        self.pool = ZygotePool(self.workers, **self._pool_args)
        self._seeded_pools: dict[int, ZygotePool] = {}  # hash seed -> pool, started when a job asks for it

    def pool_for(self, hash_seed: int) -> ZygotePool:
        """The pool whose zygotes run with PYTHONHASHSEED ``hash_seed``: the default pool for
        0, else one started on first use (validation's second run) and kept until close."""
        if hash_seed == self.pool.hash_seed:
            return self.pool
        if hash_seed not in self._seeded_pools:
            self._seeded_pools[hash_seed] = ZygotePool(self.workers, hash_seed=hash_seed, **self._pool_args)
        return self._seeded_pools[hash_seed]

    def prefix(self) -> list[str]:
        """The command that wraps each zygote (e.g. a sandbox tool); empty runs it directly."""
        return []

    def info(self) -> dict:
        return {"executor": self.name, "workers": self.workers, "wrapper": self.wrapper, **self.pool.start()}

    def start_in_background(self) -> None:
        self.pool.start_in_background()

    def run(self, jobs: Sequence[ExecJob], early_stop=None) -> Iterator[RawResult]:
        by_seed: dict[int, list[ExecJob]] = {}
        for job in jobs:
            by_seed.setdefault(job.hash_seed, []).append(job)
        for seed, seed_jobs in by_seed.items():  # one pool at a time: each has all the workers
            yield from self._run_on(self.pool_for(seed), seed_jobs, early_stop)

    def _run_on(self, pool: ZygotePool, jobs: Sequence[ExecJob], early_stop=None) -> Iterator[RawResult]:
        encode = PayloadEncoder()
        streams: dict[str, RecordStream] = {}  # with early_stop: records parsed as they stream in

        def stream_of(job: ExecJob) -> RecordStream | None:
            # A new stream per attempt: a job retried after its worker died starts over.
            if not early_stop:
                return None
            streams[job.job_id] = RecordStream(job, early_stop)
            return streams[job.job_id]

        for job, (header, result) in pool.map_unordered(
                jobs, encode, lambda job, exc: ({"sandbox_error": f"{type(exc).__name__}: {exc}"}, b""),
                job_id=lambda job: job.job_id, make_on_chunk=stream_of, group=lambda job: id(job.tests)):
            stream = streams.pop(job.job_id, None)
            if "sandbox_error" in header:
                yield sandbox_failure(job, header["sandbox_error"])
            elif header.get("exit", "").startswith("sandbox:"):
                yield sandbox_failure(job, header["exit"])
            else:
                args = (header["exit"], header.get("stdout", ""), header.get("stderr", ""), header.get("wall", 0.0))
                yield stream.finish(result, *args) if stream else parse_records(job, result, *args)

    def close(self) -> None:
        self.pool.close()
        for pool in self._seeded_pools.values():
            pool.close()
        self._seeded_pools.clear()


def find_binary(executor: str, binary: str, package: str) -> str:
    """The path of a sandbox tool; selecting its executor without it is an error, never a
    silent fallback to a weaker one."""
    path = shutil.which(binary)
    if path is None:
        raise ExecutorUnavailable(f"executor {executor!r} needs the {binary!r} binary, which is not on PATH "
                                  f"(Debian/Ubuntu: apt-get install {package})")
    return path


def under(path: str, roots: list[str]) -> bool:
    """True when ``path`` is one of ``roots`` or lies beneath one."""
    return any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots)


def runtime_paths() -> list[str]:
    """Paths the zygote's interpreter must read: the Python installation, the virtual
    environment and every existing sys.path entry (the project itself among them)."""
    paths = {sys.prefix, sys.base_prefix, sys.exec_prefix, os.path.dirname(os.path.realpath(sys.executable)),
             *package_roots()}
    paths.update(p for p in sys.path[1:] if p and os.path.exists(p))  # [0]: the script's dir, as in the pool
    paths = sorted(os.path.realpath(p) for p in paths)
    # Drop paths already inside another one: one bind each is enough.
    return [p for i, p in enumerate(paths) if not under(p, paths[:i])]
