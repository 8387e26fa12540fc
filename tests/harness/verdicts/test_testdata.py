"""The restricted evaluator of a generated test's data: plain data in, every other construct
refused with its reason, and inputs built to exhaust the trusted parent refused quickly."""

import math
import time

import pytest

from codea1.harness.verdicts.testdata import MAX_INT_BITS, NotData, evaluate_text


@pytest.mark.parametrize("text,value", [
    ("[1, -2, (3.5, 'a'), None, True, b'x']", [1, -2, (3.5, "a"), None, True, b"x"]),
    ("{'a': [1, 2], **{'b': 3}}", {"a": [1, 2], "b": 3}),
    ("{1, 2} | {3}", {1, 2, 3}),
    ("[*range(3), *'ab']", [0, 1, 2, "a", "b"]),
    ("[x * x for x in range(5) if x % 2]", [1, 9]),
    ("{k: v for k, v in zip('abc', range(3))}", {"a": 0, "b": 1, "c": 2}),
    ("[[0] * 2 for _ in range(2)]", [[0, 0], [0, 0]]),
    ("sum(x for x in range(10))", 45),
    ("sorted({3, 1, 2}, reverse=True)", [3, 2, 1]),
    ("list(enumerate('ab', 1))", [(1, "a"), (2, "b")]),
    ("tuple(reversed([1, 2, 3]))", (3, 2, 1)),
    ("'abc'[::-1] + 'x' * 2", "cbaxx"),
    ("[1, 2, 3][1:]", [2, 3]),
    ("(max([3, 1]), min(3, 1), abs(-2), round(3.14159, 2), len('ab'))", (3, 1, 2, 3.14, 2)),
    ("(int('42'), str(12), chr(65), ord('a'), bool(0), float('1.5'))", (42, "12", "A", 97, False, 1.5)),
    ("(any([]), all([]), frozenset([1]), dict(a=1), set())", (False, True, frozenset([1]), {"a": 1}, set())),
    ("2 ** 100 - 1 + 7 // 2 % 3", 2 ** 100 - 1 + 7 // 2 % 3),
    ("1 + 2.5j", 1 + 2.5j),
    ("1 if 2 > 1 and 'a' in 'abc' else 0", 1),
    ("f'plain'", "plain"),
])
def test_plain_data_is_evaluated(text, value):
    assert evaluate_text(text) == value


def test_special_floats():
    assert evaluate_text("float('inf')") == math.inf and evaluate_text("-float('inf')") == -math.inf
    assert math.isnan(evaluate_text("float('nan')"))


@pytest.mark.parametrize("text,reason", [
    ("open('solution.py').read()", "not data: calls open('solution.py').read"),
    ("open('solution.py')", "not data: calls open"),
    ("__import__('os').urandom(4)", "not data: calls __import__('os').urandom"),
    ("os.urandom(4)", "not data: calls os.urandom"),
    ("f.__code__", "not data: attribute access .__code__"),
    ("(lambda: 1)()", "not data: calls lambda: 1"),
    ("lambda: 1", "not data: a lambda"),
    ("(x := 1)", "not data: an assignment expression"),
    ("f'{x}'", "not data: an f-string with code"),
    ("x", "not data: the name x"),
    ("sorted", "not data: the builtin sorted used as a value"),
    ("sorted([1], key=len)", "not data: the builtin len used as a value"),
    ("sorted([2, 1], key=None)", "not data: sorted() with the keyword key"),
    ("print(1)", "not data: calls print"),
    ("getattr(1, 'real')", "not data: calls getattr"),
    ("[].append(1)", "not data: calls [].append"),
    ("'%s' % 1", "not data: str Mod int"),
    ("range(3)", "the value holds a range object"),
    ("(x for x in [1])", "the value holds a generator expression"),
    ("zip([1], [2])", "the value holds a zip object"),
    ("1 / 0", "raises ZeroDivisionError"),
    ("[1][5]", "raises IndexError"),
    ("{[1]: 2}", "raises TypeError"),
    ("...", "not data: Ellipsis"),
    ("[x for x in range(3) for len in [1] if len(x)]", "not data: calls len"),
    ("assert 1", "syntax error"),
])
def test_everything_else_is_refused_with_its_reason(text, reason):
    with pytest.raises(NotData) as err:
        evaluate_text(text)
    assert reason in err.value.reason


@pytest.mark.parametrize("text,reason", [
    ("10 ** 10 ** 10", f"an integer of more than {MAX_INT_BITS} bits"),
    ("2 ** -10 ** 10", "an exponent too large"),
    ("1 << 10 ** 9", f"an integer of more than {MAX_INT_BITS} bits"),
    ("(10 ** 10000) * (10 ** 10000) * (10 ** 10000)", "an integer of more than"),
    ("'a' * 10 ** 12", "a value of more than"),
    ("[0] * 10 ** 7", "a value of more than"),
    ("list(range(10 ** 9))", "iterates over more than"),
    ("sum(range(10 ** 12))", "iterates over more than"),
    ("len(range(10 ** 100))", "raises OverflowError"),
    ("[x for x in range(10 ** 12)]", "too much work"),
    ("[[y for y in range(10 ** 6)] for x in range(10 ** 6)]", "too much work"),
    ("str([['a' * 100000] * 1000] * 1000)", "too large"),
    ("[['a' * 100000] * 1000] * 1000", "too large"),
    ("[[1] * 1000] * 1000 == [[1] * 1000] * 1000", "too much work"),
    ("set([tuple(range(1000))] * 100000)", "too much work"),
    ("{(tuple(range(100000)), i): 0 for i in range(100000)}", "too much work"),
    ("int('9' * 6000)", "int() of a string longer than"),
    ("round(5, -10 ** 9)", "round() with ndigits"),
    ("9" * 6000, "a number literal of more than"),
    ("[" * 150 + "]" * 150, "nested deeper than"),
    ("x" * 300_000, "too long"),
])
def test_blowups_are_refused_quickly(text, reason):
    start = time.process_time()
    with pytest.raises(NotData) as err:
        evaluate_text(text)
    assert reason in err.value.reason
    # CPU time, not wall-clock: the bound is the evaluator's budget, generous on a loaded machine.
    assert time.process_time() - start < 5.0
