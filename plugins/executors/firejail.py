"""Executor ``firejail``: the subprocess executor's zygotes, each inside a firejail sandbox.

On top of everything the child of a zygote gets (rlimits, seccomp, Landlock, private tmp
dir; see ``codea1.harness.sandbox.executor``), the whole zygote runs with no profile but
explicit rules: no network (``--net=none``), the whole filesystem read-only, and of it only
what the zygote needs (``zygote_paths``: the interpreter and its libraries, the system's
libraries and data, codea1's code folders): every other top-level directory is blacklisted
or, where a needed path lies in it, whitelisted down to that path; /etc holds only the files
of ``confine.ETC_READ``; private /dev and /tmp (the paths it needs in /tmp or /var/tmp, such
as a virtual environment made there, whitelisted in them); all capabilities dropped (run by
root: all but what the zygote needs to switch its children to ``run_as``,
``privileges.ZYGOTE_CAPABILITIES``; they keep none), no new privileges, and a cap on processes
(``nproc``).

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
from codea1.harness.sandbox.privileges import ZYGOTE_CAPABILITIES, switches_user

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
    start_advice = ("check that firejail can sandbox here (it is setuid root; a container may refuse its mounts "
                    "or namespaces), or choose another executor (--executor subprocess)")

    def prefix(self) -> list[str]:
        binary = find_binary(self.name, "firejail", "firejail")
        paths = zygote_paths(self.extra_reads())
        # Run by root, the zygote keeps what it needs to switch its children to run_as; they
        # keep nothing.
        caps = "--caps.keep=" + ",".join(ZYGOTE_CAPABILITIES) if switches_user(self.options.run_as) else "--caps.drop=all"
        argv = [binary, "--quiet", "--noprofile", "--read-only=/", "--private-dev", *private_tmp(paths),
                caps, "--nonewprivs", "--nogroups", f"--rlimit-nproc={self.options.nproc}",
                "--deterministic-exit-code"]
        if self.options.network == "isolate":
            argv.append("--net=none")
        needed = [p for p in paths if not under(p, SYSTEM_DIRS)]
        if any(under(p, ["/var/tmp"]) for p in needed):
            # firejail empties /var/tmp by default, a venv made there included; kept, the
            # whitelist on /var below shows only the needed paths of it.
            argv.append("--keep-var-tmp")
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


def private_tmp(paths: list[str]) -> list[str]:
    """A private /tmp: firejail's empty one, or, where the zygote needs paths in /tmp (a
    virtual environment or a checkout made there), a tmpfs that holds only those, each
    whitelisted read-only (firejail mounts it for whitelists in /tmp, as --private-tmp does)."""
    inside = [p for p in paths if p.startswith("/tmp/")]
    if not inside:
        return ["--private-tmp"]
    return [arg for p in inside for arg in (f"--whitelist={p}", f"--read-only={p}")]


@hookimpl
def codea1_register_executors(registry):
    registry.add(FirejailExecutor)
