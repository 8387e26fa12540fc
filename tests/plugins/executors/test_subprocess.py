"""What is particular to the subprocess executor (the conformance suite covers the rest):
seccomp refusing processes while threads work, parallel zygotes, early stop, the result
cap, and without seccomp, the zygote killing what a program leaves behind."""

from __future__ import annotations

import os
import time

import pytest
from codea1_testkit import run_code

from codea1.harness.records import ERROR, FAIL, PASS
from codea1.harness.sandbox.executor import READ_GUARANTEES, forbidden_paths
from codea1.harness.testing.executor_conformance import processes_named

GOOD = "def f(x):\n    return x + 1\n"


def zygote_children(executor) -> list[int]:
    """Processes whose parent is one of the executor's zygotes or their forkers, forkers aside
    (should be none between jobs)."""
    forkers = {z.info["forker_pid"] for z in executor.pool._all}
    zygotes = {z.proc.pid for z in executor.pool._all} | forkers
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as fh:
                    fields = fh.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) in zygotes and int(entry) not in forkers:
                found.append(int(entry))
    return found


@pytest.fixture
def survive(executor):
    """After the test: the harness still judges a good program, and no child lingers."""
    yield
    verdict, _ = run_code(executor, GOOD, "assert f(1) == 2", "f")
    assert verdict.status == PASS
    deadline = time.monotonic() + 30  # a wait, not a margin
    while zygote_children(executor) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert zygote_children(executor) == []


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


def test_a_program_sees_the_safe_environment_and_its_own_file(executor):
    """The zygote scrubs its environment once; each child adds only HOME and TMPDIR, its
    working directory, where the program's source lies as solution.py."""
    from codea1.harness.sandbox.zygote import SAFE_ENV

    code = ("import os, sys, tempfile\n"
            "def f(x):\n"
            "    here = os.getcwd()\n"
            "    src = open(sys.modules['solution'].__file__).read()\n"
            "    return [dict(os.environ), here, tempfile.gettempdir() == here,\n"
            "            sys.modules['solution'].__file__ == here + '/solution.py', 'def f(x)' in src]\n")
    _, raw = run_code(executor, code, "assert f(1) == 0", "f", fail_fast=False)
    env, here, temp_here, file_here, has_source = raw.outcomes[0].value
    assert env == {**SAFE_ENV, "HOME": here, "TMPDIR": here}
    assert here.startswith("/") and os.path.basename(here).startswith("job_")
    # Its names and the zygote's hold no "-": paths split on it as elsewhere (BigCodeBench/1127).
    assert "-" not in os.path.relpath(here, os.path.dirname(os.path.dirname(here)))
    assert temp_here and file_here and has_source


def test_many_jobs_use_all_workers(executor):
    from codea1.harness.records import ExecJob
    from codea1.harness.verdicts.asserts import parse_asserts
    from codea1.harness.verdicts.execution import run_jobs

    tests, _ = parse_asserts("assert f(0) == 0", "f")
    # Each program answers with its zygote's pid (its parent): which workers ran the jobs.
    jobs = [ExecJob(job_id=str(i), code="import os, time\ndef f(x):\n    time.sleep(0.3)\n    return os.getppid()\n",
                    tests=tests, entry_point="f", time_limits=[2.0], batch_timeout=5) for i in range(6)]
    results = run_jobs(executor, jobs)
    assert sorted(results) == [str(i) for i in range(6)]
    assert all(r.outcomes[0].status == "ok" for r in results.values())
    assert len({r.outcomes[0].value for r in results.values()}) == 2  # both workers, not one by one


def test_early_stop_cancels_a_program_once_its_verdict_is_settled(executor):
    """A wrong but slow program: the harness sees test 0 fail and stops the job instead of
    running the other 9 tests for 0.4 s each."""
    from codea1.harness.records import ExecJob
    from codea1.harness.verdicts.asserts import parse_asserts
    from codea1.harness.verdicts.execution import run_jobs
    from codea1.harness.verdicts.judge import judge

    tests, _ = parse_asserts("\n".join(f"assert f({i}) == {i}" for i in range(10)), "f")
    job = ExecJob(job_id="slow", code="import time\ndef f(x):\n    time.sleep(0.4)\n    return -1\n", tests=tests,
                  entry_point="f", time_limits=[2.0] * 10, batch_timeout=30, fail_fast=True)
    asked = []

    def stop(job, i, outcome):
        asked.append(i)
        return outcome.value != job.tests[i].expected

    raw = run_jobs(executor, [job], early_stop=stop)["slow"]
    assert raw.exit == "cancelled" and asked[0] == 0  # stopped, not run to the end
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


