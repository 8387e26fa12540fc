"""Script tests rewritten so that the parent judges them: the rewrite, in the trusted parent.

A KodCode pytest module or a BigCodeBench unittest class is rewritten in the trusted parent,
before it reaches the sandbox: every check whose expected side the parent can know (a
literal, or what ``known_value`` accepts: containers and arithmetic of literals, nothing that
calls code) becomes a call that *reports* the actual side's value, as plain data, under a
site id. The parent keeps, per site, the operator, the expected value and the tolerance;
none of them enters the child. The child runs the rewritten script and sends the reports
(``{"i": i, "s": "reports", "f": {...}, "r": [...]}``); ``script_reports.judge_reports``
compares them.

Completeness: each test function must return (not raise, not skip), every site on its
straight-line path (not inside if/for/while/try/with, the raises-blocks aside) must have
reported, and at least one site must have reported: a program that makes a test return
early, or skips it, fails. Sites inside loops or branches are checked at every report, as
Python would check them (a loop that runs zero times checks nothing, there as here).

Values are reported as plain data; numpy arrays and pandas' Index, Series and DataFrame as
``plaindata.Array`` (read from numpy's and pandas' own classes only; the parent applies
numpy's semantics: ``assertIn("x", df.columns)``, ``assertEqual(one_element_array, 80)``).
``np.array_equal`` / ``np.allclose`` in a truthy check, with one side known, are compared in
the parent too. Any other comparison a truthy check would make in the child (an operator,
``np.isclose``, ``DataFrame.equals``, ``math.isclose``, numpy's comparisons of two run-time
values) would be the program's to decide (it can patch numpy, pandas and math in its own
process): such a check is not rewritten.

A script with any check that cannot be rewritten (an expected side computed at run time, a
mock's ``assert_called_with``, ``self.fail`` or ``raise`` in a test, a skip, a parametrized
expected value, a comparison inside a truthy assert) stays as it is, ``judged="in-process"``,
with the reason (``rewrite_script``'s second value). Granularity: one script is one test, as
before (test ids, reference times and caches unchanged); it is parent-judged only when every
test function in it is.

This module imports only the standard library and harness.verdicts.plaindata: the child imports it
for ``Reporter`` (the hooks the rewritten script calls).
"""

from __future__ import annotations

import ast
import copy
import dataclasses
from typing import Any

from codea1.harness.verdicts import plaindata
from codea1.harness.verdicts.script_reports import (
    ARRAY_CHECKS,
    IMPORT_LINE,
    RAISES,
    RAISES_CALL,
    REPORT,
    SCALAR_TYPES,
    UNSHADOW,
)

# ---------------------------------------------------------------------------------------------
# The restricted evaluator: what the parent can know without running code.


class Unknown(Exception):
    """The expression's value is not knowable without running code."""


_BINOPS = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
           ast.Div: lambda a, b: a / b, ast.FloorDiv: lambda a, b: a // b, ast.Mod: lambda a, b: a % b,
           ast.Pow: lambda a, b: a ** b}
_EMPTY_CALLS = {"set": set, "dict": dict, "list": list, "tuple": tuple, "frozenset": frozenset}


