"""OS-level confinement for the sandbox child: rlimits, a seccomp filter, a network namespace,
Landlock, the process table. (Running as another user without capabilities: ``privileges``.)

Linux only. Each step that the OS refuses is reported by the zygote (``capabilities()``),
never silently assumed.

Why seccomp rather than RLIMIT_NPROC: root (the usual CI user) ignores RLIMIT_NPROC, and a
seccomp filter that refuses fork/vfork/clone-without-CLONE_THREAD/execve holds for every
user while still letting the program start threads.
"""

from __future__ import annotations

import ctypes
import os
import platform
import resource
import signal
import struct
import sys
import sysconfig
import tempfile
from typing import Callable, Sequence

_libc = ctypes.CDLL(None, use_errno=True)

CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000
CLONE_THREAD = 0x00010000

# syscall numbers: fork, vfork, execve, execveat, clone, clone3, socket, socketpair; System V
# IPC and POSIX message queues (shmget, semget, msgget, mq_open); io_uring (the same numbers
# on every architecture).
_SYSCALLS = {
    "x86_64": dict(arch=0xC000003E, fork=57, vfork=58, execve=59, execveat=322, clone=56, clone3=435, socket=41,
                   socketpair=53, shmget=29, semget=64, msgget=68, mq_open=240),
    "aarch64": dict(arch=0xC00000B7, fork=None, vfork=None, execve=221, execveat=281, clone=220, clone3=435,
                    socket=198, socketpair=199, shmget=194, semget=190, msgget=186, mq_open=180),
}
_IO_URING = (425, 426, 427)  # io_uring_setup, io_uring_enter, io_uring_register
AF_UNIX = 1
SOCK_STREAM, SOCK_SEQPACKET = 1, 5
_ALU_AND_K = 0x54

_RET_ALLOW = 0x7FFF0000
_RET_ERRNO = 0x00050000
_EPERM, _EAGAIN, _EACCES, _ENOSYS = 1, 11, 13, 38
_LD_W_ABS, _JEQ_K, _JGE_K, _JSET_K, _RET_K = 0x20, 0x15, 0x35, 0x45, 0x06
_PR_SET_NO_NEW_PRIVS, _PR_SET_SECCOMP, _SECCOMP_MODE_FILTER = 38, 22, 2


def _stmt(code: int, k: int) -> tuple:
    return (code, 0, 0, k)


def _assemble(lines: list) -> list[tuple]:
    """Classic BPF from ``(code, jt, jf, k)`` instructions and label strings between them: a
    jump given as a label becomes the offset to the instruction after that label (BPF jumps
    only forward, at most 255 instructions)."""
    labels, program = {}, []
    for line in lines:
        if isinstance(line, str):
            labels[line] = len(program)
        else:
            program.append(line)

    def offset(target, at: int) -> int:
        if not isinstance(target, str):
            return target
        distance = labels[target] - (at + 1)
        if not 0 <= distance <= 255:
            raise ValueError(f"seccomp program: jump to {target!r} from {at} cannot be encoded")
        return distance

    return [(code, offset(jt, i), offset(jf, i), k) for i, (code, jt, jf, k) in enumerate(program)]


