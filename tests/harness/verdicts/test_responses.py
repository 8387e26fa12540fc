"""Response parsing over a corpus of real-looking model outputs: code extraction and
assert extraction with exactly-K, each rejected line with its reason."""

from __future__ import annotations

import pytest

from codea1.harness.verdicts.responses import code_blocks, extract_code, extract_tests

# -- code ------------------------------------------------------------------------------------
FENCED_WITH_PROSE = '''Sure! Here is an efficient solution.

```python
def digit_sum(n: int) -> int:
    return sum(int(c) for c in str(n))
```

This runs in O(log n) time because each digit is visited once.'''

SEVERAL_BLOCKS = '''First, a helper idea:
```python
# we could use divmod
x = 1
```
Now the function:
```python
def digit_sum(n):
    total = 0
    while n:
        n, r = divmod(n, 10)
        total += r
    return total
```
'''

UNFENCED = '''def digit_sum(n):
    return sum(map(int, str(n)))

The function converts the number to a string and sums the digits.'''

WITH_USAGE = '''```python
import math

def helper(c):
    return int(c)

def digit_sum(n):
    return sum(helper(c) for c in str(n))

print(digit_sum(123))
assert digit_sum(123) == 6
if __name__ == "__main__":
    digit_sum(5)
```'''

SYNTAX_ERROR = '''```python
def digit_sum(n)
    return sum(int(c) for c in str(n))
```'''

TRUNCATED = '''Here you go:
```python
def digit_sum(n):
    return sum(int(c) for c in str(n))
'''

BASH_THEN_PYTHON = '''Install nothing:
```bash
pip install nothing
```
```py
def digit_sum(n):
    return 0
```'''


def test_fenced_code_with_prose_around_it():
    ex = extract_code(FENCED_WITH_PROSE, "digit_sum")
    assert ex.code == "def digit_sum(n: int) -> int:\n    return sum(int(c) for c in str(n))\n"
    assert ex.source == "block 1 of 1" and ex.syntax_error is None and ex.defines_entry_point


def test_the_block_that_defines_the_function_when_the_first_does_not():
    ex = extract_code(SEVERAL_BLOCKS, "digit_sum")
    assert ex.code.startswith("def digit_sum(n):\n    total = 0")
    assert ex.source == "block 2 of 2" and ex.notes == ["block 1 does not define digit_sum; took block 2"]
    # without a function name to look for: the first block
    assert extract_code(SEVERAL_BLOCKS, None, sanitize=False).code == "# we could use divmod\nx = 1\n"


def test_unfenced_code_is_cut_from_the_prose():
    pytest.importorskip("evalplus")
    ex = extract_code(UNFENCED, "digit_sum")
    assert ex.source == "unfenced" and ex.sanitizer == "evalplus"
    assert ex.code == "def digit_sum(n):\n    return sum(map(int, str(n)))\n" and ex.syntax_error is None


def test_sanitizer_drops_prints_asserts_and_main_but_keeps_imports_and_helpers():
    pytest.importorskip("evalplus")
    ex = extract_code(WITH_USAGE, "digit_sum")
    assert "import math" in ex.code and "def helper(c):" in ex.code and "def digit_sum(n):" in ex.code
    assert "print(" not in ex.code and "assert" not in ex.code and "__main__" not in ex.code
    raw = extract_code(WITH_USAGE, "digit_sum", sanitize=False)
    assert "print(digit_sum(123))" in raw.code and raw.sanitizer == "off"


def test_syntax_errors_are_reported_not_hidden():
    ex = extract_code(SYNTAX_ERROR, "digit_sum", sanitize=False)
    assert ex.syntax_error == "line 1: expected ':'" and ex.code.startswith("def digit_sum(n)\n")


def test_a_block_cut_off_by_the_token_limit_still_counts():
    assert [b.position for b in code_blocks(TRUNCATED)] == [1]
    ex = extract_code(TRUNCATED, "digit_sum")
    assert ex.code == "def digit_sum(n):\n    return sum(int(c) for c in str(n))\n" and ex.syntax_error is None


def test_non_python_blocks_are_skipped():
    ex = extract_code(BASH_THEN_PYTHON, "digit_sum", sanitize=False)
    assert ex.code == "def digit_sum(n):\n    return 0\n" and ex.source == "block 2 of 2"


def test_no_code_at_all():
    ex = extract_code("I cannot help with that.", "digit_sum", sanitize=False)
    assert ex.syntax_error is not None and not ex.defines_entry_point


# -- tests -----------------------------------------------------------------------------------
TESTS_RESPONSE = '''Here are test cases that target the edge cases of the buggy code:

```python
assert is_palindrome("A man, a plan, a canal: Panama") == True
assert is_palindrome("ab") != True
assert is_palindrome("") is True
assert "x" in str(is_palindrome("x")) or True
assert 0 <= len(str(is_palindrome("aba"))) <= 5
assert palindrome("abba") == True
assert is_palindrome('A man, a plan, a canal: Panama')==True
assert is_palindrome("Aa") in (True, 1)
assert is_palindrome(
    "No lemon, no melon"
) == True
assert is_palindrome("xy") == False
```

These cover punctuation, case and empty input.'''


