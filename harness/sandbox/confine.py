"""OS-level confinement for the sandbox child: rlimits, a seccomp filter, a network namespace.

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
import struct

_libc = ctypes.CDLL(None, use_errno=True)

CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000
CLONE_THREAD = 0x00010000

# syscall numbers: fork, vfork, execve, execveat, clone, clone3
_SYSCALLS = {
    "x86_64": dict(arch=0xC000003E, fork=57, vfork=58, execve=59, execveat=322, clone=56, clone3=435),
    "aarch64": dict(arch=0xC00000B7, fork=None, vfork=None, execve=221, execveat=281, clone=220, clone3=435),
}

_RET_ALLOW = 0x7FFF0000
_RET_ERRNO = 0x00050000
_EPERM, _EAGAIN, _ENOSYS = 1, 11, 38
_LD_W_ABS, _JEQ_K, _JGE_K, _JSET_K, _RET_K = 0x20, 0x15, 0x35, 0x45, 0x06
_PR_SET_NO_NEW_PRIVS, _PR_SET_SECCOMP, _SECCOMP_MODE_FILTER = 38, 22, 2


def _stmt(code: int, k: int) -> tuple:
    return (code, 0, 0, k)


def _seccomp_program(nums: dict) -> list[tuple]:
    """BPF: refuse new processes and exec; allow everything else (threads included).

    Layout: arch check, load nr, one compare per rule, clone compare, allow, one return per
    rule, then the clone flag check. A foreign syscall ABI (i386 via int 0x80, x32 numbers)
    is refused outright, since it would bypass the numbers below.
    """
    rules = [(_JGE_K, 0x40000000, _RET_ERRNO | _ENOSYS)]  # x32 ABI numbers
    rules += [(_JEQ_K, nums[n], _RET_ERRNO | _EAGAIN) for n in ("fork", "vfork") if nums[n] is not None]
    rules += [(_JEQ_K, nums["execve"], _RET_ERRNO | _EPERM), (_JEQ_K, nums["execveat"], _RET_ERRNO | _EPERM),
              (_JEQ_K, nums["clone3"], _RET_ERRNO | _ENOSYS)]  # glibc falls back to clone for threads
    n = len(rules)
    prog = [_stmt(_LD_W_ABS, 4), (_JEQ_K, 1, 0, nums["arch"]), _stmt(_RET_K, _RET_ERRNO | _ENOSYS),
            _stmt(_LD_W_ABS, 0)]
    # Rule j sits at 4 + j and returns from 6 + n + j: a jump of n + 1 for every rule.
    prog += [(op, n + 1, 0, k) for op, k, _action in rules]
    prog.append((_JEQ_K, n + 1, 0, nums["clone"]))  # to the flag check at 6 + 2n
    prog.append(_stmt(_RET_K, _RET_ALLOW))
    prog += [_stmt(_RET_K, action) for _op, _k, action in rules]
    prog.append(_stmt(_LD_W_ABS, 16))  # clone flags: args[0], low word (little endian)
    prog.append((_JSET_K, 0, 1, CLONE_THREAD))
    prog.append(_stmt(_RET_K, _RET_ALLOW))
    prog.append(_stmt(_RET_K, _RET_ERRNO | _EAGAIN))
    return prog


def install_no_process_filter() -> None:
    """Install the seccomp filter in the calling process. Raises OSError when refused."""
    nums = _SYSCALLS.get(platform.machine())
    if nums is None:
        raise OSError(f"no seccomp table for machine {platform.machine()}")
    prog = _seccomp_program(nums)
    raw = b"".join(struct.pack("HBBI", *ins) for ins in prog)
    buf = ctypes.create_string_buffer(raw)

    class SockFprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    fprog = SockFprog(len(prog), ctypes.cast(buf, ctypes.c_void_p))
    if _libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(NO_NEW_PRIVS) failed")
    if _libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(SECCOMP) failed")


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
    """True when this kernel accepts the filter (checked in a throwaway child)."""
    pid = os.fork()
    if pid == 0:
        try:
            install_no_process_filter()
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
