"""Children without privilege: where the harness runs as root, a child
runs as another user (``run_as``), with no capability, an empty bounding set and
no_new_privs; it cannot chmod, chown, utime or setxattr a file outside its job, nor connect
to a pathname UNIX socket (seccomp refuses socket(AF_UNIX); without seccomp its user may not
write root's sockets). Real executors, real programs judged by the harness; no mocks.

The decoys live in a directory of /var/tmp passed as ``read``: outside /tmp (private in the
wrappers) and outside every forbidden path, so that each executor's child can reach them and
only the missing privilege stops it. As root, root would succeed on every one of them."""

from __future__ import annotations

import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest
from codea1_testkit import run_code

from codea1.harness.records import PASS
from codea1.harness.sandbox import confine

EXECUTOR_BINARIES = {"subprocess": None, "firejail": "firejail", "bubblewrap": "bwrap"}
ROOT = os.geteuid() == 0
NO_CAPS = {"effective": 0, "permitted": 0, "inheritable": 0, "bounding": 0, "ambient": 0}

# The program under test: f(where, "contained") tries everything a privileged program could do
# outside its job (each answer "done" or "refused"; the errno goes to stdout), f(where, "user")
# says who it runs as.
PROGRAM = textwrap.dedent('''
    import ctypes, errno, os, socket

    def _try(name, action):
        try:
            action()
        except OSError as exc:
            print(name, errno.errorcode.get(exc.errno, exc.errno))
            return "refused"
        return "done"

    def _capabilities():
        libc = ctypes.CDLL(None, use_errno=True)

        class Header(ctypes.Structure):
            _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

        class Data(ctypes.Structure):
            _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                        ("inheritable", ctypes.c_uint32)]

        data = (Data * 2)()
        if libc.capget(ctypes.byref(Header(0x20080522, 0)), data) != 0:
            return "capget failed"
        sets = {name: getattr(data[0], name) | getattr(data[1], name) << 32
                for name in ("effective", "permitted", "inheritable")}
        sets["bounding"] = sum(1 << c for c in range(64) if libc.prctl(23, c, 0, 0, 0) == 1)  # PR_CAPBSET_READ
        sets["ambient"] = sum(1 << c for c in range(64) if libc.prctl(47, 1, c, 0, 0) == 1)  # PR_CAP_AMBIENT_IS_SET
        return sets

    def f(where, part):
        if part == "user":
            return {"root": os.getuid() == 0 or os.geteuid() == 0 or os.getgid() == 0, "groups": os.getgroups()}
        decoy = where + "/decoy.txt"

        def connect(name):
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
                s.connect(where + "/" + name)

        return {
            "capabilities": _capabilities(),
            "no_new_privs": ctypes.CDLL(None).prctl(39, 0, 0, 0, 0),  # PR_GET_NO_NEW_PRIVS
            "chmod": _try("chmod", lambda: os.chmod(decoy, 0o4777)),
            "chown": _try("chown", lambda: os.chown(decoy, 1234, 1234)),
            "utime": _try("utime", lambda: os.utime(decoy, (0, 0))),
            "utime_now": _try("utime_now", lambda: os.utime(decoy)),
            "setxattr": _try("setxattr", lambda: os.setxattr(decoy, "user.codea1", b"planted")),
            "write": _try("write", lambda: open(decoy, "a").close()),
            "connect_open": _try("connect_open", lambda: connect("open.sock")),
            "connect_root": _try("connect_root", lambda: connect("root.sock")),
            "socketpair": _try("socketpair", lambda: [s.close() for s in socket.socketpair()]),
            "own_job_directory": os.stat(".").st_uid == os.getuid(),
            "list_zygote_directory": _try("list_zygote_directory", lambda: os.listdir("..")),
        }
''')


def make_executor(plugins, name: str, **options):
    binary = EXECUTOR_BINARIES[name]
    if binary and shutil.which(binary) is None:
        pytest.skip(f"{binary} is not installed (executor {name!r})")
    return plugins.executors.create(name, {k: str(v) for k, v in options.items()}, workers=1)


