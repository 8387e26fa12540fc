"""Consensus validation (data without references) on hand-made candidates: the majority
answer, no answer without a strict majority of at least two, corrections and drops."""

from __future__ import annotations

import pytest

from codea1.harness.records import Problem
from codea1.trainers.method.consensus import consensus_answers, validate_by_consensus
from codea1.trainers.method.validation import DUPLICATE, ERROR, MISSING, UNPARSED, VALID, WRONG

SQUARE = "def sq(x):\n    return x * x\n"


def test_the_majority_answer_rule():
    assert consensus_answers([(True, 4), (True, 4), (True, 5)]) == (True, 4)
    assert consensus_answers([(True, 4), (True, 5), (False, None)]) == (False, None)  # 1 of 2: no majority
    assert consensus_answers([(True, 4), (False, None), (False, None)]) == (False, None)  # one voice is not enough
    assert consensus_answers([(True, [1, 2]), (True, [1, 2]), (True, (1, 2)), (False, None)]) == (True, [1, 2])
    assert consensus_answers([(True, 1), (True, 2), (True, 3)]) == (False, None)
    assert consensus_answers([]) == (False, None)


def test_votes_agree_as_the_checker_does_and_an_unkeyable_answer_voids_one_vote():
    """2 and 2.0 (statistics.mean against sum / len), a dict in another order: one answer, as
    the checker's == sees them. An answer nested past the recursion limit voids its own vote."""
    assert consensus_answers([(True, 2), (True, 2.0), (True, 3)]) == (True, 2)
    same_dict = [(True, {"a": 1, "b": 2}), (True, {"b": 2, "a": 1}), (True, {})]
    assert consensus_answers(same_dict) == (True, {"a": 1, "b": 2})
    deep = []
    for _ in range(5000):
        deep = [deep]
    assert consensus_answers([(True, deep), (True, 4), (True, 4)]) == (True, 4)


def test_suites_validated_by_the_candidates_votes(executor, plugins):
    problem = Problem(task_id="sq", prompt="", entry_point="sq", reference="")  # no reference used
    programs = ["def sq(x):\n    return x * x\n",                 # right
                "def sq(x):\n    return x * x\n",                 # right
                "def sq(x):\n    return x * x if x < 3 else 0\n",  # wrong from 3 on
                "def sq(x):\n    raise ValueError(x)\n"]           # raises: no vote
    suite = ["assert sq(2) == 4",      # all three agree: valid
             "assert sq(3) == 0",      # majority says 9: corrected to == 9
             "assert sq(2) == 5",      # the same call again: duplicate
             "assert sq('a') == 1",    # nobody answers: no consensus, dropped
             "assert sq("]             # does not parse
    bench = plugins.benchmarks.create("demo")
    out = validate_by_consensus(executor, {"0/0/0": (problem, suite)}, 6, {0: programs}, bench)[0]["0/0/0"]
    assert out.status == [VALID, WRONG, DUPLICATE, ERROR, UNPARSED, MISSING]
    assert out.kept_sources == ["assert sq(2) == 4", "assert sq(3) == 9"]


def test_a_call_whose_output_changes_between_runs_is_dropped(executor, plugins):
    """The candidates agree within one run (same seed), not across two: nondeterministic."""
    from codea1.trainers.method.validation import NONDETERMINISTIC

    problem = Problem(task_id="r", prompt="", entry_point="r", reference="")
    programs = ["import random\ndef r(x):\n    return random.randrange(1000) if x else 7\n"] * 3
    bench = plugins.benchmarks.create("demo")
    out = validate_by_consensus(executor, {"0/0/0": (problem, ["assert r(1) == 0", "assert r(0) == 7"])}, 2,
                                {0: programs}, bench)[0]["0/0/0"]
    assert out.status == [NONDETERMINISTIC, VALID]
    assert out.kept_sources == ["assert r(0) == 7"]


def test_the_book_forgets_a_test_only_when_a_consensus_disagrees(executor, plugins):
    """Two programs that raise leave the right one without a consensus: no evidence, the book's
    test stays. A majority that answers otherwise moves it out."""
    problem = Problem(task_id="sq", prompt="", entry_point="sq", reference="")
    raising = "def sq(x):\n    raise ValueError(x)\n"
    bench = plugins.benchmarks.create("demo")
    suites = {"0/0/0": (problem, ["assert sq(2) == 4"])}
    book = {0: ["assert sq(5) == 25"]}
    _, disputed = validate_by_consensus(executor, suites, 1, {0: [SQUARE, raising, raising]}, bench, book)
    assert disputed == {}
    wrong = "def sq(x):\n    return x * x + (x == 5)\n"
    _, disputed = validate_by_consensus(executor, suites, 1, {0: [SQUARE, wrong, wrong]}, bench, book)
    assert disputed == {0: ["assert sq(5) == 25"]}


def test_a_kept_test_keeps_the_agreeing_programs_time(executor, plugins):
    """Its limit later follows the slowest agreeing program's time (max(1 s, 4 x)), as a
    reference's would; it is not 0."""
    problem = Problem(task_id="s", prompt="", entry_point="s", reference="")
    slow = "import time\ndef s(x):\n    time.sleep(0.3)\n    return x + 1\n"
    out, _ = validate_by_consensus(executor, {"0/0/0": (problem, ["assert s(1) == 2"])}, 1, {0: [slow, slow]},
                                   plugins.benchmarks.create("demo"))
    assert out["0/0/0"].kept_sources == ["assert s(1) == 2"] and out["0/0/0"].kept_times[0] >= 0.3


@pytest.mark.long
def test_slow_calls_of_one_suite_leave_the_others_answered(executor, plugins):
    """Six calls that take past the vote's 2 s each, then one that answers at once: a job's
    whole-job limit is the sum of its calls' limits, so the last one is still voted on."""
    problem = Problem(task_id="w", prompt="", entry_point="w", reference="")
    program = "import time\ndef w(x):\n    if x > 0:\n        time.sleep(3)\n    return x\n"
    suite = [f"assert w({i}) == {i}" for i in range(1, 7)] + ["assert w(0) == 0"]
    out, _ = validate_by_consensus(executor, {"0/0/0": (problem, suite)}, 7, {0: [program, program]},
                                   plugins.benchmarks.create("demo"))
    assert out["0/0/0"].status == [ERROR] * 6 + [VALID]
