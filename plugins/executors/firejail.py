"""Executor ``firejail``: the subprocess executor's zygotes, each inside a firejail sandbox.

On top of everything the child of a zygote gets (rlimits, seccomp, Landlock, private tmp
dir; see ``codea1.harness.sandbox.executor``), the whole zygote runs with no profile but
explicit rules: no network (``--net=none``), the whole filesystem read-only, private /dev,
private /tmp and home (only the interpreter's own paths whitelisted, read-only), all
capabilities dropped, no new privileges, and a cap on processes (``nproc``).

Options: those of ``subprocess`` plus ``nproc`` (RLIMIT_NPROC of the sandbox). Needs the
``firejail`` binary (Debian: firejail); without it, selecting this executor fails.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from codea1.harness.hookspecs import hookimpl
from codea1.harness.sandbox.executor import (
    SubprocessOptions,
    ZygoteExecutor,
    find_binary,
    runtime_paths,
    under,
)

# Where firejail's --whitelist applies; paths elsewhere stay visible read-only.
WHITELISTABLE = ["/tmp", "/home", "/root", "/opt", "/srv", "/mnt", "/media"]


@dataclass
class FirejailOptions(SubprocessOptions):
    nproc: int = 512


class FirejailExecutor(ZygoteExecutor):
    name = "firejail"
    description = "zygotes inside firejail: no network, read-only system, private /tmp, /dev and home, caps dropped"
    Options = FirejailOptions

    def prefix(self) -> list[str]:
        binary = find_binary(self.name, "firejail", "firejail")
        argv = [binary, "--quiet", "--noprofile", "--read-only=/", "--private-dev", "--caps.drop=all",
                "--nonewprivs", "--nogroups", f"--rlimit-nproc={self.options.nproc}", "--deterministic-exit-code"]
        if self.options.network == "isolate":
            argv.append("--net=none")
        whitelisted = [p for p in runtime_paths() if under(p, WHITELISTABLE) and p not in WHITELISTABLE]
        for path in whitelisted:
            argv += [f"--whitelist={path}", f"--read-only={path}"]
        # A whitelist puts a tmpfs over its top directory already; otherwise hide it here.
        if not any(under(p, ["/tmp"]) for p in whitelisted):
            argv.append("--private-tmp")
        if not any(under(p, [os.path.expanduser("~")]) for p in whitelisted):
            argv.append("--private")
        # The zygote's control pipe is passed by number: firejail must not close it.
        argv += ["--keep-fd=all", "--deterministic-shutdown"]
        return argv


@hookimpl
def codea1_register_executors(registry):
    registry.add(FirejailExecutor)