class Decoys:
    """A directory of /var/tmp (0755) holding decoy.txt (0644) and two listening sockets:
    open.sock (0777: only seccomp stops a connect) and root.sock (0755: the user too)."""

    def __init__(self):
        if not os.path.isdir("/var/tmp"):
            pytest.skip("no /var/tmp: the decoys need a directory outside /tmp that every executor can show")
        self.dir = tempfile.mkdtemp(prefix="codea1-decoys-", dir="/var/tmp")
        os.chmod(self.dir, 0o755)
        self.file = os.path.join(self.dir, "decoy.txt")
        Path(self.file).write_text("decoy\n")
        os.chmod(self.file, 0o644)
        self.listeners = {}
        for name, mode in (("open.sock", 0o777), ("root.sock", 0o755)):
            server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            server.bind(os.path.join(self.dir, name))
            os.chmod(os.path.join(self.dir, name), mode)
            server.listen(8)
            server.setblocking(False)
            self.listeners[name] = server
        self.before = self.state()

    def state(self) -> dict:
        st = os.stat(self.file)
        return {"mode": oct(st.st_mode), "uid": st.st_uid, "gid": st.st_gid, "mtime": st.st_mtime_ns,
                "xattrs": sorted(os.listxattr(self.file)), "text": Path(self.file).read_text(),
                "sockets": {n: oct(os.stat(os.path.join(self.dir, n)).st_mode) for n in self.listeners}}

    def connections(self) -> list[str]:
        """The sockets a program connected to (a connection waits in the backlog)."""
        found = []
        for name, server in self.listeners.items():
            try:
                server.accept()[0].close()
                found.append(name)
            except BlockingIOError:
                pass
        return found

    def close(self):
        for server in self.listeners.values():
            server.close()
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture
def decoys():
    found = Decoys()
    yield found
    found.close()


def run_program(executor, where: str, contained: dict, user: dict | None):
    asserts = f"assert f({where!r}, 'contained') == {contained!r}"
    if user is not None:
        asserts += f"\nassert f({where!r}, 'user') == {user!r}"
    return run_code(executor, PROGRAM, asserts, "f", limit=30, fail_fast=False)


def describe(raw) -> str:
    outcomes = [(o.status, o.value, o.message) for o in raw.outcomes]
    return f"outcomes={outcomes} stdout={raw.stdout!r} stderr={raw.stderr!r}"


# -- the seccomp program ------------------------------------------------------------------

_LD_W_ABS, _JEQ_K, _JGE_K, _JSET_K, _RET_K, _ALU_AND_K = 0x20, 0x15, 0x35, 0x45, 0x06, 0x54
ALLOW, ERRNO = 0x7FFF0000, 0x00050000
EPERM, EAGAIN, EACCES, ENOSYS = 1, 11, 13, 38
SOCKETPAIR = {"x86_64": 53, "aarch64": 199}
READ = {"x86_64": 0, "aarch64": 63}


def run_bpf(program: list[tuple], nr: int, arch: int, args=(0, 0, 0, 0, 0, 0)) -> int:
    """What classic BPF ``program`` returns for one system call (struct seccomp_data: nr,
    arch, instruction pointer, six arguments; little endian), every jump checked to land
    inside the program."""
    data = struct.pack("<iIQ6Q", nr, arch, 0, *args, *(0,) * (6 - len(args)))
    pc, acc = 0, 0
    for _ in range(len(program)):
        assert 0 <= pc < len(program), f"jump out of the program at {pc}"
        code, jt, jf, k = program[pc]
        if code == _LD_W_ABS:
            acc, pc = struct.unpack_from("<I", data, k)[0], pc + 1
        elif code in (_JEQ_K, _JGE_K, _JSET_K):
            taken = acc == k if code == _JEQ_K else acc >= k if code == _JGE_K else bool(acc & k)
            pc += 1 + (jt if taken else jf)
        elif code == _ALU_AND_K:
            acc, pc = acc & k, pc + 1
        elif code == _RET_K:
            return k
        else:
            raise AssertionError(f"unexpected instruction {code:#x}")
    raise AssertionError("the program does not return")


