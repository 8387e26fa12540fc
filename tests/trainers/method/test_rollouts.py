"""One program against several suites and the Mistake Book (``run_codes``): a timeout fails
only the test that timed out; the tests after it run in a continuation job; those the
program's budget does not reach are not_run. Real zygotes."""

from __future__ import annotations

from codea1.harness.records import Problem, TestCase
from codea1.trainers.method.rollouts import CodeRun, run_codes

PROBLEM = Problem(task_id="slow", prompt="", entry_point="f", reference="")
# Hangs on 0; right (x + 1) on every other input but 5, where it is wrong.
PROGRAM = "def f(x):\n    while x == 0:\n        pass\n    return x + 1 if x != 5 else 0\n"


def calls(*inputs):
    return [TestCase(id=f"t{i}", call=f"f({x})", op="==", expected=x + 1) for i, x in enumerate(inputs)]


class Recording:
    """The fixture's executor, keeping every job it is asked to run."""

    def __init__(self, executor):
        self.executor, self.name, self.jobs = executor, executor.name, []

    def run(self, jobs, early_stop=None):
        self.jobs.extend(jobs)
        return self.executor.run(jobs, early_stop)


def test_tests_after_a_timeout_keep_their_real_results(executor, plugins):
    bench = plugins.benchmarks.create("demo")
    # Suite A: 1, 0 (hangs), 2; suite B: 5 (wrong), 3; the book: 4.
    tests = calls(1, 0, 2, 5, 3, 4)
    runs = {"p": (PROBLEM, PROGRAM, tests, [1.0] * len(tests))}
    run = run_codes(executor, runs, bench, code_timeout=10.0)["p"]
    assert run.statuses == ["pass", "timeout", "pass", "fail", "pass", "pass"]
    assert run.loads and run.sandbox_error is None
    assert run.counts(0, 3) == (2, 1, 0)  # the timed-out test is the suite's one failure
    assert run.counts(3, 5) == (1, 1, 0) and run.counts(5, 6) == (1, 0, 0)


def test_tests_beyond_the_budget_are_not_run_never_failed(executor, plugins):
    """Limits 1 s and 0.5 s, 0.5 s of budget (more than a quarter of the limits' sum): the
    hang spends at least 1 s, and less than a continuation's minimum (1 s) is left: the
    second test is not run, and not failed."""
    bench = plugins.benchmarks.create("demo")
    runs = {"p": (PROBLEM, PROGRAM, calls(0, 1), [1.0, 0.5])}
    run = run_codes(executor, runs, bench, code_timeout=0.5)["p"]
    assert run.statuses == ["timeout", "not_run"]
    assert run.counts(0, 2) == (0, 1, 1)


def test_a_part_ends_at_its_second_timeout(executor, plugins):
    """A program that hangs again in a part's continuation leaves the rest of that part
    unrun (TIMEOUTS_PER_PART is 2): a program that hangs on every input costs two limits a
    part, not its whole budget one limit at a time."""
    bench = plugins.benchmarks.create("demo")
    hangs_below_one = "def f(x):\n    while x < 1:\n        pass\n    return x + 1\n"
    run = run_codes(executor, {"p": (PROBLEM, hangs_below_one, calls(0, -1, 1), [1.0] * 3)}, bench,
                    code_timeout=10.0)["p"]
    assert run.statuses == ["timeout", "timeout", "not_run"]


def test_two_timeouts_in_one_part_do_not_starve_the_next(executor, plugins):
    """Suite A passes 2, then hangs twice (0, -1) before its 6; suite B (1, 5) and the book
    (3) still run, in continuations of their own, and get their real results."""
    bench = plugins.benchmarks.create("demo")
    hangs_below_one = "def f(x):\n    while x < 1:\n        pass\n    return x + 1 if x != 5 else 0\n"
    tests = calls(2, 0, -1, 6, 1, 5, 3)
    run = run_codes(executor, {"p": (PROBLEM, hangs_below_one, tests, [1.0] * 7)}, bench, code_timeout=10.0,
                    parts={"p": [0, 4, 6]})["p"]
    assert run.statuses == ["pass", "timeout", "timeout", "not_run", "pass", "fail", "pass"]


