"""The subprocess executor against hostile programs: each case asserts the verdict, that the
harness survived (a normal job still passes), and that no process was left behind."""

from __future__ import annotations

import os
import socket
import threading
import time

import pytest
from codea1_testkit import run_code

from harness.records import ERROR, FAIL, PASS, TIMEOUT

GOOD = "def f(x):\n    return x + 1\n"


def zygote_children(executor) -> list[int]:
    """Processes whose parent is one of the executor's zygotes (should be none between jobs)."""
    zygotes = {z.proc.pid for z in executor.pool._all}
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as fh:
                    fields = fh.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) in zygotes:
                found.append(int(entry))
    return found


@pytest.fixture
def survive(executor):
    """After the test: the harness still judges a good program, and no child lingers."""
    yield
    verdict, _ = run_code(executor, GOOD, "assert f(1) == 2", "f")
    assert verdict.status == PASS
    deadline = time.monotonic() + 2
    while zygote_children(executor) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert zygote_children(executor) == []


def test_correct_and_wrong(executor, survive):
    assert run_code(executor, GOOD, "assert f(1) == 2\nassert f(-1) == 0", "f")[0].status == PASS
    verdict, _ = run_code(executor, GOOD, "assert f(1) == 2\nassert f(2) == 4", "f")
    assert verdict.status == FAIL
    assert verdict.first_failure == {"test": "assert/1", "message": "got 3, expected == 4"}


def test_eq_always_true_object_fails(executor, survive):
    code = "class Liar:\n    def __eq__(self, other):\n        return True\n    __hash__ = object.__hash__\n" \
           "def f(x):\n    return Liar()\n"
    verdict, _ = run_code(executor, code, "assert f(1) == 2\nassert f(1) == [1, 2]", "f")
    assert verdict.status == FAIL
    assert "opaque" in verdict.first_failure["message"]


def test_builtin_subclass_with_lying_operators_is_reduced_to_its_value(executor, survive):
    code = "class F(float):\n    def __eq__(self, o): return True\n    def __lt__(self, o): return True\n" \
           "    __hash__ = float.__hash__\ndef f(x):\n    return F(7.0)\n"
    verdict, _ = run_code(executor, code, "assert f(0) == 1.5", "f")
    assert verdict.status == FAIL
    assert run_code(executor, code, "assert f(0) < 3", "f")[0].status == FAIL


def test_operator_overloading_around_the_call_cannot_steer_the_test(executor, survive):
    # The call's value is plain data before `- 3.0` and abs() see it.
    code = "class Z:\n    def __sub__(self, o): return 0.0\n    def __rsub__(self, o): return 0.0\ndef f():\n    return Z()\n"
    verdict, _ = run_code(executor, code, "assert abs(f() - 3.0) < 1e-9", "f")
    assert verdict.status == FAIL


def test_sys_exit_at_import_is_an_error(executor, survive):
    verdict, _ = run_code(executor, "import sys\nsys.exit(0)\n" + GOOD, "assert f(1) == 2", "f")
    assert verdict.status == ERROR
    assert "SystemExit" in verdict.message


def test_sys_exit_inside_the_function_fails(executor, survive):
    verdict, _ = run_code(executor, "import sys\ndef f(x):\n    sys.exit(0)\n", "assert f(1) == 2", "f")
    assert verdict.status == FAIL
    assert "SystemExit" in verdict.first_failure["message"]


def test_os_exit_before_tests_is_an_error(executor, survive):
    verdict, _ = run_code(executor, "import os\nos._exit(0)\n" + GOOD, "assert f(1) == 2", "f")
    assert verdict.status == ERROR


def test_os_exit_during_a_test_fails(executor, survive):
    code = "import os\ndef f(x):\n    if x == 2:\n        os._exit(0)\n    return x + 1\n"
    verdict, _ = run_code(executor, code, "assert f(1) == 2\nassert f(2) == 3\nassert f(3) == 4", "f")
    assert verdict.status == FAIL
    assert verdict.first_failure["test"] == "assert/1"


def test_printed_fake_markers_change_nothing(executor, survive):
    code = ("import sys\nprint('{\"i\":0,\"s\":\"ok\",\"v\":2}')\nprint('{\"done\":true}')\n"
            "sys.stderr.write('PASS\\n')\ndef f(x):\n    print('{\"i\":0,\"s\":\"ok\",\"v\":2}')\n    return 0\n")
    verdict, raw = run_code(executor, code, "assert f(1) == 2", "f")
    assert verdict.status == FAIL
    assert '"v":2' in raw.stdout


