"""Privileges: children of a root zygote run as another user, without capabilities.

Landlock governs reads, writes and TCP, not a file's mode, owner, times or extended
attributes, nor connecting to a pathname UNIX socket: as root with capabilities a program
could chmod the interpreter or chown a file outside its job, and connect to any socket it
can name. A child of a root zygote therefore switches to an unprivileged user (``run_as``),
keeps no capability, and cannot gain one (no_new_privs, an empty bounding set).

Linux only; only the standard library is imported here: it runs in the sandbox.
"""

from __future__ import annotations

import ctypes
import os
import stat
import sys
from typing import Sequence

from codea1.harness.sandbox.confine import in_child, python_read_paths, set_not_dumpable

_libc = ctypes.CDLL(None, use_errno=True)

_PR_CAPBSET_READ, _PR_CAPBSET_DROP = 23, 24
_PR_SET_NO_NEW_PRIVS, _PR_GET_NO_NEW_PRIVS = 38, 39
_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL = 47, 4
CAP_CHOWN, CAP_DAC_OVERRIDE, CAP_SETGID, CAP_SETUID, CAP_SETPCAP = 0, 1, 6, 7, 8
_CAPABILITY_VERSION_3 = 0x20080522
# What the zygote (chown of each job's directory, its removal) and its forker (setgroups,
# setresgid, setresuid) need to run children as another user.
SWITCH_CAPABILITIES = {"CAP_SETUID": CAP_SETUID, "CAP_SETGID": CAP_SETGID, "CAP_CHOWN": CAP_CHOWN,
                       "CAP_DAC_OVERRIDE": CAP_DAC_OVERRIDE}
CAPABILITY_SETS = ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb")


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


# Made once, at import (in the zygote, before any fork): a child's capset then writes nothing.
_CAP_HEADER = _CapHeader(_CAPABILITY_VERSION_3, 0)
_NO_CAPS = (_CapData * 2)()


def status_fields(names: Sequence[str] = (*CAPABILITY_SETS, "NoNewPrivs", "Uid", "Gid", "Groups")) -> dict[str, str]:
    """Fields of /proc/self/status (the capability sets as hex strings)."""
    found = {}
    with open("/proc/self/status") as fh:
        for line in fh:
            key, _, value = line.partition(":")
            if key in names:
                found[key] = value.strip()
    return found


def effective_capabilities() -> int:
    return int(status_fields(("CapEff",)).get("CapEff", "0"), 16)


def _mapped(ident: int, map_file: str) -> bool:
    """True when ``ident`` is mapped in this process's user namespace (``/proc/self/uid_map``)."""
    try:
        with open(map_file) as fh:
            ranges = [tuple(int(x) for x in line.split()) for line in fh if line.strip()]
    except OSError:
        return True  # no user namespaces: every id is
    return any(inside <= ident < inside + count for inside, _outside, count in ranges)


def switch_refusal(uid: int, gid: int) -> str:
    """Why this (root) process cannot run children as ``uid``:``gid``; "" when it can."""
    caps = effective_capabilities()
    missing = [name for name, bit in SWITCH_CAPABILITIES.items() if not caps >> bit & 1]
    if missing:
        return f"the zygote lacks {', '.join(missing)} (its wrapper dropped them)"
    for kind, ident, map_file in (("uid", uid, "/proc/self/uid_map"), ("gid", gid, "/proc/self/gid_map")):
        if not _mapped(ident, map_file):
            return f"{kind} {ident} is not mapped in the zygote's user namespace"
    try:
        with open("/proc/self/setgroups") as fh:
            if fh.read().strip() == "deny":
                return "setgroups is denied in the zygote's user namespace"
    except OSError:
        pass
    return ""


