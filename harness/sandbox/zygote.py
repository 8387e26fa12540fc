"""The zygote: a trusted fork server that starts one confined child per job.

Started once per worker (``python -m harness.sandbox.zygote``), possibly inside firejail or
bubblewrap, it pays interpreter start-up and imports once. For every job line read on stdin
a child is forked that confines itself (new session, scrubbed environment, private temporary
directory, rlimits, no new processes, no exec; where the zygote is root, another user
(``--run-as``) with no capability at all) and then runs ``harness.sandbox.child``. The
zygote supervises from outside: it drains and caps stdout/stderr, reads the result pipe,
kills the child's process group at the job's wall-clock deadline (the program can cancel its
own alarms, not this), and answers in frames on stdout (``harness.sandbox.protocol``), each
naming the job and nonce it answers.

A root zygote checks first, in a throwaway child that sheds privilege as each job's does,
that its children's user can read the interpreter and the packages; a directory on the way
it cannot search (an interpreter under /root, 0700) is opened for the children alone, in a
mount namespace of the zygote's own (``privileges.open_blocked_directories``); anything else
unreadable ends the zygote with one line that says what to do.

Children are not forked by the zygote itself but by its forker (``Forker``), a process forked
from the zygote before the zygote reads its first job. A child is a copy of its parent's
memory, freed blocks included: forked from the zygote, it could scan the heap for the
programs of earlier jobs (reference solutions among them) and the results the zygote relayed
(reference outputs: expected values). The forker never holds a job: it gets the job's
directory and descriptors (the job as marshal bytes in a memfd, the problem's tests in
another, the three pipes), and the child reads its job from them.

The first frame the zygote writes is its capability report: {"ready": true, ...}.
"""

from __future__ import annotations

import argparse
import fcntl
import importlib
import json
import marshal
import os
import select
import selectors
import shutil
import signal
import socket
import sys
import tempfile
import time

from codea1.harness.sandbox import child, confine, privileges, timing
from codea1.harness.sandbox.protocol import RESULT_CAP, recv_message, send_message, write_frame

OUTPUT_CAP = 64 * 1024  # bytes of stdout / stderr kept per job
RELAY_INTERVAL = 0.001  # seconds between two relays of a running child's records
READ_SIZE = 1 << 16
SAFE_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8",
            "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
            "PYTHONHASHSEED": "0", "MPLBACKEND": "Agg"}


class TestClock:
    """Per-test deadlines kept from outside the child, which a program that cancels its own
    alarms cannot stop: test i's clock starts when the record before it (the load record, or
    test i-1's) has arrived, and the child is killed when test i runs past its limit plus
    the grace (the child's alarm, at the limit itself, gives honest programs their precise
    timeouts; the grace covers encoding and sending a large output). Bytes still arriving
    (a large record on its way) restart the clock.

    The limit is on the child's own time, as in the child (harness.sandbox.timing): the time
    its main thread spent waiting for a CPU, read here from /proc/PID/schedstat (the child
    cannot change what the kernel counts), moves the deadline on, up to ``WALL_CAP`` times
    the limit on the wall clock. The job's own deadline moves on by the same rule.

    Records are counted by their newlines; the parser refuses blank lines, so a program that
    writes newlines to restart its clock has its verdict failed for tampering."""

    GRACE = 1.0  # seconds, and at least the limit again

    def __init__(self, limits: list, start: float, pid: int = 0):
        self.limits = limits
        self.header = 1  # records before test 0: the load record
        self.lines = 0
        self.since = start
        self.start = start
        try:
            self.fd = os.open(f"/proc/{pid}/schedstat", os.O_RDONLY | os.O_CLOEXEC) if pid else -1
        except OSError:  # no /proc here: wall time is the child's time
            self.fd = -1
        self.last = 0.0
        self.delay_at_start = self.delay_since = self.waited()

    def waited(self) -> float:
        """Seconds the child's main thread has waited for a CPU since it started (the last
        value read where it cannot be read now; 0 where it never could)."""
        delay = timing.run_delay(self.fd) if self.fd >= 0 else None
        if delay is not None:
            self.last = delay
        return self.last

    def saw(self, data: bytes, now: float) -> None:
        self.lines += data.count(b"\n")
        self.since = now
        self.delay_since = self.waited()

    def deadline(self, now: float) -> float | None:
        """When the test now running is killed; None before the program has loaded (the
        job's own deadline covers loading) and after the last test. The run delay is read
        only once the deadline on the wall clock has come (``now``): before it, no wait can
        have moved it past ``now``."""
        i = self.lines - self.header
        if not 0 <= i < len(self.limits):
            return None
        limit = float(self.limits[i])
        wall = self.since + limit + max(self.GRACE, limit)
        if now < wall:
            return wall
        return min(wall + self.waited() - self.delay_since, self.since + timing.WALL_CAP * limit + self.GRACE)

    def job_deadline(self, budget: float, now: float) -> float:
        """When the job is killed: ``budget`` seconds of the child's own time after its start,
        at most ``WALL_CAP`` times that on the wall clock (the run delay read, as in
        ``deadline``, only once the wall clock's deadline has come)."""
        if now < self.start + budget:
            return self.start + budget
        return self.start + min(budget + self.waited() - self.delay_at_start, timing.WALL_CAP * budget)

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


