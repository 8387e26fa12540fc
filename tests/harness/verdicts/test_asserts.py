"""Assert parsing. By default only the paper's form, ``assert WRAP(f(ARGS)) == ANSWER``, with
its data evaluated in the parent and its wrappers as data steps; the former parser (golden
tests of benchmarks, and evaluate-tests' explicit option) keeps each operator."""

import pytest

from codea1.harness.verdicts.asserts import AssertParseError, parse_assert, parse_asserts, parse_legacy_assert


@pytest.mark.parametrize("src,args,kwargs,wrap,expected", [
    ("assert f(1, 2) == 3", [1, 2], None, None, 3),
    ("assert 3 == f(1, 2)", [1, 2], None, None, 3),  # mirrored
    ("assert f(x=1) == {'a': (1, 2)}", [], {"x": 1}, None, {"a": (1, 2)}),
    ("assert f(*[1, 2], **{'k': 3}) == -1", [1, 2], {"k": 3}, None, -1),
    ("assert f([i * i for i in range(4)]) == float('inf')", [[0, 1, 4, 9]], None, None, float("inf")),
    ("assert f([[0] * 2 for _ in range(2)], ('a',) * 2) == [[1] * 2] * 2", [[[0, 0], [0, 0]], ("a", "a")], None, None,
     [[1, 1], [1, 1]]),
    ("assert f('ab' * 2, {1, 2}) == sorted([3, 1, 2])", ["abab", {1, 2}], None, None, [1, 2, 3]),
    ("assert len(f(1)) == 2", [1], None, [["call", "len", [], {}]], 2),
    ("assert list(f(3)) == [0, 1, 4]", [3], None, [["call", "list", [], {}]], [0, 1, 4]),
    ("assert next(f(3)) == 0", [3], None, [["call", "next", [], {}]], 0),
    ("assert round(f(1), 2) == 0.33", [1], None, [["call", "round", [2], {}]], 0.33),
    ("assert sorted(f(1), reverse=True) == [2, 1]", [1], None, [["call", "sorted", [], {"reverse": True}]], [2, 1]),
    ("assert f(1).x == 2", [1], None, [["attr", "x"]], 2),
    ("assert f(1)['a'][0] == 2", [1], None, [["item", "a"], ["item", 0]], 2),
    ("assert f(1)[1:-1] == [2]", [1], None, [["slice", 1, -1, None]], [2]),
    ("assert f(1).most_common(1) == [('a', 2)]", [1], None, [["method", "most_common", [1], {}]], [("a", 2)]),
    ("assert sorted(f(1).keys()) == ['a']", [1], None, [["method", "keys", [], {}], ["call", "sorted", [], {}]], ["a"]),
    ("assert f(1)(2) == 3", [1], None, [["apply", [2], {}]], 3),
])
def test_the_papers_form_becomes_data(src, args, kwargs, wrap, expected):
    t = parse_assert(src, "f")
    assert (t.kind, t.call, t.args, t.kwargs, t.wrap, t.op, t.expected) == ("call", None, args, kwargs, wrap, "==",
                                                                             expected)
    assert t.expected_source is None and t.judged == "parent" and t.source == src


@pytest.mark.parametrize("src,reason", [
    ("assert f(1) != 2", "the operator !=: the paper's form"),
    ("assert f(3) < 4", "the operator <"),
    ("assert f('a') in ('a', 'b')", "the operator in"),
    ("assert f(0) is None", "the operator is"),
    ("assert f(1)", "a bare truthy assert"),
    ("assert not f(1)", "a bare truthy assert"),
    ("assert 0 < f(1) < 5", "a chained comparison"),
    ("assert f(1) == 1 or f(1) == 2", "a boolean combination"),
    ("assert g(1) == 2", "does not call f"),
    ("assert f(1) == f(2)", "both sides call f"),
    ("x = f(1)", "not a single assert"),
    ("assert f(1) ==", "syntax error"),
    # white-box and nondeterministic tests: their data is code
    ("assert f(open('solution.py').read()) == 1", "argument: not data: calls open"),
    ("assert f(1) == len(open('solution.py').read())", "answer: not data: calls open"),
    ("assert f(1) == f.__code__.co_code", "answer: not data: attribute access .co_code"),
    ("assert f(1) == __import__('inspect').getsource(f)", "answer: not data: calls __import__"),
    ("assert f(1) == os.urandom(4)", "answer: not data: calls os.urandom"),
    ("assert f(time.time()) == 1", "argument: not data: calls time.time"),
    ("assert f(random.random()) == 1", "argument: not data: calls random.random"),
    ("assert f(1) == time.sleep(3)", "answer: not data: calls time.sleep"),
    ("assert f(1) == (__import__('time').sleep(9) or 1)", "answer: not data: calls __import__"),
    ("assert f(x) == 1", "argument: not data: the name x"),
    ("assert f(1) == (lambda: 2)()", "not data"),
    ("assert f(1) == [x := 2]", "answer: not data: an assignment expression"),
    ("assert f(1) == f'{open}'", "answer: not data: an f-string with code"),
    ("assert f(1).__class__ == int", "the special attribute __class__"),
    ("assert f(1).__eq__(2) == True", "the special method __eq__"),
    ("assert isinstance(f(1), int) == True", "a wrapper other than"),
    ("assert g(f(1)) == 2", "a wrapper other than"),
    ("assert f(1) == range(3)", "answer: not data: the value holds a range object"),
    ("assert f(1) == 1 / 0", "answer: raises ZeroDivisionError"),
    ("assert f([[0] * 3] * 3) == 1", "argument: the same list, dict or set appears twice"),
])
def test_refusals_carry_a_reason(src, reason):
    with pytest.raises(AssertParseError) as err:
        parse_assert(src, "f")
    assert reason in err.value.reason