def known_value(node: ast.AST, names: dict[str, Any] | None = None) -> Any:
    """The value of ``node`` when it is built from literals only: constants, containers,
    unary and binary arithmetic on them (bounded), ``float('inf')``-style conversions of
    string literals, ``set()``/``set([...])``-style constructors of literals, and ``names``
    (locals bound to such values). Raises ``Unknown`` otherwise."""
    names = names or {}
    if isinstance(node, ast.Constant):
        if node.value is Ellipsis:
            raise Unknown("...")
        return node.value
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        if any(isinstance(e, ast.Starred) for e in node.elts):
            raise Unknown("starred")
        items = [known_value(e, names) for e in node.elts]
        return {ast.List: list, ast.Tuple: tuple, ast.Set: set}[type(node)](items)
    if isinstance(node, ast.Dict):
        if any(k is None for k in node.keys):
            raise Unknown("** in a dict")
        return {known_value(k, names): known_value(v, names) for k, v in zip(node.keys, node.values)}
    if isinstance(node, ast.Name) and node.id in names:
        return names[node.id]
    if isinstance(node, ast.UnaryOp):
        operand = known_value(node.operand, names)
        if isinstance(node.op, ast.Not):
            return not operand
        if not isinstance(operand, SCALAR_TYPES):
            raise Unknown("unary operator on a non-number")
        if isinstance(node.op, ast.USub):
            return -operand
        if isinstance(node.op, ast.UAdd):
            return +operand
        if isinstance(node.op, ast.Invert) and isinstance(operand, int):
            return ~operand
        raise Unknown("unary operator")
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        left, right = known_value(node.left, names), known_value(node.right, names)
        _check_size(node.op, left, right)
        try:
            return _BINOPS[type(node.op)](left, right)
        except Exception as exc:  # noqa: BLE001 - 1/0 in a test: not knowable, let the child do it
            raise Unknown(str(exc)) from None
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not node.keywords:
        fn = node.func.id
        if fn == "float" and len(node.args) == 1:
            arg = known_value(node.args[0], names)
            if isinstance(arg, (str, int, float)) and not isinstance(arg, bool):
                try:
                    return float(arg)
                except ValueError:
                    raise Unknown("float() of a bad string") from None
        if fn in _EMPTY_CALLS and len(node.args) <= 1:
            if not node.args:
                return _EMPTY_CALLS[fn]()
            arg = known_value(node.args[0], names)
            if fn != "dict" and isinstance(arg, (list, tuple, set, frozenset, str)):
                return _EMPTY_CALLS[fn](arg)
    raise Unknown(type(node).__name__)


def _check_size(op: ast.operator, left: Any, right: Any) -> None:
    """Refuse arithmetic that could make huge values (``[0] * 10**9``, ``9 ** 10**8``)."""
    numbers = all(isinstance(v, SCALAR_TYPES) for v in (left, right))
    if isinstance(op, ast.Pow) and (not numbers or abs(right) > 4096 or abs(left) > 2 ** 64):
        raise Unknown("power too large")
    if isinstance(op, ast.Mult) and not numbers:
        count = right if isinstance(left, (str, list, tuple, bytes)) else left
        if not isinstance(count, int) or count > 100_000:
            raise Unknown("repetition too large")
    if not numbers and not isinstance(op, (ast.Add, ast.Mult, ast.Mod)):
        raise Unknown("operator on a non-number")


# ---------------------------------------------------------------------------------------------
# The rewriter (trusted parent).


@dataclasses.dataclass
class Site:
    op: str  # a judge.compare operator, or "approx", "almost", "count_equal", "raises"
    expected: Any
    tolerance: dict | None
    function: str  # qualified name of the test function it is in: "test_x", "TestCases.test_y"
    line: int
    required: bool  # on the function's straight-line path: it must report


_EQ_OPS = {ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=",
           ast.In: "in", ast.NotIn: "not in", ast.Is: "is", ast.IsNot: "is not"}
# The operator to use when the known side is the left one: ``3 < f(x)`` is ``f(x) > 3``.
_FLIPPED = {"==": "==", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<=", "in": "contains",
            "not in": "not contains", "is": "is", "is not": "is not"}
_NEGATED = {ast.Eq: ast.NotEq, ast.NotEq: ast.Eq, ast.In: ast.NotIn, ast.NotIn: ast.In, ast.Is: ast.IsNot,
            ast.IsNot: ast.Is}
_UNITTEST_BINARY = {"assertEqual": "==", "assertEquals": "==", "assertListEqual": "==", "assertTupleEqual": "==",
                    "assertDictEqual": "==", "assertSetEqual": "==", "assertMultiLineEqual": "==",
                    "assertNotEqual": "!=", "assertIn": "in", "assertNotIn": "not in",
                    "assertGreater": ">", "assertGreaterEqual": ">=", "assertLess": "<", "assertLessEqual": "<=",
                    "assertIs": "is", "assertIsNot": "is not", "assertCountEqual": "count_equal"}
_UNITTEST_UNARY = {"assertTrue": "truthy", "assertFalse": "falsy", "assertIsNone": "is", "assertIsNotNone": "is not"}
_SKIP_NAMES = {"skip", "skipIf", "skipUnless", "skipTest", "xfail", "importorskip", "expectedFailure"}


class _NotRewritable(Exception):
    pass