class ForkerGone(RuntimeError):
    """The forker died or broke the protocol: this zygote can run no more jobs."""


class Forker:
    """Forks, confines and reaps the children, from memory that never held a job (see the
    module docstring). ``start`` forks it from the zygote; the zygote then talks to it over a
    SOCK_SEQPACKET socket: ``fork`` (the job's directory, descriptors attached) answers the
    child's pid; ``reap`` (a deadline) waits for the child, kills its group when late, and
    answers its wait status (None: killed) and how many orphans were killed."""

    def __init__(self, seccomp: bool, landlock: bool, block_tcp: bool, read_rules: list, file_mb: int,
                 switch_to: tuple[int, int] | None = None, drop_caps: bool = False):
        self.seccomp = seccomp
        self.landlock = landlock
        self.block_tcp = block_tcp
        self.read_rules = read_rules
        self.file_mb = file_mb
        # Each child becomes switch_to's (uid, gid) (a root zygote), or keeps the user but no
        # capability (drop_caps: a root zygote that cannot switch, or run_as=root).
        self.switch_to = switch_to
        self.drop_caps = drop_caps
        self.locked = False  # privileges.lock_privileges done in the forker (at its first child)
        self.sock: socket.socket | None = None
        self.pid = 0
        self.subreaper = False

    def start(self, close_in_forker: list[int]) -> None:
        """Fork the forker; ``close_in_forker``: the zygote's descriptors it must not keep
        (the reply stream, the control pipe: the pool sees the zygote's end as EOF). Its
        stdin and stdout become /dev/null, so descriptors it receives never take 0 or 1 (a
        child's dup2 onto 0-3 would then overwrite one it still needs)."""
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        pid = os.fork()
        if pid == 0:  # the forker: never returns
            code = 0
            try:
                mine.close()
                for fd in close_in_forker:
                    try:
                        os.close(fd)
                    except OSError:
                        pass
                null = os.open(os.devnull, os.O_RDWR)
                for fd in (0, 1):
                    os.dup2(null, fd)
                if null > 2:
                    os.close(null)
                confine.die_with_parent()
                self.sock = theirs
                self.subreaper = confine.become_subreaper()
                self._serve()
            except BaseException:  # noqa: BLE001 - the zygote sees the socket close
                code = 1
            os._exit(code)
        theirs.close()
        self.sock, self.pid = mine, pid
        self.subreaper = self._receive()[0]["subreaper"]

    # -- the zygote's side ------------------------------------------------------------------

    def _receive(self) -> tuple[dict, list[int]]:
        try:
            message, fds = recv_message(self.sock)
        except (OSError, ValueError) as exc:
            raise ForkerGone(f"forker: {exc}") from exc
        if message is None:
            raise ForkerGone("the forker exited")
        return message, fds

    def _ask(self, request: dict, fds: list[int] = ()) -> dict:
        try:
            send_message(self.sock, request, fds)
        except OSError as exc:
            raise ForkerGone(f"forker: {exc}") from exc
        answer = self._receive()[0]
        if "error" in answer:
            raise OSError(answer["error"])
        return answer

    def fork(self, workdir: str, fds: list[int]) -> int:
        """A confined child for the job in ``fds`` (job memfd, tests memfd, stdout, stderr and
        result pipes' write ends); returns its pid."""
        return int(self._ask({"fork": workdir}, fds)["pid"])

    def reap(self, deadline: float) -> tuple[int | None, int]:
        """(wait status or None when the child had to be killed, orphans killed)."""
        answer = self._ask({"reap": deadline})
        return answer["status"], answer["orphans_killed"]

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()  # the forker reads EOF and exits
            self.sock = None
            try:
                os.waitpid(self.pid, 0)
            except ChildProcessError:
                pass

    # -- the forker's side ------------------------------------------------------------------

    def _serve(self) -> None:
        send_message(self.sock, {"subreaper": self.subreaper})
        child_pid, exited = 0, None
        while True:
            request, fds = recv_message(self.sock)
            if request is None:
                return
            try:
                if "fork" in request:
                    child_pid = self._fork_child(request["fork"], fds)
                    exited = _pidfd(child_pid)
                    answer = {"pid": child_pid}
                else:
                    status = _reap(child_pid, exited, float(request["reap"]))
                    if exited is not None:
                        os.close(exited)
                    child_pid, exited = 0, None
                    orphans = 0 if self.seccomp else confine.kill_orphans()  # the program could fork
                    answer = {"status": status, "orphans_killed": orphans}
            except Exception as exc:  # noqa: BLE001 - the zygote fails the job
                answer = {"error": f"{type(exc).__name__}: {exc}"}
            finally:
                for fd in fds:
                    os.close(fd)
            send_message(self.sock, answer)

    def _fork_child(self, workdir: str, fds: list[int]) -> int:
        job_fd, tests_fd, out_w, err_w, res_w = fds
        if not self.locked:  # once, here in the forker (never in the zygote: in-process, that is a test runner)
            privileges.lock_privileges()
            self.locked = True
        # Made before the fork: what the child makes, the kernel copies page by page.
        ruleset = confine.landlock_ruleset(workdir, self.block_tcp, self.read_rules)[0] if self.landlock else None
        try:
            pid = os.fork()
        except BaseException:
            if ruleset is not None:
                os.close(ruleset)
            raise
        if pid == 0:  # the child: never returns
            code, stage = 0, "sandbox child failed"
            try:
                job = marshal.loads(_read_memfd(job_fd))
                job["tests"] = marshal.loads(_read_memfd(tests_fd))
                if type(job["tests"]) is not list:
                    raise ValueError("tests: not a list of tests")
                self._confine_child(job, workdir, out_w, err_w, res_w, ruleset)
                code, stage = 71, "the run ended early"  # from here on, the program's doing
                child.run(job, 3)
                code = 0
            except BaseException as exc:  # noqa: BLE001 - reported through stderr
                try:
                    os.write(2, f"{stage}: {type(exc).__name__}: {exc}\n".encode())
                except BaseException:  # noqa: BLE001 - the program's exception could not even be shown
                    pass
                code = code or 70
            os._exit(code)
        if ruleset is not None:
            os.close(ruleset)
        return pid

    def _confine_child(self, job: dict, workdir: str, out_w: int, err_w: int, res_w: int, ruleset: int | None) -> None:
        os.setsid()
        own_proc = None
        if ruleset is not None:  # first: the dup2s below may reuse its number
            # Its own /proc entries (/proc/self is this process only now, after the fork);
            # the directory stays open as fd 4 while the program runs (confine.allow_own_proc).
            own_proc = confine.allow_own_proc(ruleset)
            confine.enforce_ruleset(ruleset)
            if own_proc is not None and own_proc < 4:  # 3 may be free in the forker: out of the dup2s' way
                moved = fcntl.fcntl(own_proc, fcntl.F_DUPFD_CLOEXEC, 4)
                os.close(own_proc)
                own_proc = moved
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.dup2(out_w, 1)
        os.dup2(err_w, 2)
        os.dup2(res_w, 3)
        if own_proc is not None and own_proc != 4:
            os.dup2(own_proc, 4, inheritable=False)
        os.closerange(4 if own_proc is None else 5, 65536)  # the forker's socket, the memfds, the read rules
        os.chdir(workdir)
        os.environ["HOME"] = os.environ["TMPDIR"] = workdir  # the rest is SAFE_ENV already (main)
        tempfile.tempdir = workdir
        cpu = int(job.get("batch_timeout", 60)) + 2
        confine.set_limits(int(job.get("memory_mb", 4096)), cpu, self.file_mb)
        # The user last but for seccomp: everything above may be done by root (the pipes and
        # the job's directory were opened and entered; limits only lowered), nothing below
        # needs it (no_new_privs is set in the forker, an empty bounding set inherited from it).
        if self.switch_to is not None:
            privileges.switch_user(*self.switch_to)
        elif self.drop_caps:
            privileges.drop_capabilities()
        if self.seccomp:
            confine.install_no_process_filter()


