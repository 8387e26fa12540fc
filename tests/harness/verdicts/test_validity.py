"""The validity stage shared by evaluate-tests and training: positions kept, reasons given,
the reference's own outputs available for correcting a wrong expected value, and asserts
that wrap a generator-returning call judged valid. Training's own validation:
tests/trainers/method/test_validation.py."""

from __future__ import annotations

from codea1.harness.records import Problem
from codea1.harness.verdicts.validity import check_suites

REFERENCE = "def squares(n):\n    for i in range(n):\n        yield i * i\n"
PROBLEM = Problem(task_id="gen/0", prompt="", entry_point="squares", reference=REFERENCE)


def test_positions_reasons_and_reference_values(executor):
    suite = ["assert list(squares(3)) == [0, 1, 4]",   # valid: wraps a generator
             "assert len(list(squares(4))) == 5",      # wrong expected value
             "assert squares(2) ==",                   # does not parse: invalid in its place
             "assert next(squares(1)) == 0",           # valid
             "assert list(squares(-1))[0] == 0",       # raises on the reference
             "assert sorted(squares(3), reverse=True) == [4, 1, 0]"]
    checks = check_suites(executor, {"a": (PROBLEM, suite), "b": (PROBLEM, suite[:1])})
    a = checks["a"]
    assert a.valid == [True, False, False, True, False, True]
    assert a.reasons[1].startswith("fails on the reference: got 4, expected == 5")
    assert a.reasons[2].startswith("not a usable assert: syntax error")
    assert "IndexError" in a.reasons[4]
    assert a.tests[2] is None and (a.tests[3].args, a.tests[3].wrap) == ([1], [["call", "next", [], {}]])
    assert a.reference_value(1) == 4  # what a corrected test would expect
    assert all(t >= 0.0 for t in a.times) and a.times[2] == 0.0
    assert checks["b"].valid == [True]


def test_a_suite_with_nothing_usable_runs_nothing(executor):
    checks = check_suites(executor, {"x": (PROBLEM, ["not an assert", "assert squares(1 =="])})
    assert checks["x"].valid == [False, False] and checks["x"].reference is None
