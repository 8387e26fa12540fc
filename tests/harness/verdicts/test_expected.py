"""Expected sides written as expressions (``TestCase.expected_source``) are computed before
any program runs, in sandbox jobs of their own (``harness.verdicts.expected``): no job of a program,
the reference's included, carries them, so a program cannot read them from its process.
Real zygotes, real flows."""

from __future__ import annotations

import json
from types import SimpleNamespace

from codea1.harness.flows.evaluate import EvaluateConfig, evaluate
from codea1.harness.flows.evaluate_tests import EvaluateTestsConfig, evaluate_tests
from codea1.harness.records import EXPECTED_SANDBOX_ERROR, ExecJob, Problem, TestCase
from codea1.harness.verdicts.execution import Executor, PayloadEncoder, run_jobs, sandbox_failure
from codea1.harness.verdicts.expected import (
    EXPECTED_TIME_LIMIT,
    expected_job,
    settle_expected_sources,
    settle_tests,
)
from codea1.harness.verdicts.judge import judge
from codea1.harness.verdicts.reference import run_references
from codea1.harness.verdicts.validity import check_suites
from codea1.trainers.method.rollouts import GoldenTests

# A ULT_Lite-form task (ULT's loader parses asserts outside the paper's form as before, so an
# expected side that is not data stays an expression; its prelude imports math).
ASSERTS = ["assert fact(5) == math.factorial(5)",  # an expression that needs the prelude
           "assert fact(3) == 6",  # data
           "assert fact(4) == (lambda n: n * 6)(4)",  # an expression the parent's evaluator refuses
           "assert fact(2) == 1 / 0",  # an expression that raises
           "assert fact(11) == math.factorial(11)"]
EXPRESSIONS = ["math.factorial(5)", "(lambda n: n * 6)(4)", "1 / 0", "math.factorial(11)"]
REFERENCE = "def fact(n):\n    return math.factorial(n)\n"
# Reads the expected value from its own process, as it could before the change: the job it
# was sent (a test's expected side, as source, found among the garbage collector's objects)
# or the value itself, left in the harness' frames by the phase that computed it.
HUNTER = r'''import gc, math, sys
def _hunt():
    for obj in gc.get_objects():
        if type(obj) is dict and type(obj.get("expected_source")) is str and "11" in obj["expected_source"]:
            return eval(obj["expected_source"])
    frame = sys._getframe()
    while frame is not None:
        if frame.f_code.co_name == "_run" and "value" in frame.f_locals:
            return frame.f_locals["value"]
        frame = frame.f_back
    return None
FOUND = _hunt()
def fact(n):
    return FOUND if n == 11 else math.factorial(n)
'''


def ult_data(path) -> str:
    path.write_text(json.dumps([{"task_id": "x/0", "func_name": "fact", "code": REFERENCE, "prompt": "",
                                 "test_list": ASSERTS}]))
    return str(path)


def samples_file(path, *codes: str) -> str:
    path.write_text("".join(json.dumps({"task_id": "x/0", "solution": c}) + "\n" for c in codes))
    return str(path)


class Recording(Executor):
    """The session's executor, keeping every job it was given (what reaches the sandbox)."""

    name = "recording"
    streams_results = True

    def __init__(self, inner):
        super().__init__()
        self.inner = inner
        self.jobs: list[ExecJob] = []

    def run(self, jobs, early_stop=None):
        self.jobs += list(jobs)
        return self.inner.run(jobs, early_stop)


