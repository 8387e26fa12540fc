"""Executor ``firejail``: the subprocess executor's zygotes, each inside a firejail sandbox.

On top of everything the child of a zygote gets (rlimits, seccomp, Landlock, private tmp
dir; see ``codea1.harness.sandbox.executor``), the whole zygote runs with no profile but
explicit rules: no network (``--net=none``), the whole filesystem read-only, and of it only
what the zygote needs (``zygote_paths``: the interpreter and its libraries, the system's
libraries and data, codea1's code folders): every other top-level directory is blacklisted
or, where a needed path lies in it, whitelisted down to that path; /etc holds only the files
of ``confine.ETC_READ``; private /dev and /tmp; all capabilities dropped, no new privileges,
and a cap on processes (``nproc``).

Options: those of ``subprocess`` plus ``nproc`` (RLIMIT_NPROC of the sandbox). Needs the
``firejail`` binary (Debian: firejail); without it, selecting this executor fails.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from codea1.harness.hookspecs import hookimpl
from codea1.harness.sandbox.confine import ETC_READ
from codea1.harness.sandbox.executor import (
    SubprocessOptions,
    ZygoteExecutor,
    find_binary,
    under,
    zygote_paths,
)

# Top-level directories seen whole: the system's own (/etc is cut down by --private-etc,
# /dev and /tmp are private; firejail cannot whitelist in /proc and /sys, and fails to start
# with /run blacklisted: its own state lives there). Landlock keeps children out of them.
SYSTEM_DIRS = ["/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/dev", "/proc", "/sys",
               "/tmp", "/run"]


@dataclass
class FirejailOptions(SubprocessOptions):
    nproc: int = 512


class FirejailExecutor(ZygoteExecutor):
    name = "firejail"
    description = "zygotes inside firejail: no network, only the runtime's paths (read-only), private /tmp and /dev"
    Options = FirejailOptions
    view_limited = True

    def prefix(self) -> list[str]:
        binary = find_binary(self.name, "firejail", "firejail")
        argv = [binary, "--quiet", "--noprofile", "--read-only=/", "--private-dev", "--private-tmp", "--caps.drop=all",
                "--nonewprivs", "--nogroups", f"--rlimit-nproc={self.options.nproc}", "--deterministic-exit-code"]
        if self.options.network == "isolate":
            argv.append("--net=none")
        needed = [p for p in zygote_paths(self.extra_reads()) if not under(p, SYSTEM_DIRS)]
        for entry in sorted(os.listdir("/")):
            top = "/" + entry
            if top in SYSTEM_DIRS or os.path.islink(top) or top in needed:
                continue
            inside = [p for p in needed if under(p, [top])]
            if not inside:
                argv.append(f"--blacklist={top}")
            for path in inside:  # a tmpfs on top, the path bound back
                argv += [f"--whitelist={path}", f"--read-only={path}"]
        etc = [name for name in ETC_READ if os.path.lexists(os.path.join("/etc", name))]
        argv.append("--private-etc=" + ",".join(etc))
        # The zygote's control pipe is passed by number: firejail must not close it.
        argv += ["--keep-fd=all", "--deterministic-shutdown"]
        return argv


@hookimpl
def codea1_register_executors(registry):
    registry.add(FirejailExecutor)
