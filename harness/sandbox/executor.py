"""The executor behind ``subprocess``, ``firejail`` and ``bubblewrap``: a pool of zygotes
(``harness.sandbox.zygote``), each job a forked, confined child. The three differ only in the
command that wraps each zygote (``ZygoteExecutor.prefix()``); a third-party executor that
puts the zygote inside its own container or launcher subclasses ``ZygoteExecutor`` the same
way (``codea1.api.ZygoteExecutor``).

Options (``--executor-opt KEY=VALUE``): ``preload`` (comma-separated modules imported once
per zygote, before the ground its in-process tests stand on is recorded), ``imports``
(comma-separated libraries imported once per zygote after it, held as a program's own import
would hold them: added to those the run's benchmark names, ``Benchmark.imports``),
``file_mb`` (largest file the program may write), ``network`` ("isolate" or "allow"),
``seccomp`` (true/false), ``landlock`` (true/false: where the kernel has Landlock, the child
may read only the interpreter, what it can import, the data its installation keeps
under share/, the system's libraries and data (``confine.read_paths``) and its own /proc
entries (``confine.allow_own_proc``) besides its own temporary directory, where alone it may write;
it cannot signal or ptrace anything outside its sandbox, and, with ``network=isolate``,
cannot bind or connect TCP), ``read`` (comma-separated further paths programs may read),
``run_as`` (where the zygote runs as root, the user its children switch to: "UID:GID",
"UID" or "USER[:GROUP]", default 65534:65534, nobody; each child then has no supplementary
group, no capability, an empty bounding set and no_new_privs, so that it cannot chmod,
chown or touch files outside its job nor connect to root's UNIX sockets. "root" keeps
children root, unsafe: only where the interpreter cannot be made readable for another user).
Where the zygote is not root its children keep its user. With ``seccomp`` on, socket(AF_UNIX)
is refused as well (socketpair stays). The zygote's ready report, in environment.json, says
what holds: ``privileges`` (the children's uid, gid, capability sets, no_new_privs, how the
user was switched or why not) and ``unix_sockets``.

What a program can read is stated in ``info()["reads"]`` (the run's environment.json): the
paths, what enforces them, and one boolean per guarantee (``READ_GUARANTEES``).
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Sequence

from codea1.harness.records import ExecJob, RawResult
from codea1.harness.sandbox import confine, privileges
from codea1.harness.sandbox.pool import DEFAULT_PRELOAD, ZygoteDied, ZygotePool, package_roots
from codea1.harness.sandbox.protocol import FRAMEWORKS
from codea1.harness.verdicts.execution import (
    Executor,
    ExecutorUnavailable,
    PayloadEncoder,
    RecordStream,
    parse_records,
    sandbox_failure,
)

# What a program must not be able to read, each a key of info()["reads"]["guarantees"].
# other_jobs_memory: no earlier job's program, tests or results in the child's memory (it is
# forked by the zygote's forker, which never holds a job; Landlock keeps it from /proc/*/mem).
READ_GUARANTEES = ("benchmark_data", "run_directory", "home", "checkout", "other_jobs_files", "other_jobs_memory",
                   "other_processes")
# What of /proc a program reads under Landlock (confine.SYSTEM_READ, confine.allow_own_proc).
PROC_READS = ("its own process's entries, read-only (/proc/self: maps, status, stat, statm, task/, fd/, ...), "
              "and the machine's: cpuinfo, meminfo, stat, uptime, loadavg; no other process's")
# Those a wrapper's limited view gives without Landlock: it still holds codea1's code folders,
# the zygote's own /proc entry and its earlier jobs' directories should one not be removed.
OUT_OF_VIEW = ("benchmark_data", "run_directory", "home")


@dataclass
class SubprocessOptions:
    preload: str = ",".join(DEFAULT_PRELOAD)
    imports: str = ""
    file_mb: int = 64
    network: str = "isolate"
    seccomp: bool = True
    landlock: bool = True
    read: str = ""
    run_as: str = "65534:65534"

    def __post_init__(self):
        if self.network not in ("isolate", "allow"):
            raise ValueError(f"network must be 'isolate' or 'allow', not {self.network!r}")
        privileges.parse_run_as(self.run_as)  # ValueError for a user or group that does not exist


class ZygoteExecutor(Executor):
    """Shared by executors that confine a whole zygote: subclasses supply ``prefix()``."""

    Options = SubprocessOptions
    streams_results = True

    def __init__(self, options=None, workers=None):
        super().__init__(options or self.Options(), workers)
        opts = self.options
        run_as = privileges.parse_run_as(opts.run_as)  # resolved here: the zygote's view may lack the names
        args = ["--file-mb", str(opts.file_mb), "--run-as", "root" if run_as is None else f"{run_as[0]}:{run_as[1]}"]
        if opts.network == "allow":
            args.append("--no-network-isolation")
        if not opts.seccomp:
            args.append("--no-seccomp")
        if not opts.landlock:
            args.append("--no-landlock")
        args += [f"--forbid={p}" for p in forbidden_paths()]
        args += [f"--read={p}" for p in self.extra_reads()]
        self.wrapper = self.prefix()
        self._pool_args = dict(prefix=self.wrapper, preload=[m for m in opts.preload.split(",") if m], zygote_args=args,
                               imports=[m for m in opts.imports.split(",") if m])
        self.frameworks = FRAMEWORKS  # what the default pool's zygotes prepare (warm_for)
        self.pool = ZygotePool(self.workers, frameworks=self.frameworks, **self._pool_args)
        # (hash seed, frameworks) -> pool, started when a job asks for it and kept until close
        self._other_pools: dict[tuple[int, tuple[str, ...]], ZygotePool] = {}

    def warm_for(self, frameworks: Sequence[str] | None = None, imports: Sequence[str] = ()) -> None:
        """Zygotes made for a run's jobs (the hint ``Run`` passes from its benchmark): the
        frameworks they prepare (None: all; unittest always) and the libraries they import,
        added to the ``imports`` option. Only before the zygotes start; a job whose scripts
        need a framework the default zygotes lack runs on zygotes that have it (``run``)."""
        if self.pool._started or self.pool._background is not None:
            return
        self.frameworks = FRAMEWORKS if frameworks is None else \
            tuple(f for f in FRAMEWORKS if f == "unittest" or f in frameworks)
        self._pool_args["imports"] = list(dict.fromkeys([*self._pool_args["imports"], *imports]))
        self.pool = ZygotePool(self.workers, frameworks=self.frameworks, **self._pool_args)

    def frameworks_for(self, job: ExecJob) -> tuple[str, ...]:
        """The frameworks of the zygotes that run ``job``: the default pool's, with what its
        scripts need besides (a unittest script: unittest.mock, which BigCodeBench's use;
        a pytest module: pytest)."""
        needs = {"pytest" if t.framework == "pytest" else "unittest.mock" for t in job.tests if t.kind == "script"}
        if needs <= set(self.frameworks):
            return self.frameworks
        return tuple(f for f in FRAMEWORKS if f in self.frameworks or f in needs)

    def pool_for(self, hash_seed: int, frameworks: tuple[str, ...] | None = None) -> ZygotePool:
        """The pool whose zygotes run with PYTHONHASHSEED ``hash_seed`` and prepare
        ``frameworks`` (None: the default pool's): the default pool for 0 and its frameworks,
        else one started on first use (validation's second run, a script the default
        zygotes have no framework for) and kept until close."""
        frameworks = self.frameworks if frameworks is None else frameworks
        if hash_seed == self.pool.hash_seed and frameworks == self.frameworks:
            return self.pool
        key = (hash_seed, frameworks)
        if key not in self._other_pools:
            self._other_pools[key] = ZygotePool(self.workers, hash_seed=hash_seed, frameworks=frameworks,
                                                **self._pool_args)
        return self._other_pools[key]

    def prefix(self) -> list[str]:
        """The command that wraps each zygote (e.g. a sandbox tool); empty runs it directly."""
        return []

    # True where prefix() shows the zygote only zygote_paths() (and a private /tmp): then
    # even without Landlock a program cannot read data, runs or homes (OUT_OF_VIEW).
    view_limited = False

    # What to try when no zygote starts, for ExecutorUnavailable's line: a wrapper's own
    # requirements (without one, the zygote's last line says it all).
    start_advice = ""

    def extra_reads(self) -> list[str]:
        return [os.path.realpath(p) for p in self.options.read.split(",") if p]

    def start_zygotes(self, pool: ZygotePool) -> dict:
        """Start ``pool`` (its ready report); a zygote that cannot start, in or out of the
        wrapper, ends the run with one line that says why and what to try, not a traceback
        (the zygote's whole output stays on the exception's cause, shown by --debug)."""
        try:
            return pool.start()
        except (ZygoteDied, OSError) as exc:
            lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
            why = lines[-1].rstrip(".") if lines else type(exc).__name__
            advice = f"; {self.start_advice}" if self.start_advice else ""
            raise ExecutorUnavailable(f"executor {self.name!r} could not start its zygote: {why}{advice} "
                                      "(--debug shows the zygote's whole output)") from exc

    def info(self) -> dict:
        ready = self.start_zygotes(self.pool)
        return {"executor": self.name, "workers": self.workers, "wrapper": self.wrapper, **ready,
                "reads": self.read_policy(ready)}

    def read_policy(self, ready: dict) -> dict:
        """What a program can read, from the zygote's own report (``ready``): with Landlock
        only ``paths`` and its job's directory; else what the zygote sees."""
        landlocked = bool(ready.get("readable"))
        enforced = (["landlock"] if landlocked else []) + ([self.name] if self.view_limited else [])
        return {
            "paths": ready.get("readable") or ("the zygote's view: " + ", ".join(zygote_paths(self.extra_reads()))
                                               if self.view_limited else "everything the user can read"),
            "own_job_directory": True,
            "enforced_by": enforced,
            "proc": PROC_READS if landlocked else
                    "the zygote's and its children's entries" if self.view_limited else "every process's entries",
            "guarantees": {name: landlocked or (self.view_limited and name in OUT_OF_VIEW) for name in READ_GUARANTEES},
        }

    def start_in_background(self) -> None:
        self.pool.start_in_background()

    def run(self, jobs: Sequence[ExecJob], early_stop=None) -> Iterator[RawResult]:
        by_pool: dict[tuple[int, tuple[str, ...]], list[ExecJob]] = {}
        for job in jobs:
            by_pool.setdefault((job.hash_seed, self.frameworks_for(job)), []).append(job)
        for (seed, frameworks), pool_jobs in by_pool.items():  # one pool at a time: each has all the workers
            pool = self.pool_for(seed, frameworks)
            self.start_zygotes(pool)
            yield from self._run_on(pool, pool_jobs, early_stop)

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
                args = (header["exit"], header.get("stdout", ""), header.get("stderr", ""), header.get("wall", 0.0),
                        header.get("starved", 0.0))
                yield stream.finish(result, *args) if stream else parse_records(job, result, *args)

    def close(self) -> None:
        self.pool.close()
        for pool in self._other_pools.values():
            pool.close()
        self._other_pools.clear()


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


def forbidden_paths() -> list[str]:
    """Paths no program may read, nor any path that holds them: the project checkout (for an
    editable install, where codea1's folders are not in a site-packages directory), this
    process's working directory (where runs are written by default), the home directory
    (caches: ~/.cache/codea1) and the temporary directory (other zygotes' jobs).

    Only the outermost package roots can be a checkout: an installed wheel's codea1.harness
    lies in site-packages/codea1, which is codea1's own folder (taken for a checkout, it took
    site-packages and the interpreter's prefix, which hold it, out of every sandbox's view)."""
    roots = package_roots()
    outermost = [p for p in roots if not under(p, [r for r in roots if r != p])]
    checkouts = [p for p in outermost if Path(p).name not in ("site-packages", "dist-packages")]
    return sorted({*checkouts, os.getcwd(), os.path.expanduser("~"), tempfile.gettempdir()})


def code_folders() -> list[str]:
    """The folders the zygote imports codea1 from: the packages ``codea1`` and
    ``codea1.harness`` (one folder each in a checkout; both inside site-packages for a wheel)."""
    import codea1
    import codea1.harness

    return sorted({str(Path(codea1.__file__).resolve().parent), str(Path(codea1.harness.__file__).resolve().parent)})


def zygote_paths(extra: list[str] = ()) -> list[str]:
    """Paths a wrapped zygote must see (read-only): what its children may read
    (``confine.read_paths``), the Python installation and virtual environment it starts
    from, codea1's code folders, and sys.path entries that hold no forbidden path. Not the
    checkout, the working directory or the home directory themselves."""
    forbidden = forbidden_paths()
    paths = {*confine.read_paths(forbidden, extra), *code_folders(),
             sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    paths.update(p for p in sys.path[1:] if p and os.path.exists(p))  # [0]: the script's dir, as in the pool
    real = {os.path.realpath(p) for p in paths}
    real = {p for p in real if not any(under(f, [p]) for f in forbidden)}
    ordered = sorted(real)
    # Drop paths already inside another one: one bind each is enough.
    return [p for i, p in enumerate(ordered) if not under(p, ordered[:i])]
