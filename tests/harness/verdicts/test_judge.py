"""Operators applied by the judge to plain data, through a real executor."""

import pytest
from codea1_testkit import run_code

from codea1.harness.verdicts.judge import compare


@pytest.mark.parametrize("op,value,expected,ok", [
    ("==", [1, 2], [1, 2], True), ("==", (1, 2), [1, 2], False), ("!=", 1, 2, True), ("<", 1, 2, True),
    ("<", "a", 1, False), ("in", 2, [1, 2], True), ("not in", 3, [1], True), ("contains", [1, 2], 2, True),
    ("is", None, None, True), ("is", 0, False, False), ("is not", True, None, True), ("truthy", [0], None, True),
    ("falsy", "", None, True), ("==", 1, 1.0, True),
])
def test_compare(op, value, expected, ok):
    assert compare(op, value, expected) is ok


def test_each_operator_end_to_end(executor):
    code = "def f(x):\n    return x\n"
    asserts = ("assert f(3) != 4\nassert f(3) < 4\nassert 3 <= f(3)\nassert f('a') in 'abc'\nassert 2 in f([1, 2])\n"
               "assert f(None) is None\nassert f(0) is not None\nassert f([1])\nassert not f([])\nassert f(1.0) == 1")
    verdict, _ = run_code(executor, code, asserts, "f")
    assert verdict.status == "pass", verdict.first_failure
    bad, _ = run_code(executor, code, "assert f(5) < 4", "f")
    assert bad.first_failure["message"] == "got 5, expected < 4"


class CountingChecker:
    """A stateful checker, like evalplus': after it has seen a float, ints compare loosely.
    It logs every comparison it really makes."""

    def __init__(self, calls: list):
        self.calls, self.loose = calls, False

    def check(self, test, value, expected):
        self.calls.append(test.id)
        if isinstance(expected, float):
            self.loose = True
        ok = abs(value - expected) <= 0.5 if self.loose else value == expected
        return ok, "" if ok else f"got {value}"


def judged(tests, outcomes, checker, expected):
    from codea1.harness.records import ExecJob, RawResult
    from codea1.harness.verdicts.judge import judge

    job = ExecJob(job_id="j", code="", tests=tests, entry_point="f", time_limits=[1.0] * len(tests))
    return judge("t", 0, job, RawResult(job_id="j", outcomes=outcomes), checker, lambda i: expected[i])


def test_the_judge_replays_the_checks_early_stop_made_and_makes_the_rest():
    from codea1.harness.records import RawOutcome, TestCase
    from codea1.harness.verdicts.judge import ReplayChecker

    tests = [TestCase(id=f"t{i}", args=[i], has_expected=False) for i in range(4)]
    outcomes = [RawOutcome("ok", value=v) for v in (1, 2, 3, 4)]
    expected = [1, 2.0, 3, 4]
    calls: list = []
    checker = ReplayChecker(lambda: CountingChecker(calls))
    for i in range(2):  # early stop saw the first two outcomes as they streamed in
        assert checker.check(tests[i], outcomes[i].value, expected[i])[0]
    verdict = judged(tests, outcomes, checker.rewind(), expected)
    assert verdict.status == "pass" and verdict.n_passed == 4
    assert calls == ["t0", "t1", "t2", "t3"]  # each comparison made once
    # Answers equal those of a fresh checker that sees the whole sample.
    fresh = judged(tests, outcomes, CountingChecker([]), expected)
    assert [t.status for t in verdict.tests] == [t.status for t in fresh.tests]


def test_a_replay_that_differs_starts_over_on_a_fresh_checker():
    """The log says early stop compared test 1 with 2.0 (which made the checker loose); the
    judge compares it with 2 instead. The replay ends there: a fresh checker goes through
    test 0 again and stays strict, so 3.4 == 3 fails as it must."""
    from codea1.harness.records import RawOutcome, TestCase
    from codea1.harness.verdicts.judge import ReplayChecker

    tests = [TestCase(id=f"t{i}", args=[i], has_expected=False) for i in range(3)]
    outcomes = [RawOutcome("ok", value=v) for v in (1, 2, 3.4)]
    calls: list = []
    checker = ReplayChecker(lambda: CountingChecker(calls))
    checker.check(tests[0], outcomes[0].value, 1)
    checker.check(tests[1], outcomes[1].value, 2.0)
    calls.clear()
    verdict = judged(tests, outcomes, checker.rewind(), [1, 2, 3])
    assert calls == ["t0", "t1", "t2"]
    assert [t.status for t in verdict.tests] == ["pass", "pass", "fail"]
    assert verdict.first_failure == {"test": "t2", "message": "got 3.4"}


def test_tests_after_a_failure_are_not_run_and_groups_name_their_first_bad_test():
    from codea1.harness.records import RawOutcome, TestCase

    tests = [TestCase(id=f"{g}/{i}", args=[i], has_expected=False) for g, i in
             (("base", 0), ("base", 1), ("plus", 0), ("plus", 1), ("extra", 0))]
    outcomes = [RawOutcome("ok", value=v) for v in (0, 1, 5, 3, 4)]
    verdict = judged(tests, outcomes, CountingChecker([]), [0, 1, 2, 3, 4])
    assert [t.status for t in verdict.tests] == ["pass", "pass", "fail", "not_run", "not_run"]
    assert verdict.groups == {"base": "pass", "plus": "fail", "extra": "not_run"}
    assert verdict.status == "fail" and verdict.n_passed == 2 and verdict.first_failure["test"] == "plus/0"