@pytest.mark.parametrize("machine", sorted(confine._SYSCALLS))
def test_the_seccomp_program_answers_each_call_as_meant(machine):
    """Every jump of the filter lands where it should, for each machine's numbers: run in a
    small BPF interpreter over the calls it rules on and some it must allow."""
    nums = confine._SYSCALLS[machine]
    program = confine._seccomp_program(nums)
    arch = nums["arch"]
    assert len(program) < 256 and all(0 <= jt < 256 and 0 <= jf < 256 for _c, jt, jf, _k in program)
    thread = confine.CLONE_THREAD | 0x00000100 | 0x00000800  # CLONE_VM | CLONE_SIGHAND, as pthread_create
    cases = [
        (nums["execve"], (0,), ERRNO | EPERM), (nums["execveat"], (0,), ERRNO | EPERM),
        (nums["clone3"], (0,), ERRNO | ENOSYS),
        (nums["clone"], (17,), ERRNO | EAGAIN),  # SIGCHLD: fork through clone
        (nums["clone"], (thread,), ALLOW),
        (nums["socket"], (1, 1, 0), ERRNO | EACCES),  # AF_UNIX, SOCK_STREAM
        (nums["socket"], (1 | 1 << 32, 2, 0), ERRNO | EACCES),  # high bits: the kernel reads an int
        (nums["socket"], (2, 1, 0), ALLOW),  # AF_INET
        (nums["socket"], (10, 2, 0), ALLOW),  # AF_INET6
        (SOCKETPAIR[machine], (1, 1, 0), ALLOW),  # AF_UNIX pairs: multiprocessing, asyncio
        (SOCKETPAIR[machine], (1, 1 | 0o2000000, 0), ALLOW),  # SOCK_CLOEXEC
        (SOCKETPAIR[machine], (1, 5, 0), ALLOW),  # SOCK_SEQPACKET
        (SOCKETPAIR[machine], (1, 2, 0), ERRNO | EACCES),  # SOCK_DGRAM: sendto a path from it
        (SOCKETPAIR[machine], (1, 2 | 0o4000, 0), ERRNO | EACCES),  # SOCK_DGRAM | SOCK_NONBLOCK
        (425, (0,), ERRNO | ENOSYS), (426, (0,), ERRNO | ENOSYS), (427, (0,), ERRNO | ENOSYS),  # io_uring
        *((nums[n], (0,), ERRNO | ENOSYS) for n in ("shmget", "semget", "msgget", "mq_open")),
        (READ[machine], (0,), ALLOW),
        (0x40000000 + 1, (0,), ERRNO | ENOSYS),  # x32 numbers
    ]
    cases += [(nums[n], (0,), ERRNO | EAGAIN) for n in ("fork", "vfork") if nums[n] is not None]
    for nr, args, expected in cases:
        assert run_bpf(program, nr, arch, args) == expected, (machine, nr, args)
    assert run_bpf(program, nums["socket"], 0x40000003, (1,)) == ERRNO | ENOSYS  # i386 via int 0x80


@pytest.mark.skipif(confine._SYSCALLS.get(os.uname().machine) is None, reason="no seccomp table for this machine")
def test_the_seccomp_filter_holds_in_a_process():
    """Installed for real: no fork, no exec, no socket(AF_UNIX); threads, socketpair and
    AF_INET sockets still work."""
    if not confine.probe_seccomp():
        pytest.skip("this kernel refuses the seccomp filter")

    def filtered() -> str:
        import threading

        confine.install_no_process_filter()
        seen = []
        for name, action in (("fork", os.fork), ("exec", lambda: os.execv("/bin/true", ["true"])),
                             ("unix", lambda: socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)),
                             ("unix_dgram", lambda: socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)),
                             ("pair", lambda: [s.close() for s in socket.socketpair()]),
                             ("pair_dgram", lambda: socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)),
                             ("io_uring", lambda: _syscall(425, 8, 0)),
                             ("shmget", lambda: _syscall(confine._SYSCALLS[os.uname().machine]["shmget"], 0, 4096,
                                                         0o1000 | 0o600)),
                             ("inet", lambda: socket.socket(socket.AF_INET, socket.SOCK_STREAM).close())):
            try:
                result = action()
                if name == "fork" and result == 0:
                    os._exit(0)
                seen.append(f"{name}:ok")
            except OSError as exc:
                seen.append(f"{name}:{exc.errno}")
        out = []
        t = threading.Thread(target=lambda: out.append("ran"))
        t.start()
        t.join()
        return ",".join(seen + [f"thread:{out[0]}"])

    assert confine.in_child(filtered) == (f"fork:{EAGAIN},exec:{EPERM},unix:{EACCES},unix_dgram:{EACCES},pair:ok,"
                                          f"pair_dgram:{EACCES},io_uring:{ENOSYS},shmget:{ENOSYS},inet:ok,thread:ran")


