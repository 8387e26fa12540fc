"""One program's tests laid out and its statuses read back, on a hand-worked example: two
suites (the first with a corrected test), two Mistake Book tests, one golden test."""

from __future__ import annotations

from codea1.harness.records import Problem
from codea1.harness.verdicts.asserts import parse_assert
from codea1.trainers.method.layout import BOOK_TIME_LIMIT, SuiteLayout, book_tests
from codea1.trainers.method.mistake_book import MistakeBook
from codea1.trainers.method.rewards import candidate_rewards
from codea1.trainers.method.rollouts import CodeRun
from codea1.trainers.method.validation import VALID, WRONG, ValidatedSuite

Q = Problem(task_id="q", prompt="", entry_point="f", reference="def f(x):\n    return x\n")


def call_test(source: str, test_id: str = "t"):
    return parse_assert(source, "f", test_id)


SUITES = [ValidatedSuite([VALID, WRONG, "unparsed"], [call_test("assert f(1) == 1"), call_test("assert f(2) == 2")],
                         ["assert f(1) == 1", "assert f(2) == 2"], [0.1, 0.5]),
          ValidatedSuite([VALID, VALID, VALID], [call_test("assert f(3) == 3")], ["assert f(3) == 3"], [0.0])]
BOOK = book_tests(Q, ["assert f(7) == 7", "assert f(", "assert f(8) == 8"])  # the middle one no longer parses
GOLDEN = ([call_test("assert f(9) == 9", "golden/0")], [3.0])


def test_the_layout_names_limits_and_spans_each_part():
    layout = SuiteLayout(SUITES, BOOK, GOLDEN)
    assert [t.id for t in layout.tests] == ["s0/0", "s0/1", "s1/0", "book/0", "book/2", "golden/0"]
    assert layout.limits == [1.0, 2.0, 1.0, BOOK_TIME_LIMIT, BOOK_TIME_LIMIT, 3.0]  # max(1 s, 4 x the reference)
    assert (layout.spans, layout.book_span, layout.golden_span) == ([(0, 2), (2, 3)], (3, 5), (5, 6))
    assert layout.golden_seconds == 3.0


def test_statuses_are_read_back_part_by_part():
    layout = SuiteLayout(SUITES, BOOK, GOLDEN)
    result = layout.read(CodeRun(loads=True, statuses=["pass", "fail", "timeout", "pass", "not_run", "fail"]))
    assert result.suites == [(1, 1, 0), (0, 1, 0)]  # a timeout is its test's failure
    assert (result.book, result.book_total) == ((1, 0, 1), 2)
    assert result.book_pass_rate == 1.0 and result.golden_pass_rate == 0.0  # of the book tests that ran
    # (source, status, call, the reference's time): no call keys given, the source stands for one
    assert result.new_statuses == [("assert f(1) == 1", "pass", "assert f(1) == 1", 0.1),
                                   ("assert f(2) == 2", "fail", "assert f(2) == 2", 0.5),
                                   ("assert f(3) == 3", "timeout", "assert f(3) == 3", 0.0)]
    assert result.book_statuses == [("assert f(7) == 7", "pass"), ("assert f(8) == 8", "not_run")]

    # The rewards' view (authors' variant, alpha 0.5): suite 0 has G = 2 kept of K = 3, one
    # invalid (I = 2: wrong + unparsed), so valid_ratio = min(2/3, 1 - 2/3) = 1/3; the code
    # passed 1 of 2 (gen_pass 1/2), the book 1 of the 1 that ran (att_pass 1): final_attack =
    # (1/3 - (1 - 1) + 1) / 2 = 2/3, R_T = 0.5/3 + 0.5 * 2/3 = 1/2. Suite 1: valid_ratio 1/3
    # (G = 1: min(1/3, 1 - 0)), gen_fail 1/3, final_attack = (1/3 + 1) / 2 = 2/3, R_T = 1/2.
    # R_C: each suite's final_pass = (att 1/2 (one of the two book tests passed) + gen) / 2.
    rewards = candidate_rewards(layout.suite_results(result, 3, ["", ""]), 0.5, "authors")
    assert rewards.tests == [0.5, 0.5]
    assert rewards.code == ((0.5 + 0.5) / 2 + (0.5 + 0.0) / 2) / 2


def test_the_mistake_book_takes_a_program_in_one_call():
    layout = SuiteLayout(SUITES, BOOK)
    statuses = ["pass", "fail", "timeout", "pass", "not_run"]
    book = MistakeBook({"q": {"assert f(7) == 7": 1, "assert f(8) == 8": 2}})
    for skipped in (CodeRun(loads=False, statuses=["fail"] * 5), CodeRun(True, statuses, sandbox_error="died")):
        assert book.record("q", layout.read(skipped)).added == []  # no valid candidate, no verdict: no change
    change = book.record("q", layout.read(CodeRun(loads=True, statuses=statuses)))
    # the failed generated test enters (weighing the pass rate, 1 of 3), the timed-out one does
    # not; the passed book test leaves
    assert (change.added, change.removed) == (["assert f(2) == 2"], ["assert f(7) == 7"])
    assert book.questions["q"] == {"assert f(8) == 8": 2, "assert f(2) == 2": 0.333333}
