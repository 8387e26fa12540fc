"""Operators applied by the judge to plain data, through a real executor."""

import pytest
from codea1_testkit import run_code

from codea1.harness.judge import compare


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