def lock_privileges() -> None:
    """For a process that forks the children (the zygote's forker), once: no new privileges
    (no setuid binary, no file capability can raise what a child has), no ambient and no
    inheritable capabilities, and an empty bounding set where CAP_SETPCAP allows it. Its
    effective and permitted sets stay: it still switches each child's user."""
    if _libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(NO_NEW_PRIVS) failed")
    _libc.prctl(_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)  # EINVAL before Linux 4.3: none to clear
    header, data = _CapHeader(_CAPABILITY_VERSION_3, 0), (_CapData * 2)()
    if _libc.capget(ctypes.byref(header), data) != 0:
        raise OSError(ctypes.get_errno(), "capget failed")
    if data[0].inheritable or data[1].inheritable:
        data[0].inheritable = data[1].inheritable = 0
        if _libc.capset(ctypes.byref(header), data) != 0:
            raise OSError(ctypes.get_errno(), "capset failed")
    if effective_capabilities() >> CAP_SETPCAP & 1:
        cap = 0
        while _libc.prctl(_PR_CAPBSET_READ, cap, 0, 0, 0) >= 0:  # -1 (EINVAL) past the kernel's last
            if _libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
                raise OSError(ctypes.get_errno(), f"prctl(CAPBSET_DROP, {cap}) failed")
            cap += 1


def switch_user(uid: int, gid: int) -> None:
    """Become ``uid``:``gid`` with no supplementary group, for good (real, effective and saved
    ids): the kernel then clears the permitted, effective and ambient capabilities. Not
    dumpable afterwards whatever fs.suid_dumpable says: a sibling of the same user cannot
    ptrace it. Raises OSError when refused."""
    os.setgroups([])
    os.setresgid(gid, gid, gid)
    os.setresuid(uid, uid, uid)
    if os.getresuid() != (uid, uid, uid) or os.getresgid() != (gid, gid, gid) or os.getgroups():
        raise OSError(f"could not become uid {uid} gid {gid}")
    set_not_dumpable()


def drop_capabilities() -> None:
    """Clear the effective, permitted and inheritable capabilities, keeping the user (a root
    zygote that cannot switch users: its children keep uid 0 but no capability)."""
    if _libc.capset(ctypes.byref(_CAP_HEADER), _NO_CAPS) != 0:
        raise OSError(ctypes.get_errno(), "capset failed")


def unreadable(paths: Sequence[str]) -> list[tuple[str, str, int]]:
    """``(path, blocker, mode)`` for each of ``paths`` the calling process cannot read (a
    directory: list and search): ``blocker`` is the first directory on the way it cannot
    search (``path`` itself when the path can be reached), ``mode`` that one's permission
    bits."""
    found = []
    for path in paths:
        wanted = os.R_OK | (os.X_OK if os.path.isdir(path) else 0)
        if os.access(path, wanted):
            continue
        blocker = path
        parts = path.split("/")
        for i in range(1, len(parts)):
            ancestor = "/".join(parts[:i]) or "/"
            if not os.access(ancestor, os.X_OK):
                blocker = ancestor
                break
        try:
            mode = os.stat(blocker).st_mode & 0o7777
        except OSError:
            mode = -1
        found.append((path, blocker, mode))
    return found


DEFAULT_RUN_AS = (65534, 65534)  # nobody:nogroup on Debian and most distributions
# What a root zygote inside a sandbox tool keeps of root (firejail, bwrap): enough to switch
# its children's user (setuid, setgid, setpcap: the bounding set), to kill and clean up after
# them (kill, dac_override, fowner, chown) and to open blocked directories (sys_admin). Its
# children keep none of it.
ZYGOTE_CAPABILITIES = ("setuid", "setgid", "setpcap", "chown", "dac_override", "fowner", "kill", "sys_admin")


def switches_user(run_as: str) -> bool:
    """True where the zygote starts as root and its children are to switch user: a sandbox
    tool must then leave it the ``ZYGOTE_CAPABILITIES``."""
    return os.geteuid() == 0 and parse_run_as(run_as) is not None


# Mounts, for blocked_directories / open_blocked_directories.
CLONE_NEWNS = 0x00020000
_MS_REC, _MS_PRIVATE = 0x4000, 1 << 18
_OPEN_TREE, _MOVE_MOUNT = 428, 429  # the same numbers on every architecture (Linux >= 5.2)
_AT_FDCWD, _AT_RECURSIVE, _OPEN_TREE_CLONE, _MOVE_MOUNT_F_EMPTY_PATH = -100, 0x8000, 1, 4