def test_a_program_that_passed_nothing_gets_one_continuation(executor, plugins):
    """A program that hangs everywhere passes nothing before its first timeout: one
    continuation, which ends at its next timeout; the other parts are not run (its R_C is
    0 whatever runs), so it costs two limits, not one per part."""
    bench = plugins.benchmarks.create("demo")
    recording = Recording(executor)
    hangs = "def f(x):\n    while True:\n        pass\n"
    run = run_codes(recording, {"p": (PROBLEM, hangs, calls(1, 2, 3, 4, 5, 6), [1.0] * 6)}, bench,
                    code_timeout=10.0, parts={"p": [0, 2, 4]})["p"]
    assert run.statuses == ["timeout", "timeout", "not_run", "not_run", "not_run", "not_run"]
    assert len(recording.jobs) == 2


def test_a_call_shared_with_a_later_part_still_runs(executor, plugins):
    """f(2) is in suite A after its two timeouts and in suite B: it runs for B, and both
    appearances are judged by that run."""
    bench = plugins.benchmarks.create("demo")
    hangs_below_one = "def f(x):\n    while x < 1:\n        pass\n    return x + 1\n"
    tests = calls(3, 0, -1, 2, 4, 2)
    run = run_codes(executor, {"p": (PROBLEM, hangs_below_one, tests, [1.0] * 6)}, bench, code_timeout=10.0,
                    parts={"p": [0, 4]})["p"]
    assert run.statuses == ["pass", "timeout", "timeout", "pass", "pass", "pass"]


def test_a_call_that_hung_once_is_not_run_again(executor, plugins):
    """The same call in two suites is one test of the program's job: it hangs once, both
    appearances time out, and the continuation goes on with the calls after it (run one by
    one, the second f(0) would have hung in the continuation, leaving f(2) not run)."""
    bench = plugins.benchmarks.create("demo")
    run = run_codes(executor, {"p": (PROBLEM, PROGRAM, calls(0, 1, 0, 2), [1.0] * 4)}, bench, code_timeout=10.0)["p"]
    assert run.statuses == ["timeout", "pass", "timeout", "pass"]


COUNTER = "calls = 0\n\ndef f(x):\n    global calls\n    calls += 1\n    return calls\n"


def test_a_call_in_several_suites_runs_once_and_is_judged_by_each(executor, plugins):
    """f(7) appears three times, expecting 1, 2 and 1: the program counts its calls, so one
    run answers 1 to all three (run three times it would answer 1, 2, 3). Each appearance is
    judged against its own answer; a call under another limit is another test."""
    bench = plugins.benchmarks.create("demo")
    tests = [TestCase(id=f"t{i}", call="f(7)", op="==", expected=e) for i, e in enumerate([1, 2, 1])]
    tests.append(TestCase(id="t3", call="f(8)", op="==", expected=2))
    run = run_codes(executor, {"p": (PROBLEM, COUNTER, tests, [1.0] * 4)}, bench, code_timeout=10.0)["p"]
    assert run.statuses == ["pass", "fail", "pass", "pass"]
    run = run_codes(executor, {"p": (PROBLEM, COUNTER, tests[:2], [1.0, 2.0])}, bench, code_timeout=10.0)["p"]
    assert run.statuses == ["pass", "pass"]  # two limits: two tests, the second call answers 2


def test_identical_jobs_of_two_questions_run_once(executor, plugins):
    """Two questions with the same entry point, the same program and the same tests: one
    job, its outcomes judged for each (the executor sees one job)."""
    bench = plugins.benchmarks.create("demo")
    recording = Recording(executor)
    other = Problem(task_id="other", prompt="", entry_point="f", reference="")
    runs = {"a": (PROBLEM, PROGRAM, calls(1, 5), [1.0, 1.0]), "b": (other, PROGRAM, calls(1, 5), [1.0, 1.0]),
            "c": (other, PROGRAM, calls(1, 2), [1.0, 1.0])}
    out = run_codes(recording, runs, bench, code_timeout=10.0)
    assert len(recording.jobs) == 2
    assert out["a"].statuses == out["b"].statuses == ["pass", "fail"] and out["c"].statuses == ["pass", "pass"]


def test_a_program_that_does_not_load_fails_every_test(executor, plugins):
    bench = plugins.benchmarks.create("demo")
    run = run_codes(executor, {"p": (PROBLEM, "def f(x) return", calls(1, 2), [1.0, 1.0])}, bench, 10.0)["p"]
    assert not run.loads and run.statuses == ["fail", "fail"]


