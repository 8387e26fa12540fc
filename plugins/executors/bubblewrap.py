"""Executor ``bubblewrap``: the subprocess executor's zygotes, each inside a bwrap sandbox.

On top of everything the child of a zygote gets (rlimits, seccomp, Landlock, private tmp
dir; see ``codea1.harness.sandbox.executor``), the whole zygote runs in its own user, pid,
network, IPC and UTS namespaces with a read-only view of the system, fresh /dev and /proc,
private tmpfs over /tmp and the other ``hide`` directories (the interpreter's own paths are
bound back read-only), no capabilities. (Not --die-with-parent: its death signal is tied
to the thread that started bwrap, and pools start zygotes from worker threads. A zygote
exits when its stdin closes, which happens when the harness dies, and bwrap's pid
namespace takes everything with it.)

Options: those of ``subprocess`` plus ``hide`` (comma-separated directories replaced by
empty tmpfs). Needs the ``bwrap`` binary (Debian: bubblewrap); without it, selecting this
executor fails.
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

DEFAULT_HIDE = "/tmp,/var/tmp,/root,/home,/run,/dev/shm,/mnt,/media"


@dataclass
class BubblewrapOptions(SubprocessOptions):
    hide: str = DEFAULT_HIDE


class BubblewrapExecutor(ZygoteExecutor):
    name = "bubblewrap"
    description = "zygotes inside bwrap: user/pid/net namespaces, read-only system, tmpfs over /tmp and homes"
    Options = BubblewrapOptions

    def prefix(self) -> list[str]:
        binary = find_binary(self.name, "bwrap", "bubblewrap")
        hide = [os.path.realpath(p) for p in self.options.hide.split(",") if p and os.path.isdir(p)]
        argv = [binary, "--new-session", "--unshare-user-try", "--unshare-pid",
                "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
                "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
        if self.options.network == "isolate":
            argv.append("--unshare-net")
        for path in hide:
            argv += ["--tmpfs", path]
        for path in runtime_paths():
            if under(path, hide) and path not in hide:  # bound back, read-only, over the tmpfs
                argv += ["--ro-bind", path, path]
        return argv


@hookimpl
def codea1_register_executors(registry):
    registry.add(BubblewrapExecutor)