def _searchable(st: os.stat_result, uid: int, gid: int) -> bool:
    bit = stat.S_IXUSR if st.st_uid == uid else stat.S_IXGRP if st.st_gid == gid else stat.S_IXOTH
    return bool(st.st_mode & bit)


def blocked_directories(paths: Sequence[str], uid: int, gid: int) -> dict[str, set[str]]:
    """Directories on the way to ``paths`` that ``uid``/``gid`` (no supplementary group, no
    capability) cannot search, each with the entries in it that lead to a path: a venv or
    an interpreter under /root (0700), a checkout in pytest's temporary directory (0700)."""
    blocked: dict[str, set[str]] = {}
    for path in paths:
        parts = os.path.realpath(path).split("/")[1:]
        for i in range(len(parts)):
            directory = "/" + "/".join(parts[:i])
            try:
                if not _searchable(os.stat(directory), uid, gid):
                    blocked.setdefault(directory, set()).add(parts[i])
            except OSError:
                break
    return blocked


def open_blocked_directories(blocked: dict[str, set[str]]) -> list[str]:
    """Make each blocked directory searchable for the children without touching the host's
    files: in a mount namespace of this process's own (its children inherit it), the
    directory becomes an empty tmpfs of mode 0711 into which only the entries that lead to
    needed paths are bound back (detached copies of them, taken before the tmpfs covers
    them: open_tree, move_mount). What else the directory holds (a home directory's other
    files) is then out of the children's view too. Needs CAP_SYS_ADMIN; raises OSError.
    Returns the directories covered."""
    if _libc.unshare(CLONE_NEWNS) != 0:
        raise OSError(ctypes.get_errno(), "unshare(CLONE_NEWNS) failed")
    if _libc.mount(b"none", b"/", None, _MS_REC | _MS_PRIVATE, None) != 0:
        raise OSError(ctypes.get_errno(), "making / private failed")
    covered = []
    for directory in sorted(blocked, key=lambda d: d.count("/")):  # outer ones first: inner ones lie in their binds
        trees = {}
        try:
            for entry in sorted(blocked[directory]):
                fd = _libc.syscall(_OPEN_TREE, ctypes.c_int(_AT_FDCWD), os.path.join(directory, entry).encode(),
                                   ctypes.c_uint(_OPEN_TREE_CLONE | _AT_RECURSIVE))
                if fd < 0:
                    raise OSError(ctypes.get_errno(), f"open_tree({directory}/{entry}) failed")
                trees[entry] = fd
            if _libc.mount(b"tmpfs", directory.encode(), b"tmpfs", 0, b"mode=0711") != 0:
                raise OSError(ctypes.get_errno(), f"mounting a tmpfs on {directory} failed")
            for entry, fd in trees.items():
                target = os.path.join(directory, entry)
                if stat.S_ISDIR(os.fstat(fd).st_mode):
                    os.mkdir(target, 0o711)
                else:
                    os.close(os.open(target, os.O_CREAT | os.O_WRONLY, 0o644))
                if _libc.syscall(_MOVE_MOUNT, ctypes.c_int(fd), b"", ctypes.c_int(_AT_FDCWD), target.encode(),
                                 ctypes.c_uint(_MOVE_MOUNT_F_EMPTY_PATH)) != 0:
                    raise OSError(ctypes.get_errno(), f"move_mount onto {target} failed")
        finally:
            for fd in trees.values():
                os.close(fd)
        covered.append(directory)
    return covered