class Zygote:
    def __init__(self, seccomp: bool, file_mb: int, output_cap: int, reply=None, control_fd: int | None = None,
                 landlock: bool = False, block_tcp: bool = True, readable: list[str] = (),
                 not_for_forker: list[int] = (), run_as: tuple[int, int] | None = privileges.DEFAULT_RUN_AS,
                 extra_reads: list[str] = ()):
        self.seccomp = seccomp
        self.landlock = landlock
        # Children of a root zygote run as run_as (None: stay root, unsafe), without any
        # capability. Checked first, in a throwaway child that sheds privilege as each job's
        # does: a user who cannot read the interpreter or the packages ends the zygote with
        # one line that says so (never a silent fall-back to root).
        plan = privileges.privilege_plan(run_as)
        needed = privileges.child_read_paths(extra_reads)
        probe = privileges.probe_child_privileges(plan["switch_to"], plan["drop_caps"], needed)
        self.covered: list[str] = []
        if probe.get("unreadable") and plan["switch_to"] is not None:
            # A directory on the way that the children's user cannot search (an interpreter
            # under /root, 0700): opened for this zygote's children alone, in a mount
            # namespace of its own (privileges.open_blocked_directories); the host is unchanged.
            blocked = privileges.blocked_directories(needed, *plan["switch_to"])
            if blocked:
                try:
                    self.covered = privileges.open_blocked_directories(blocked)
                except OSError as exc:
                    sys.stderr.write(f"zygote: could not open the directories on the way for the children: {exc}\n")
                probe = privileges.probe_child_privileges(plan["switch_to"], plan["drop_caps"], needed)
        if "error" in probe:
            raise SystemExit(f"zygote: a child could not shed its privileges ({plan['uid_switch']}): {probe['error']}")
        status = probe["status"]
        uid, gid = (int(status[key].split()[1]) for key in ("Uid", "Gid"))
        if probe["unreadable"]:
            path, blocker, mode = probe["unreadable"][0]
            more = len(probe["unreadable"]) - 1
            raise SystemExit(
                f"zygote: programs run as uid {uid} gid {gid} (the executor option run_as) but cannot read {path}"
                + (f" ({blocker}, mode {mode:04o}, is not searchable for them)" if blocker != path else "")
                + (f" and {more} more" if more else "")
                + f": make it readable for that user (e.g. chmod o+rx, or o+x {blocker}), or install Python and the "
                  "virtual environment where it can read them, or set run_as to a user who can "
                  "(run_as=root keeps root: unsafe)")
        caps = {key: status[key] for key in privileges.CAPABILITY_SETS}
        self.privileges = {"run_as": "root" if run_as is None else f"{run_as[0]}:{run_as[1]}", "uid": uid,
                           "gid": gid, "groups": [int(g) for g in status["Groups"].split()],
                           "uid_switch": plan["uid_switch"], "capabilities": caps,
                           "capabilities_dropped": not any(int(v, 16) for v in caps.values()),
                           "no_new_privs": status["NoNewPrivs"] == "1",
                           "directories_opened": self.covered}
        self.unix_sockets = privileges.unix_socket_policy(seccomp, plan["switch_to"], uid)
        # Opened once: per job only the rules are added (confine.read_rules).
        self.read_rules = confine.read_rules(readable) if landlock else []
        self.output_cap = output_cap
        # Names of letters, digits and underscores only, as mkdtemp's own (/tmp/tmpab_c12):
        # a program splits the paths it makes on "-" as it would in any other sandbox
        # (BigCodeBench/1127 splits a temporary file's path on "-").
        self.root = tempfile.mkdtemp(prefix="codea1_zygote_")
        self.switch_to = plan["switch_to"]
        if self.switch_to is not None:
            # Searchable, not listable, by the children's user: each reaches its own job's
            # directory (its own, 0700), whose name holds a secret of this zygote, so that a
            # child of another zygote (the same user) cannot guess it.
            os.chmod(self.root, 0o711)
        self.job_secret = os.urandom(8).hex()
        self.reply = reply  # when set, result bytes are streamed as they arrive
        self.control_fd = control_fd  # "cancel JOB_ID" lines from the parent
        self.control_buffer = b""
        self.job_id = None  # the job running now, and its nonce: every frame about it names both
        self.nonce = None
        self.jobs_run = 0
        self.forker = Forker(seccomp, landlock, block_tcp, self.read_rules, file_mb, switch_to=self.switch_to,
                             drop_caps=plan["drop_caps"])
        self.forker.start([*not_for_forker] + ([control_fd] if control_fd is not None else []))

    def run_job(self, job: dict, tests_fd: int) -> dict:
        """Run one job (its tests: the memfd ``tests_fd``) and answer the reply for it."""
        # A numbered directory in the zygote's private one (made by mkdtemp, mode 0700): none
        # of mkdtemp's random-name work per job. Should the name be taken (a program that ran
        # without Landlock made it), mkdtemp's random name, never a directory made by another.
        # The zygote's secret in the name: a child of another zygote cannot guess it.
        self.jobs_run += 1
        workdir = os.path.join(self.root, f"job_{self.jobs_run}_{self.job_secret}")
        try:
            os.mkdir(workdir, 0o700)
        except FileExistsError:
            workdir = tempfile.mkdtemp(prefix="job_", dir=self.root)
        if self.switch_to is not None:  # the child's user owns it (the zygote, root, still removes it)
            try:
                os.chown(workdir, *self.switch_to)
            except BaseException:
                _remove(workdir)
                raise
        fds = []
        try:
            fds.append(memfd("job", marshal.dumps({k: v for k, v in job.items() if k != "tests"})))
            for _ in range(3):
                fds.extend(os.pipe())
            job_fd, out_r, out_w, err_r, err_w, res_r, res_w = fds
            start = time.monotonic()
            pid = self.forker.fork(workdir, [job_fd, tests_fd, out_w, err_w, res_w])
        except BaseException:  # no pipes or no child: the job fails (a sandbox error), leaving nothing here
            for fd in fds:
                os.close(fd)
            _remove(workdir)
            raise
        for fd in (job_fd, out_w, err_w, res_w):
            os.close(fd)
        budget = float(job.get("batch_timeout", 60.0)) + 1.0
        self.job_id, self.nonce = job.get("job_id"), job.get("nonce")
        exited = _pidfd(pid)  # turns readable when the child exits
        clock = TestClock(job.get("time_limits") or [], start, pid)
        try:
            reply = self._supervise(exited, out_r, err_r, res_r, budget, clock)
        except Exception:
            try:  # the child must not outlive its job: the forker kills and reaps it
                self.forker.reap(0)
            except Exception:  # noqa: BLE001 - the first error is the one to report
                pass
            raise
        finally:
            clock.close()
            if exited is not None:
                os.close(exited)
        reply["job_id"], reply["nonce"] = job.get("job_id"), job.get("nonce")
        reply["wall"] = time.monotonic() - start
        _remove(workdir)
        return reply

    def _supervise(self, exited: int | None, out_r: int, err_r: int, res_r: int, budget: float,
                   clock: TestClock) -> dict:
        buffers = {out_r: bytearray(), err_r: bytearray(), res_r: bytearray()}
        caps = {out_r: self.output_cap, err_r: self.output_cap, res_r: RESULT_CAP}
        overflow = {out_r: 0, err_r: 0, res_r: 0}
        sel = selectors.DefaultSelector()
        for fd in buffers:
            sel.register(fd, selectors.EVENT_READ)
        if self.control_fd is not None:
            sel.register(self.control_fd, selectors.EVENT_READ)
        # Streamed records are relayed at most every RELAY_INTERVAL seconds: between relays
        # the result pipe is not watched (the child's writes land in the pipe's buffer and
        # wake nobody), but the child's exit is (its pidfd), so a job's end is seen at once.
        watch_exit = exited if self.reply is not None else None
        if watch_exit is not None:
            sel.register(watch_exit, selectors.EVENT_READ)
        quiet_until = 0.0
        exit_reason = "finished"
        streamed = 0
        open_fds = set(buffers)
        while open_fds:
            now = time.monotonic()
            deadline = clock.job_deadline(budget, now)
            remaining = deadline - now
            if remaining <= 0:
                exit_reason = "timeout: the job's time budget ran out"
                break
            test_deadline = clock.deadline(now)
            if test_deadline is not None and test_deadline <= now:
                exit_reason = "timeout"
                break
            timeout = min(remaining, 0.5, test_deadline - now if test_deadline is not None else 0.5)
            if quiet_until:
                if now >= quiet_until:
                    quiet_until = 0.0
                    sel.register(res_r, selectors.EVENT_READ)
                else:
                    timeout = min(timeout, quiet_until - now)
            for key, _ in sel.select(timeout=timeout):
                fd = key.fd
                if fd == self.control_fd:
                    if self._cancel_requested():
                        exit_reason = "cancelled"
                        open_fds.clear()
                        break
                    if self.control_fd is None:  # the parent closed it
                        sel.unregister(fd)
                    continue
                if fd == watch_exit:  # the child is gone: read the rest without pauses
                    sel.unregister(watch_exit)
                    watch_exit = None
                    if quiet_until:
                        quiet_until = 0.0
                        sel.register(res_r, selectors.EVENT_READ)
                    continue
                data = os.read(fd, READ_SIZE)
                if fd == res_r and self.reply is not None and data:
                    streamed += len(data)
                    if streamed > RESULT_CAP:  # the parent must not be flooded either
                        exit_reason = "protocol: result records exceed the cap"
                        open_fds.clear()
                        break
                    write_frame(self.reply, {"chunk": True, "job_id": self.job_id, "nonce": self.nonce}, data)
                    clock.saw(data, time.monotonic())  # after the relay: a slow parent is not the child's time
                    if watch_exit is not None and len(data) < READ_SIZE:  # a full read: more is waiting
                        sel.unregister(res_r)
                        quiet_until = time.monotonic() + RELAY_INTERVAL
                    continue
                if not data:
                    sel.unregister(fd)
                    open_fds.discard(fd)
                    continue
                if fd == res_r:
                    clock.saw(data, time.monotonic())
                room = caps[fd] - len(buffers[fd])
                buffers[fd] += data[:max(room, 0)]
                overflow[fd] += max(len(data) - max(room, 0), 0)
                if fd == res_r and overflow[fd]:
                    exit_reason = "protocol: result records exceed the cap"
                    open_fds.clear()
                    break
        sel.close()
        starved = max(clock.waited() - clock.delay_at_start, 0.0)  # read before the reap: then the child is gone
        now = time.monotonic()
        deadline = clock.job_deadline(budget, now)
        status, orphans = self.forker.reap(min(deadline, clock.deadline(now) or deadline) if exit_reason == "finished" else 0)
        if status is None:
            exit_reason = exit_reason if exit_reason != "finished" else "timeout"
        elif exit_reason == "finished":
            if os.WIFSIGNALED(status):
                sig = os.WTERMSIG(status)
                exit_reason = f"crashed: {signal.Signals(sig).name}" if sig in signal.Signals._value2member_map_ else f"crashed: signal {sig}"
            elif os.WEXITSTATUS(status) == 70:
                exit_reason = "crashed: sandbox setup failed"
            elif os.WEXITSTATUS(status) == 71:  # an exception of the program's escaped the child's run
                exit_reason = "crashed: the run ended early (see stderr)"
        for fd in buffers:
            os.close(fd)

        def text(fd):
            s = buffers[fd].decode("utf-8", "replace")
            return s + (f"\n[... {overflow[fd]} more bytes dropped]" if overflow[fd] else "")

        reply = {"result": bytes(buffers[res_r]), "stdout": text(out_r), "stderr": text(err_r), "exit": exit_reason,
                 "starved": round(starved, 6)}
        if not self.seccomp:
            reply["orphans_killed"] = orphans
        return reply

    def _cancel_requested(self) -> bool:
        """Read the control pipe; True when it names the job now running (a cancel for a job
        that already ended is ignored)."""
        data = os.read(self.control_fd, 4096)
        if not data:
            self.control_fd = None
            return False
        self.control_buffer += data
        *lines, self.control_buffer = self.control_buffer.split(b"\n")
        return any(line.decode("utf-8", "replace") == f"cancel {self.job_id}" for line in lines)

    def close(self):
        self.forker.close()
        for _path, fd, _rights in self.read_rules:
            os.close(fd)
        shutil.rmtree(self.root, ignore_errors=True)


