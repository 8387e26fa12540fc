"""Consensus validation (data without references) on hand-made candidates: the majority
answer, no answer without a strict majority of at least two, corrections and drops."""

from __future__ import annotations

from codea1.harness.records import Problem
from codea1.trainers.method.consensus import consensus_answers, validate_by_consensus
from codea1.trainers.method.validation import DUPLICATE, ERROR, MISSING, UNPARSED, VALID, WRONG


def test_the_majority_answer_rule():
    assert consensus_answers([(True, 4), (True, 4), (True, 5)]) == (True, 4)
    assert consensus_answers([(True, 4), (True, 5), (False, None)]) == (False, None)  # 1 of 2: no majority
    assert consensus_answers([(True, 4), (False, None), (False, None)]) == (False, None)  # one voice is not enough
    assert consensus_answers([(True, [1, 2]), (True, [1, 2]), (True, (1, 2)), (False, None)]) == (True, [1, 2])
    assert consensus_answers([(True, 1), (True, 1.0), (True, 2), (True, 3)]) == (False, None)  # 1 and 1.0 differ
    assert consensus_answers([]) == (False, None)


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