def privilege_plan(run_as: tuple[int, int] | None) -> dict:
    """How this zygote's children shed privilege: ``switch_to`` (the (uid, gid) each child
    becomes, or None), ``drop_caps`` (a child that keeps its user clears its capabilities)
    and ``uid_switch`` (what happens, in words, for the ready report). ``run_as`` None: a
    root zygote's children stay root (unsafe, asked for explicitly)."""
    euid = os.geteuid()
    if euid != 0:
        held = int(status_fields(("CapPrm",)).get("CapPrm", "0"), 16)
        try:
            with open("/proc/self/uid_map") as fh:
                unmapped = not fh.read().strip()
        except OSError:
            unmapped = False
        if unmapped:  # isolate_network's user namespace: euid is the overflow id, the real user unknown
            return {"switch_to": None, "drop_caps": True,
                    "uid_switch": "not possible: the zygote runs in a user namespace of its own that maps no user "
                                  "(network isolation without privilege); children keep its real user, whichever "
                                  "that is, without capabilities"}
        return {"switch_to": None, "drop_caps": bool(held), "uid_switch": f"not needed: the zygote runs as uid {euid}"}
    if run_as is None:
        return {"switch_to": None, "drop_caps": True,
                "uid_switch": "kept root (run_as=root, unsafe): a program owns root's files (chmod, utime) and "
                              "may connect to root's UNIX sockets; it has no capability"}
    refusal = switch_refusal(*run_as)
    if refusal:
        return {"switch_to": None, "drop_caps": True,
                "uid_switch": f"impossible: {refusal}; children keep uid 0 without capabilities"}
    return {"switch_to": tuple(run_as), "drop_caps": False, "uid_switch": f"switched to {run_as[0]}:{run_as[1]}"}


def child_read_paths(extra: Sequence[str] = ()) -> list[str]:
    """What every child must be able to read, whatever user it runs as: the interpreter, the
    standard library and site-packages (``python_read_paths``: lazily imported modules),
    codea1's own package folders (the zygote's) and ``extra`` (the executor's ``read``);
    those that exist."""
    paths = [*python_read_paths(), os.path.realpath(sys.executable), *extra]
    for name in ("codea1", "codea1.harness"):
        module = sys.modules.get(name)
        paths += list(getattr(module, "__path__", []))
    return sorted({os.path.realpath(p) for p in paths if p and os.path.exists(p)})


def probe_child_privileges(switch_to: tuple[int, int] | None, drop_caps: bool, paths: Sequence[str]) -> dict:
    """What a child gets, measured in a throwaway child that sheds privilege as each job's
    child does (``lock_privileges``, then ``switch_user`` or ``drop_capabilities``): its
    /proc/self/status fields (``status_fields``) and ``unreadable(paths)`` as that user; or
    {"error": ...} when that fails."""
    import json

    def action() -> str:
        try:
            lock_privileges()
            if switch_to is not None:
                switch_user(*switch_to)
            elif drop_caps:
                drop_capabilities()
            return json.dumps({"status": status_fields(), "unreadable": unreadable(paths)})
        except Exception as exc:  # noqa: BLE001 - reported by the caller
            return json.dumps({"error": f"{type(exc).__name__}: {exc}"})

    report = in_child(action)
    return json.loads(report) if report else {"error": "the probe child died"}


def unix_socket_policy(seccomp: bool, switch_to: tuple[int, int] | None, child_uid: int) -> str:
    """What keeps a child from pathname UNIX sockets outside its sandbox, in words."""
    if seccomp:
        return "seccomp: socket(AF_UNIX), datagram socketpairs and io_uring refused"
    if switch_to is not None:
        return (f"uid only: the child's user ({child_uid}) cannot connect to a socket it may not write (root's, "
                "mode 0755 or 0660), but can connect to world-writable ones")
    return (f"none: seccomp is off and children keep uid {child_uid}: every pathname socket that user may write "
            "is reachable")


def parse_run_as(text: str) -> tuple[int, int] | None:
    """``run_as``: "UID:GID", "UID" (its group: the user's primary one, else the same
    number), "USER[:GROUP]" by name, or "root" (None: children of a root zygote stay root,
    unsafe). Raises ValueError."""
    import grp
    import pwd

    text = text.strip()
    if text == "root":
        return None
    user, _, group = text.partition(":")
    try:
        if user.isdigit():
            uid = int(user)
            try:
                default_gid = pwd.getpwuid(uid).pw_gid
            except KeyError:
                default_gid = uid
        else:
            entry = pwd.getpwnam(user)
            uid, default_gid = entry.pw_uid, entry.pw_gid
        gid = default_gid if not group else int(group) if group.isdigit() else grp.getgrnam(group).gr_gid
    except KeyError as exc:
        raise ValueError(f"run_as {text!r}: no such user or group") from exc
    if uid == 0 or gid == 0:
        raise ValueError(f"run_as {text!r}: uid or gid 0 is root's; say run_as=root to keep root (unsafe)")
    return uid, gid