def _syscall(nr: int, *args: int) -> int:
    """A raw system call; OSError with its errno when it fails."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    result = libc.syscall(nr, *(ctypes.c_long(a) for a in args))
    if result < 0:
        raise OSError(ctypes.get_errno(), f"system call {nr} failed")
    return result


# -- children of a root harness -------------------------------------------------------------

@pytest.mark.parametrize("name", list(EXECUTOR_BINARIES))
def test_a_child_has_no_privilege_over_what_lies_outside_its_job(plugins, decoys, name):
    """Capabilities none (effective, permitted, inheritable, bounding, ambient), no_new_privs;
    with seccomp no UNIX socket at all (open.sock is 0777); as root also no chmod, chown,
    utime, setxattr or write of root's file, no listing of the zygote's directory, and a user
    other than root (where the wrapper lets the zygote switch: see its ready report)."""
    ex = make_executor(plugins, name, read=decoys.dir)
    try:
        info = ex.info()
        privileges = info["privileges"]
        assert info["unix_sockets"] == "seccomp: socket(AF_UNIX), datagram socketpairs and io_uring refused"
        assert privileges["no_new_privs"] is True and (privileges["groups"] == [] or not ROOT), privileges
        contained = {"capabilities": NO_CAPS, "no_new_privs": 1, "connect_open": "refused", "connect_root": "refused",
                     "socketpair": "done"}
        if ROOT:
            switched = privileges["uid_switch"].startswith("switched")
            contained.update(chmod="refused", chown="refused", utime="refused", utime_now="refused",
                             setxattr="refused", write="refused", own_job_directory=True,
                             list_zygote_directory="refused" if switched or info["landlock"] != "none" else "done")
        verdict, raw = run_program(ex, decoys.dir, contained, {"root": False, "groups": []} if ROOT else None)
        value = raw.outcomes[0].value if raw.outcomes and raw.outcomes[0].status == "ok" else None
        if not ROOT:  # the program's own user owns the decoys: only what holds for every user is checked
            value = {k: v for k, v in (value or {}).items() if k in contained}
            assert value == contained, describe(raw)
            pytest.skip("the harness is not root: its children keep its user (chmod and the like of its own "
                        "files are theirs to do); only capabilities, no_new_privs and the socket rule were checked")
        assert verdict.tests[0].status == PASS, describe(raw)
        assert decoys.state() == decoys.before and decoys.connections() == []
        assert privileges["capabilities_dropped"] is True, privileges
        if verdict.tests[1].status != PASS:
            if name != "subprocess" and privileges["uid_switch"].startswith("impossible"):
                pytest.xfail(f"{name}: {privileges['uid_switch']} (the wrapper must leave the zygote CAP_SETUID, "
                             "CAP_SETGID, CAP_CHOWN, CAP_DAC_OVERRIDE and CAP_SETPCAP, and uid 65534 mapped)")
            raise AssertionError(describe(raw))
        assert verdict.status == PASS and privileges["uid"] != 0 and privileges["gid"] != 0, privileges
    finally:
        ex.close()


@pytest.mark.skipif(not ROOT, reason="the user switch happens only where the harness runs as root")
def test_without_seccomp_the_user_alone_keeps_root_sockets_out_of_reach(plugins, decoys):
    """seccomp=false (programs that must start processes): socket(AF_UNIX) is allowed, and
    the child's user may connect to a world-writable socket, never to root's 0755 one; the
    ready report says which mechanism holds."""
    ex = make_executor(plugins, "subprocess", read=decoys.dir, seccomp="false")
    try:
        info = ex.info()
        assert info["seccomp"] is False and info["unix_sockets"].startswith("uid only:"), info["unix_sockets"]
        contained = {"capabilities": NO_CAPS, "no_new_privs": 1, "chmod": "refused", "chown": "refused",
                     "utime": "refused", "utime_now": "refused", "setxattr": "refused", "write": "refused",
                     "connect_open": "done", "connect_root": "refused", "socketpair": "done",
                     "own_job_directory": True, "list_zygote_directory": "refused"}
        verdict, raw = run_program(ex, decoys.dir, contained, {"root": False, "groups": []})
        assert verdict.status == PASS, describe(raw)
        assert decoys.state() == decoys.before and decoys.connections() == ["open.sock"]
    finally:
        ex.close()


@pytest.mark.skipif(not ROOT, reason="run_as applies only where the harness runs as root")
def test_run_as_names_the_childrens_user_and_root_keeps_root_without_capabilities(plugins):
    """run_as=12345:23456 is the children's uid and gid; run_as=root (unsafe) keeps uid 0,
    still without any capability, and says so."""
    code = "import os\ndef f(x):\n    return [os.getresuid(), os.getresgid(), os.getgroups()]\n"
    ex = make_executor(plugins, "subprocess", run_as="12345:23456")
    try:
        assert ex.info()["privileges"]["uid_switch"] == "switched to 12345:23456"
        verdict, raw = run_code(ex, code, "assert f(0) == [(12345,) * 3, (23456,) * 3, []]", "f")
        assert verdict.status == PASS, describe(raw)
    finally:
        ex.close()
    ex = make_executor(plugins, "subprocess", run_as="root")
    try:
        privileges = ex.info()["privileges"]
        assert privileges["uid"] == 0 and privileges["uid_switch"].startswith("kept root (run_as=root, unsafe)")
        assert privileges["capabilities_dropped"] is True
    finally:
        ex.close()
    with pytest.raises(Exception, match="run_as .no-such-user-codea1.: no such user"):
        plugins.executors.create("subprocess", {"run_as": "no-such-user-codea1"}, workers=1)


@pytest.mark.skipif(not ROOT, reason="the user switch happens only where the harness runs as root")
def test_a_path_the_childrens_user_cannot_read_ends_the_start_with_one_line(plugins):
    """A path the children's user cannot read itself (here a ``read`` directory of mode
    0700): the zygote names it and the user, and does not start (never a silent fall-back
    to root)."""
    secret = tempfile.mkdtemp(prefix="codea1-private-", dir="/var/tmp" if os.path.isdir("/var/tmp") else None)
    try:
        os.chmod(secret, 0o700)
        ex = plugins.executors.create("subprocess", {"read": secret}, workers=1)
        try:
            with pytest.raises(Exception) as caught:
                ex.info()
            message = str(caught.value)
            assert f"programs run as uid 65534 gid 65534 (the executor option run_as) but cannot read {secret}:" \
                   in message, message
            assert "run_as=root keeps root: unsafe" in message and "\n" not in message
        finally:
            ex.close()
    finally:
        shutil.rmtree(secret, ignore_errors=True)


@pytest.mark.skipif(not ROOT, reason="the user switch happens only where the harness runs as root")
@pytest.mark.parametrize("name", list(EXECUTOR_BINARIES))
def test_a_directory_the_childrens_user_cannot_search_is_opened_for_them_alone(plugins, name):
    """A venv under /root (0700) is what this is for: here a ``read`` path inside a 0700
    directory. The zygote covers that directory, in its own mount namespace, with one that
    holds the needed entry alone: the child reads the path, not its neighbour, and the host's
    directory keeps its mode."""
    secret = tempfile.mkdtemp(prefix="codea1-private-", dir="/var/tmp" if os.path.isdir("/var/tmp") else None)
    try:
        inner = os.path.join(secret, "inner")
        os.mkdir(inner, 0o755)
        with open(os.path.join(inner, "data.txt"), "w") as fh:
            fh.write("inner")
        with open(os.path.join(secret, "neighbour.txt"), "w") as fh:
            fh.write("neighbour")
        os.chmod(secret, 0o700)
        ex = make_executor(plugins, name, read=inner)
        try:
            info = ex.info()
            if name == "subprocess":  # a wrapper's own view may show the directory searchable already
                assert secret in info["privileges"]["directories_opened"], info["privileges"]
            code = (f"import os\ndef f(x):\n    out = [open({inner + '/data.txt'!r}).read()]\n"
                    f"    try:\n        out.append(open({secret + '/neighbour.txt'!r}).read())\n"
                    f"    except OSError as exc:\n        out.append(type(exc).__name__)\n    return out\n")
            verdict, raw = run_code(ex, code, "assert f(0) == ['inner', 'FileNotFoundError']", "f")
            assert verdict.status == PASS, describe(raw)
        finally:
            ex.close()
        assert os.stat(secret).st_mode & 0o777 == 0o700
    finally:
        shutil.rmtree(secret, ignore_errors=True)


FIREJAIL_IN_A_PID_NAMESPACE = textwrap.dedent('''
    import json, sys
    sys.path.insert(0, sys.argv[2])
    from codea1_testkit import run_code
    from codea1.harness.plugin_manager import load_plugins

    ex = load_plugins(autoload=False).executors.create("firejail", {"read": sys.argv[1]}, workers=1)
    try:
        privileges = ex.info()["privileges"]
        verdict, raw = run_code(ex, sys.argv[3], sys.argv[4], "f", limit=30, fail_fast=False)
        print(json.dumps({"privileges": privileges, "status": verdict.status,
                          "outcomes": [(o.status, o.value) for o in raw.outcomes], "stdout": raw.stdout}))
    finally:
        ex.close()
''')


@pytest.mark.skipif(not ROOT, reason="unshare of a pid and mount namespace needs root")
def test_firejail_inside_a_fresh_pid_namespace_still_contains_the_child(decoys, tmp_path):
    """In a fresh pid and mount namespace (``unshare -pf --mount-proc``) firejail takes itself
    for nested in another sandbox and runs the zygote unconfined, as root with every
    capability: the child's own user switch still keeps it from root's files and sockets."""
    if shutil.which("firejail") is None or shutil.which("unshare") is None:
        pytest.skip("needs firejail and unshare")
    contained = {"capabilities": NO_CAPS, "no_new_privs": 1, "chmod": "refused", "chown": "refused",
                 "utime": "refused", "utime_now": "refused", "setxattr": "refused", "write": "refused",
                 "connect_open": "refused", "connect_root": "refused", "socketpair": "done",
                 "own_job_directory": True, "list_zygote_directory": "refused"}
    asserts = (f"assert f({decoys.dir!r}, 'contained') == {contained!r}\n"
               f"assert f({decoys.dir!r}, 'user') == {{'root': False, 'groups': []}}")
    script = tmp_path / "firejail_in_pidns.py"
    script.write_text(FIREJAIL_IN_A_PID_NAMESPACE)
    tests_dir = str(Path(__file__).resolve().parents[2])
    proc = subprocess.run(["unshare", "-pf", "--mount-proc", sys.executable, str(script), decoys.dir, tests_dir,
                           PROGRAM, asserts], capture_output=True, text=True, cwd=tmp_path)
    if proc.returncode != 0 and "unshare failed" in proc.stderr:
        pytest.skip(f"unshare refused here: {proc.stderr.strip()}")
    assert proc.returncode == 0, proc.stderr[-3000:]
    import json

    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["status"] == PASS, report
    assert report["privileges"]["uid"] == 65534 and report["privileges"]["capabilities_dropped"], report
    assert decoys.state() == decoys.before and decoys.connections() == []