def test_no_job_of_a_program_carries_an_expected_side(plugins, executor, tmp_path):
    """``evaluate`` and ``evaluate-tests --tests golden --allow-other-forms`` on a task whose
    golden asserts have expressions on their expected sides: the only jobs that hold those
    expressions are the expected-value jobs, whose program is the task's prelude; every job
    that runs a program (the reference, the samples, validity's two runs on the reference)
    is sent calls only, and its encoded tests hold neither an expression nor a value. The
    mutants of evaluate-tests run against the checks' tests, which hold values."""
    data = ult_data(tmp_path / "ult.json")
    recording = Recording(executor)
    results = evaluate(plugins, EvaluateConfig(
        benchmark="ult", data=data, out=str(tmp_path / "eval"), progress=False, reference_cache=False,
        samples=samples_file(tmp_path / "s.jsonl", REFERENCE, "def fact(n):\n    return n\n")), executor=recording)
    assert results["tasks"]["x/0"]["statuses"] == ["fail", "fail"]  # 1 / 0: no program can pass it
    # evaluate-tests (golden, --allow-other-forms): its validity stage, on the recording executor.
    tests_results = evaluate_tests(plugins, EvaluateTestsConfig(
        benchmark="ult", data=data, tests="golden", allow_other_forms=True, coverage=False, k=[1, 5],
        out=str(tmp_path / "tests"), progress=False, executor=executor.name))
    assert tests_results["tasks"]["x/0"]["valid"] == [True, True, True, False, True]
    problem = plugins.benchmarks.create("ult", {"data": data}).load()[0]
    checks = check_suites(recording, {"x/0": (problem, problem.tests)}, allow_other_forms=True)
    assert [t.expected for t in checks["x/0"].tests] == [120, 6, 24, None, 39916800]  # what the mutants run against
    assert checks["x/0"].tests[3].expected_error == "ZeroDivisionError: division by zero"
    assert not any(t.expected_source for t in checks["x/0"].tests)

    settling = [j for j in recording.jobs if j.job_id.startswith("expected:")]
    programs = [j for j in recording.jobs if not j.job_id.startswith("expected:")]
    assert len(settling) == 2  # one for evaluate, one for check_suites
    assert sorted(j.job_id.split("@")[0] for j in programs) == ["ref:x/0", "ref:x/0", "ref:x/0", "x/0", "x/0"]
    for job in settling:
        assert job.code == problem.prelude and job.entry_point is None
        assert [t.call for t in job.tests] == EXPRESSIONS and all(t.expected is None for t in job.tests)
    for job in programs:
        assert not any(t.expected_source for t in job.tests), job.job_id
        _, _, tests_json, _ = PayloadEncoder()(job)
        assert "expected" not in tests_json and not any(e in tests_json for e in EXPRESSIONS), job.job_id
        assert "39916800" not in tests_json


def test_a_program_cannot_read_the_expected_value_from_its_own_process(plugins, executor, tmp_path):
    """Before the change the child computed expected sides itself, before loading the
    program: the program found the expression in the job it was sent (or the value in the
    harness' frames) and returned it, passing a test it had no answer to. Now the child holds
    neither: the hunter finds nothing and fails that test."""
    data = tmp_path / "ult.json"
    data.write_text(json.dumps([{"task_id": "x/0", "func_name": "fact", "code": REFERENCE, "prompt": "",
                                 "test_list": [a for a in ASSERTS if "1 / 0" not in a]}]))
    results = evaluate(plugins, EvaluateConfig(
        benchmark="ult", data=str(data), out=str(tmp_path / "eval"), progress=False, reference_cache=False,
        samples=samples_file(tmp_path / "s.jsonl", HUNTER, REFERENCE)), executor=executor)
    assert results["tasks"]["x/0"]["statuses"] == ["fail", "pass"]
    verdict = next(v for v in map(json.loads, (tmp_path / "eval" / "verdicts.jsonl").read_text().splitlines())
                   if v["sample_index"] == 0)
    assert verdict["first_failure"] == {"test": "assert/3", "message": "got None, expected == 39916800"}


def test_an_expected_side_that_raises_fails_the_test_as_before(plugins, executor, tmp_path):
    """The same message as when the child computed it: the reference fails that test
    (reported), and so does every sample whose call ran."""
    data = ult_data(tmp_path / "ult.json")
    results = evaluate(plugins, EvaluateConfig(
        benchmark="ult", data=data, out=str(tmp_path / "eval"), progress=False, reference_cache=False,
        samples=samples_file(tmp_path / "s.jsonl", REFERENCE)), executor=executor)
    message = "the expected value could not be computed: ZeroDivisionError: division by zero"
    assert results["reference_failures"] == {"x/0": {"assert/3": message}}
    verdict = json.loads((tmp_path / "eval" / "verdicts.jsonl").read_text())
    assert verdict["status"] == "fail" and verdict["first_failure"] == {"test": "assert/3", "message": message}
    assert [t["status"] for t in verdict["tests"]] == ["pass", "pass", "pass", "fail", "not_run"]


def test_errors_of_expected_sides_are_kept_on_the_test(executor):
    """An expression that raises or times out, or needs a prelude that did not load: the
    test keeps why (``expected_error``) and no expression; the rest get values."""
    tests = [TestCase(id=f"t{i}", call="f()", expected_source=src) for i, src in enumerate(
        ["sorted({3, 1, 2}, reverse=True)", "[0 for _ in iter(int, 1)]", "int('x')", "{}['missing']",
         "(lambda: 2)()"])]
    settled = settle_tests(executor, tests, time_limit=0.5)
    assert [t.expected for t in settled] == [[3, 2, 1], None, None, None, 2]
    assert [t.expected_source for t in settled] == [None] * 5
    errors = [t.expected_error for t in settled]
    assert errors[0] is None and errors[4] is None
    assert errors[1] == "timed out evaluating the expected value"
    assert errors[2].startswith("ValueError: invalid literal") and errors[3] == "KeyError: 'missing'"
    broken = settle_tests(executor, tests[:1], prelude="import no_such_module_here\n")
    assert broken[0].expected_error.startswith("prelude failed: ModuleNotFoundError")
    # A list without expressions runs nothing and comes back as it is.
    plain = [TestCase(id="p", call="f()", expected=1)]
    assert settle_tests(executor, plain) is plain