def test_without_seccomp_a_daemon_is_killed_after_its_job(plugins):
    """Programs that must start processes (some BigCodeBench tasks) run with seccomp off;
    the zygote is their subreaper and kills any daemon they leave."""
    ex = plugins.executors.create("subprocess", {"seccomp": "false"}, workers=1)
    try:
        code = ("import os, time, ctypes\ndef f(x):\n    if os.fork() == 0:\n        os.setsid()\n"
                "        if os.fork() == 0:\n            ctypes.CDLL(None).prctl(15, b'codea1-daemon', 0, 0, 0)\n"
                "            time.sleep(60)\n        os._exit(0)\n    time.sleep(0.3)\n    return 'started'\n")
        verdict, _ = run_code(ex, code, "assert f(1) == 'started'", "f")
        assert verdict.status == PASS  # the daemon did start...
        assert processes_named("codea1-daemon") == []  # ...and is gone with its job
    finally:
        ex.close()


@pytest.mark.parametrize("run_as", ["root", "65534:65534"])
def test_a_program_without_landlock_cannot_plant_files_for_the_next_job(plugins, run_as):
    """Job directories are numbered in the zygote's private directory, each name ending in a
    secret of that zygote. A program that runs without Landlock as the zygote's own user
    (any user but root; run_as=root where the harness is root) can make the next names
    itself; the next job must then get a fresh directory of its own, never the planted one.
    Children that a root zygote switched to another user cannot write there at all."""
    ex = plugins.executors.create("subprocess", {"landlock": "false", "run_as": run_as}, workers=1)
    try:
        switched = ex.info()["privileges"]["uid_switch"].startswith("switched")
        plant = ("import os\ndef f(x):\n    here = os.getcwd()\n    root, name = os.path.split(here)\n"
                 "    _, n, secret = name.split('_')\n    for k in range(int(n) + 1, int(n) + 4):\n"
                 "        try:\n            os.mkdir(os.path.join(root, f'job_{k}_{secret}'))\n"
                 "        except PermissionError:\n            return 'refused'\n"
                 "        open(os.path.join(root, f'job_{k}_{secret}', 'planted.txt'), 'w').write('answer')\n"
                 "    return 'planted'\n")
        verdict, _ = run_code(ex, plant, f"assert f(1) == {'refused' if switched else 'planted'!r}", "f")
        assert verdict.status == PASS, verdict  # without Landlock the zygote's own user could write there
        look = "import os\ndef f(x):\n    return sorted(os.listdir('.'))\n"
        verdict, raw = run_code(ex, look, "assert f(1) == ['solution.py']", "f")
        assert verdict.status == PASS, raw.outcomes[0]
    finally:
        ex.close()


def test_info_reports_what_is_enforced(executor):
    info = executor.info()
    assert info["seccomp"] is True and info["subreaper"] is True
    assert info["landlock"] == "none" or info["landlock"]["landlock_abi"] >= 1


def test_info_states_what_a_program_can_read(executor):
    """environment.json's executor.reads: with Landlock every guarantee holds, and no
    readable path is or holds the checkout, the working directory or the home directory."""
    reads = executor.info()["reads"]
    assert set(reads["guarantees"]) == set(READ_GUARANTEES)
    if executor.info()["landlock"] == "none":
        assert not any(reads["guarantees"].values())
        return
    assert reads["enforced_by"] == ["landlock"]
    assert all(reads["guarantees"].values()), reads["guarantees"]
    for forbidden in forbidden_paths():
        assert not any(forbidden == p or forbidden.startswith(p.rstrip("/") + "/") for p in reads["paths"]), forbidden
    assert any(os.__file__.startswith(p + "/") for p in reads["paths"])


def test_a_record_cut_by_the_cancel_is_not_taken_for_tampering(executor):
    """Test 0 fails; test 1 returns 8 MB, written through the pipe while the harness cancels
    the job: the kill cuts that record short. The verdict names test 0's failure (it read
    "result channel tampered with" when the cut line was parsed as a record)."""
    from codea1.harness.records import ExecJob
    from codea1.harness.verdicts.asserts import parse_asserts
    from codea1.harness.verdicts.execution import run_jobs
    from codea1.harness.verdicts.judge import judge

    tests, _ = parse_asserts("assert f(0) == 0\n" + "\n".join(f"assert f({i}) == ''" for i in range(1, 6)), "f")
    code = "def f(x):\n    return 'ab' * 4_000_000 if x else 'wrong'\n"

    def slow_stop(job, i, outcome):
        # While the harness thinks, the child starts writing test 1's record and the pipes fill.
        time.sleep(0.5)
        return True
    for attempt in range(3):
        job = ExecJob(job_id=f"cut{attempt}", code=code, tests=tests, entry_point="f", time_limits=[10.0] * 6,
                      batch_timeout=60, fail_fast=True)
        raw = run_jobs(executor, [job], early_stop=slow_stop)[job.job_id]
        verdict = judge("t", 0, job, raw)
        assert verdict.status == FAIL and verdict.first_failure["test"] == "assert/0", verdict.message
        assert not raw.exit.startswith("protocol:")


