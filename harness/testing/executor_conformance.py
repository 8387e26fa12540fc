"""The executor conformance suite: what every executor plugin, built-in or third-party, must do.

Use it from a test module of your executor package::

    import pytest
    from codea1.harness.testing.executor_conformance import ExecutorConformance

    class TestMyExecutor(ExecutorConformance):
        @pytest.fixture(scope="class")
        @classmethod
        def executor(cls):
            ex = MyExecutor(MyExecutor.Options(...), workers=2)
            yield ex
            ex.close()

then ``pytest -p harness.testing.executor_conformance tests/`` (or just ``pytest``: the class
carries its tests). The cases run real programs through the executor and judge them with
the harness' judge: same verdicts on the same inputs, time limits, the memory limit, the
output cap, and hostile programs (fork bomb, memory bomb, infinite loop, deep recursion,
huge stdout, files written or deleted outside the sandbox, environment secrets, network
connections, killing the parent, exiting before the tests, printed fake markers, objects
equal to everything (also inside asserts that wrap the call), monkeypatched builtins and test
runner, cancelled alarms, daemons, reads of the answer outside the job's directory: data,
runs, caches, the checkout, other jobs, other processes under /proc).
After every case the executor must still judge a good program correctly and no process
started by the case may be left anywhere on the machine.

Executors that stream results may honour ``early_stop`` (set ``streams_results = True``);
the suite checks that it then stops a settled job, and that others still finish every job.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest

from codea1.harness.records import ERROR, FAIL, PASS, TIMEOUT, ExecJob, TestCase
from codea1.harness.sandbox.confine import process_table
from codea1.harness.verdicts.asserts import parse_asserts
from codea1.harness.verdicts.execution import clock_counts, run_jobs
from codea1.harness.verdicts.expected import settle_tests
from codea1.harness.verdicts.judge import judge

GOOD = "def f(x):\n    return x + 1\n"
# The process name every case's program gives itself: one per test process, so that cases
# running at the same time in other xdist workers (or other sessions) are not mistaken for
# leftovers of this one. (/proc/PID/comm holds 15 characters; a pid fits in 6 hex digits.)
MARKER = f"codea1h{os.getpid():x}"
# First line of every case's program: name the process, so leftovers can be found by name.
NAME_PROCESS = f"__import__('ctypes').CDLL(None).prctl(15, b'{MARKER}', 0, 0, 0)\n"


def run_case(executor, code: str, asserts: str, entry_point: str | None = "f", limit: float = 2.0,
             batch: float | None = None, memory_mb: int = 1024, tests: list[TestCase] | None = None):
    """Run one named program through the executor; returns (verdict, raw result)."""
    if tests is None:
        # Asserts outside the paper's form too: the cases try both paths, data and call text.
        tests, rejected = parse_asserts(asserts, entry_point, allow_other_forms=True)
        assert not rejected, rejected
    # Expected sides written as expressions are computed first, in a job of their own, as
    # every flow does (harness.verdicts.expected): a program's job carries none.
    tests = settle_tests(executor, tests)
    job = ExecJob(job_id=f"case-{uuid.uuid4().hex[:8]}", code=NAME_PROCESS + code, tests=tests,
                  entry_point=entry_point, time_limits=[limit] * len(tests),
                  batch_timeout=batch if batch is not None else limit * len(tests) + 3, memory_mb=memory_mb)
    raw = run_jobs(executor, [job])[job.job_id]
    return judge("task", 0, job, raw), raw


def marked_processes() -> list[int]:
    return processes_named(MARKER)


def processes_named(comm: str) -> list[int]:
    """Pids of every process on the machine whose name (/proc/PID/comm) is ``comm``."""
    return [pid for pid, _ppid, _state, name in process_table() if name == comm]


# A wrong program that hunts for the answer: every file it is given or finds in a listing
# (each entry, its files, and for /proc entries their cmdline and the files of their cwd) is
# read and searched for ``answer``; returns the answer found, else the paths it could read.
HUNTER = '''import glob, os
def hunt(files, dirs, answer):
    seen = []
    def read(path):
        try:
            with open(path, 'rb') as h:
                text = h.read(1 << 20).decode('utf-8', 'replace')
        except (OSError, ValueError):
            return False
        seen.append(path)
        return answer in text
    candidates = list(files)
    for d in dirs:
        try:
            names = os.listdir(d)
        except OSError:
            continue
        seen.append(d + '/')
        for name in names[:400]:
            path = os.path.join(d, name)
            candidates += [path, path + '/cmdline', *glob.glob(path + '/*')[:50], *glob.glob(path + '/cwd/*')[:50]]
    for path in candidates:
        if read(path):
            return answer
    return 'nothing; read ' + ' '.join(seen)
'''


def checkout_source() -> str | None:
    """A source file of the project checkout codea1 runs from (None for an installed wheel,
    whose files lie in site-packages with every other library's)."""
    import codea1.harness.verdicts.judge

    path = Path(codea1.harness.verdicts.judge.__file__).resolve()
    return None if any(p.name in ("site-packages", "dist-packages") for p in path.parents) else str(path)


class ExecutorConformance:
    """Subclass it and provide an ``executor`` fixture (class-scoped is cheapest)."""

    @pytest.fixture
    def executor(self):
        raise NotImplementedError("provide an `executor` fixture in your subclass")

    @pytest.fixture(autouse=True)
    def _survives(self, executor):
        yield
        verdict, _ = run_case(executor, GOOD, "assert f(1) == 2")
        assert verdict.status == PASS, f"the executor no longer judges a good program: {verdict}"
        deadline = time.monotonic() + 30  # a wait, not a margin: returns as soon as they are gone
        while marked_processes() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert marked_processes() == [], "a process started by the program outlived its job"

    # -- same verdicts on the same inputs -------------------------------------------------
    def test_correct_and_wrong_programs(self, executor):
        assert run_case(executor, GOOD, "assert f(1) == 2\nassert f(-1) == 0")[0].status == PASS
        verdict, _ = run_case(executor, GOOD, "assert f(1) == 2\nassert f(2) == 4")
        assert verdict.status == FAIL
        assert verdict.first_failure == {"test": "assert/1", "message": "got 3, expected == 4"}
        verdict, _ = run_case(executor, "def f(x):\n    return 1 / x\n", "assert f(0) == 1")
        assert verdict.status == FAIL and "ZeroDivisionError" in verdict.first_failure["message"]
        assert run_case(executor, "def f(x) return\n", "assert f(1) == 2")[0].status == ERROR

    def test_unittest_script_tests(self, executor):
        script = ("import unittest\nclass TestCases(unittest.TestCase):\n"
                  "    def test_one(self):\n        self.assertEqual(f(1), 2)\n")
        tests = [TestCase(id="script/0", kind="script", script=script, framework="unittest")]
        assert run_case(executor, GOOD, "", None, tests=tests)[0].status == PASS
        assert run_case(executor, "def f(x):\n    return x\n", "", None, tests=tests)[0].status == FAIL

    def test_many_jobs_all_come_back_once(self, executor):
        tests, _ = parse_asserts("assert f(0) == 0", "f")
        jobs = [ExecJob(job_id=f"many-{i}", code=NAME_PROCESS + f"def f(x):\n    return x + {i % 2}\n", tests=tests,
                        entry_point="f", time_limits=[2.0], batch_timeout=5) for i in range(24)]
        seen = [r.job_id for r in executor.run(jobs)]
        assert sorted(seen) == sorted(j.job_id for j in jobs)
        results = run_jobs(executor, jobs)
        statuses = [judge("t", 0, j, results[j.job_id]).status for j in jobs]
        assert statuses == [PASS if i % 2 == 0 else FAIL for i in range(24)]

    # -- limits -----------------------------------------------------------------------------
    def test_infinite_loop_times_out(self, executor):
        verdict, _ = run_case(executor, "def f(x):\n    while True:\n        pass\n", "assert f(1) == 2\nassert f(2) == 3",
                              limit=0.5)
        assert verdict.status == TIMEOUT
        assert verdict.first_failure["test"] == "assert/0"

    def test_a_busy_machine_does_not_move_a_time_limit_verdict(self, executor):
        """Limits are on the program's own time (harness.sandbox.timing): with four busy
        processes sharing its CPU, a test that computes 0.2 s against a 0.5 s limit runs past
        the limit on the wall clock and still passes (its alarm deferred, and counted); one
        that never returns times out on its own time, not at the wall cap."""
        cpu = max(os.sched_getaffinity(0))
        spin = (f"import os, time\ndef f(x):\n    os.sched_setaffinity(0, {{{cpu}}})\n"
                "    start = time.thread_time()\n    while time.thread_time() - start < x:\n        pass\n    return 1\n")
        # Each in a session of its own, as the program is (with the kernel's autogroups, a
        # session shares a CPU fairly with each other session); each says when it is pinned.
        busy = [subprocess.Popen([sys.executable, "-c", f"import os\nos.sched_setaffinity(0, {{{cpu}}})\n"
                                  "print(flush=True)\nwhile True:\n    pass\n"], stdout=subprocess.PIPE,
                                 start_new_session=True) for _ in range(4)]
        for process in busy:
            process.stdout.readline()
        try:
            before = clock_counts(executor)
            verdict, raw = run_case(executor, spin, "assert f(0.2) == 1", limit=0.5)
            assert verdict.status == PASS, verdict
            assert raw.deferred == 1 and raw.starved > 0, raw  # past 0.5 s on the wall clock: load, not the program
            assert verdict.clock == {"deferred": 1}
            after = clock_counts(executor)  # what results.json's clock block says
            assert after["tests_deferred"] == before["tests_deferred"] + 1
            assert after["waited_for_cpu_s"] > before["waited_for_cpu_s"]
            verdict, raw = run_case(executor, spin, "assert f(1000) == 1", limit=0.5)
            assert verdict.status == TIMEOUT and raw.capped == 0, raw
        finally:
            for process in busy:
                process.kill()
                process.wait()

    def test_cancelling_the_alarm_does_not_escape_the_deadline(self, executor):
        code = ("import signal\ndef f(x):\n    signal.setitimer(signal.ITIMER_REAL, 0)\n    signal.alarm(0)\n"
                "    signal.signal(signal.SIGALRM, signal.SIG_IGN)\n    while True:\n        pass\n")
        verdict, _ = run_case(executor, code, "assert f(1) == 2", limit=0.5, batch=1.5)
        assert verdict.status == TIMEOUT  # the zygote's kill at the deadline, which the program cannot cancel

    def test_catching_the_timeout_does_not_help(self, executor):
        code = ("def f(x):\n    while True:\n        try:\n            while True:\n                pass\n"
                "        except Exception:\n            pass\n")
        assert run_case(executor, code, "assert f(1) == 2", limit=0.5)[0].status == TIMEOUT

    def test_memory_bomb_fails_within_the_limit(self, executor):
        verdict, _ = run_case(executor, "def f(x):\n    return len(bytearray(8 * 1024 ** 3))\n", "assert f(1) == 2",
                              memory_mb=512)
        assert verdict.status == FAIL
        assert "MemoryError" in verdict.first_failure["message"]

    def test_huge_stdout_is_capped_and_the_verdict_kept(self, executor):
        code = "def f(x):\n    for _ in range(200000):\n        print('x' * 100)\n    return x + 1\n"
        verdict, raw = run_case(executor, code, "assert f(1) == 2", limit=10)
        assert verdict.status == PASS
        assert len(raw.stdout) < 70 * 1024
        assert "more bytes dropped" in raw.stdout

    def test_deep_recursion_fails(self, executor):
        verdict, _ = run_case(executor, "def f(x):\n    return f(x + 1)\n", "assert f(1) == 2")
        assert verdict.status == FAIL
        assert "RecursionError" in verdict.first_failure["message"]

    # -- processes --------------------------------------------------------------------------
    def test_fork_bomb_fails(self, executor):
        verdict, _ = run_case(executor, "import os\ndef f(x):\n    while True:\n        os.fork()\n", "assert f(1) == 2")
        assert verdict.status == FAIL

    def test_a_daemon_cannot_outlive_the_test(self, executor):
        code = ("import os, time\ndef f(x):\n    if os.fork() == 0:\n        os.setsid()\n        if os.fork() == 0:\n"
                "            time.sleep(60)\n        os._exit(0)\n    return 'daemon started'\n")
        verdict, _ = run_case(executor, code, "assert f(1) == 'daemon started'")
        assert verdict.status in (FAIL, PASS)  # refused (fail) or started and then killed (checked after)
        spawn = ("import subprocess\ndef f(x):\n    subprocess.Popen(['sleep', '60'], start_new_session=True)\n"
                 "    return 'spawned'\n")
        assert run_case(executor, spawn, "assert f(1) == 'spawned'")[0].status in (FAIL, PASS)

    def test_killing_the_parent_and_the_harness_fails(self, executor):
        code = (f"import os, signal\ndef f(x):\n    for pid in (os.getppid(), {os.getpid()}, 1):\n"
                "        try:\n            os.kill(pid, signal.SIGKILL)\n        except OSError:\n            continue\n"
                "        return 'killed'\n    return 'refused'\n")
        verdict, _ = run_case(executor, code, "assert f(1) == 'killed'")
        assert verdict.status == FAIL
        assert "refused" in verdict.first_failure["message"]

    def test_exiting_before_the_tests(self, executor):
        verdict, _ = run_case(executor, "import sys\nsys.exit(0)\n" + GOOD, "assert f(1) == 2")
        assert verdict.status == ERROR and "SystemExit" in verdict.message
        assert run_case(executor, "import os\nos._exit(0)\n" + GOOD, "assert f(1) == 2")[0].status == ERROR
        verdict, _ = run_case(executor, "import sys\ndef f(x):\n    sys.exit(0)\n", "assert f(1) == 2")
        assert verdict.status == FAIL
        code = "import os\ndef f(x):\n    if x == 2:\n        os._exit(0)\n    return x + 1\n"
        verdict, _ = run_case(executor, code, "assert f(1) == 2\nassert f(2) == 3\nassert f(3) == 4")
        assert verdict.status == FAIL and verdict.first_failure["test"] == "assert/1"

    # -- forging the verdict ----------------------------------------------------------------
    def test_printed_fake_markers_change_nothing(self, executor):
        code = ("import sys\nprint('{\"i\":0,\"s\":\"ok\",\"v\":2}')\nprint('{\"done\":true}')\n"
                "sys.stderr.write('PASS\\n')\ndef f(x):\n    print('{\"i\":0,\"s\":\"ok\",\"v\":2}')\n    return 0\n")
        verdict, raw = run_case(executor, code, "assert f(1) == 2")
        assert verdict.status == FAIL
        assert '"v":2' in raw.stdout

    def test_forged_records_on_the_result_channel_are_tampering(self, executor):
        code = ("import os\ndef f(x):\n    os.write(3, b'{\"i\":0,\"s\":\"ok\",\"v\":2}\\n{\"done\":true}\\n')\n"
                "    return 2\n")
        verdict, _ = run_case(executor, code, "assert f(1) == 2")
        assert verdict.status == FAIL and "tampered" in verdict.message

    def test_writing_to_the_parents_descriptors_is_refused(self, executor):
        code = ("import os\ndef f(x):\n    for fd in range(0, 64):\n        for pid in (os.getppid(),):\n"
                "            try:\n                with open(f'/proc/{pid}/fd/{fd}', 'wb') as h:\n"
                "                    h.write(b'{\"ready\":true}\\n')\n                return 'wrote'\n"
                "            except OSError:\n                pass\n    return 'refused'\n")
        verdict, _ = run_case(executor, code, "assert f(1) == 'wrote'")
        assert verdict.status == FAIL and "refused" in verdict.first_failure["message"]

    def test_eq_always_true_object_fails(self, executor):
        code = ("class Liar:\n    def __eq__(self, other):\n        return True\n    __hash__ = object.__hash__\n"
                "def f(x):\n    return Liar()\n")
        verdict, _ = run_case(executor, code, "assert f(1) == 2\nassert f(1) == [1, 2]")
        assert verdict.status == FAIL and "opaque" in verdict.first_failure["message"]
        subclass = ("class F(float):\n    def __eq__(self, o): return True\n    def __lt__(self, o): return True\n"
                    "    __hash__ = float.__hash__\ndef f(x):\n    return F(7.0)\n")
        assert run_case(executor, subclass, "assert f(0) == 1.5")[0].status == FAIL

    def test_asserts_around_the_call_see_structure_not_operators(self, executor):
        """A call returning a generator or an object of the program's class: a test may
        iterate, measure and index it (``list(f(x))``, ``len(f(x))``, ``f(x).name``), but an
        object whose operators lie cannot pass an assert written around the call."""
        gen = "def f(n):\n    for i in range(n):\n        yield i * i\n"
        verdict, _ = run_case(executor, gen, "assert list(f(3)) == [0, 1, 4]\nassert next(f(3)) == 0\nassert 4 in f(3)")
        assert verdict.status == PASS, verdict.first_failure
        obj = ("class Box:\n    name = 'box'\n    def __len__(self):\n        return 3\n"
               "    def __getitem__(self, i):\n        return [7, 8, 9][i]\ndef f(x):\n    return Box()\n")
        verdict, _ = run_case(executor, obj, "assert len(f(1)) == 3\nassert f(1)[2] == 9\nassert f(1).name == 'box'")
        assert verdict.status == PASS, verdict.first_failure
        liar = ("class Liar:\n    def __eq__(self, o):\n        return True\n    def __sub__(self, o):\n        return 0\n"
                "    def __lt__(self, o):\n        return True\n    __hash__ = object.__hash__\n"
                "def f(x):\n    return Liar()\n")
        for test in ("assert (f(1) == 3) == True", "assert abs(f(1) - 3) < 1e-9", "assert [f(1)] == [3]"):
            assert run_case(executor, liar, test)[0].status == FAIL, test

    def test_monkeypatched_builtins_do_not_reach_the_test(self, executor):
        code = "import builtins\nbuiltins.len = lambda x: 3\nbuiltins.sorted = lambda x: [1, 2, 3]\ndef f(x):\n    return [x]\n"
        assert run_case(executor, code, "assert len(f(1)) == 3")[0].status == FAIL
        assert run_case(executor, code, "assert sorted(f(9)) == [1, 2, 3]")[0].status == FAIL
        sneaky = "import builtins\nbuiltins.sorted = lambda x: 'hacked'\ndef f(x):\n    return 'hacked'\n"
        verdict, _ = run_case(executor, sneaky, "assert f([3, 1]) == sorted([3, 1])")
        assert verdict.status == FAIL and "expected == [1, 3]" in verdict.first_failure["message"]

    def test_monkeypatched_test_runner_does_not_reach_the_tests(self, executor):
        script = ("import unittest\nclass TestCases(unittest.TestCase):\n"
                  "    def test_one(self):\n        self.assertEqual(f(1), 2)\n        self.assertTrue(f(1) == 2)\n")
        tests = [TestCase(id="script/0", kind="script", script=script, framework="unittest")]
        patcher = ("import unittest, unittest.case, builtins\n"
                   "unittest.TestCase.assertEqual = lambda *a, **k: None\n"
                   "unittest.case.TestCase.assertTrue = lambda *a, **k: None\n"
                   "unittest.TestResult.wasSuccessful = lambda self: True\n"
                   "unittest.TestResult.addFailure = lambda *a, **k: None\n"
                   "unittest.TestResult.addError = lambda *a, **k: None\n"
                   "def f(x):\n    return 0\n")
        verdict, _ = run_case(executor, patcher, "", None, tests=tests)
        assert verdict.status == FAIL

    def test_a_failure_in_process_reaches_the_parent_before_a_finalizer_can_undo_it(self, executor):
        """An in-process test's failing part is sent as it happens: a finalizer that runs
        after the test's last part and rewrites the observer's counters (raw memory) and the
        framework's result cannot make the test pass."""
        script = ("import unittest\nclass TestCases(unittest.TestCase):\n"
                  "    def test_one(self):\n        self.assertEqual(f(1), 2)\n")
        tests = [TestCase(id="script/0", kind="script", script=script, framework="unittest")]
        rollback = (
            "import ctypes, sys\n"
            "class Rollback:\n"
            "    def __init__(self, case):\n"
            "        self.case, self.state = case, type(case).__dict__['_callTestMethod'].__defaults__[0]\n"
            "        self.result = case._outcome.result\n"
            "    def __del__(self):\n"
            "        i = self.state[1].index(self.case._testMethodName)\n"
            "        ctypes.c_ssize_t.from_address(id(self.state[3][i]) + 16).value = 0\n"
            "        ctypes.c_ssize_t.from_address(id(self.state[4][i]) + 16).value = 1\n"
            "        self.state[5].clear()\n"
            "        self.result.failures.clear()\n"
            "def f(x):\n"
            "    case = sys._getframe(1).f_locals['self']\n"
            "    case._outcome.__dict__['rollback'] = Rollback(case)\n"
            "    return 0\n")
        verdict, _ = run_case(executor, rollback, "", None, tests=tests)
        assert verdict.status == FAIL and "failed as it ran" in verdict.first_failure["message"], verdict

    # -- the outside world ------------------------------------------------------------------
    def test_files_outside_the_sandbox_stay_untouched(self, executor):
        outside = Path.home() / f".codea1-conformance-{uuid.uuid4().hex[:8]}"
        outside.mkdir()
        keep = outside / "keep.txt"
        keep.write_text("keep")
        tmp_target = Path("/tmp") / f"codea1-conformance-{uuid.uuid4().hex[:8]}"
        try:
            code = (f"import os, shutil\ndef f(x):\n    done = []\n"
                    f"    for action in (lambda: open({str(keep)!r}, 'w').write('changed'),\n"
                    f"                   lambda: os.remove({str(keep)!r}),\n"
                    f"                   lambda: open({str(outside / 'new.txt')!r}, 'w').write('new'),\n"
                    f"                   lambda: open({str(tmp_target)!r}, 'w').write('new'),\n"
                    f"                   lambda: shutil.rmtree({str(outside)!r})):\n"
                    "        try:\n            action()\n            done.append(1)\n        except OSError:\n"
                    "            done.append(0)\n    return done\n")
            verdict, _ = run_case(executor, code, "assert f(1) == [1, 1, 1, 1, 1]")
            assert verdict.status == FAIL
            assert keep.read_text() == "keep"
            assert sorted(p.name for p in outside.iterdir()) == ["keep.txt"]
            assert not tmp_target.exists()
        finally:
            for path in (tmp_target, outside / "new.txt", keep):
                if path.exists():
                    path.unlink()
            outside.rmdir()

    def test_private_working_directory_is_removed(self, executor):
        code = "import os\ndef f(x):\n    open('scratch.txt', 'w').write('x')\n    return os.getcwd()\n"
        verdict, _ = run_case(executor, code, "assert f(0) == ''")
        cwd = verdict.first_failure["message"].split("got '", 1)[1].split("'", 1)[0]
        assert cwd != os.getcwd()
        assert not os.path.exists(os.path.join(cwd, "scratch.txt"))

    def test_environment_secrets_are_not_visible(self, executor, monkeypatch):
        monkeypatch.setenv("CODEA1_CONFORMANCE_SECRET", "hunter2")
        code = ("import os\ndef f(x):\n    try:\n        env = open('/proc/self/environ', 'rb').read()\n"
                "    except OSError:  # unreadable where /proc is closed to the program\n        env = b''\n"
                "    return [k for k in os.environ if 'SECRET' in k] + [b'hunter2' in env]\n")
        verdict, _ = run_case(executor, code, "assert f(0) == [True]")
        assert verdict.status == FAIL
        assert "got [False]" in verdict.first_failure["message"]

    def test_network_is_unreachable(self, executor):
        server = socket.socket()
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        server.settimeout(3)
        port = server.getsockname()[1]
        accepted = []

        def accept():
            try:
                accepted.append(server.accept())
            except OSError:
                pass

        thread = threading.Thread(target=accept)
        thread.start()
        code = (f"import socket\ndef f(x):\n    try:\n        socket.create_connection(('127.0.0.1', {port}), timeout=1)\n"
                "        return 'connected'\n    except OSError:\n        return 'refused'\n")
        verdict, _ = run_case(executor, code, "assert f(0) == 'connected'")
        thread.join()
        server.close()
        assert verdict.status == FAIL
        assert accepted == []

    # -- what the program can read -----------------------------------------------------------
    def test_programs_still_import_and_use_their_own_directory(self, executor):
        """Reads are confined to the interpreter, its libraries and the job's directory: the
        standard library, numpy where installed, a file of its own, and a KodCode-style pytest
        file importing ``solution`` all still work."""
        code = ("import json, re, collections, math, os\n"
                "def f(x):\n    try:\n        import numpy\n        total = int(numpy.arange(x + 1).sum())\n"
                "    except ImportError:\n        total = sum(range(x + 1))\n"
                "    with open('notes.txt', 'w') as h:\n        h.write(json.dumps({'n': total}))\n"
                "    with open(os.path.join(os.getcwd(), 'notes.txt')) as h:\n        n = json.loads(h.read())['n']\n"
                "    return [n, len(re.findall('a', 'banana')), collections.Counter('aab')['a'], math.isqrt(17)]\n")
        verdict, _ = run_case(executor, code, "assert f(3) == [6, 3, 2, 4]")
        assert verdict.status == PASS, verdict.first_failure
        script = "from solution import f\n\ndef test_f():\n    assert f(3) == [6, 3, 2, 4]\n"
        tests = [TestCase(id="script/0", kind="script", script=script, framework="pytest")]
        verdict, _ = run_case(executor, code, "", None, tests=tests, limit=60)
        assert verdict.status == PASS, verdict.message

    def test_the_answer_cannot_be_read_from_outside_the_job(self, executor, tmp_path):
        """A wrong program hunts for a file that holds the answer: benchmark data in a
        directory of its own, a run directory, ~/.cache/codea1, a sibling job's directory,
        the checkout's sources, other processes' command lines and working directories under
        /proc (a process started in the data directory with the data file on its command
        line, as a harness is), listings of / and /work. It finds nothing and fails."""
        answer = f"answer-{uuid.uuid4().hex}"
        data = tmp_path / "data"
        data.mkdir()
        (data / "problems.jsonl").write_text(f'{{"reference": "{answer}"}}\n')
        run_dir = Path.cwd() / f".codea1-conformance-run-{uuid.uuid4().hex[:8]}"
        cache = Path.home() / ".cache" / "codea1" / f"conformance-{uuid.uuid4().hex[:8]}.json"
        sibling, made = None, []
        verdict, _ = run_case(executor, "import os\ndef f(x):\n    return os.getcwd()\n", "assert f(0) == ''")
        job_dir = Path(verdict.first_failure["message"].split("got '", 1)[1].split("'", 1)[0])
        holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)", str(data / "problems.jsonl")],
                                  cwd=data)
        try:
            run_dir.mkdir()
            (run_dir / "verdicts.jsonl").write_text(answer)
            cache.parent.mkdir(parents=True, exist_ok=True)
            cache.write_text(answer)
            if job_dir is not None and job_dir.is_absolute():
                sibling = job_dir.parent / f"job-{uuid.uuid4().hex[:8]}"
                made = [p for p in (sibling, *sibling.parents) if not p.exists()]  # a wrapped zygote's root is not here
                sibling.mkdir(parents=True)
                (sibling / "solution.py").write_text(answer)
            files = [data / "problems.jsonl", run_dir / "verdicts.jsonl", cache, checkout_source(),
                     *([sibling / "solution.py"] if sibling else []), f"/proc/{holder.pid}/cmdline",
                     f"/proc/{os.getpid()}/cmdline", f"/proc/{holder.pid}/cwd/problems.jsonl"]
            dirs = ["/", "/work", "/tmp", "/proc", str(data), str(run_dir), str(cache.parent),
                    f"/proc/{holder.pid}/cwd", *([str(sibling.parent)] if sibling else [])]
            code = HUNTER + f"def f(x):\n    return hunt({[str(p) for p in files if p]!r}, {dirs!r}, {answer!r})\n"
            verdict, _ = run_case(executor, code, f"assert f(1) == {answer!r}", limit=20)
            assert verdict.status == FAIL
            assert verdict.first_failure["message"].startswith("got 'nothing; read ',"), verdict.first_failure
        finally:
            holder.kill()
            holder.wait()
            for path in (run_dir / "verdicts.jsonl", cache, *([sibling / "solution.py"] if sibling else [])):
                if path.exists():
                    path.unlink()
            for path in (run_dir, *made):
                if path.exists():
                    path.rmdir()

    # -- streaming --------------------------------------------------------------------------
    def test_early_stop(self, executor):
        """A slow wrong program: a streaming executor stops it after its first failed test;
        any executor still returns a complete, correct result."""
        tests, _ = parse_asserts("\n".join(f"assert f({i}) == {i}" for i in range(6)), "f")
        job = ExecJob(job_id="slow", code=NAME_PROCESS + "import time\ndef f(x):\n    time.sleep(0.3)\n    return -1\n",
                      tests=tests, entry_point="f", time_limits=[2.0] * 6, batch_timeout=30, fail_fast=True)

        def stop(job, i, outcome):
            return outcome.value != job.tests[i].expected

        raw = run_jobs(executor, [job], early_stop=stop)["slow"]
        verdict = judge("t", 0, job, raw)
        assert verdict.status == FAIL and verdict.first_failure["test"] == "assert/0"
        if getattr(executor, "streams_results", False):
            assert raw.exit == "cancelled"  # stopped by the harness, not run to the end
            assert [t.status for t in verdict.tests[1:]] == ["not_run"] * 5
