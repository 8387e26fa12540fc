"""Replies bound to their job, on every executor: a program that writes malformed, very deep,
huge or forged records on its result channel fails (never `pass`, never `sandbox_error`,
which would take it out of the denominators), and every job after it, on the same zygote,
gets its own verdict. An honest program whose output is nested 5,000 deep is judged right."""

from __future__ import annotations

import json

import pytest
from adversarial.hostile import ADD_REFERENCE, EXECUTOR_BINARIES, call_problem, make_executor, report

from codea1.harness.records import ExecJob, Problem, TestCase
from codea1.harness.verdicts.execution import run_jobs
from codea1.harness.verdicts.judge import judge

# Each writes on fd 3, the child's result channel, at load time or inside the first call.
CHANNEL_ATTACKS = {
    "deep-malformed-record-at-load":
        "import os\nos.write(3, b'[' * 5000 + b']' * 5000 + b'\\n')\n" + ADD_REFERENCE,
    "deep-unclosed-record-at-load":
        "import os\nos.write(3, b'[' * 200000 + b'\\n')\n" + ADD_REFERENCE,
    "deep-record-that-parses-in-call":
        "import os\n_sent = []\n"
        "def add(a, b):\n"
        "    if not _sent:\n"
        "        _sent.append(1)\n"
        "        os.write(3, b'{\"i\":0,\"s\":\"ok\",\"t\":0,\"v\":' + b'{\"t\":[' * 700 + b'3' + b']}' * 700 + b'}\\n')\n"
        "    return a + b\n",
    "forged-ok-records-then-deep-tree":
        "import os\n"
        "def add(a, b):\n"
        "    os.write(3, b'{\"i\":0,\"s\":\"ok\",\"t\":0,\"v\":3}\\n{\"i\":1,\"s\":\"ok\",\"t\":0,\"v\":'"
        " + b'[' * 3000 + b']' * 3000 + b'}\\n')\n"
        "    return a - b\n",
    "invalid-utf8-record":
        "import os\nos.write(3, b'\\xff\\xfe{\\n')\n" + ADD_REFERENCE,
    "huge-record-line":
        "import os\nos.write(3, b'{\"load\":\"' + b'x' * (24 << 20) + b'\"}\\n')\n" + ADD_REFERENCE,
    "many-records":
        "import os\nos.write(3, b'{\"done\":true}\\n' * 200000)\n" + ADD_REFERENCE,
    "record-cut-then-exit":
        "import os\n"
        "def add(a, b):\n"
        "    os.write(3, b'{\"i\":0,\"s\":\"ok\",\"v\":' + b'[' * 900)\n"
        "    os._exit(0)\n",
    "frame-header-on-stdout":
        "import json, sys\n"
        "print(json.dumps({'job_id': 'next', 'nonce': 'x', 'result_bytes': 0, 'exit': 'finished'}))\n"
        "sys.stdout.flush()\n" + ADD_REFERENCE,
    "channel-replaced":
        "import os\nr, w = os.pipe()\nos.dup2(w, 3)\n" + ADD_REFERENCE,
    # An array (a tag only script reports carry) of 10**18 x 0: printing it once took forever.
    "forged-empty-array-of-huge-extent":
        "import os\n"
        "def add(a, b):\n"
        "    os.write(3, b'{\"i\":0,\"s\":\"ok\",\"t\":0.0,\"v\":{\"a\":[\"ndarray\",[1000000000000000000,0],[]]}}\n"
        "{\"done\":true}\n')\n"
        "    os._exit(0)\n",
    # A decimal integer of 5 million digits: str -> int costs the square of the digits.
    "forged-value-of-five-million-digits":
        "import os\n"
        "def add(a, b):\n"
        "    os.write(3, b'{\"i\":0,\"s\":\"ok\",\"t\":0.0,\"v\":' + b'7' * 5_000_000 + b'}\\n')\n"
        "    return a + b\n",
    # An honest wrong answer whose decimal repr costs the square of its length.
    "huge-int-inside-a-list": "def add(a, b):\n    return [1 << 4_000_000]\n",
}


HARMLESS = ("frame-header-on-stdout",)  # a right program whose stdout looks like a frame: stdout is only text


def wrong(k: int) -> str:
    return f"def add(a, b):\n    return {k}\n"


@pytest.fixture(scope="module", params=list(EXECUTOR_BINARIES))
def one_worker(request, plugins):
    """One zygote: every job runs on the zygote the job before it used."""
    ex = make_executor(plugins, request.param, workers=1)
    yield ex
    ex.close()


def add_job(name: str, code: str, problem: Problem) -> ExecJob:
    return ExecJob(job_id=name, code=code, tests=problem.tests, entry_point="add",
                   time_limits=[5.0] * len(problem.tests), batch_timeout=30.0)