def _dotted(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return base and f"{base}.{node.attr}"
    return None


def _exception_names(node: ast.AST) -> list[str]:
    """``ValueError`` / ``json.JSONDecodeError`` / a tuple of them -> class names."""
    nodes = node.elts if isinstance(node, ast.Tuple) else [node]
    names = [_dotted(n) for n in nodes]
    if not names or None in names:
        raise _NotRewritable("an exception type that is not a name")
    # The raised class reports its own name: IOError and EnvironmentError are OSError.
    return [BUILTIN_ALIASES.get(n, n.rsplit(".", 1)[-1]) for n in names]


BUILTIN_ALIASES = {"IOError": "OSError", "EnvironmentError": "OSError"}


# Calls that compare (numpy's, pandas' and math's): made in the child, the program decides them
# (it can patch numpy.allclose or DataFrame.equals), as it decides its own objects' ``==``.
_COMPARING_CALLS = {"array_equal", "array_equiv", "allclose", "isclose", "equals"}
# numpy's comparisons a truthy check may make in the parent: their keyword parameters, in order.


def _has_compare(node: ast.AST) -> bool:
    return any(isinstance(n, ast.Compare) or (isinstance(n, ast.Call) and _called_name(n) in _COMPARING_CALLS)
               for n in ast.walk(node))


def _called_name(call: ast.Call) -> str:
    """``f`` of ``f(x)``, ``a.b.f(x)`` and ``g(x).f(y)``."""
    return call.func.attr if isinstance(call.func, ast.Attribute) else getattr(call.func, "id", "")


class _FunctionRewriter:
    """Rewrites the checks of one test function into report calls."""

    def __init__(self, owner: "_ScriptRewriter", qualname: str, known: dict[str, Any]):
        self.owner, self.qualname, self.known = owner, qualname, known
        self.used_known: dict[str, int] = {}  # local -> loads of it used as an expected side
        self.count = 0

    def expected(self, node: ast.AST) -> Any:
        value = known_value(node, self.known)
        for n in ast.walk(node):
            if isinstance(n, ast.Name) and n.id in self.known:
                self.used_known[n.id] = self.used_known.get(n.id, 0) + 1
        return value

    def site(self, op: str, expected: Any, tolerance: dict | None, line: int, required: bool) -> int:
        self.count += 1
        self.owner.sites.append(Site(op, expected, tolerance, self.qualname, line, required))
        return len(self.owner.sites) - 1

    def report(self, actual: ast.expr, op: str, expected: Any, tolerance: dict | None, where: ast.stmt,
               required: bool) -> ast.stmt:
        site = self.site(op, expected, tolerance, where.lineno, required)
        call = ast.Call(ast.Name(REPORT, ast.Load()), [ast.Constant(site), actual], [])
        return ast.copy_location(ast.Expr(call), where)

    def comparison(self, left: ast.expr, cmp: ast.cmpop, right: ast.expr, where: ast.stmt, required: bool) -> ast.stmt:
        op = _EQ_OPS.get(type(cmp))
        if op is None:
            raise _NotRewritable("comparison operator")
        approx = self.approx(right) if op == "==" else None
        if approx is not None:
            return self.report(left, "approx", approx[0], approx[1], where, required)
        approx = self.approx(left) if op == "==" else None
        if approx is not None:
            return self.report(right, "approx", approx[0], approx[1], where, required)
        for actual, known, the_op in ((left, right, op), (right, left, _FLIPPED[op])):
            try:
                expected = self.expected(known)
            except Unknown:
                continue
            if the_op in ("is", "is not") and expected not in (None, True, False):
                raise _NotRewritable("'is' with a value that is not a singleton")
            return self.report(actual, the_op, expected, None, where, required)
        raise _NotRewritable(f"line {where.lineno}: neither side of the comparison is known before the run")

    def approx(self, node: ast.expr) -> tuple[Any, dict] | None:
        """``pytest.approx(known, rel=..., abs=...)`` -> (expected, tolerance)."""
        if not (isinstance(node, ast.Call) and _dotted(node.func) in ("pytest.approx", "approx")):
            return None
        if len(node.args) != 1:
            raise _NotRewritable("pytest.approx with more than one positional argument")
        tolerance = {}
        for kw in node.keywords:
            if kw.arg not in ("rel", "abs"):
                raise _NotRewritable(f"pytest.approx({kw.arg}=...)")
            tolerance[kw.arg] = self.expected(kw.value)
        return self.expected(node.args[0]), tolerance

    def truthy(self, node: ast.expr, op: str, where: ast.stmt, required: bool) -> ast.stmt:
        array_check = self.array_check(node, op, where, required)
        if array_check is not None:
            return array_check
        if isinstance(node, ast.Compare) and len(node.ops) == 1:
            # assertTrue(a < 3) is `assert a < 3`; assertFalse(a == 3) is `assert a != 3`
            # (the exact negations only: `not a < b` is not `a >= b` for sets or NaN)
            cmp = node.ops[0] if op == "truthy" else _NEGATED.get(type(node.ops[0]), lambda: None)()
            if cmp is not None:
                return self.comparison(node.left, cmp, node.comparators[0], where, required)
        if _has_compare(node):
            # The comparison would run in the child, where the program's objects decide it.
            raise _NotRewritable(f"line {where.lineno}: a truthy check with a comparison inside")
        return self.report(node, op, True if op == "truthy" else False, None, where, required)

    def array_check(self, node: ast.expr, op: str, where: ast.stmt, required: bool) -> ast.stmt | None:
        """``np.array_equal(a, b[, equal_nan])`` / ``np.allclose(a, b[, rtol, atol, equal_nan])``
        as a truthy check, one side known before the run (``np.array(known)`` too): the other
        side is reported and the parent compares (numpy's rules). None for any other check."""
        base, _, name = (_dotted(node.func) or "").rpartition(".") if isinstance(node, ast.Call) else ("", "", "")
        if name not in ARRAY_CHECKS or base not in self.owner.numpy_names:
            return None
        params = ("a", "b", *ARRAY_CHECKS[name])
        if len(node.args) > len(params) or any(isinstance(a, ast.Starred) for a in node.args) \
                or any(k.arg not in params[2:] for k in node.keywords):
            raise _NotRewritable(f"line {where.lineno}: {base}.{name} with arguments it does not take")
        bound = dict(zip(params, node.args)) | {k.arg: k.value for k in node.keywords}
        if "b" not in bound:
            raise _NotRewritable(f"line {where.lineno}: {base}.{name} of one value")
        tolerance = {k: self.expected(bound[k]) for k in params[2:] if k in bound}
        for actual, known, first in ((bound["a"], bound["b"], True), (bound["b"], bound["a"], False)):
            try:
                expected = self.expected(self.unwrapped_array(known))
            except Unknown:
                continue
            tolerance |= {"actual_first": first, "negate": op == "falsy"}
            return self.report(actual, name, expected, tolerance, where, required)
        raise _NotRewritable(f"line {where.lineno}: {base}.{name} of two values computed at run time")

    def unwrapped_array(self, node: ast.expr) -> ast.expr:
        """``np.array(x)`` / ``np.asarray(x)`` -> ``x``: numpy's comparisons take lists as arrays."""
        if isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords:
            base, _, name = (_dotted(node.func) or "").rpartition(".")
            if name in ("array", "asarray") and base in self.owner.numpy_names:
                return node.args[0]
        return node

    def assert_statement(self, node: ast.Assert, required: bool) -> list[ast.stmt]:
        test = node.test
        if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
            # `assert a and b` checks as `assert a; assert b` (b is not reached when a fails)
            return [s for value in test.values
                    for s in self.assert_statement(ast.copy_location(ast.Assert(value, None), node), required)]
        if isinstance(test, ast.Compare):
            if len(test.ops) != 1:
                raise _NotRewritable(f"line {node.lineno}: a chained comparison")
            return [self.comparison(test.left, test.ops[0], test.comparators[0], node, required)]
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            return [self.truthy(test.operand, "falsy", node, required)]
        return [self.truthy(test, "truthy", node, required)]

    def unittest_call(self, call: ast.Call, where: ast.stmt, required: bool) -> ast.stmt | None:
        """``self.assertX(...)`` -> a report, or None when it is no unittest assertion."""
        if not (isinstance(call.func, ast.Attribute) and isinstance(call.func.value, ast.Name)
                and call.func.value.id == "self" and call.func.attr.startswith("assert")):
            return None
        name = call.func.attr
        args = list(call.args)
        keywords = {kw.arg: kw.value for kw in call.keywords if kw.arg != "msg"}
        if any(isinstance(a, ast.Starred) for a in args) or None in keywords:
            raise _NotRewritable(f"line {where.lineno}: {name} with *args")
        if name in _UNITTEST_UNARY and len(args) >= 1 and not keywords:
            op = _UNITTEST_UNARY[name]
            if op in ("truthy", "falsy"):
                return self.truthy(args[0], op, where, required)
            return self.report(args[0], op, None, None, where, required)
        if name in _UNITTEST_BINARY and len(args) >= 2 and not keywords:
            op = _UNITTEST_BINARY[name]
            if op == "count_equal":
                for actual, known in ((args[0], args[1]), (args[1], args[0])):
                    try:
                        return self.report(actual, op, list(self.expected(known)), None, where, required)
                    except (Unknown, TypeError):
                        continue
                raise _NotRewritable(f"line {where.lineno}: {name} of two values computed at run time")
            return self.comparison(args[0], _cmp_node(op), args[1], where, required)
        if name == "assertAlmostEqual" and len(args) >= 2 and set(keywords) <= {"places", "delta"}:
            tolerance = {k: self.expected(v) for k, v in keywords.items()}
            if len(args) >= 3:
                tolerance["places"] = self.expected(args[2])
            for actual, known in ((args[0], args[1]), (args[1], args[0])):
                try:
                    return self.report(actual, "almost", self.expected(known), tolerance, where, required)
                except Unknown:
                    continue
        if name in ("assertRaises", "assertRaisesRegex") and len(args) >= (3 if name.endswith("Regex") else 2):
            names = _exception_names(args[0])
            tolerance = {"match": self.expected(args[1])} if name.endswith("Regex") else None
            rest = args[2:] if name.endswith("Regex") else args[1:]
            site = self.site("raises", names, tolerance, where.lineno, required)
            hook = ast.Call(ast.Name(RAISES_CALL, ast.Load()), [ast.Constant(site), *rest], call.keywords)
            return ast.copy_location(ast.Expr(hook), where)
        if name in ("assertIsInstance", "assertNotIsInstance") and len(args) >= 2 and not keywords:
            check = ast.Call(ast.Name("isinstance", ast.Load()), args[:2], [])
            return self.report(check, "truthy" if name == "assertIsInstance" else "falsy",
                               name == "assertIsInstance", None, where, required)
        raise _NotRewritable(f"line {where.lineno}: self.{name}(...) whose expected side is not known before the run")

    def raises_with(self, node: ast.With, required: bool) -> ast.With | None:
        """``with pytest.raises(E[, match=..]) [as x]:`` / ``with self.assertRaises(E) [as x]:``."""
        if len(node.items) != 1 or not isinstance(node.items[0].context_expr, ast.Call):
            return None
        call = node.items[0].context_expr
        name = _dotted(call.func) or ""
        if name in ("pytest.raises", "raises") and len(call.args) == 1:
            keywords = {kw.arg: kw.value for kw in call.keywords}
            if set(keywords) - {"match"}:
                raise _NotRewritable(f"line {node.lineno}: pytest.raises with {sorted(keywords)}")
            tolerance = {"match": self.expected(keywords["match"])} if "match" in keywords else None
        elif name in ("self.assertRaises", "self.assertRaisesRegex") \
                and all(kw.arg == "msg" for kw in call.keywords) \
                and len(call.args) == (2 if name.endswith("Regex") else 1):
            # msg= only words the failure: the parent words its own
            tolerance = {"match": self.expected(call.args[1])} if name.endswith("Regex") else None
        else:
            return None
        site = self.site("raises", _exception_names(call.args[0]), tolerance, node.lineno, required)
        if isinstance(node.items[0].optional_vars, ast.Name):
            self.owner.raises_names.add(node.items[0].optional_vars.id)
        hook = ast.Call(ast.Name(RAISES, ast.Load()), [ast.Constant(site)], [])
        body = self.block(node.body, False)
        return ast.copy_location(ast.With([ast.withitem(hook, node.items[0].optional_vars)], body), node)

    def block(self, statements: list[ast.stmt], straight: bool) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        for node in statements:
            if isinstance(node, ast.Assert):
                out += self.assert_statement(node, straight)
            elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call) \
                    and (rewritten := self.unittest_call(node.value, node, straight)) is not None:
                out.append(rewritten)
            elif isinstance(node, ast.With) and (rewritten := self.raises_with(node, straight)) is not None:
                out.append(rewritten)
            elif isinstance(node, ast.Raise):
                raise _NotRewritable(f"line {node.lineno}: a test that raises by itself (a check made in the child)")
            elif isinstance(node, (ast.If, ast.For, ast.While, ast.Try, ast.With, ast.AsyncFor, ast.AsyncWith)):
                for field in ("body", "orelse", "finalbody"):
                    if hasattr(node, field):
                        setattr(node, field, self.block(getattr(node, field), False))
                for handler in getattr(node, "handlers", ()):
                    handler.body = self.block(handler.body, False)
                out.append(node)
            else:
                out.append(node)
        return out


