"""Assert parsing: each comparison kept with its own operator, or rejected with a reason."""

import pytest

from codea1.harness.asserts import AssertParseError, parse_assert, parse_asserts


@pytest.mark.parametrize("src,call,op,expected", [
    ("assert f(1, 2) == 3", "f(1, 2)", "==", 3),
    ("assert f([1, 2]) != [2, 1]", "f([1, 2])", "!=", [2, 1]),
    ("assert f(3) < 4", "f(3)", "<", 4),
    ("assert f(3) >= 0.5", "f(3)", ">=", 0.5),
    ("assert f('a') in ('a', 'b')", "f('a')", "in", ("a", "b")),
    ("assert f(0) not in [1]", "f(0)", "not in", [1]),
    ("assert f(0) is None", "f(0)", "is", None),
    ("assert f(0) is not True", "f(0)", "is not", True),
    ("assert 3 == f(1, 2)", "f(1, 2)", "==", 3),          # mirrored
    ("assert 3 < f(1)", "f(1)", ">", 3),                  # mirrored operator
    ("assert 2 in f(1)", "f(1)", "contains", 2),
    ("assert len(f(1)) == 2", "len(f(1))", "==", 2),
    ("assert f(x=1) == {'a': (1, 2)}", "f(x=1)", "==", {"a": (1, 2)}),
])
def test_supported_forms(src, call, op, expected):
    t = parse_assert(src, "f")
    assert (t.call, t.op, t.expected, t.expected_source) == (call, op, expected, None)


def test_truthiness_forms():
    assert parse_assert("assert f(1)", "f").op == "truthy"
    t = parse_assert("assert not f(1)", "f")
    assert (t.call, t.op) == ("f(1)", "falsy")


def test_non_literal_expected_is_kept_as_source():
    t = parse_assert("assert f(2) == math.sqrt(2)", "f")
    assert t.expected_source == "math.sqrt(2)" and t.expected is None


@pytest.mark.parametrize("src,reason", [
    ("assert 0 < f(1) < 5", "chained comparison"),
    ("assert f(1) == 1 or f(1) == 2", "boolean combination"),
    ("assert g(1) == 2", "does not call f"),
    ("assert f(1) == f(2)", "both sides call f"),
    ("assert f(1) is 3", "'is' is only accepted"),
    ("x = f(1)", "not a single assert"),
    ("assert f(1) ==", "syntax error"),
])
def test_rejections_carry_a_reason(src, reason):
    with pytest.raises(AssertParseError) as err:
        parse_assert(src, "f")
    assert reason in err.value.reason


def test_parse_asserts_keeps_order_and_reports_each_rejection():
    text = "assert f(1) == 1\nprint('hi')\nassert f(2) == 4\nassert g(3) == 9\nassert f(3) == 9\n"
    tests, rejected = parse_asserts(text, "f")
    assert [t.call for t in tests] == ["f(1)", "f(2)", "f(3)"]
    assert [t.id for t in tests] == ["assert/0", "assert/1", "assert/2"]
    assert [(r.line, r.reason) for r in rejected] == [(2, "not an assert statement"), (4, "does not call f")]


def test_parse_asserts_survives_a_broken_line():
    tests, rejected = parse_asserts("assert f(1) == 1\nassert f(2 == 4\nassert f(3) == 9", "f")
    assert [t.call for t in tests] == ["f(1)", "f(3)"]
    assert rejected[0].line == 2 and "syntax error" in rejected[0].reason