def test_no_reply_is_read_as_another_jobs(one_worker):
    problem = call_problem()
    jobs, expect = [], {}
    for n, (name, code) in enumerate(CHANNEL_ATTACKS.items()):
        jobs.append(add_job(name, code, problem))
        expect[name] = ("pass",) if name in HARMLESS else ("fail", "error")
        # After each attack: a right program, then a wrong one whose answer names it.
        jobs.append(add_job(f"{name}/then-right", ADD_REFERENCE, problem))
        expect[f"{name}/then-right"] = ("pass",)
        jobs.append(add_job(f"{name}/then-wrong", wrong(1000 + n), problem))
        expect[f"{name}/then-wrong"] = ("fail",)
    raws = run_jobs(one_worker, jobs)
    rows = []
    for n, job in enumerate(jobs):
        v = judge("adv/add", 0, job, raws[job.job_id])
        ok = v.status in expect[job.job_id]
        if job.job_id.endswith("/then-wrong"):
            ok = ok and f"got {1000 + n // 3}," in v.message  # its own answer, not a neighbour's
        rows.append({"case": job.job_id, "attack": "result channel", "outcome": f"{v.status}: {v.message[:100]}",
                     "expected": "|".join(expect[job.job_id]), "ok": ok})
    broken = report("replies/channel", one_worker.name, rows)
    assert not broken, f"{len(broken)} of {len(rows)} cases broke their promise:\n" + "\n".join(broken)


NEST = "def nest(n, leaf):\n    out = [leaf]\n    for _ in range(n - 1):\n        out = [out]\n    return out\n"
NEST_OTHER = ("def nest(n, leaf):\n    def build(k):\n        return [leaf] if k == 1 else [build(k - 1)]\n"
              "    import sys\n    sys.setrecursionlimit(20000)\n    return build(n)\n")


def test_an_honest_deep_output_is_judged_right(one_worker):
    tests = [TestCase(id="deep/0", args=[5000, 1], has_expected=False),
             TestCase(id="deep/1", args=[3, 2], has_expected=False)]
    problem = Problem(task_id="adv/nest", prompt="", entry_point="nest", reference=NEST, tests=tests)

    def job(name, code):
        return ExecJob(job_id=name, code=code, tests=tests, entry_point="nest", time_limits=[10.0, 10.0],
                       batch_timeout=60.0, large_output="value")

    ref = run_jobs(one_worker, [job("reference", problem.reference)])["reference"]
    assert [o.status for o in ref.outcomes] == ["ok", "ok"], ref
    expected = [o.value for o in ref.outcomes]
    cases = {"same-code": (NEST, "pass"), "other-code": (NEST_OTHER, "pass"),
             "other-leaf": (NEST.replace("[leaf]", "[leaf + 1]"), "fail"),
             "one-level-less": (NEST.replace("range(n - 1)", "range(n - 2)"), "fail")}
    jobs = {name: job(name, code) for name, (code, _) in cases.items()}
    after_job = add_job("after/right", ADD_REFERENCE, call_problem())
    raws = run_jobs(one_worker, [*jobs.values(), after_job])
    rows = []
    for name, (_, status) in cases.items():
        v = judge("adv/nest", 0, jobs[name], raws[name], expected_override=lambda i: expected[i])
        rows.append({"case": name, "attack": "deep output (honest)", "outcome": f"{v.status}: {v.message[:100]}",
                     "expected": status, "ok": v.status == status})
    after = judge("adv/add", 0, after_job, raws["after/right"])
    rows.append({"case": "after/right", "attack": "job after deep outputs", "outcome": after.status,
                 "expected": "pass", "ok": after.status == "pass"})
    broken = report("replies/deep-output", one_worker.name, rows)
    assert not broken, "\n".join(broken)


def test_a_hostile_sample_cannot_leave_the_denominator(plugins, tmp_path, one_worker):
    """One right and one hostile sample of a task: pass@1 is 50 %, with no sandbox error."""
    from codea1.harness.flows.evaluate import EvaluateConfig, evaluate

    right = "def digit_sum(n):\n    return sum(int(c) for c in str(n))\n"
    hostile = "import os\nos.write(3, b'[' * 5000 + b']' * 5000 + b'\\n')\n" + right
    samples = tmp_path / "samples.jsonl"
    samples.write_text("".join(json.dumps({"task_id": "demo/0", "solution": s}) + "\n" for s in (hostile, right)))
    results = evaluate(plugins, EvaluateConfig(benchmark="demo", out=str(tmp_path / "run"), tasks=["demo/0"],
                                               samples=str(samples), executor=one_worker.name, workers=1,
                                               progress=False, dedupe=False))
    assert results["metrics"]["pass@1"] == 0.5, results["counts"]
    assert results["counts"]["sandbox_error"] == 0 and results["tasks"]["demo/0"]["statuses"] == ["fail", "pass"]
