"""Training's validation (the paper's Step 3): each position classified, wrong answers
corrected to the reference's and kept, duplicates and the unusable dropped."""

from __future__ import annotations

from codea1.harness.records import Problem
from codea1.trainers.method.validation import DUPLICATE, ERROR, MISSING, UNPARSED, VALID, WRONG, validate_for_training

REFERENCE = "def squares(n):\n    for i in range(n):\n        yield i * i\n"
PROBLEM = Problem(task_id="gen/0", prompt="", entry_point="squares", reference=REFERENCE)


def test_training_validation_classifies_corrects_and_keeps(executor):
    """The paper's Step 3 on a hand-written suite of K=8 (7 written, 1 missing)."""
    problem = Problem(task_id="sq", prompt="", entry_point="sq", reference="def sq(x):\n    return x * x\n")
    suite = ["assert sq(2) == 4",          # valid
             "assert sq(3) == 10",         # wrong answer: corrected to 9 and kept
             "assert sq(2) == 5",          # the same call as test 0: duplicate
             "assert sq('a') == 1",        # raises on the reference
             "assert sq(4) >= 16",         # not the paper's form (an operator other than ==)
             "assert sq(",                 # does not parse
             "assert 25 == sq(5)"]         # valid: the mirrored form
    out = validate_for_training(executor, {"s": (problem, suite)}, requested=8)["s"]
    assert out.status == [VALID, WRONG, DUPLICATE, ERROR, UNPARSED, UNPARSED, VALID, MISSING]
    assert out.kept_sources == ["assert sq(2) == 4", "assert sq(3) == 9", "assert 25 == sq(5)"]
    assert [t.op for t in out.kept] == ["==", "==", "=="] and out.kept[1].expected == 9
    assert out.count(VALID) == 2 and out.count(WRONG) == 1


def test_an_answer_without_a_literal_form_is_dropped_not_corrected(executor):
    problem = Problem(task_id="nan", prompt="", entry_point="f", reference="def f(x):\n    return float('nan')\n")
    out = validate_for_training(executor, {"s": (problem, ["assert f(1) == 0.0"])}, requested=1)["s"]
    assert out.status == [WRONG] and out.kept == []


def test_a_wrong_answer_of_a_wrapped_data_test_is_corrected_in_its_own_words(executor):
    out = validate_for_training(executor, {"s": (PROBLEM, ["assert 5 == len(list(squares(4)))",
                                                           "assert sorted(squares(3), reverse=True) == [4, 1, 0]"])},
                                requested=2)["s"]
    assert out.status == [WRONG, VALID]
    assert out.kept_sources == ["assert len(list(squares(4))) == 4",
                                "assert sorted(squares(3), reverse=True) == [4, 1, 0]"]
    assert (out.kept[0].args, out.kept[0].wrap, out.kept[0].expected) == (
        [4], [["call", "list", [], {}], ["call", "len", [], {}]], 4)


def test_suites_sharing_asserts_validate_as_each_alone(executor):
    """Each distinct assert of a question is parsed once for all its suites: a suite's
    statuses, kept tests and answers are what it gets validated on its own, whichever
    suites share its asserts (a duplicate in one suite is the first of the call in another)."""
    problem = Problem(task_id="sq", prompt="", entry_point="sq", reference="def sq(x):\n    return x * x\n")
    suites = {"a": ["assert sq(2) == 4", "assert sq(3) == 10", "assert sq(2) == 5", "assert sq("],
              "b": ["assert sq(2) == 5", "assert sq(3) == 10", "assert sq(4) == 16", "assert sq(2) == 4"],
              "c": ["assert sq(3) == 10", "assert sq(", "assert sq(2) == 4", "assert 16 == sq(4)"]}
    together = validate_for_training(executor, {key: (problem, s) for key, s in suites.items()}, requested=4)
    for key, suite in suites.items():
        alone = validate_for_training(executor, {key: (problem, suite)}, requested=4)[key]
        assert together[key].status == alone.status
        assert together[key].kept_sources == alone.kept_sources
        assert [(t.args, t.expected) for t in together[key].kept] == [(t.args, t.expected) for t in alone.kept]
    assert together["b"].status == [WRONG, WRONG, VALID, DUPLICATE]