def _reap(pid: int, exited: int | None, deadline: float):
    """Wait for the child (ours: called in the forker) until deadline (on ``exited``, its
    pidfd, when there is one); kill its whole group when it is late. Returns the wait
    status, or None when it had to be killed."""
    while True:
        # Seen exited but not reaped: until waitpid, its pid (its group's id) cannot be
        # reused, so the group kill cannot reach a newcomer that took the number.
        if os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
            _kill_group(pid)
            return os.waitpid(pid, 0)[1]
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            _kill_group(pid)
            os.waitpid(pid, 0)
            return None
        if exited is not None:
            select.select([exited], [], [], remaining)
        else:
            time.sleep(min(remaining, 0.002))


def memfd(name: str, data: bytes) -> int:
    """An anonymous file holding ``data``, its offset at 0."""
    fd = os.memfd_create(name, 0)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.lseek(fd, 0, os.SEEK_SET)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _read_memfd(fd: int) -> bytes:
    return os.pread(fd, os.fstat(fd).st_size, 0)


def _remove(workdir: str) -> None:
    """Remove a job's directory: most hold only solution.py, for which two system calls do
    what shutil.rmtree does in a hundred lines of Python."""
    try:
        os.unlink(os.path.join(workdir, "solution.py"))
        os.rmdir(workdir)
    except OSError:
        shutil.rmtree(workdir, ignore_errors=True)