def test_the_function_under_test_must_be_known():
    with pytest.raises(AssertParseError, match="not known"):
        parse_assert("assert f(1) == 2")


def test_other_forms_only_with_the_option_and_marked_in_process():
    t = parse_assert("assert f(1) in [1, 2]", "f", allow_other_forms=True)
    assert (t.call, t.op, t.expected, t.judged) == ("f(1)", "in", [1, 2], "in-process")
    t = parse_assert("assert f(2) == math.sqrt(2)", "f", allow_other_forms=True)
    assert (t.call, t.expected_source, t.judged) == ("f(2)", "math.sqrt(2)", "in-process")
    t = parse_assert("assert f(1) == 2", "f", allow_other_forms=True)  # in the form: data, judged in the parent
    assert (t.args, t.judged) == ([1], "parent")


@pytest.mark.parametrize("src,call,op,expected", [
    ("assert f([1, 2]) != [2, 1]", "f([1, 2])", "!=", [2, 1]),
    ("assert f(3) >= 0.5", "f(3)", ">=", 0.5),
    ("assert f(0) not in [1]", "f(0)", "not in", [1]),
    ("assert f(0) is not True", "f(0)", "is not", True),
    ("assert 3 < f(1)", "f(1)", ">", 3),                  # mirrored operator
    ("assert 2 in f(1)", "f(1)", "contains", 2),
    ("assert len(f(1)) == 2", "len(f(1))", "==", 2),
    ("assert f(1) == float('inf')", "f(1)", "==", float("inf")),  # data: evaluated in the parent
])
def test_legacy_forms_keep_their_operator(src, call, op, expected):
    t = parse_legacy_assert(src, "f")
    assert (t.call, t.op, t.expected, t.expected_source, t.judged) == (call, op, expected, None, "parent")


def test_legacy_truthiness_and_expressions():
    assert parse_legacy_assert("assert f(1)", "f").op == "truthy"
    t = parse_legacy_assert("assert not f(1)", "f")
    assert (t.call, t.op) == ("f(1)", "falsy")
    t = parse_legacy_assert("assert f(2) == math.sqrt(2)", "f")
    assert t.expected_source == "math.sqrt(2)" and t.expected is None
    with pytest.raises(AssertParseError, match="'is' is only accepted"):
        parse_legacy_assert("assert f(1) is 3", "f")


def test_parse_asserts_keeps_order_and_reports_each_rejection():
    text = "assert f(1) == 1\nprint('hi')\nassert f(2) == 4\nassert g(3) == 9\nassert f(3) == 9\nassert f(4) > 1\n"
    tests, rejected = parse_asserts(text, "f")
    assert [t.args for t in tests] == [[1], [2], [3]]
    assert [t.id for t in tests] == ["assert/0", "assert/1", "assert/2"]
    assert [(r.line, r.reason[:20]) for r in rejected] == [(2, "not an assert statem"), (4, "does not call f"),
                                                           (6, "the operator >: the ")]


def test_parse_asserts_survives_a_broken_line():
    tests, rejected = parse_asserts("assert f(1) == 1\nassert f(2 == 4\nassert f(3) == 9", "f")
    assert [t.args for t in tests] == [[1], [3]]
    assert rejected[0].line == 2 and "syntax error" in rejected[0].reason