def test_a_zygote_holds_the_tests_of_its_latest_problem_and_asks_for_others(monkeypatch):
    """Tests travel once per run of a problem's jobs on a zygote, which holds only the latest
    problem's (every fork copies the page tables of what it holds), so the pool gives a
    zygote one problem's jobs in a row. A zygote asked about tests it does not hold answers
    "need_tests", and the job still runs against its own tests."""
    from codea1.harness.records import ExecJob, TestCase
    from codea1.harness.sandbox import pool
    from codea1.harness.sandbox.executor import ZygoteExecutor
    from codea1.harness.verdicts.execution import PayloadEncoder, run_jobs

    sent, asked_again = [], []
    send = pool._Zygote._send

    def counting_send(self, data, reply, on_chunk):
        sent.append((reply.job_id, b',"tests":' in data))
        header, body = send(self, data, reply, on_chunk)
        if header.get("need_tests"):
            asked_again.append(reply.job_id)
        return header, body

    monkeypatch.setattr(pool._Zygote, "_send", counting_send)
    problems = [[TestCase(id=name, args=[name * 1000], has_expected=False)] for name in ("a", "b")]

    def job(i, tests):
        return ExecJob(job_id=f"{i}", code="def f(s):\n    return s[0] + str(len(s))\n", tests=tests, entry_point="f",
                       time_limits=[10.0], batch_timeout=60)

    with ZygoteExecutor(workers=1) as executor:
        results = run_jobs(executor, [job(i, problems[i % 2]) for i in range(6)])  # a, b, a, b, a, b
        assert [results[str(i)].outcomes[0].value for i in range(6)] == ["a1000", "b1000"] * 3
        assert [job_id for job_id, with_tests in sent if with_tests] == ["0", "1"]  # a's three jobs, then b's
        assert [job_id for job_id, _ in sent] == ["0", "2", "4", "1", "3", "5"]
        # Sent alone, in turns, the tests travel every time.
        sent.clear()
        zygote = executor.pool._all[0]
        for i in range(4):
            header, body = zygote.request(*PayloadEncoder()(job(10 + i, problems[i % 2])), job_id=str(10 + i))
            assert f'"v":"{"ab"[i % 2]}1000"'.encode() in body
        assert [with_tests for _, with_tests in sent] == [True] * 4 and asked_again == []
        # The parent believes the zygote holds b's tests; it holds a's: it asks for them.
        head, tests_key, tests_json, tests_blob = PayloadEncoder()(job(20, problems[1]))
        zygote.request(*PayloadEncoder()(job(19, problems[0])), job_id="19")
        zygote.held_tests = tests_key
        header, body = zygote.request(head, tests_key, tests_json, tests_blob, job_id="20")
        assert asked_again == ["20"] and b'"v":"b1000"' in body


