"""Parse ``assert`` statements into call tests with ``ast``.

The paper's form, the only one accepted by default (``parse_assert``)::

    assert WRAP(f(ARGS)) == ANSWER        (or ANSWER == WRAP(f(ARGS)))

becomes TestCase(kind="call", args=ARGS, kwargs=..., wrap=WRAP, op="==", expected=ANSWER).
``f`` is the function under test; ARGS, ANSWER and the arguments of the wrappers are
evaluated here, in the trusted parent, by the restricted evaluator (``harness.verdicts.testdata``):
plain data only, so a generated test cannot read ``solution.py``, inspect the function, use
the clock or randomness, sleep or import. WRAP is a chain of steps applied in the sandbox
to the real object the function returned (``list(...)``, ``next(...)``, ``len(...)``,
``.attr``, ``[key]``, ``[a:b]``, ``.method(args)``, ``round(..., 2)``, ``f(x)(y)``...): each step is data
(``WRAP_CALLS``, ``TestCase.wrap``), never source text, and only the final value comes back
as plain data for the parent to compare.

Any other assert is refused with its reason: other operators (``!=``, ``<``, ``in``,
``is``...), bare truthy asserts (``assert f(x)``, ``assert not f(x)``), chained
comparisons, asserts that do not call ``f`` or call it on both sides, and data the
evaluator refuses ("not data: calls open").

``allow_other_forms=True`` (``codea1 evaluate-tests --allow-other-forms``, for comparability
with a benchmark's own harness) keeps such asserts as before (``parse_legacy_assert``) and
marks them ``judged="in-process"``: their call expression runs as code in the program's
process. Training never accepts them.

``parse_legacy_assert`` is the former parser, for golden tests of benchmarks (written by
people, not by the model under training; ``parse_assert(..., golden=True)`` uses it for
what is outside the paper's form): ``assert CALL <op> EXPECTED`` for ==, !=, <, <=,
>, >=, in, not in, ``is`` / ``is not`` against None, True or False; mirrored forms;
``assert CALL`` (op "truthy") and ``assert not CALL`` ("falsy"). EXPECTED is data (the
restricted evaluator) or else an expression (``expected_source``), evaluated in a sandbox
job of its own that loads only the problem's prelude, before any job of a program is built
(``harness.verdicts.expected``): the value, never the expression, is what a program's test is
judged against, in the parent, and no process that runs a program holds either.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from codea1.harness.records import TestCase
from codea1.harness.verdicts import testdata
from codea1.harness.verdicts.syntax import parse_untrusted
from codea1.harness.verdicts.testdata import NotData

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
        return testdata.evaluate(node), None
    except NotData:
        return None, ast.get_source_segment(text, node) or ast.unparse(node)


# Builtins a wrapper may apply to the call's result (the result is their first argument).
WRAP_CALLS = ("list", "tuple", "set", "frozenset", "dict", "sorted", "next", "iter", "len", "str", "repr", "int",
              "float", "bool", "abs", "round", "sum", "min", "max", "reversed", "enumerate", "any", "all")
PAPER_FORM = "the paper's form is assert f(args) == answer"


def _assert_node(source: str) -> tuple[str, ast.expr]:
    text = source.strip()
    try:
        testdata.check_source(text)
    except NotData as exc:
        raise AssertParseError(exc.reason, source) from None
    try:
        module = parse_untrusted(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        raise AssertParseError(f"syntax error: {getattr(exc, 'msg', exc)}", source) from None
    if len(module.body) != 1 or not isinstance(module.body[0], ast.Assert):
        raise AssertParseError("not a single assert statement", source)
    return text, module.body[0].test


def _data(node: ast.expr, what: str, source: str) -> object:
    try:
        return testdata.evaluate(node)
    except NotData as exc:
        raise AssertParseError(f"{what}: {exc.reason}", source) from None


def _call_arguments(call: ast.Call, source: str) -> tuple[list, dict]:
    """The evaluated positional and keyword arguments of a call (``*`` and ``**`` of data
    included)."""
    args: list = []
    for arg in call.args:
        if isinstance(arg, ast.Starred):
            value = _data(arg.value, "argument", source)
            if type(value) not in (list, tuple, str, bytes, set, frozenset, dict):
                raise AssertParseError(f"argument: * of a {type(value).__name__}", source)
            args.extend(value)
        else:
            args.append(_data(arg, "argument", source))
    kwargs: dict = {}
    for kw in call.keywords:
        if kw.arg is None:
            value = _data(kw.value, "argument", source)
            if type(value) is not dict or not all(type(k) is str for k in value):
                raise AssertParseError("argument: ** of a value that is not a dict of str keys", source)
            kwargs.update(value)
        else:
            kwargs[kw.arg] = _data(kw.value, "argument", source)
    if _shares_a_mutable_part([args, kwargs]):
        raise AssertParseError("argument: the same list, dict or set appears twice (as in [[0] * 3] * 3): "
                               "its copy in the sandbox would not be shared; write the parts out", source)
    return args, kwargs


def _shares_a_mutable_part(value) -> bool:
    """Does a mutable container occur twice in ``value``? Arguments reach the function as
    copies made from plain data, where no part is shared: a function that mutates one row
    of ``[[0] * 3] * 3`` would see what plain Python does not."""
    seen: set[int] = set()
    stack = [value]
    while stack:
        v = stack.pop()
        t = type(v)
        if t in (list, dict, set):
            if id(v) in seen:
                return True
            seen.add(id(v))
        if t is dict:
            stack.extend(v.values())
        elif t in (list, tuple, set, frozenset):
            stack.extend(v)
    return False


def _is_entry_call(node: ast.expr, entry_point: str) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == entry_point


def _unwrap(node: ast.expr, entry_point: str, source: str) -> tuple[ast.Call, list]:
    """The call of the function under test inside ``node`` and the wrapper steps around it,
    innermost first."""
    steps: list = []
    while not _is_entry_call(node, entry_point):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in WRAP_CALLS \
                and node.args and not isinstance(node.args[0], ast.Starred) and _calls(node.args[0], entry_point):
            extra = ast.Call(func=node.func, args=node.args[1:], keywords=node.keywords)
            args, kwargs = _call_arguments(extra, source)
            steps.append(["call", node.func.id, args, kwargs])
            node = node.args[0]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and _calls(node.func.value, entry_point):
            if node.func.attr.startswith("__"):
                raise AssertParseError(f"not data: calls the special method {node.func.attr}", source)
            args, kwargs = _call_arguments(node, source)
            steps.append(["method", node.func.attr, args, kwargs])
            node = node.func.value
        elif isinstance(node, ast.Call) and not isinstance(node.func, (ast.Name, ast.Attribute)) \
                and _calls(node.func, entry_point):
            args, kwargs = _call_arguments(node, source)  # f(x)(y): the result called
            steps.append(["apply", args, kwargs])
            node = node.func
        elif isinstance(node, ast.Attribute) and _calls(node.value, entry_point):
            if node.attr.startswith("__"):
                raise AssertParseError(f"not data: the special attribute {node.attr}", source)
            steps.append(["attr", node.attr])
            node = node.value
        elif isinstance(node, ast.Subscript) and _calls(node.value, entry_point):
            if isinstance(node.slice, ast.Slice):
                bounds = [None if b is None else _data(b, "slice", source)
                          for b in (node.slice.lower, node.slice.upper, node.slice.step)]
                if not all(b is None or type(b) in (int, bool) for b in bounds):
                    raise AssertParseError("slice: a bound that is not an integer", source)
                steps.append(["slice", *bounds])
            else:
                steps.append(["item", _data(node.slice, "key", source)])
            node = node.value
        else:
            what = ast.unparse(node)
            what = what if len(what) <= 60 else what[:60] + "..."
            raise AssertParseError(f"not data: {what} (a wrapper other than {', '.join(WRAP_CALLS[:6])}..., "
                                   f".attr, [key], .method(...) around {entry_point}(...))", source)
    steps.reverse()
    return node, steps


def parse_assert(source: str, entry_point: str | None = None, test_id: str = "assert", *,
                 allow_other_forms: bool = False, golden: bool = False) -> TestCase:
    """Parse one assert statement in the paper's form (see the module's docstring). Raises
    AssertParseError with the reason when refused. With ``allow_other_forms``, an assert
    outside the form is parsed as ``parse_legacy_assert`` does and marked
    ``judged="in-process"``. With ``golden`` (a benchmark's own tests, written by people:
    never a generated test), it is parsed as ``parse_legacy_assert`` does, unmarked."""
    try:
        return parse_data_assert(source, entry_point, test_id)
    except AssertParseError:
        if not (allow_other_forms or golden):
            raise
    test = parse_legacy_assert(source, entry_point, test_id)
    if not golden:
        test.judged = "in-process"
    return test


def parse_data_assert(source: str, entry_point: str | None, test_id: str = "assert") -> TestCase:
    """``assert WRAP(f(ARGS)) == ANSWER`` (or mirrored) as a data test; AssertParseError else."""
    text, node = _assert_node(source)
    if not entry_point:
        raise AssertParseError("the function under test is not known", source)
    if isinstance(node, ast.BoolOp):
        raise AssertParseError(f"a boolean combination of conditions: {PAPER_FORM}", source)
    if not isinstance(node, ast.Compare):
        raise AssertParseError(f"a bare truthy assert: {PAPER_FORM}", source)
    if len(node.ops) != 1:
        raise AssertParseError(f"a chained comparison: {PAPER_FORM}", source)
    if not isinstance(node.ops[0], ast.Eq):
        raise AssertParseError(f"the operator {_OPS.get(type(node.ops[0]), type(node.ops[0]).__name__)}: {PAPER_FORM}",
                               source)
    left, right = node.left, node.comparators[0]
    left_calls, right_calls = _calls(left, entry_point), _calls(right, entry_point)
    if left_calls and right_calls:
        raise AssertParseError(f"both sides call {entry_point}: no independent expected value", source)
    if not left_calls and not right_calls:
        raise AssertParseError(f"does not call {entry_point}", source)
    if not left_calls:
        left, right = right, left
    call, wrap = _unwrap(left, entry_point, source)
    args, kwargs = _call_arguments(call, source)
    expected = _data(right, "answer", source)
    return TestCase(id=test_id, kind="call", args=args, kwargs=kwargs or None, wrap=wrap or None, op="==",
                    expected=expected, source=text)


def parse_legacy_assert(source: str, entry_point: str | None = None, test_id: str = "assert") -> TestCase:
    """The former parser (see the module's docstring): for golden tests of benchmarks."""
    text, node = _assert_node(source)

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


def parse_asserts(text: str, entry_point: str | None = None, id_prefix: str = "assert", *,
                  allow_other_forms: bool = False, golden: bool = False) -> tuple[list[TestCase], list[Rejected]]:
    """Parse every assert in ``text`` in order (``parse_assert``); other statements are
    rejected with a reason.

    Works on a whole module when it parses, and statement by statement (line-wise) when it
    does not, so one broken line does not lose the others.
    """
    tests: list[TestCase] = []
    rejected: list[Rejected] = []
    try:
        statements = [(stmt.lineno, ast.get_source_segment(text, stmt)) for stmt in parse_untrusted(text).body]
    except SyntaxError:
        statements = [(i + 1, line) for i, line in enumerate(text.splitlines()) if line.strip()]
    for lineno, stmt in statements:
        if not stmt or stmt.lstrip().startswith("#"):
            continue
        if not stmt.lstrip().startswith("assert"):
            rejected.append(Rejected(stmt, "not an assert statement", lineno))
            continue
        try:
            tests.append(parse_assert(stmt, entry_point, f"{id_prefix}/{len(tests)}",
                                      allow_other_forms=allow_other_forms, golden=golden))
        except AssertParseError as exc:
            rejected.append(Rejected(stmt, exc.reason, lineno))
    return tests, rejected
