"""Executor ``subprocess`` (the default): confined child processes forked from warm zygotes.

Each worker is a zygote (harness.sandbox.zygote) started once; every job runs in a fresh
forked child with rlimits (address space, CPU time, file size), a seccomp filter refusing
new processes and exec, a private temporary working directory, a scrubbed environment,
captured and capped stdout/stderr, where the OS allows no network (a network namespace of
its own) and a Landlock domain (reads only of the interpreter, its libraries and the data
under its prefixes' share/, the system's and its temporary directory, writes only beneath
that directory, nothing of /proc but its own process's entries and the machine's cpuinfo,
meminfo, stat, uptime and loadavg, no signals to processes outside it). The zygote kills
the child at the job's wall-clock deadline. When seccomp is off (programs that must start processes), the
zygote is their subreaper and kills whatever they leave behind after each job.

Options: see ``codea1.harness.sandbox.executor`` (``preload``, ``file_mb``, ``network``,
``seccomp``, ``landlock``, ``read``).
"""

from __future__ import annotations

from codea1.harness.hookspecs import hookimpl
from codea1.harness.sandbox.executor import ZygoteExecutor


class SubprocessExecutor(ZygoteExecutor):
    name = "subprocess"
    description = "forked children of warm zygotes: rlimits, seccomp (no fork/exec), private tmp dir, netns"


@hookimpl
def codea1_register_executors(registry):
    registry.add(SubprocessExecutor)