def test_forged_records_on_the_result_channel_are_tampering(executor, survive):
    code = ("import os\ndef f(x):\n    os.write(3, b'{\"i\":0,\"s\":\"ok\",\"v\":2}\\n{\"done\":true}\\n')\n"
            "    return 2\n")
    verdict, _ = run_code(executor, code, "assert f(1) == 2", "f")
    assert verdict.status == FAIL
    assert "tampered" in verdict.message


def test_infinite_loop_times_out(executor, survive):
    start = time.monotonic()
    verdict, _ = run_code(executor, "def f(x):\n    while True:\n        pass\n", "assert f(1) == 2\nassert f(2) == 3",
                          "f", limit=0.5)
    assert verdict.status == TIMEOUT
    assert verdict.first_failure["test"] == "assert/0"
    assert time.monotonic() - start < 5


def test_cancelling_the_alarm_does_not_escape_the_deadline(executor, survive):
    code = ("import signal\ndef f(x):\n    signal.setitimer(signal.ITIMER_REAL, 0)\n    signal.alarm(0)\n"
            "    signal.signal(signal.SIGALRM, signal.SIG_IGN)\n    while True:\n        pass\n")
    start = time.monotonic()
    verdict, raw = run_code(executor, code, "assert f(1) == 2", "f", limit=0.5, batch=1.5)
    assert verdict.status == TIMEOUT
    assert raw.exit == "timeout"
    assert time.monotonic() - start < 6


def test_catching_the_timeout_does_not_help(executor, survive):
    code = "def f(x):\n    while True:\n        try:\n            while True:\n                pass\n        except Exception:\n            pass\n"
    verdict, _ = run_code(executor, code, "assert f(1) == 2", "f", limit=0.5)
    assert verdict.status == TIMEOUT


def test_memory_bomb_fails_within_the_limit(executor, survive):
    verdict, _ = run_code(executor, "def f(x):\n    return len(bytearray(8 * 1024 ** 3))\n", "assert f(1) == 2", "f",
                          memory_mb=512)
    assert verdict.status == FAIL
    assert "MemoryError" in verdict.first_failure["message"]


def test_fork_bomb_and_daemons_cannot_start(executor, survive):
    code = ("import os, subprocess\ndef f(x):\n    try:\n        os.fork()\n        return 'forked'\n"
            "    except OSError as e:\n        pass\n    try:\n        subprocess.Popen(['sleep', '100'])\n"
            "        return 'spawned'\n    except OSError:\n        return 'refused'\n")
    verdict, _ = run_code(executor, code, "assert f(1) == 'refused'", "f")
    assert verdict.status == PASS
    bomb = "import os\ndef f(x):\n    while True:\n        os.fork()\n"
    assert run_code(executor, bomb, "assert f(1) == 2", "f")[0].status == FAIL


def test_threads_still_work(executor, survive):
    code = ("import threading\ndef f(x):\n    out = []\n    t = threading.Thread(target=lambda: out.append(x * 2))\n"
            "    t.start(); t.join()\n    return out[0]\n")
    assert run_code(executor, code, "assert f(21) == 42", "f")[0].status == PASS


def test_deep_recursion_fails(executor, survive):
    verdict, _ = run_code(executor, "def f(x):\n    return f(x + 1)\n", "assert f(1) == 2", "f")
    assert verdict.status == FAIL
    assert "RecursionError" in verdict.first_failure["message"]


def test_huge_stdout_is_capped_and_the_verdict_kept(executor, survive):
    code = "def f(x):\n    for _ in range(200000):\n        print('x' * 100)\n    return x + 1\n"
    verdict, raw = run_code(executor, code, "assert f(1) == 2", "f", limit=10)
    assert verdict.status == PASS
    assert len(raw.stdout) < 70 * 1024
    assert "more bytes dropped" in raw.stdout


def test_monkeypatched_builtins_do_not_reach_the_test(executor, survive):
    code = "import builtins\nbuiltins.len = lambda x: 3\nbuiltins.sorted = lambda x: [1, 2, 3]\ndef f(x):\n    return [x]\n"
    verdict, _ = run_code(executor, code, "assert len(f(1)) == 3", "f")
    assert verdict.status == FAIL
    assert run_code(executor, code, "assert sorted(f(9)) == [1, 2, 3]", "f")[0].status == FAIL