def _seccomp_program(nums: dict) -> list[tuple]:
    """BPF: refuse new processes and exec, and socket(AF_UNIX, ...): pathname UNIX sockets
    outside the sandbox (a Ray raylet's, docker.sock) are reached by file name, which no
    namespace covers and Landlock does not govern. So also socketpair of datagram sockets
    (sendto a path from one) and io_uring (its IORING_OP_SOCKET makes a socket without the
    socket call). System V IPC objects and POSIX message queues outlive the job that made
    them (another job could read them, or they fill the machine's memory): refused too.
    Everything else is allowed (threads; stream and seqpacket socketpairs: multiprocessing
    and asyncio pair their own sockets).

    Layout: arch check, load nr, one compare per rule, the clone and socket compares, allow;
    one return per rule; the clone flag check; the socket domain check. A foreign syscall
    ABI (i386 via int 0x80, x32 numbers) is refused outright, since it would bypass the
    numbers below.
    """
    rules = [(_JGE_K, 0x40000000, _RET_ERRNO | _ENOSYS)]  # x32 ABI numbers
    rules += [(_JEQ_K, nums[n], _RET_ERRNO | _EAGAIN) for n in ("fork", "vfork") if nums[n] is not None]
    rules += [(_JEQ_K, nums["execve"], _RET_ERRNO | _EPERM), (_JEQ_K, nums["execveat"], _RET_ERRNO | _EPERM),
              (_JEQ_K, nums["clone3"], _RET_ERRNO | _ENOSYS)]  # glibc falls back to clone for threads
    rules += [(_JEQ_K, nums[n], _RET_ERRNO | _ENOSYS) for n in ("shmget", "semget", "msgget", "mq_open")]
    rules += [(_JEQ_K, n, _RET_ERRNO | _ENOSYS) for n in _IO_URING]
    lines = [_stmt(_LD_W_ABS, 4), (_JEQ_K, 1, 0, nums["arch"]), _stmt(_RET_K, _RET_ERRNO | _ENOSYS),
             _stmt(_LD_W_ABS, 0)]
    lines += [(op, f"rule {j}", 0, k) for j, (op, k, _action) in enumerate(rules)]
    lines += [(_JEQ_K, "clone", 0, nums["clone"]), (_JEQ_K, "socket", 0, nums["socket"]),
              (_JEQ_K, "socketpair", 0, nums["socketpair"]), _stmt(_RET_K, _RET_ALLOW)]
    for j, (_op, _k, action) in enumerate(rules):
        lines += [f"rule {j}", _stmt(_RET_K, action)]
    # args[0], low word (little endian): clone's flags; socket's domain (an int: the kernel
    # reads only the low word, so a domain with high bits set is still AF_UNIX here).
    lines += ["clone", _stmt(_LD_W_ABS, 16), (_JSET_K, 0, 1, CLONE_THREAD), _stmt(_RET_K, _RET_ALLOW),
              _stmt(_RET_K, _RET_ERRNO | _EAGAIN)]
    lines += ["socket", _stmt(_LD_W_ABS, 16), (_JEQ_K, 0, 1, AF_UNIX), _stmt(_RET_K, _RET_ERRNO | _EACCES),
              _stmt(_RET_K, _RET_ALLOW)]
    # socketpair's type, args[1] (its low four bits; the rest are SOCK_CLOEXEC/NONBLOCK):
    # connected kinds only.
    lines += ["socketpair", _stmt(_LD_W_ABS, 24), _stmt(_ALU_AND_K, 0xF), (_JEQ_K, "pair allowed", 0, SOCK_STREAM),
              (_JEQ_K, "pair allowed", 0, SOCK_SEQPACKET), _stmt(_RET_K, _RET_ERRNO | _EACCES),
              "pair allowed", _stmt(_RET_K, _RET_ALLOW)]
    return _assemble(lines)


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


_FILTER: tuple | None = None  # (buffer, sock_fprog), built once: every child installs the same filter


def _no_process_filter() -> tuple:
    global _FILTER
    if _FILTER is None:
        nums = _SYSCALLS.get(platform.machine())
        if nums is None:
            raise OSError(f"no seccomp table for machine {platform.machine()}")
        prog = _seccomp_program(nums)
        buf = ctypes.create_string_buffer(b"".join(struct.pack("HBBI", *ins) for ins in prog))
        _FILTER = (buf, _SockFprog(len(prog), ctypes.cast(buf, ctypes.c_void_p)))
    return _FILTER


def install_no_process_filter() -> None:
    """Install the seccomp filter (``_seccomp_program``: no new processes, no exec, no
    socket(AF_UNIX)) in the calling process. Raises OSError when refused."""
    _buf, fprog = _no_process_filter()
    if _libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(NO_NEW_PRIVS) failed")
    if _libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(SECCOMP) failed")


CLONE_NEWIPC = 0x08000000


def isolate_ipc() -> bool:
    """Move the calling process into a fresh IPC namespace: System V IPC objects and POSIX
    message queues its children make (where seccomp does not refuse them) die with it, never
    reach the host's or another zygote's. False when refused."""
    return _libc.unshare(CLONE_NEWIPC) == 0


def isolate_network() -> str:
    """Move the calling process into a fresh network namespace (loopback only, down).

    Returns how: "netns" (as root), "userns+netns" (unprivileged), or "" when refused."""
    if _libc.unshare(CLONE_NEWNET) == 0:
        return "netns"
    if _libc.unshare(CLONE_NEWUSER | CLONE_NEWNET) == 0:
        return "userns+netns"
    return ""


