"""Executor ``bubblewrap``: the subprocess executor's zygotes, each inside a bwrap sandbox.

On top of everything the child of a zygote gets (rlimits, seccomp, Landlock, private tmp
dir; see ``codea1.harness.sandbox.executor``), the whole zygote runs in its own user, pid,
network, IPC and UTS namespaces, in a root of its own that holds only what it needs,
read-only (``zygote_paths``: the interpreter and its libraries, the system's libraries and
data, codea1's code folders; not the checkout, the data, the runs or the home directory),
fresh /dev and /proc, a private tmpfs on /tmp (with those of its paths that lie in /tmp on
top), no capabilities. Run by root, no user namespace: the zygote keeps only what it needs to
switch its children to ``run_as`` (``privileges.ZYGOTE_CAPABILITIES``), and they keep nothing.
(Not --die-with-parent: its death signal is tied to the thread that
started bwrap, and pools start zygotes from worker threads. A zygote exits when its stdin
closes, which happens when the harness dies, and bwrap's pid namespace takes everything
with it.)

Options: those of ``subprocess``. Needs the ``bwrap`` binary (Debian: bubblewrap); without
it, selecting this executor fails.
"""

from __future__ import annotations

import os

from codea1.harness.hookspecs import hookimpl
from codea1.harness.sandbox.confine import ETC_READ
from codea1.harness.sandbox.executor import ZygoteExecutor, find_binary, under, zygote_paths
from codea1.harness.sandbox.privileges import ZYGOTE_CAPABILITIES, switches_user


class BubblewrapExecutor(ZygoteExecutor):
    name = "bubblewrap"
    description = "zygotes inside bwrap: user/pid/net namespaces, a read-only root of the runtime's paths only"
    view_limited = True
    start_advice = ("check that bwrap can sandbox here (it needs unprivileged user namespaces, or its setuid bit), "
                    "or choose another executor (--executor subprocess)")

    def prefix(self) -> list[str]:
        binary = find_binary(self.name, "bwrap", "bubblewrap")
        if switches_user(self.options.run_as):
            # Run by root: no user namespace (it would map uid 0 alone, and children could not
            # become run_as); the zygote keeps what it needs to switch them, nothing else.
            users = ["--cap-drop", "ALL", *(x for cap in ZYGOTE_CAPABILITIES for x in ("--cap-add", f"CAP_{cap.upper()}"))]
        else:
            users = ["--unshare-user-try"]
        argv = [binary, "--new-session", *users, "--unshare-pid", "--unshare-ipc", "--unshare-uts",
                "--unshare-cgroup-try"]
        if self.options.network == "isolate":
            argv.append("--unshare-net")
        # Top-level links of a merged /usr (/lib64 -> usr/lib64: the loader's path) stay links.
        # So do /etc's (/etc/localtime -> /usr/share/zoneinfo/...): zygote_paths has their targets.
        links = [*("/" + entry for entry in sorted(os.listdir("/"))),
                 *(os.path.join("/etc", name) for name in ETC_READ)]
        for path in links:
            if os.path.islink(path):
                argv += ["--symlink", os.readlink(path), path]
        binds = [p for p in zygote_paths(self.extra_reads())
                 if not os.path.islink(p) and not under(p, ["/proc", "/dev"])]  # both made fresh below
        in_tmp = [p for p in binds if p.startswith("/tmp/")]
        for path in [p for p in binds if p not in in_tmp]:
            argv += ["--ro-bind", path, path]
        argv += ["--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
        # Bound after the private tmpfs, on top of it: what lies in /tmp (a CI job's virtual
        # environment or clone); the rest of /tmp stays hidden.
        for path in in_tmp:
            argv += ["--ro-bind", path, path]
        return argv + ["--chdir", "/"]


@hookimpl
def codea1_register_executors(registry):
    registry.add(BubblewrapExecutor)