def test_asserts_in_order_with_a_reason_for_every_rejected_one():
    ex = extract_tests(TESTS_RESPONSE, "is_palindrome", k=8)
    assert ex.tests == [
        'assert is_palindrome("A man, a plan, a canal: Panama") == True',
        'assert is_palindrome("ab") != True',
        'assert is_palindrome("") is True',
        'assert "x" in str(is_palindrome("x")) or True',
        'assert 0 <= len(str(is_palindrome("aba"))) <= 5',
        'assert palindrome("abba") == True',
        "assert is_palindrome('A man, a plan, a canal: Panama')==True",
        'assert is_palindrome("Aa") in (True, 1)',
    ]
    # Only the paper's form is a usable test (assert f(args) == answer): the rest carries why.
    assert (ex.requested, ex.found, ex.parsed, ex.unique, ex.missing) == (8, 10, 2, 1, 0)
    assert ex.usable == [True, False, False, False, False, False, False, False]
    reasons = {r.line: r.reason for r in ex.rejected}
    form = ": the paper's form is assert f(args) == answer"
    assert reasons == {
        2: "the operator !=" + form,
        3: "the operator is" + form,
        4: "a boolean combination of conditions" + form,
        5: "a chained comparison" + form,
        6: "does not call is_palindrome",
        7: "duplicate of test 1",
        8: "the operator in" + form,
        9: "beyond the 8 asserts requested",
        12: "beyond the 8 asserts requested",
    }


def test_a_multi_line_assert_is_one_test():
    ex = extract_tests(TESTS_RESPONSE, "is_palindrome", k=10)
    assert ex.tests[8] == 'assert is_palindrome(\n    "No lemon, no melon"\n) == True'
    assert ex.usable[8] and ex.found == 10 and ex.missing == 0


def test_fewer_asserts_than_asked_is_a_shortfall():
    ex = extract_tests("```python\nassert f(1) == 2\nassert f(2) == 3\n```", "f", k=8)
    assert (ex.found, ex.parsed, ex.unique, ex.missing) == (2, 2, 2, 6)


def test_a_broken_line_keeps_its_place_and_the_others_survive():
    text = "```python\nassert f(1) == 2\nassert f(2) == (3\nassert f(3) == 4\n```"
    ex = extract_tests(text, "f", k=5)
    assert ex.tests == ["assert f(1) == 2", "assert f(2) == (3", "assert f(3) == 4"]
    assert ex.usable == [True, False, True]
    assert ex.rejected[0].line == 2 and ex.rejected[0].reason.startswith("syntax error")


def test_imports_definitions_and_prints_are_not_tests():
    text = ("```python\nimport math\nfrom typing import List\n\ndef helper():\n    return 1\n\n"
            "print(f(1))\nassert f(1) == math.pi\n```")
    ex = extract_tests(text, "f", k=3)
    assert ex.tests == ["assert f(1) == math.pi"]
    assert [(r.line, r.reason) for r in ex.rejected] == [
        (1, "an import, not a test"), (2, "an import, not a test"), (4, "a definition, not a test"),
        (7, "not an assert statement"), (8, "answer: not data: attribute access .pi")]


def test_the_block_with_the_asserts_not_a_solution_block_ending_in_one():
    text = ("```python\ndef f(x):\n    return x + 1\nassert f(1) == 2\n```\nTests:\n"
            "```python\nassert f(2) == 3\nassert f(3) == 4\n```")
    ex = extract_tests(text, "f", k=8)
    assert ex.tests == ["assert f(2) == 3", "assert f(3) == 4"] and ex.source == "block 2 of 2"
    assert any(r.reason == "1 assert(s) in another block, not read" for r in ex.rejected)


def test_unfenced_asserts_among_prose():
    text = "Tests:\nassert f(1) == 2\nThat checks one.\nassert f(2) != 2\n"
    ex = extract_tests(text, "f", k=4)
    assert ex.tests == ["assert f(1) == 2", "assert f(2) != 2"] and ex.source == "unfenced"


def test_is_is_not_the_papers_form():
    ex = extract_tests("```python\nassert f([]) is []\nassert f(1) is not None\n```", "f", k=2)
    assert ex.usable == [False, False]
    assert [r.reason.split(":")[0] for r in ex.rejected] == ["the operator is", "the operator is not"]


def test_a_decorated_entry_point_is_never_sanitized_away():
    """evalplus' sanitizer keeps plain definitions only: a right program whose function is
    memoised (@functools.lru_cache) would be judged as a bare import and fail every test."""
    pytest.importorskip("evalplus", reason="the sanitizer is evalplus'")
    text = ("```python\nimport functools\n\n@functools.lru_cache(maxsize=None)\ndef fib(n):\n"
            "    return n if n < 2 else fib(n - 1) + fib(n - 2)\n\nprint(fib(10))\n```")
    out = extract_code(text, "fib")
    assert out.defines_entry_point and "@functools.lru_cache" in out.code
    assert out.sanitizer == "none (evalplus' sanitizer dropped the entry point)"