def set_limits(memory_mb: int, cpu_seconds: int, file_mb: int) -> None:
    def cap(kind, value):
        soft, hard = resource.getrlimit(kind)
        if hard != resource.RLIM_INFINITY:
            value = min(value, hard)
        resource.setrlimit(kind, (value, value if hard == resource.RLIM_INFINITY else hard))

    cap(resource.RLIMIT_AS, memory_mb * 1024 * 1024)
    cap(resource.RLIMIT_CPU, cpu_seconds)
    cap(resource.RLIMIT_FSIZE, file_mb * 1024 * 1024)
    cap(resource.RLIMIT_CORE, 0)


def probe_seccomp() -> bool:
    """True when this kernel accepts the filter and it holds (checked in a throwaway child):
    fork and socket(AF_UNIX) refused, socketpair(AF_UNIX) still allowed."""
    try:
        _no_process_filter()  # built here, once, for every child forked from this process
    except OSError:
        return False
    pid = os.fork()
    if pid == 0:
        try:
            import socket

            install_no_process_filter()
            try:
                socket.socket(socket.AF_UNIX, socket.SOCK_STREAM).close()
                os._exit(3)
            except PermissionError:
                pass
            for end in socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM):
                end.close()
            try:
                child = os.fork()
            except OSError:
                os._exit(0)
            if child == 0:
                os._exit(0)
            os._exit(2)
        except BaseException:  # noqa: BLE001
            os._exit(1)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status) == 0


# Landlock (Linux >= 5.13): an unprivileged, stackable restriction that holds for root too.
_LANDLOCK_SYSCALLS = {"x86_64": (444, 445, 446), "aarch64": (444, 445, 446)}
_LANDLOCK_CREATE_RULESET_VERSION = 1
_LANDLOCK_RULE_PATH_BENEATH = 1
_FS_EXECUTE, _FS_WRITE_FILE, _FS_READ_FILE, _FS_READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
_FS_TRUNCATE, _FS_IOCTL_DEV = 1 << 14, 1 << 15
_NET_BIND_TCP, _NET_CONNECT_TCP = 1 << 0, 1 << 1
_SCOPE_ABSTRACT_UNIX_SOCKET, _SCOPE_SIGNAL = 1 << 0, 1 << 1


def landlock_abi() -> int:
    """The kernel's Landlock ABI version; 0 when it has none."""
    numbers = _LANDLOCK_SYSCALLS.get(platform.machine())
    if numbers is None:
        return 0
    abi = _libc.syscall(numbers[0], None, ctypes.c_size_t(0), ctypes.c_uint32(_LANDLOCK_CREATE_RULESET_VERSION))
    return max(int(abi), 0)


def _fs_rights(abi: int) -> int:
    rights = (1 << 13) - 1  # EXECUTE .. MAKE_SYM: ABI 1
    if abi >= 2:
        rights |= 1 << 13  # REFER
    if abi >= 3:
        rights |= _FS_TRUNCATE
    if abi >= 5:
        rights |= _FS_IOCTL_DEV
    return rights


# System paths a program may read (those that exist): libraries, the locale, time zone,
# certificate and font data the interpreter and common packages load, user names, CPU counts. Of
# /proc, the files about the machine as a whole: its CPUs and memory, and the counters that
# sysinfo(2) gives any process anyway (time since boot, load averages, CPU time summed over
# all processes: psutil.cpu_percent and boot_time read /proc/stat, os.getloadavg
# /proc/loadavg); none names or describes another process. Other processes' entries (the
# zygote's, the harness', other jobs': their command lines, working directories, memory)
# never. A child's own entries are added per child (``allow_own_proc``): /proc/self is a
# different directory in each.
SYSTEM_READ = ("/usr", "/lib", "/lib32", "/lib64", "/libx32", "/bin", "/sbin", "/sys/devices/system/cpu",
               "/proc/cpuinfo", "/proc/meminfo", "/proc/stat", "/proc/uptime", "/proc/loadavg")
ETC_READ = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "timezone", "ssl", "pki", "ca-certificates",
            "fonts", "nsswitch.conf", "passwd", "group", "host.conf", "hosts", "resolv.conf", "gai.conf", "protocols",
            "services", "mime.types", "locale.alias", "os-release", "matplotlibrc", "alternatives")  # passwd: getpass
DEVICES_WRITE = ("/dev/null", "/dev/zero", "/dev/full")
DEVICES_READ = ("/dev/urandom", "/dev/random")