def test_tests_travel_as_marshal_bytes_where_a_blob_holds_them(tmp_path, monkeypatch):
    """Where a file of tests_blob_bytes holds a problem's tests, the zygote gets them
    as marshal bytes instead of JSON, and the program sees the same values: tuples, sets,
    dicts with int keys, bytes, big ints, NaN, -0.0 and lone surrogates. A torn, stale or
    missing file sends the JSON."""
    import math

    from codea1.harness.records import ExecJob, TestCase
    from codea1.harness.sandbox import pool
    from codea1.harness.sandbox.executor import ZygoteExecutor
    from codea1.harness.verdicts import execution

    sent = []
    send = pool._Zygote._send

    def recording_send(self, data, job_id, on_chunk):
        sent.append("marshal" if b'"tests_marshal":' in data else "json" if b',"tests":' in data else "held")
        return send(self, data, job_id, on_chunk)

    monkeypatch.setattr(pool._Zygote, "_send", recording_send)
    values = [(1, "a"), {3, 4}, {1: [2.5, None]}, b"\x00\xff", 2 ** 300, float("nan"), -0.0, "\ud800", True]
    code = ("import math\ndef f(*xs):\n    return [[type(x).__name__ for x in xs], repr(xs[0]), sorted(xs[1]),\n"
            "            repr(xs[2]), list(xs[3]), xs[4] == 2 ** 300, math.isnan(xs[5]),\n"
            "            math.copysign(1, xs[6]), len(xs[7]), xs[8] is True]\n")

    def run(executor, tests):
        job = ExecJob(job_id="j", code=code, tests=tests, entry_point="f", time_limits=[10.0], batch_timeout=60)
        return execution.run_jobs(executor, [job])["j"].outcomes[0]

    expected = [["tuple", "set", "dict", "bytes", "int", "float", "float", "str", "bool"], "(1, 'a')", [3, 4],
                "{1: [2.5, None]}", [0, 255], True, True, -1.0, 1, True]
    with ZygoteExecutor(workers=1) as executor:
        by_json = [TestCase(id="t", args=list(values), has_expected=False)]
        assert run(executor, by_json).value == expected
        by_blob = [TestCase(id="t", args=list(values), has_expected=False)]
        key, text = execution.encoded_tests(by_blob)
        blob = tmp_path / "tests.blob"
        blob.write_bytes(execution.tests_blob_bytes(key, text))
        execution.adopt_encoded_tests(by_blob, text, blob)
        executor.pool._all[0].held_tests = None  # equal tests: the zygote holds them already
        assert run(executor, by_blob).value == expected
        assert sent == ["json", "marshal"]
        for spoil in (lambda data: data[:-3], lambda data: data.replace(key.encode(), b"0" * 32),
                      lambda data: b"other" + data):
            blob.write_bytes(spoil(blob.read_bytes()))
            assert execution.tests_blob(by_blob) is None
            blob.write_bytes(execution.tests_blob_bytes(key, text))
        blob.unlink()
        assert execution.tests_blob(by_blob) is None
        executor.pool._all[0].held_tests = None
        assert run(executor, by_blob).value == expected and sent[-1] == "json"


def test_streamed_records_are_relayed_in_batches_and_the_end_is_seen_at_once():
    """The zygote relays a running child's records at most every RELAY_INTERVAL (each relay
    wakes the zygote and the harness: per record, that was a tenth of a run's CPU), yet
    every record arrives, and a job's end is seen when the child exits (its pidfd), not
    at the next relay."""
    from codea1.harness.records import ExecJob, TestCase
    from codea1.harness.sandbox.executor import ZygoteExecutor
    from codea1.harness.sandbox.zygote import RELAY_INTERVAL
    from codea1.harness.verdicts.execution import PayloadEncoder, parse_records

    n = 3000
    tests = [TestCase(id=f"t{i}", args=[i], has_expected=False) for i in range(n)]
    job = ExecJob(job_id="many", code="def f(x):\n    return x\n", tests=tests, entry_point="f",
                  time_limits=[1.0] * n, batch_timeout=60)
    chunks = []
    with ZygoteExecutor(workers=1) as executor:
        header, body = executor.pool.request(PayloadEncoder()(job), "many", lambda data: chunks.append(data) and False)
    raw = parse_records(job, body, header["exit"])
    assert raw.exit == "finished" and [o.value for o in raw.outcomes] == list(range(n))
    # Far fewer relays than records: the child writes all 3,000 in a few tens of ms.
    assert 1 <= len(chunks) < n / 10
    assert RELAY_INTERVAL <= 0.005


def test_a_program_that_kills_its_worker_fails_and_is_no_sandbox_error(plugins):
    """Without Landlock's signal scoping a program can kill its zygote. A sandbox error would
    leave the program's group out of the rewards (zero advantage): the job is retried once on
    a fresh worker, and a second death is the program's failure. (Where the harness is root,
    run_as=root: a child switched to another user cannot signal its root zygote at all.)"""
    ex = plugins.executors.create("subprocess", {"landlock": "false", "run_as": "root"}, workers=1)
    try:
        killer = "import os, signal\ndef f(x):\n    os.kill(os.getppid(), signal.SIGKILL)\n"
        verdict, raw = run_code(ex, killer, "assert f(1) == 2", "f")
        # Its records died with the worker: the program did not get as far as a verdict.
        assert verdict.status in (FAIL, ERROR), (verdict.status, raw.exit, raw.sandbox_error)
        assert raw.sandbox_error is None and "died twice" in raw.exit
        assert run_code(ex, GOOD, "assert f(1) == 2", "f")[0].status == PASS  # the pool recovered
    finally:
        ex.close()