def _pidfd(pid: int) -> int | None:
    """A descriptor that turns readable when the child exits (Linux 5.3+), or None."""
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None


def _kill_group(pid: int) -> None:
    for target in (lambda: os.killpg(pid, signal.SIGKILL), lambda: os.kill(pid, signal.SIGKILL)):
        try:
            target()
        except OSError:
            pass


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.sandbox.zygote")
    parser.add_argument("--preload", default="", help="comma-separated modules to import once, before the "
                        "ground is recorded (part of it)")
    parser.add_argument("--frameworks", default=",".join(child.FRAMEWORKS),
                        help="comma-separated test frameworks to prepare (of unittest, unittest.mock, pytest; "
                             "unittest always): a job whose scripts need another runs on a zygote that has it")
    parser.add_argument("--imports", default="", help="comma-separated modules to import once, after the ground "
                        "is recorded: libraries the programs import (as a program's own import would)")
    parser.add_argument("--no-network-isolation", action="store_true")
    parser.add_argument("--no-seccomp", action="store_true")
    parser.add_argument("--no-landlock", action="store_true")
    parser.add_argument("--forbid", action="append", default=[],
                        help="a path no program may read, nor any path that holds it (repeatable; the zygote's "
                             "working directory, the home directory and the temporary directory always)")
    parser.add_argument("--read", action="append", default=[], help="a further path programs may read (repeatable)")
    parser.add_argument("--run-as", type=privileges.parse_run_as, default=privileges.DEFAULT_RUN_AS,
                        help="UID:GID (or USER[:GROUP]) children of a root zygote run as; 'root' keeps root (unsafe)")
    parser.add_argument("--file-mb", type=int, default=64)
    parser.add_argument("--output-cap", type=int, default=OUTPUT_CAP)
    parser.add_argument("--control-fd", type=int, help="pipe of 'cancel JOB_ID' lines; enables streamed results")
    args = parser.parse_args(argv)

    # The zygote's own stdout is the reply channel: keep a private handle to it and point
    # fd 1 somewhere harmless, so that nothing imported can write into the protocol.
    reply = os.fdopen(os.dup(1), "wb")
    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
    os.environ.clear()  # children add only HOME and TMPDIR
    os.environ.update(SAFE_ENV)
    # Not dumpable: children of another uid cannot open /proc/<zygote>/fd or /mem (Landlock,
    # where present, refuses it to every child, root included).
    confine.set_not_dumpable()
    network = "" if args.no_network_isolation else confine.isolate_network()
    ipc = confine.isolate_ipc()
    seccomp = (not args.no_seccomp) and confine.probe_seccomp()
    landlock = {} if args.no_landlock else confine.probe_landlock()
    preloaded, failed = [], {}
    for name in filter(None, args.preload.split(",")):
        try:
            importlib.import_module(name)
            preloaded.append(name)
        except Exception as exc:  # noqa: BLE001 - reported in the ready line
            failed[name] = f"{type(exc).__name__}: {exc}"
    frameworks = tuple(f for f in child.FRAMEWORKS if f == "unittest" or f in args.frameworks.split(","))
    # After the preloads: children start from what the zygote has then.
    imported, imports_failed = child.prepare(frameworks, [m for m in args.imports.split(",") if m])
    # What a child may read under Landlock: the interpreter and what it can import, the system.
    home = os.path.expanduser("~")  # from the password database: the pool passes no HOME
    readable = confine.read_paths([os.getcwd(), home, tempfile.gettempdir(), *args.forbid], args.read) \
        if landlock else []
    streaming = args.control_fd is not None
    # The forker starts here, before the first job line is read.
    zygote = Zygote(seccomp=seccomp, file_mb=args.file_mb, output_cap=args.output_cap,
                    reply=reply if streaming else None, control_fd=args.control_fd,
                    landlock=bool(landlock), block_tcp=not args.no_network_isolation, readable=readable,
                    not_for_forker=[reply.fileno()], run_as=args.run_as, extra_reads=args.read)
    write_frame(reply, {"ready": True, "pid": os.getpid(), "forker_pid": zygote.forker.pid, "network_isolation": network or "none", "seccomp": seccomp,
                   "landlock": landlock or "none", "readable": [p for p, _fd, _r in zygote.read_rules],
                   "subreaper": zygote.forker.subreaper,
                   "preloaded": preloaded, "preload_failed": failed, "frameworks": list(frameworks),
                   "imports": imported, "imports_failed": imports_failed, "uid": os.getuid(),
                   "privileges": zygote.privileges, "unix_sockets": zygote.unix_sockets, "ipc_namespace": ipc,
                   "python": sys.version.split()[0]})
    # The tests of the latest problem are kept here, as marshal bytes in a memfd each child
    # reads (the parent sends them once and then names them by tests_key). Only the latest:
    # the parent gives a zygote one problem's jobs in a row. They come as JSON inside the
    # job's line, or as "tests_marshal": N, the line then followed by N bytes: marshal of what
    # child.decode_tests makes of them, from the parent's cache (HumanEval+'s 9 MB of tests:
    # json.loads and decoding took 0.42 s of CPU a run).
    held_key, held_fd = None, None
    stdin = sys.stdin.buffer
    try:
        while line := stdin.readline():
            if not line.strip():
                continue
            job = None
            try:
                job = json.loads(line)
                key = job.get("tests_key")
                if "tests_marshal" in job or "tests" in job:
                    if "tests_marshal" in job:
                        size = int(job["tests_marshal"])
                        blob = stdin.read(size)
                        if len(blob) != size:
                            break  # the parent is gone
                    else:
                        blob = marshal.dumps(child.decode_tests(job.pop("tests")))
                    if held_fd is not None:
                        os.close(held_fd)
                        held_key, held_fd = None, None
                    held_fd = memfd("tests", blob)  # the child checks what it loads from it
                    held_key = key
                    del blob
                elif key is None or key != held_key:
                    write_frame(reply, {"job_id": job.get("job_id"), "nonce": job.get("nonce"), "need_tests": True})
                    continue
                answer = zygote.run_job(job, held_fd)
            except ForkerGone as exc:
                # No reply: to the pool this is a worker that died under the job (a program
                # can kill the forker where Landlock cannot scope signals), retried once on a
                # fresh worker, the program's failure when it dies again.
                sys.stderr.write(f"zygote: {exc}\n")
                return 1
            except Exception as exc:  # noqa: BLE001 - one bad job must not end the zygote
                # The zygote's own failure (memfds, pipes, the fork, reading the child's pipes),
                # never a verdict: the pool retries the job once on a fresh zygote.
                answer = {"job_id": job.get("job_id") if type(job) is dict else None,
                          "nonce": job.get("nonce") if type(job) is dict else None, "result": b"", "stdout": "",
                          "stderr": "", "exit": f"sandbox: {type(exc).__name__}: {exc}", "wall": 0.0}
            result = answer.pop("result")
            write_frame(reply, answer, result)
    finally:
        zygote.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