def _is_within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def python_read_paths() -> list[str]:
    """What the interpreter and the packages it can import are read from: the standard
    library (both prefixes), the interpreter's directory, and every sys.path entry that is a
    site-packages or dist-packages directory, a zip archive, or lies in the standard library.
    Other sys.path entries (the current directory, a project checkout on the path) are left
    out: modules already imported before the fork need no file."""
    paths = {os.path.dirname(os.path.realpath(sys.executable))}
    for scheme_vars in ({"base": sys.base_prefix, "platbase": sys.base_exec_prefix},
                        {"base": sys.prefix, "platbase": sys.exec_prefix}):
        paths.update(sysconfig.get_paths(vars=scheme_vars)[k] for k in ("stdlib", "platstdlib"))
    stdlib = sorted(paths)
    for entry in sys.path:
        if not entry:
            continue
        name = os.path.basename(entry.rstrip("/"))
        if name in ("site-packages", "dist-packages") or entry.endswith((".zip", ".egg", ".whl")) \
                or any(_is_within(entry, root) for root in stdlib):
            paths.add(entry)
    return sorted(paths)


# What an installation keeps beside the interpreter as data, under each of its prefixes: share/
# (a wheel's data files land there: xyzservices' providers.json, jupyter's kernels, man pages).
# Not the whole prefix: a tox environment's prefix also holds tox's logs (commands and their
# environment) and its tmp/; include/, etc/ and bin/ are no package's data.
PREFIX_DATA = ("share",)


def python_data_paths() -> list[str]:
    """Data the installed packages read at run time from beneath the interpreter's prefixes
    (``PREFIX_DATA`` of sys.prefix, sys.base_prefix and their exec prefixes), those that
    exist: ``xyzservices`` opens ``sys.prefix/share/xyzservices/providers.json`` at import.
    Readable, not needed: unlike ``python_read_paths`` a child's user that cannot read them
    does not stop the zygote."""
    prefixes = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    return sorted({os.path.join(p, name) for p in prefixes if p for name in PREFIX_DATA
                   if os.path.isdir(os.path.join(p, name))})


def read_paths(forbidden: Sequence[str], extra: Sequence[str] = ()) -> list[str]:
    """Every path a sandboxed program may read, real paths, none inside another: the system
    ones (``SYSTEM_READ``, ``ETC_READ``), ``python_read_paths()``, ``python_data_paths()`` and
    ``extra``. None is or holds one of ``forbidden`` (a checkout, a home directory, a working
    directory): a system
    path that holds one (a checkout in /usr/src) is replaced by its entries but the one that
    leads there; any other such path is left out."""
    banned = sorted({os.path.realpath(p) for p in forbidden if p})
    allowed: set[str] = set()

    def add(path: str, split: bool) -> None:
        if not any(_is_within(b, path) for b in banned):
            allowed.add(path)
        elif split and path not in banned:
            try:
                entries = os.listdir(path)
            except OSError:
                return
            for entry in entries:
                add(os.path.realpath(os.path.join(path, entry)), split)

    system = [*SYSTEM_READ, *(os.path.join("/etc", name) for name in ETC_READ)]
    for paths, split in ((system, True), ([*python_read_paths(), *python_data_paths(), *extra], False)):
        for path in paths:
            if os.path.exists(path):
                add(os.path.realpath(path), split)
    ordered = sorted(allowed)
    return [p for i, p in enumerate(ordered) if not any(_is_within(p, q) for q in ordered[:i])]


def restrict_filesystem(writable: str, block_tcp: bool, readable: Sequence[tuple[str, int, int]] = ()) -> dict:
    """Landlock the calling process: read (and execute) only beneath the paths of
    ``readable`` (``read_rules``), read and write beneath ``writable``, read and write the
    harmless devices (``DEVICES_WRITE``) and read ``DEVICES_READ``; with ABI >= 4 no TCP
    bind/connect when ``block_tcp``; with ABI >= 6 no signals to processes outside the
    sandbox (the zygote, the harness) and no abstract unix sockets out of it. Landlock also
    refuses ptrace-style access (e.g. /proc/PID/fd of the zygote) to processes outside the
    domain. (Landlock does not govern stat: a path's existence and size stay visible.)

    Returns what was enforced; raises OSError when the kernel refuses. The same in two steps,
    ``landlock_ruleset`` and ``enforce_ruleset``, lets a fork server build the rules before
    it forks."""
    ruleset, report = landlock_ruleset(writable, block_tcp, readable)
    try:
        enforce_ruleset(ruleset)
    finally:
        os.close(ruleset)
    return report


