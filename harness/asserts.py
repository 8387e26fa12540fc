"""Parse ``assert`` statements into call tests with ``ast``.

``assert f(x) == y`` becomes TestCase(call="f(x)", op="==", expected=y). The harness then
evaluates only the call side inside the sandbox and applies the operator itself, on plain
data. Supported forms, each kept with its own operator (never rewritten to ``==``):

* ``assert CALL <op> EXPECTED`` for ==, !=, <, <=, >, >=, in, not in;
  ``is`` / ``is not`` only against None, True or False;
* ``assert EXPECTED <op> CALL`` (operands swapped, the operator mirrored; ``x in CALL``
  becomes op "contains");
* ``assert CALL`` (op "truthy") and ``assert not CALL`` (op "falsy").

Rejected, with a reason: chained comparisons (``0 < f(x) < 9``), boolean combinations,
asserts that never call the function under test (when its name is known), both sides
calling it, and anything that is not an assert statement. EXPECTED is a literal
(``ast.literal_eval``) or else an expression evaluated in the sandbox *before* the program
under test is loaded.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from codea1.harness.records import TestCase

_OPS = {ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=",
        ast.In: "in", ast.NotIn: "not in", ast.Is: "is", ast.IsNot: "is not"}
_MIRROR = {"==": "==", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<=",
           "in": "contains", "not in": "not contains", "is": "is", "is not": "is not"}


class AssertParseError(ValueError):
    """The assert cannot become a test; ``reason`` says why."""

    def __init__(self, reason: str, source: str = ""):
        super().__init__(reason)
        self.reason = reason
        self.source = source


@dataclass
class Rejected:
    source: str
    reason: str
    line: int = 0


def _calls(node: ast.AST, name: str | None) -> bool:
    """Does ``node`` call ``name`` (or, with name None, call anything)?"""
    for sub in ast.walk(node):
        if isinstance(sub, ast.Call):
            if name is None:
                return True
            f = sub.func
            if (isinstance(f, ast.Name) and f.id == name) or (isinstance(f, ast.Attribute) and f.attr == name):
                return True
    return False


def _expected(node: ast.expr, text: str) -> tuple[object, str | None]:
    try:
        return ast.literal_eval(node), None
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None, ast.get_source_segment(text, node) or ast.unparse(node)


def parse_assert(source: str, entry_point: str | None = None, test_id: str = "assert") -> TestCase:
    """Parse one assert statement. Raises AssertParseError with the reason when refused."""
    text = source.strip()
    try:
        module = ast.parse(text)
    except SyntaxError as exc:
        raise AssertParseError(f"syntax error: {exc.msg}", source) from None
    if len(module.body) != 1 or not isinstance(module.body[0], ast.Assert):
        raise AssertParseError("not a single assert statement", source)
    node = module.body[0].test

    def seg(n):
        return ast.get_source_segment(text, n) or ast.unparse(n)

    if isinstance(node, ast.Compare):
        if len(node.ops) != 1:
            raise AssertParseError("chained comparison: no single expected value", source)
        op = _OPS.get(type(node.ops[0]))
        if op is None:
            raise AssertParseError(f"unsupported operator {type(node.ops[0]).__name__}", source)
        left, right = node.left, node.comparators[0]
        left_calls, right_calls = _calls(left, entry_point), _calls(right, entry_point)
        if entry_point and left_calls and right_calls:
            raise AssertParseError(f"both sides call {entry_point}: no independent expected value", source)
        if not left_calls and not right_calls:
            raise AssertParseError(f"does not call {entry_point}" if entry_point else "no function call to test", source)
        if not left_calls:  # expected on the left: mirror
            left, right = right, left
            op = _MIRROR[op]
        if op in ("is", "is not"):
            if not (isinstance(right, ast.Constant) and right.value in (None, True, False)
                    and type(right.value) in (type(None), bool)):
                raise AssertParseError("'is' is only accepted against None, True or False", source)
        expected, expected_source = _expected(right, text)
        return TestCase(id=test_id, call=seg(left), op=op, expected=expected, expected_source=expected_source,
                        source=text)
    if isinstance(node, ast.BoolOp):
        raise AssertParseError("boolean combination of conditions: split it into separate asserts", source)
    negated = isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not)
    inner = node.operand if negated else node
    if not _calls(inner, entry_point):
        raise AssertParseError(f"does not call {entry_point}" if entry_point else "no function call to test", source)
    return TestCase(id=test_id, call=seg(inner), op="falsy" if negated else "truthy", source=text)


def parse_asserts(text: str, entry_point: str | None = None, id_prefix: str = "assert"
                  ) -> tuple[list[TestCase], list[Rejected]]:
    """Parse every assert in ``text`` in order; other statements are rejected with a reason.

    Works on a whole module when it parses, and statement by statement (line-wise) when it
    does not, so one broken line does not lose the others.
    """
    tests: list[TestCase] = []
    rejected: list[Rejected] = []
    try:
        statements = [(stmt.lineno, ast.get_source_segment(text, stmt)) for stmt in ast.parse(text).body]
    except SyntaxError:
        statements = [(i + 1, line) for i, line in enumerate(text.splitlines()) if line.strip()]
    for lineno, stmt in statements:
        if not stmt or stmt.lstrip().startswith("#"):
            continue
        if not stmt.lstrip().startswith("assert"):
            rejected.append(Rejected(stmt, "not an assert statement", lineno))
            continue
        try:
            tests.append(parse_assert(stmt, entry_point, f"{id_prefix}/{len(tests)}"))
        except AssertParseError as exc:
            rejected.append(Rejected(stmt, exc.reason, lineno))
    return tests, rejected