def _cmp_node(op: str) -> ast.cmpop:
    return next(k for k, v in _EQ_OPS.items() if v == op)()


def _known_locals(fn: ast.FunctionDef) -> dict[str, Any]:
    """Locals bound once, at the top of the function's body, to a knowable value."""
    stores: dict[str, int] = {}
    for n in ast.walk(fn):
        if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
            stores[n.id] = stores.get(n.id, 0) + 1
        elif isinstance(n, (ast.Global, ast.Nonlocal)):
            for name in n.names:
                stores[name] = stores.get(name, 0) + 2
    known: dict[str, Any] = {}
    for statement in fn.body:
        if isinstance(statement, ast.Assign) and len(statement.targets) == 1 \
                and isinstance(statement.targets[0], ast.Name) and stores.get(statement.targets[0].id) == 1:
            try:
                known[statement.targets[0].id] = known_value(statement.value, known)
            except Unknown:
                pass
    return known


def _loads(fn: ast.FunctionDef) -> dict[str, int]:
    counts: dict[str, int] = {}
    for n in ast.walk(fn):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
            counts[n.id] = counts.get(n.id, 0) + 1
    return counts


class _ScriptRewriter:
    def __init__(self, numpy_names: set[str]):
        self.sites: list[Site] = []
        self.raises_names: set[str] = set()  # `as` names of raises-blocks: their .match() is a check
        self.numpy_names = numpy_names  # names the script reaches numpy by

    def function(self, fn: ast.FunctionDef, qualname: str) -> None:
        """Rewrites ``fn`` in place. A local used both as an expected value and as anything
        else (an input the program sees) is not treated as known: the parent's copy and the
        child's could differ."""
        if isinstance(fn, ast.AsyncFunctionDef):
            raise _NotRewritable(f"{qualname}: an async test")
        original_body = fn.body
        known = _known_locals(fn)
        loads = _loads(fn)
        while True:
            mark = len(self.sites)
            fn.body = [_deep_copy(s) for s in original_body]
            rewriter = _FunctionRewriter(self, qualname, known)
            fn.body = rewriter.block(fn.body, True)
            shared = [name for name, used in rewriter.used_known.items() if used != loads.get(name, 0)]
            if not shared:
                break
            del self.sites[mark:]
            for name in shared:
                known.pop(name)
        if rewriter.count == 0:
            raise _NotRewritable(f"{qualname}: no check whose expected side is known before the run")
        # Expected values never enter the child: the assignments of locals used only as
        # expected sides are dropped from the script.
        dropped = set(rewriter.used_known)
        fn.body = [s for s in fn.body if not (isinstance(s, ast.Assign) and len(s.targets) == 1
                                              and isinstance(s.targets[0], ast.Name) and s.targets[0].id in dropped)]
        if not fn.body:
            fn.body = [ast.Pass()]