_READ_DIR_RIGHTS = _FS_EXECUTE | _FS_READ_FILE | _FS_READ_DIR
_READ_FILE_RIGHTS = _FS_EXECUTE | _FS_READ_FILE
_DEVICE_RIGHTS = _FS_READ_FILE | _FS_WRITE_FILE | _FS_TRUNCATE | _FS_IOCTL_DEV


def read_rules(paths: Sequence[str]) -> list[tuple[str, int, int]]:
    """``(path, descriptor, rights)`` for Landlock rules that let a program read ``paths``
    (those that exist), the devices included. The descriptors (O_PATH) are opened once and
    kept by the caller, a fork server, for every ruleset it builds: per job only the rules
    are added. A forked child closes them with the rest of its descriptors."""
    rules = []
    for path, writable in [*((p, False) for p in paths), *((d, True) for d in DEVICES_WRITE),
                           *((d, False) for d in DEVICES_READ)]:
        try:
            fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
        except OSError:
            continue
        rights = _DEVICE_RIGHTS if writable else _READ_DIR_RIGHTS if os.path.isdir(path) else _READ_FILE_RIGHTS
        rules.append((path, fd, rights))
    return rules


def landlock_ruleset(writable: str, block_tcp: bool, readable: Sequence[tuple[str, int, int]] = ()) -> tuple[int, dict]:
    """(descriptor, report) of the ruleset ``restrict_filesystem`` enforces, built but not
    enforced: the zygote builds it before it forks, and the child only enforces it
    (``enforce_ruleset``). Built in the child, its ctypes calls wrote to about 70 pages the
    child shares with the zygote, each copied by the kernel: 0.25 ms a job. The caller closes
    the descriptor. Raises OSError when the kernel refuses."""
    abi = landlock_abi()
    if abi < 1:
        raise OSError("this kernel has no Landlock")
    create, add_rule, _ = _LANDLOCK_SYSCALLS[platform.machine()]
    fs = _fs_rights(abi)
    net = (_NET_BIND_TCP | _NET_CONNECT_TCP) if (block_tcp and abi >= 4) else 0
    scoped = (_SCOPE_ABSTRACT_UNIX_SOCKET | _SCOPE_SIGNAL) if abi >= 6 else 0
    attr = struct.pack("QQQ", fs, net, scoped)[: 8 if abi < 4 else 16 if abi < 6 else 24]
    ruleset = _libc.syscall(create, ctypes.c_char_p(attr), ctypes.c_size_t(len(attr)), ctypes.c_uint32(0))
    if ruleset < 0:
        raise OSError(ctypes.get_errno(), "landlock_create_ruleset failed")

    syscall = _libc.syscall

    def add(path: str, fd: int, rights: int) -> None:
        # Plain ints and bytes: ctypes passes them as int and char* (one rule per readable
        # path and job: the wrappers' allocations were half of their cost).
        if syscall(add_rule, ruleset, _LANDLOCK_RULE_PATH_BENEATH, struct.pack("=Qi", rights & fs, fd), 0) != 0:
            raise OSError(ctypes.get_errno(), f"landlock_add_rule({path}) failed")

    try:
        for path, fd, rights in readable:
            add(path, fd, rights)
        fd = os.open(writable, os.O_PATH | os.O_CLOEXEC)
        try:
            add(writable, fd, fs)
        finally:
            os.close(fd)
    except BaseException:
        os.close(ruleset)
        raise
    return ruleset, {"landlock_abi": abi, "tcp_blocked": bool(net), "signals_scoped": bool(scoped),
                     "reads_confined": True}


def enforce_ruleset(ruleset: int) -> None:
    """Restrict the calling process (and what it starts) to a ruleset from
    ``landlock_ruleset``; raises OSError when the kernel refuses. Irreversible."""
    if _libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(NO_NEW_PRIVS) failed")
    if _libc.syscall(_LANDLOCK_SYSCALLS[platform.machine()][2], ctypes.c_int(ruleset), ctypes.c_uint32(0)) != 0:
        raise OSError(ctypes.get_errno(), "landlock_restrict_self failed")


# A child's own /proc entries: read (files and directories), never written (no
# oom_score_adj, comm, mem), and what /proc/self names is only known in the child itself.
OWN_PROC_RIGHTS = _FS_READ_FILE | _FS_READ_DIR
_ADD_RULE = _LANDLOCK_SYSCALLS.get(platform.machine(), (None, None, None))[1]