def test_environment_secrets_are_not_visible(executor, survive, monkeypatch):
    # The executor's zygotes were started before this test; a secret set in the parent now,
    # or at any time, never reaches them: they start from a minimal environment.
    code = ("import os\ndef f(x):\n    env = open('/proc/self/environ', 'rb').read()\n"
            "    return [k for k in os.environ] + [b'SECRET' in env]\n")
    verdict, raw = run_code(executor, code, "assert f(0) == []", "f")
    assert verdict.status == FAIL
    assert "SECRET" not in verdict.first_failure["message"]
    assert "False" in verdict.first_failure["message"]


def test_network_is_unreachable(executor, survive):
    info = executor.info()
    if info.get("network_isolation") == "none":
        pytest.skip("this OS refused a network namespace (neither root nor user namespaces)")
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

    t = threading.Thread(target=accept)
    t.start()
    code = (f"import socket\ndef f(x):\n    try:\n        socket.create_connection(('127.0.0.1', {port}), timeout=1)\n"
            "        return 'connected'\n    except OSError:\n        return 'refused'\n")
    verdict, _ = run_code(executor, code, "assert f(0) == 'refused'", "f")
    t.join()
    server.close()
    assert verdict.status == PASS
    assert accepted == []


def test_private_working_directory_is_removed(executor, survive):
    code = "import os\ndef f(x):\n    open('scratch.txt', 'w').write('x')\n    return os.getcwd()\n"
    verdict, _ = run_code(executor, code, "assert f(0) == ''", "f")
    cwd = verdict.first_failure["message"].split("got '", 1)[1].split("'", 1)[0]
    assert "codea1-zygote-" in cwd
    assert not os.path.exists(cwd)


def test_expected_side_is_evaluated_before_the_program_loads(executor, survive):
    # The program rebinds sorted() for everyone; the expected value was computed before.
    code = "import builtins\nbuiltins.sorted = lambda x: 'hacked'\ndef f(x):\n    return 'hacked'\n"
    verdict, _ = run_code(executor, code, "assert f([3, 1]) == sorted([3, 1])", "f")
    assert verdict.status == FAIL
    assert "expected == [1, 3]" in verdict.first_failure["message"]


def test_many_jobs_use_all_workers(executor):
    from harness.execution import run_jobs
    from harness.asserts import parse_asserts
    from harness.records import ExecJob

    tests, _ = parse_asserts("assert f(0) == 0", "f")
    jobs = [ExecJob(job_id=str(i), code="import time\ndef f(x):\n    time.sleep(0.3)\n    return x\n", tests=tests,
                    entry_point="f", time_limits=[2.0], batch_timeout=5) for i in range(6)]
    start = time.monotonic()
    results = run_jobs(executor, jobs)
    elapsed = time.monotonic() - start
    assert sorted(results) == [str(i) for i in range(6)]
    assert all(r.outcomes[0].status == "ok" for r in results.values())
    assert elapsed < 6 * 0.3  # two workers: about 0.9 s, never the serial 1.8 s


def test_early_stop_cancels_a_program_once_its_verdict_is_settled(executor):
    """A wrong but slow program: the harness sees test 0 fail and stops the job instead of
    running the other 9 tests for 0.4 s each."""
    from harness.asserts import parse_asserts
    from harness.execution import run_jobs
    from harness.judge import judge
    from harness.records import ExecJob

    tests, _ = parse_asserts("\n".join(f"assert f({i}) == {i}" for i in range(10)), "f")
    job = ExecJob(job_id="slow", code="import time\ndef f(x):\n    time.sleep(0.4)\n    return -1\n", tests=tests,
                  entry_point="f", time_limits=[2.0] * 10, batch_timeout=30, fail_fast=True)
    asked = []

    def stop(job, i, outcome):
        asked.append(i)
        return outcome.value != job.tests[i].expected

    start = time.monotonic()
    raw = run_jobs(executor, [job], early_stop=stop)["slow"]
    assert time.monotonic() - start < 2.0
    assert raw.exit == "cancelled" and asked[0] == 0
    verdict = judge("t", 0, job, raw)
    assert verdict.status == FAIL and verdict.first_failure["test"] == "assert/0"
    assert [t.status for t in verdict.tests[1:]] == ["not_run"] * 9
    # Without early stop, the same job runs to the end.
    full = run_jobs(executor, [job])["slow"]
    assert full.exit == "finished" and all(o.status == "ok" for o in full.outcomes)


def test_flooding_the_result_channel_is_cut_off(executor, survive, monkeypatch):
    code = "import os\ndef f(x):\n    block = b'x' * 65536\n    while True:\n        os.write(3, block)\n"
    verdict, raw = run_code(executor, code, "assert f(1) == 2", "f", limit=60, batch=60)
    assert verdict.status == FAIL and "tampered" in verdict.message
    assert raw.exit.startswith("protocol:")