def test_counts():
    run = CodeRun(loads=True, statuses=["pass", "timeout", "not_run", "fail", "pass"])
    assert run.passes == [True, False, False, False, True]
    assert run.counts(0, 5) == (2, 2, 1)


def test_golden_tests_leave_tests_judged_in_process_out_of_rewards_unless_allowed(executor, plugins):
    """A question whose golden tests are a call test (values compared in the parent) and a
    pytest module the program's own process judges: the golden-tests trainer rewards on the
    call test alone and counts the others left out; allow_in_process_rewards keeps them."""
    from types import SimpleNamespace

    from codea1.benchmarks.kodcode import golden_tests
    from codea1.trainers.method.rollouts import GoldenTests

    script = ("from solution import scale\n\n\ndef test_scale():\n    assert scale([1, 2], 2) == [2, 4]\n\n\n"
              "def test_scale_differs():\n    xs = [1, 2]\n    if scale(xs, 3) == xs:\n        raise AssertionError('same')\n")
    scripts = golden_tests(script, "scale")
    in_process = [t for t in scripts if t.judged == "in-process"]
    assert in_process  # a check the test makes by itself (raise): nothing for the parent to compare
    question = Problem(task_id="scale", prompt="", entry_point="scale",
                       reference="def scale(xs, k):\n    return [x * k for x in xs]\n",
                       tests=[TestCase(id="call/0", call="scale([3], 3)", op="==", expected=[9]), *scripts])
    context = SimpleNamespace(run=SimpleNamespace(bench=plugins.benchmarks.create("demo"), executor=executor))

    strict = GoldenTests(context)
    tests, limits = strict.of([question])["scale"]
    assert [t.judged for t in tests] == ["parent"] * len(tests) and "call/0" in [t.id for t in tests]
    assert strict.left_out == {"scale": len(in_process)} and len(limits) == len(tests)

    allowing = GoldenTests(context, allow_in_process=True)
    tests, _ = allowing.of([question])["scale"]
    assert [t.id for t in tests] == [t.id for t in question.tests] and allowing.left_out == {"scale": 0}


def test_a_run_with_a_sandbox_error_gets_no_continuation(executor, plugins):
    """A golden test whose expected value the executor could not compute makes the run a
    sandbox error (no verdict): its hang is not continued, nothing after it is judged."""
    from codea1.harness.records import EXPECTED_SANDBOX_ERROR

    bench = plugins.benchmarks.create("demo")
    recording = Recording(executor)
    broken = TestCase(id="g0", call="f(1)", op="==", expected=None, expected_error=EXPECTED_SANDBOX_ERROR + " died")
    run = run_codes(recording, {"p": (PROBLEM, PROGRAM, [broken, *calls(0, 2)], [1.0] * 3)}, bench, 10.0)["p"]
    assert run.sandbox_error and "could not be computed" in run.sandbox_error
    assert run.statuses == ["not_run"] * 3 and len(recording.jobs) == 1


def test_an_executor_failure_without_outcomes_is_a_sandbox_error(plugins):
    """An executor may report its own failure with no outcome per test (a service that is
    down): the run is a sandbox error, not a crash of the step."""
    from codea1.harness.records import RawResult

    class Down:
        name = "down"

        def run(self, jobs, early_stop=None):
            for job in jobs:
                yield RawResult(job_id=job.job_id, outcomes=[], exit="sandbox", sandbox_error="service down")

    run = run_codes(Down(), {"p": (PROBLEM, PROGRAM, calls(1, 1, 2), [1.0] * 3)}, plugins.benchmarks.create("demo"),
                    10.0)["p"]
    assert run.sandbox_error == "service down" and run.statuses == ["not_run"] * 3


def test_programs_that_run_the_same_tests_share_one_tests_list(executor, plugins):
    """A question's programs against the same tests (golden tests, a Self-Play question's
    suites): their jobs carry one tests list, by which the executor keeps them on the zygote
    that already holds those tests."""
    bench = plugins.benchmarks.create("demo")
    recording = Recording(executor)
    tests = calls(1, 5, 1)
    runs = {m: (PROBLEM, PROGRAM + f"# {m}\n", tests, [1.0] * 3) for m in range(3)}
    out = run_codes(recording, runs, bench, code_timeout=10.0)
    sent = recording.jobs
    assert len(sent) == 3 and sent[0].tests is sent[1].tests is sent[2].tests and len(sent[0].tests) == 2
    assert all(run.statuses == ["pass", "fail", "pass"] for run in out.values())
