"""Benchmark: what one sandboxed job costs beyond the program's own work.

Runs N one-test jobs of a trivial program on one zygote (the subprocess executor's sandbox:
fork, confinement, the child's harness, supervision, the result) and reads, from /proc/PID/stat
before and after, the CPU and page faults of the zygote, of its forker (which forks each
child) and of the children (the forker reaps them, so they count in its children's fields),
and this process's own (the executor and the verdicts). The anchor, measured in the same run:
a bare fork of this process, the child exiting at once, reaped by waitpid. The ratio says how
far a sandboxed job is from the cost of the fork that isolates it.

    python scripts/bench_job_overhead.py [--jobs 300] [--tests 1] [--frameworks ...] [--imports ...]

``--frameworks`` and ``--imports`` make the zygote as a benchmark's run would
(``Executor.warm_for``): ``--frameworks ''`` as for HumanEval+ (call tests only),
``--imports numpy,pandas`` a zygote that imported BigCodeBench's libraries.

Page faults matter here: a forked child shares the zygote's pages until either writes one,
and the kernel then copies it (a few microseconds each on a VM). The figures in the closing
notes were taken with this script.
"""

from __future__ import annotations

import argparse
import os
import resource
import time

from codea1.harness.records import ExecJob, TestCase
from codea1.harness.sandbox.executor import ZygoteExecutor
from codea1.harness.verdicts.execution import run_jobs


def zygote_counters(pid: int) -> list[float]:
    """[own faults, children's faults, own CPU s, children's CPU s] of a process."""
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    return [int(fields[7]), int(fields[8]), (int(fields[11]) + int(fields[12])) / tick,
            (int(fields[13]) + int(fields[14])) / tick]


def bare_fork(n: int) -> tuple[float, float]:
    """(CPU ms, page faults) per fork of this process whose child exits at once."""
    before_self, before_kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    for _ in range(n):
        pid = os.fork()
        if pid == 0:
            os._exit(0)
        os.waitpid(pid, 0)
    after_self, after_kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = sum(a.ru_utime + a.ru_stime - b.ru_utime - b.ru_stime
              for a, b in ((after_self, before_self), (after_kids, before_kids)))
    faults = (after_self.ru_minflt - before_self.ru_minflt) + (after_kids.ru_minflt - before_kids.ru_minflt)
    return cpu / n * 1e3, faults / n


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", type=int, default=300)
    parser.add_argument("--tests", type=int, default=1, help="trivial tests per job")
    parser.add_argument("--frameworks", default=None,
                        help="comma-separated frameworks the zygote prepares (default: all; '' for none)")
    parser.add_argument("--imports", default="", help="comma-separated libraries the zygote imports "
                        "(a benchmark's, e.g. BigCodeBench's: pandas,matplotlib.pyplot)")
    args = parser.parse_args()
    tests = [TestCase(id=f"t{i}", args=[i, [i, i + 1]], has_expected=False) for i in range(args.tests)]

    def jobs(count: int, offset: int) -> list[ExecJob]:
        return [ExecJob(job_id=str(offset + i), code="def f(x, y):\n    return x + 1\n", tests=tests, entry_point="f",
                        time_limits=[1.0] * len(tests), batch_timeout=60) for i in range(count)]

    with ZygoteExecutor(workers=1) as executor:
        executor.warm_for(None if args.frameworks is None else [f for f in args.frameworks.split(",") if f],
                          [m for m in args.imports.split(",") if m])
        executor.pool.start()
        zygote = executor.pool._all[0]
        # The children are the forker's (the zygote's own child, alive until the end), so
        # their CPU and faults count in the forker's children's fields, not the zygote's.
        pids = zygote.proc.pid, zygote.info["forker_pid"]
        run_jobs(executor, jobs(20, 0))  # warm: the zygote's own code paths have run once
        before, parent_before = [zygote_counters(p) for p in pids], resource.getrusage(resource.RUSAGE_SELF)
        start = time.perf_counter()
        run_jobs(executor, jobs(args.jobs, 20))
        wall = time.perf_counter() - start
        after, parent_after = [zygote_counters(p) for p in pids], resource.getrusage(resource.RUSAGE_SELF)
    (own_faults, _, own_cpu, _), (forker_faults, child_faults, forker_cpu, child_cpu) = (
        [(a - b) / args.jobs for a, b in zip(x, y)] for x, y in zip(after, before))
    parent_cpu = (parent_after.ru_utime + parent_after.ru_stime - parent_before.ru_utime - parent_before.ru_stime) / args.jobs
    fork_ms, fork_faults = bare_fork(args.jobs)
    job_ms = (own_cpu + forker_cpu + child_cpu) * 1e3
    print(f"{args.jobs} jobs x {args.tests} test(s), one zygote: {wall / args.jobs * 1e3:.2f} ms wall a job")
    print(f"  parent   {parent_cpu * 1e3:6.2f} ms CPU (this process: the executor, the verdicts)")
    print(f"  zygote   {own_cpu * 1e3:6.2f} ms CPU  {own_faults:6.0f} page faults a job")
    print(f"  forker   {forker_cpu * 1e3:6.2f} ms CPU  {forker_faults:6.0f} page faults a job")
    print(f"  child    {child_cpu * 1e3:6.2f} ms CPU  {child_faults:6.0f} page faults a job")
    print(f"worker time (zygote + forker + child): {job_ms:.2f} ms CPU a job")
    print(f"anchor: bare fork + exit of this process {fork_ms:.2f} ms CPU, {fork_faults:.0f} page faults")
    print(f"sandboxed job / bare fork: {job_ms / fork_ms:.1f}x CPU" if fork_ms > 0 else "bare fork: below the clock tick")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