def _deep_copy(node: ast.AST) -> ast.AST:
    return copy.deepcopy(node)


def _drop_redefined(module: ast.Module) -> None:
    """Removes each test function that a later one of the same name replaces (Python keeps the
    last definition: the earlier one never runs, and its checks would never report)."""
    for body in [module.body] + [n.body for n in module.body if isinstance(n, ast.ClassDef)]:
        last = {n.name: n for n in body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
        body[:] = [n for n in body if not (isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                                           and n.name.startswith("test") and last[n.name] is not n)]


def _test_functions(module: ast.Module, framework: str) -> list[tuple[ast.FunctionDef, str]]:
    found = []
    for node in module.body:
        if framework == "pytest" and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) \
                and node.name.startswith("test"):
            found.append((node, node.name))
        elif isinstance(node, ast.ClassDef) and (node.name == "TestCases" if framework == "unittest"
                                                 else node.name.startswith("Test")):
            found += [(m, f"{node.name}.{m.name}") for m in node.body
                      if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef)) and m.name.startswith("test")]
    return found


def _left_checks(module: ast.Module, raises_names: set[str]) -> str | None:
    """A check left in the rewritten script (it would be decided in the child), or None."""
    for n in ast.walk(module):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "match" \
                and isinstance(n.func.value, ast.Name) and n.func.value.id in raises_names:
            return f"line {n.lineno}: {n.func.value.id}.match(...) is a check made in the child"
        if isinstance(n, ast.Assert):
            return f"line {n.lineno}: an assert that could not be rewritten"
        if isinstance(n, ast.Call):
            name = _dotted(n.func) or ""
            last = name.rsplit(".", 1)[-1]
            if last.startswith("assert") or last.startswith("fail") or name in ("pytest.fail", "fail"):
                return f"line {n.lineno}: {name}(...) is a check made in the child"
        if isinstance(n, (ast.Name, ast.Attribute)):
            if (n.id if isinstance(n, ast.Name) else n.attr) in _SKIP_NAMES:
                return f"line {n.lineno}: a skip (a skipped test would not report)"
        if isinstance(n, ast.Raise) and n.exc is not None and (_dotted(n.exc) or _dotted(getattr(n.exc, "func", None))
                                                               or "").endswith("AssertionError"):
            return f"line {n.lineno}: raise AssertionError is a check made in the child"
    return None