def test_one_job_per_distinct_tests_list(executor):
    """A problem's jobs share its tests list: problems sharing one list get one expected-value
    job and one new list, shared again."""
    tests = [TestCase(id="t0", call="f()", expected_source="sum(range(5))")]
    a = Problem(task_id="a", prompt="", entry_point="f", reference="def f():\n    return 10\n", tests=tests)
    b = Problem(task_id="b", prompt="", entry_point="f", reference="def f():\n    return 10\n", tests=tests)
    c = Problem(task_id="c", prompt="", entry_point="f", reference="", tests=[TestCase(id="d", call="f()", expected=1)])
    recording = Recording(executor)
    sa, sb, sc = settle_expected_sources(recording, [a, b, c])
    assert [j.job_id for j in recording.jobs] == ["expected:0:a"]
    assert sa.tests is sb.tests and sa.tests[0].expected == 10 and sa.tests[0].expected_source is None
    assert sc is c and a.tests[0].expected_source == "sum(range(5))"  # the originals are left as they were


class FailsExpectedJobs(Executor):
    """The session's executor, except that it answers no expected-value job: an executor's
    failure, staged (as the executor tests stage a lost job)."""

    name = "fails-expected-jobs"

    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def run(self, jobs, early_stop=None):
        yield from (sandbox_failure(j, "the service went away") for j in jobs if j.job_id.startswith("expected:"))
        rest = [j for j in jobs if not j.job_id.startswith("expected:")]
        if rest:
            yield from self.inner.run(rest, early_stop)


def test_an_executor_that_fails_to_compute_an_expected_value_gives_sandbox_errors_not_failures(executor):
    """No verdict rests on a value the executor failed to compute: a program's verdict is a
    sandbox error (trainers leave such groups out), and the reference's run is an error that
    evaluate reports as a skipped task, never cached."""
    failing = FailsExpectedJobs(executor)
    problem = Problem(task_id="q", prompt="", entry_point="f", reference="def f(x):\n    return x * 2\n",
                      tests=[TestCase(id="t0", call="f(2)", expected_source="(lambda: 4)()")])
    settled, = settle_expected_sources(failing, [problem])
    assert settled.tests[0].expected_error == EXPECTED_SANDBOX_ERROR + "the service went away"
    ref = run_references([settled], executor, checks_tests=lambda p: True)["q"]
    assert ref.error.startswith("sandbox error: the expected value of test t0 could not be computed")
    job = ExecJob(job_id="p", code=problem.reference, tests=settled.tests, entry_point="f", time_limits=[5.0])
    verdict = judge("q", 0, job, run_jobs(executor, [job])["p"])
    assert verdict.status == "sandbox_error" and "the service went away" in verdict.message


def test_the_trainers_golden_tests_are_settled(plugins, executor, tmp_path):
    """Training's golden tests (golden-tests, code-a1) come back as data: the raising one is
    left out with the tests the reference fails."""
    bench = plugins.benchmarks.create("ult", {"data": ult_data(tmp_path / "ult.json")})
    question = bench.load()[0]
    context = SimpleNamespace(run=SimpleNamespace(bench=bench, executor=executor))
    tests, limits = GoldenTests(context, allow_in_process=True).of([question])["x/0"]
    assert [t.id for t in tests] == ["assert/0", "assert/1", "assert/2", "assert/4"]
    assert [t.expected for t in tests] == [120, 6, 24, 39916800] and not any(t.expected_source for t in tests)
    assert len(limits) == 4


def test_the_expected_value_job_runs_the_prelude_only():
    job = expected_job("e", [TestCase(id="t", call="f()", expected_source="x + 1"), TestCase(id="u", call="f()")],
                       prelude="x = 1\n")
    assert (job.code, job.prelude, job.entry_point, [t.call for t in job.tests]) == ("x = 1\n", "", None, ["x + 1"])
    assert job.time_limits == [EXPECTED_TIME_LIMIT] and not job.fail_fast