def allow_own_proc(ruleset: int) -> int | None:
    """Add to ``ruleset``, in the process about to enforce it (a forked child: /proc/self is
    its own), a rule that lets it read beneath /proc/<its pid>: its memory map (threadpoolctl
    lists the loaded libraries from /proc/self/maps), status, stat, statm (psutil), limits,
    its threads (task/) and descriptors (fd/: 0-3 and this one), its mounts and cgroup, and
    the command line it inherited from the zygote (the zygote's arguments: paths that are
    refused, no data file; its environment, the pool's minimal one (PATH, LANG, the hash
    seed, PYTHONPATH), only to a child that kept uid 0 (run_as=root): a child is not
    dumpable, and the kernel then gives environ, mem and io to root alone). Each describes
    the process itself, what it holds in memory or could ask the kernel for; its own memory
    is the forker's copy, which never held a job. Not another process's entries (the
    zygote's, the forker's, a sibling's), nor writes (``OWN_PROC_RIGHTS``). A path through a
    magic link there (/proc/self/cwd/.., /proc/self/root/..., /proc/self/fd/N) is judged
    where it leads, as any other path.

    Returns the directory's O_PATH descriptor, which the caller keeps open while the program
    runs: Landlock ties the rule to the directory's inode, and procfs makes a new inode for
    /proc/<pid> when its dentry was evicted (memory pressure), one the rule would not name.
    None where there is no /proc/self (no procfs mounted, or one of another pid namespace):
    the program then reads no /proc entry of its own, as before. Raises OSError when the
    kernel refuses the rule."""
    try:
        fd = os.open("/proc/self", os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return None
    if _libc.syscall(_ADD_RULE, ruleset, _LANDLOCK_RULE_PATH_BENEATH, struct.pack("=Qi", OWN_PROC_RIGHTS, fd), 0) != 0:
        error = ctypes.get_errno()
        os.close(fd)
        raise OSError(error, "landlock_add_rule(/proc/self) failed")
    return fd


def in_child(action: Callable[[], str]) -> str:
    """What ``action()`` returns when run in a throwaway forked child ("" when it raises):
    restrictions it puts on itself (Landlock, seccomp) end with that child."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_fd)
        try:
            os.write(write_fd, action().encode())
        except BaseException:  # noqa: BLE001 - the parent reads nothing
            pass
        os._exit(0)
    os.close(write_fd)
    data = b""
    while chunk := os.read(read_fd, 4096):
        data += chunk
    os.close(read_fd)
    os.waitpid(pid, 0)
    return data.decode()


def probe_landlock() -> dict:
    """What restrict_filesystem enforces here ({} when refused), checked in a throwaway child."""
    import ast

    report = in_child(lambda: repr(restrict_filesystem(tempfile.gettempdir(), block_tcp=True, readable=read_rules([]))))
    return ast.literal_eval(report) if report else {}


PR_SET_CHILD_SUBREAPER = 36


def become_subreaper() -> bool:
    """Orphans of our children (daemons) are re-parented to us, so we can find and kill them."""
    return _libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0


def process_table() -> list[tuple[int, int, str, str]]:
    """``(pid, ppid, state, name)`` of every process in /proc (those that vanish meanwhile are
    left out)."""
    table = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        # "pid (comm) state ppid ...": comm may hold spaces and parentheses
        close = stat.rfind(b")")
        fields = stat[close + 2:].split()
        if len(fields) > 1:
            name = stat[stat.find(b"(") + 1:close].decode("utf-8", "replace")
            table.append((int(entry), int(fields[1]), fields[0].decode("ascii", "replace"), name))
    return table


def kill_orphans() -> int:
    """Kill every child process of ours (re-parented daemons included); returns how many."""
    me = os.getpid()
    killed = 0
    for _ in range(50):  # a daemon may fork while we scan: repeat until none is left
        found = [pid for pid, ppid, _state, _name in process_table() if ppid == me]
        if not found:
            break
        for pid in found:
            try:
                os.kill(pid, 9)
            except OSError:
                pass
        for pid in found:
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass
        killed += len(found)
    return killed


PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """SIGKILL when the parent exits (the forker outlives no zygote)."""
    parent = os.getppid()
    _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:  # it exited before the request took hold
        os._exit(1)


PR_SET_DUMPABLE = 4


def set_not_dumpable() -> None:
    _libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