def _top_level_names(module: ast.Module) -> set[str]:
    names = set()
    for node in module.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names if a.name != "*"}
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            names |= {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    return names


def _numpy_names(module: ast.Module) -> set[str]:
    """The names the script reaches numpy by: those its imports bind to it, and ``np`` and
    ``numpy`` when it binds them to nothing (a BigCodeBench test may use the solution's ``np``)."""
    names = {"np", "numpy"} - _top_level_names(module)
    for node in module.body:
        if isinstance(node, ast.Import):
            names |= {a.asname or "numpy" for a in node.names if a.name == "numpy" or
                      (a.name.startswith("numpy.") and a.asname is None)}
    return names


@dataclasses.dataclass
class RewrittenScript:
    script: str
    sites: list[Site]
    functions: list[str]

    def table(self) -> dict:
        """What the parent keeps (``TestCase.expected`` of the rewritten test), as JSON-able
        plain data: expected values as plaindata trees."""
        return {"functions": list(self.functions),
                "sites": [{"op": s.op, "expected": plaindata.to_tree(s.expected), "tolerance": s.tolerance,
                           "function": s.function, "line": s.line, "required": s.required} for s in self.sites]}


def rewrite_script(script: str, framework: str) -> tuple[RewrittenScript | None, str]:
    """(the rewritten script, "") or (None, why it stays in-process)."""
    from codea1.harness.verdicts.syntax import (
        parse_untrusted,  # parent side: this module's imports travel to the sandbox
    )

    try:
        module = parse_untrusted(script)
    except SyntaxError as exc:
        return None, f"syntax error: {exc}"
    _drop_redefined(module)
    rewriter = _ScriptRewriter(_numpy_names(module))
    functions = _test_functions(module, framework)
    if not functions:
        return None, "no test function"
    try:
        for fn, qualname in functions:
            if any(isinstance(n, (ast.Yield, ast.YieldFrom)) for n in ast.walk(fn)):
                raise _NotRewritable(f"{qualname}: a generator test")
            rewriter.function(fn, qualname)
    except (_NotRewritable, Unknown) as exc:
        return None, str(exc)
    left = _left_checks(module, rewriter.raises_names)
    if left:
        return None, left
    try:
        table_check = RewrittenScript("", rewriter.sites, []).table()
        del table_check
    except plaindata.PlainDataError as exc:
        return None, f"an expected value that is not plain data: {exc}"
    # Names the test module binds itself (its imports, `from solution import f`, helpers)
    # keep their meaning; any other name that shadows a builtin (the program's `len`,
    # `isinstance`, arriving by `from solution import *` or through the solution's namespace)
    # is removed, so that the actual sides are computed with the real builtins.
    keep = sorted(_top_level_names(module))
    text = (IMPORT_LINE + ast.unparse(ast.fix_missing_locations(module))
            + f"\n{UNSHADOW}(globals(), {keep!r})\n")
    return RewrittenScript(text, rewriter.sites, [q for _, q in functions]), ""


def rewrite_test(test):
    """A script ``TestCase`` judged in the parent where its script can be rewritten; the test
    itself (judged in-process) where it cannot."""
    if test.kind != "script" or test.judged == "parent":
        return test
    rewritten, _why = rewrite_script(test.script, test.framework or "unittest")
    if rewritten is None:
        return test
    return _judged_in_parent(test, rewritten)


def _judged_in_parent(test, rewritten: RewrittenScript):
    return dataclasses.replace(test, script=rewritten.script, judged="parent", expected=rewritten.table(),
                               has_expected=True)


def split_test(test) -> list:
    """For benchmark loaders: a script test as ``rewrite_test`` makes it where the whole
    script can be rewritten; else, where some of its test functions can (each with the
    module's other statements), two tests: the rewritable functions, judged in the parent
    (same id), and the others, judged in-process (id + "/in-process"); else the test as it
    is. (unittest runs each method on its own instance, pytest each function: taking some
    out does not change how the others run, but for state one test leaves to the next.)"""
    whole = rewrite_test(test)
    if whole is not test or test.kind != "script" or test.judged == "parent":
        return [whole]
    framework = test.framework or "unittest"
    from codea1.harness.verdicts.syntax import parse_untrusted  # parent side, as rewrite_script

    try:
        module = parse_untrusted(test.script)
    except SyntaxError:
        return [test]
    _drop_redefined(module)
    names = [q for _, q in _test_functions(module, framework)]
    alone = [q for q in names if rewrite_script(_without(module, framework, set(names) - {q}), framework)[0]]
    if not alone:
        return [test]
    rewritten, _why = rewrite_script(_without(module, framework, set(names) - set(alone)), framework)
    if rewritten is None:
        return [test]
    rest = dataclasses.replace(test, id=f"{test.id}/in-process", script=_without(module, framework, set(alone)))
    return [_judged_in_parent(test, rewritten), rest]


def _without(module: ast.Module, framework: str, drop: set[str]) -> str:
    """The module's text without the test functions named in ``drop`` (qualified names).
    Only the module and the classes that lose a method are copied (shallowly): the rest of
    the tree is shared, read and unparsed, never changed (a deep copy per test function made
    loading BigCodeBench three times slower)."""
    dropped = {id(fn) for fn, q in _test_functions(module, framework) if q in drop}
    body = []
    for node in module.body:
        if id(node) in dropped:
            continue
        if isinstance(node, ast.ClassDef) and any(id(m) in dropped for m in node.body):
            node = copy.copy(node)
            node.body = [m for m in node.body if id(m) not in dropped] or [ast.Pass()]
        body.append(node)
    return ast.unparse(ast.fix_missing_locations(ast.Module(body=body, type_ignores=[]))) + "\n"


def script_names(script: str, framework: str) -> tuple[list[str], list[str]]:
    """(the names the script's imports at module level bind, the qualified names of its test
    functions as ``judge_reports`` and the child's runners name them: "test_x", "TestA.test_b",
    "TestCases.test_c"); ([], []) for a script that does not parse. The child runs it."""
    try:
        module = ast.parse(script)
    except SyntaxError:
        return [], []
    _drop_redefined(module)
    imports, blocks = [], [module.body]
    while blocks:  # imports at module level, in if/try/with blocks too (`try: import x` ...)
        for node in blocks.pop():
            if isinstance(node, ast.Import):
                imports += [(a.asname or a.name).split(".")[0] for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                imports += [a.asname or a.name for a in node.names if a.name != "*"]
            elif isinstance(node, (ast.If, ast.Try, ast.With)):
                blocks += [getattr(node, f) for f in ("body", "orelse", "finalbody") if getattr(node, f, None)]
                blocks += [h.body for h in getattr(node, "handlers", ())]
    return imports, [q for _, q in _test_functions(module, framework)]


def pytest_function_name(nodeid: str) -> str:
    """pytest's node id -> the qualified name the site table uses: 'test_x[1-2]' -> 'test_x',
    'TestA::test_b' -> 'TestA.test_b'."""
    name = nodeid.split("::", 1)[-1] if "::" in nodeid else nodeid
    return name.split("[", 1)[0].replace("::", ".")

