"""Executor ``bubblewrap``: the subprocess executor's zygotes, each inside a bwrap sandbox.

On top of everything the child of a zygote gets (rlimits, seccomp, Landlock, private tmp
dir; see ``codea1.harness.sandbox.executor``), the whole zygote runs in its own user, pid,
network, IPC and UTS namespaces, in a root of its own that holds only what it needs,
read-only (``zygote_paths``: the interpreter and its libraries, the system's libraries and
data, codea1's code folders; not the checkout, the data, the runs or the home directory),
fresh /dev and /proc, a private tmpfs on /tmp, no capabilities. (Not --die-with-parent: its
death signal is tied to the thread that started bwrap, and pools start zygotes from worker
threads. A zygote exits when its stdin closes, which happens when the harness dies, and
bwrap's pid namespace takes everything with it.)

Options: those of ``subprocess``. Needs the ``bwrap`` binary (Debian: bubblewrap); without
it, selecting this executor fails.
"""

from __future__ import annotations

import os

from codea1.harness.hookspecs import hookimpl
from codea1.harness.sandbox.confine import ETC_READ
from codea1.harness.sandbox.executor import ZygoteExecutor, find_binary, under, zygote_paths


class BubblewrapExecutor(ZygoteExecutor):
    name = "bubblewrap"
    description = "zygotes inside bwrap: user/pid/net namespaces, a read-only root of the runtime's paths only"
    view_limited = True

    def prefix(self) -> list[str]:
        binary = find_binary(self.name, "bwrap", "bubblewrap")
        argv = [binary, "--new-session", "--unshare-user-try", "--unshare-pid",
                "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"]
        if self.options.network == "isolate":
            argv.append("--unshare-net")
        # Top-level links of a merged /usr (/lib64 -> usr/lib64: the loader's path) stay links.
        # So do /etc's (/etc/localtime -> /usr/share/zoneinfo/...): zygote_paths has their targets.
        links = [*("/" + entry for entry in sorted(os.listdir("/"))),
                 *(os.path.join("/etc", name) for name in ETC_READ)]
        for path in links:
            if os.path.islink(path):
                argv += ["--symlink", os.readlink(path), path]
        for path in zygote_paths(self.extra_reads()):
            if not os.path.islink(path) and not under(path, ["/proc", "/dev"]):  # both made fresh below
                argv += ["--ro-bind", path, path]
        return argv + ["--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp", "--chdir", "/"]


@hookimpl
def codea1_register_executors(registry):
    registry.add(BubblewrapExecutor)
