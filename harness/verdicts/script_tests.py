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
import itertools
from typing import Any

from codea1.harness.verdicts import check_exprs, plaindata, slices
from codea1.harness.verdicts.script_reports import (
    ARRAY_CHECKS,
    FRAME,
    IMPORT_LINE,
    LEAVES,
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
    values: list | None = None  # op "expr": the expected values it reads (known, or Computed)


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


@dataclasses.dataclass(frozen=True)
class Computed:
    """An expected side the slice computes (``harness.verdicts.slices``): operand ``index``."""
    index: int


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

    def __init__(self, owner: "_ScriptRewriter", qualname: str, known: dict[str, Any],
                 taint: slices.FunctionTaint | None = None):
        self.owner, self.qualname, self.known, self.taint = owner, qualname, known, taint
        self.used_known: dict[str, int] = {}  # local -> loads of it used as an expected side
        self.computed_names: set[str] = set()  # names the slice's operands read
        self.count = 0
        self.top, self.top_statement = 0, None  # the top-level statement being rewritten

    def expected(self, node: ast.AST, computed: bool = False) -> Any:
        """The expected side's value when the parent knows it now; with ``computed``, a side
        that the slice can compute without the program (``Computed``)."""
        try:
            value = known_value(node, self.known)
        except Unknown:
            if not computed or self.taint is None or self.top_statement is None \
                    or not self.taint.computable(node, self.top, self.top_statement):
                raise
            self.computed_names |= slices.loaded_names(node, self.taint.every_attribute) - slices.BUILTIN_NAMES
            return self.owner.operand(node, self.qualname, self.top)
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
        # a side known now first, then one the slice computes
        for computed, (actual, known, the_op) in itertools.product(
                (False, True), ((left, right, op), (right, left, _FLIPPED[op]))):
            try:
                expected = self.expected(known, computed=computed and the_op not in ("is", "is not"))
            except Unknown:
                continue
            if the_op in ("is", "is not") and expected not in (None, True, False):
                raise _NotRewritable("'is' with a value that is not a singleton")
            return self.report(actual, the_op, expected, None, where, required)
        if op in ("is", "is not"):
            raise _NotRewritable(f"line {where.lineno}: 'is' between two values computed at run time")
        return self.expression(ast.Compare(left, [cmp], [right]), where, required)

    def expression(self, node: ast.expr, where: ast.stmt, required: bool) -> ast.stmt:
        """A check the parent decides as a whole (``check_exprs``): the child reports its
        leaves (what reads the program's values and compares nothing), the parent evaluates
        the rest over them and the expected values it knows or the slice computes."""
        if self.taint is None:
            raise _NotRewritable(f"line {where.lineno}: a check with a comparison inside")
        leaves: list[ast.expr] = []
        values: list[Any] = []
        parent = self.parent_side(node, set(), leaves, values, where)
        try:
            check_exprs.supported(parent, self.owner.numpy_names, set())
        except check_exprs.Unsupported as exc:
            raise _NotRewritable(f"line {where.lineno}: a check the parent cannot decide ({exc})") from None
        spec = {"source": ast.unparse(parent), "numpy": sorted(self.owner.numpy_names),
                "text": ast.unparse(node)[:120]}
        self.count += 1
        self.owner.sites.append(Site("expr", spec, None, self.qualname, where.lineno, required, values))
        site = len(self.owner.sites) - 1
        thunks = [ast.Lambda(ast.arguments(posonlyargs=[], args=[], kwonlyargs=[], kw_defaults=[], defaults=[]), leaf)
                  for leaf in leaves]
        call = ast.Call(ast.Name(LEAVES, ast.Load()), [ast.Constant(site), *thunks], [])
        return ast.copy_location(ast.Expr(call), where)

    def parent_side(self, node: ast.expr, bound: set[str], leaves: list, values: list, where: ast.stmt) -> ast.expr:
        """``node`` as the parent evaluates it: leaves as ``_v<k>``, expected sides as ``_e<k>``."""
        if isinstance(node, ast.Constant) or (isinstance(node, ast.Name) and node.id in bound):
            return node
        reads = slices.loaded_names(node, self.taint.every_attribute) - slices.BUILTIN_NAMES
        # a comprehension that compares nothing is a leaf like any other value the program shapes
        structural = _has_compare(node) or any(isinstance(n, ast.Lambda)
                                               for n in ast.walk(node))
        if not reads & bound:
            program = bool(reads - self.taint.before[self.top]) or (
                self.taint.first_touch is not None and self.taint.first_touch <= self.top
                and bool(slices.called_names(node) & slices.WORLD_READS or reads & slices.WORLD_MODULES))
            module_name = isinstance(node, ast.Name) and (node.id in self.owner.numpy_names or node.id == "math")
            if not program and not module_name:  # an expected side: known now, or computed by the slice
                try:
                    values.append(self.expected(node, computed=True))
                    return ast.Name(f"{check_exprs.VALUE}{len(values) - 1}", ast.Load())
                except Unknown:
                    pass
            if not structural and (program or reads) and not _bare_constants(node):
                secret = self.taint.revealed(node, self.top, self.top_statement, self.owner.scope.data)
                if secret:
                    raise _NotRewritable(f"line {where.lineno}: a check whose side reads {sorted(secret)[0]}, a value "
                                         f"of the test's own the program was not given, in the program's process")
                leaves.append(node)
                return ast.Name(f"{check_exprs.LEAF}{len(leaves) - 1}", ast.Load())

        def side(n: ast.expr, names: set[str] = bound) -> ast.expr:
            return self.parent_side(n, names, leaves, values, where)

        if isinstance(node, ast.Compare):
            return ast.Compare(side(node.left), node.ops, [side(c) for c in node.comparators])
        if isinstance(node, ast.BoolOp):
            return ast.BoolOp(node.op, [side(v) for v in node.values])
        if isinstance(node, ast.UnaryOp):
            return ast.UnaryOp(node.op, side(node.operand))
        if isinstance(node, ast.BinOp):
            return ast.BinOp(side(node.left), node.op, side(node.right))
        if isinstance(node, ast.IfExp):
            return ast.IfExp(side(node.test), side(node.body), side(node.orelse))
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            return type(node)([side(e) for e in node.elts], *([ast.Load()] if not isinstance(node, ast.Set) else []))
        if isinstance(node, ast.Subscript):
            index = node.slice
            if isinstance(index, ast.Slice):
                index = ast.Slice(*[None if p is None else side(p) for p in (index.lower, index.upper, index.step)])
            else:
                index = side(index)
            return ast.Subscript(side(node.value), index, ast.Load())
        if isinstance(node, (ast.GeneratorExp, ast.ListComp, ast.SetComp)):
            generators, inner = [], set(bound)
            for g in node.generators:
                if g.is_async:
                    raise _NotRewritable(f"line {where.lineno}: an async comprehension")
                iterable = side(g.iter, inner)
                inner = inner | {t.id for t in ast.walk(g.target) if isinstance(t, ast.Name)}
                generators.append(ast.comprehension(g.target, iterable, [side(c, inner) for c in g.ifs], 0))
            return type(node)(side(node.elt, inner), generators)
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute) and not (isinstance(func.value, ast.Name)
                                                        and (func.value.id in self.owner.numpy_names
                                                             or func.value.id == "math")):
                func = ast.Attribute(side(func.value), func.attr, ast.Load())
            args = [ast.Starred(side(a.value), ast.Load()) if isinstance(a, ast.Starred) else side(a) for a in node.args]
            return ast.Call(func, args, [ast.keyword(k.arg, side(k.value)) for k in node.keywords])
        raise _NotRewritable(f"line {where.lineno}: a check the parent cannot decide ({type(node).__name__})")

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
        return self.expected(node.args[0], computed=True), tolerance

    def truthy(self, node: ast.expr, op: str, where: ast.stmt, required: bool) -> ast.stmt:
        array_check = self.array_check(node, op, where, required)
        if array_check is not None:
            return array_check
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "equals" \
                and len(node.args) == 1 and not node.keywords and self.taint is not None:
            # DataFrame.equals / Series.equals: shape, index, columns, dtypes and values, NaN equal to NaN
            tolerance = {"check_exact": True, "check_names": False, "negate": op == "falsy"}
            return self.known_or_pair(node.func.value, node.args[0], "frame", tolerance, where, required, frame=True)
        if isinstance(node, ast.Compare) and len(node.ops) == 1:
            # assertTrue(a < 3) is `assert a < 3`; assertFalse(a == 3) is `assert a != 3`
            # (the exact negations only: `not a < b` is not `a >= b` for sets or NaN)
            cmp = node.ops[0] if op == "truthy" else _NEGATED.get(type(node.ops[0]), lambda: None)()
            if cmp is not None:
                return self.comparison(node.left, cmp, node.comparators[0], where, required)
        if _has_compare(node):
            # The comparison would run in the child, where the program's objects decide it:
            # the parent decides it, on the leaves the child reports.
            return self.expression(node if op == "truthy" else ast.UnaryOp(ast.Not(), node), where, required)
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
                expected = self.expected(self.unwrapped_array(known), computed=True)
            except Unknown:
                continue
            tolerance |= {"actual_first": first, "negate": op == "falsy"}
            return self.report(actual, name, expected, tolerance, where, required)
        return self.expression(node if op == "truthy" else ast.UnaryOp(ast.Not(), node), where, required)

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
            if len(test.ops) != 1:  # 0 < f(x) < 3: decided in the parent as a whole
                return [self.expression(test, node, required)]
            return [self.comparison(test.left, test.ops[0], test.comparators[0], node, required)]
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            return [self.truthy(test.operand, "falsy", node, required)]
        return [self.truthy(test, "truthy", node, required)]

    def library_call(self, call: ast.Call, where: ast.stmt, required: bool) -> ast.stmt | None:
        """numpy's and pandas' testing assertions and a mock's call assertions -> a report,
        or None when the call is none of them."""
        name = _dotted(call.func) or ""
        base, _, last = name.rpartition(".")
        if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
            return None
        keywords = {k.arg: k.value for k in call.keywords if k.arg not in ("err_msg", "verbose", "obj")}
        if last in _NUMPY_TESTING and base.endswith("testing") and base.split(".")[0] in self.owner.numpy_names:
            params = _NUMPY_TESTING[last]
            if len(call.args) < 2 or len(call.args) > 2 + len(params) or set(keywords) - set(params):
                raise _NotRewritable(f"line {where.lineno}: {name} with arguments it does not take")
            given = dict(zip(params, call.args[2:])) | keywords
            tolerance = {k: self.expected(v) for k, v in given.items()}
            op, tolerance = _numpy_testing_site(last, tolerance)
            return self.known_or_pair(call.args[0], call.args[1], op, tolerance, where, required, frame=False)
        if last in ("assert_frame_equal", "assert_series_equal") and base.endswith("testing"):
            if len(call.args) != 2 or set(keywords) - _FRAME_OPTIONS:
                raise _NotRewritable(f"line {where.lineno}: {name} with arguments it does not take")
            tolerance = {k: self.expected(v) for k, v in keywords.items()}
            if tolerance.get("check_like"):
                raise _NotRewritable(f"line {where.lineno}: {name}(check_like=True)")
            return self.known_or_pair(call.args[0], call.args[1], "frame", tolerance, where, required, frame=True)
        if last in _MOCK_COUNTS and not call.args and not call.keywords and isinstance(call.func, ast.Attribute):
            count = ast.Attribute(call.func.value, "call_count", ast.Load())
            op, n = _MOCK_COUNTS[last]
            return self.report(count, op, n, None, where, required)
        if last in _MOCK_CALLS and isinstance(call.func, ast.Attribute):
            mock = call.func.value
            expected = ast.Tuple([ast.List(list(call.args), ast.Load()),
                                  ast.Dict([ast.Constant(k.arg) for k in call.keywords],
                                           [k.value for k in call.keywords])], ast.Load())
            calls = ast.parse("[[list(c[0]), dict(c[1])] for c in _m.call_args_list]", mode="eval").body
            calls.generators[0].iter.value = mock
            try:
                value = self.expected(expected, computed=True)
            except Unknown:
                raise _NotRewritable(f"line {where.lineno}: {name} with arguments computed at run time") from None
            return self.report(calls, "mock_" + last.removeprefix("assert_"), value, None, where, required)
        return None

    def known_or_pair(self, actual: ast.expr, desired: ast.expr, op: str, tolerance: dict, where: ast.stmt,
                      required: bool, frame: bool) -> ast.stmt:
        """A two-sided library assertion: the desired side known or computed by the slice (a
        pandas object as ``FRAME``'s description of it); else both sides reported."""
        wrap = (lambda n: ast.Call(ast.Name(FRAME, ast.Load()), [n], [])) if frame else (lambda n: n)
        for first, (a, b) in ((True, (actual, desired)), (False, (desired, actual))):
            try:
                expected = self.expected(b if frame else self.unwrapped_array(b), computed=True)
            except Unknown:
                continue
            if frame:
                if not isinstance(expected, Computed):
                    continue  # a literal is no DataFrame
                operand = self.owner.operands[expected.index]  # the slice describes it as the child does
                operand.source = f"{FRAME}({operand.source})"
            return self.report(wrap(a), op, expected, tolerance | {"actual_first": first}, where, required)
        pair = ast.List([wrap(actual), wrap(desired)], ast.Load())
        return self.report(pair, op, None, tolerance | {"pair": True}, where, required)

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
                        expected = self.expected(known, computed=True)
                        expected = expected if isinstance(expected, Computed) else list(expected)
                        return self.report(actual, op, expected, None, where, required)
                    except (Unknown, TypeError):
                        continue
                raise _NotRewritable(f"line {where.lineno}: {name} of two values computed at run time")
            return self.comparison(args[0], _cmp_node(op), args[1], where, required)
        if name in ("assertAlmostEqual", "assertAlmostEquals") and len(args) >= 2 \
                and set(keywords) <= {"places", "delta"}:
            tolerance = {k: self.expected(v) for k, v in keywords.items()}
            if len(args) >= 3:
                tolerance["places"] = self.expected(args[2])
            for actual, known in ((args[0], args[1]), (args[1], args[0])):
                try:
                    return self.report(actual, "almost", self.expected(known, computed=True), tolerance, where,
                                       required)
                except Unknown:
                    continue
            # neither side known: unittest's own test, decided in the parent
            difference = ast.Call(ast.Name("abs", ast.Load()), [ast.BinOp(args[0], ast.Sub(), args[1])], [])
            if "delta" in keywords:
                check = ast.Compare(difference, [ast.LtE()], [keywords["delta"]])
            else:
                places = args[2] if len(args) >= 3 else keywords.get("places", ast.Constant(7))
                check = ast.Compare(ast.Call(ast.Name("round", ast.Load()), [difference, places], []),
                                    [ast.Eq()], [ast.Constant(0)])
            equal = ast.Compare(args[0], [ast.Eq()], [args[1]])
            return self.expression(ast.BoolOp(ast.Or(), [equal, check]), where, required)
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
        names = _exception_names(call.args[0])
        if set(names) & {"AssertionError", "Exception", "BaseException"} and any(
                slices._has_check(s) for s in node.body):
            # a check expected to fail: it must run as it is
            raise _NotRewritable(f"line {node.lineno}: a check inside a block that expects it to fail")
        site = self.site("raises", names, tolerance, node.lineno, required)
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
            elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call) \
                    and (rewritten := self.library_call(node.value, node, straight)) is not None:
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


# numpy.testing's assertions: their keyword parameters after (actual, desired), in order
_NUMPY_TESTING = {"assert_array_equal": ("strict",), "assert_equal": (),
                  "assert_array_almost_equal": ("decimal",), "assert_almost_equal": ("decimal",),
                  "assert_allclose": ("rtol", "atol", "equal_nan")}
_FRAME_OPTIONS = {"check_dtype", "check_names", "check_exact", "rtol", "atol", "check_index_type",
                  "check_column_type", "check_freq", "check_like", "check_series_type", "check_flags",
                  "check_datetimelike_compat", "check_categorical"}
_MOCK_COUNTS = {"assert_called_once": ("==", 1), "assert_not_called": ("==", 0), "assert_called": (">=", 1)}
_MOCK_CALLS = {"assert_called_once_with", "assert_called_with", "assert_any_call"}


def _numpy_testing_site(name: str, given: dict) -> tuple[str, dict]:
    """(site operator, tolerance) of a numpy.testing assertion (numpy's defaults)."""
    if name in ("assert_array_equal", "assert_equal"):
        if given.get("strict"):
            raise _NotRewritable(f"{name}(strict=True)")
        return "array_equal", {"equal_nan": True}
    if name in ("assert_array_almost_equal", "assert_almost_equal"):
        return "array_almost", {"decimal": given.get("decimal", 6 if name == "assert_array_almost_equal" else 7)}
    return "allclose", {"rtol": given.get("rtol", 1e-07), "atol": given.get("atol", 0),
                        "equal_nan": given.get("equal_nan", True)}


def _bare_constants(node: ast.expr) -> bool:
    """Whether ``node`` holds a literal other than an index, a call's argument or a string
    (``x + 5``: a value of the test's own, to be kept out of the program's process; ``path /
    'out.txt'`` builds an input)."""
    allowed = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Subscript):
            allowed |= {id(c) for c in ast.walk(n.slice)}
        elif isinstance(n, ast.Call):
            allowed |= {id(c) for a in [*n.args, *(k.value for k in n.keywords)] for c in ast.walk(a)}
    return any(isinstance(n, ast.Constant) and id(n) not in allowed and not isinstance(n.value, str)
               for n in ast.walk(node))


def _cmp_node(op: str) -> ast.cmpop:
    return next(k for k, v in _EQ_OPS.items() if v == op)()


_ARITY = {**{name: 2 for name in _UNITTEST_BINARY}, **{name: 1 for name in _UNITTEST_UNARY},
          "assertAlmostEqual": 3, "assertNotAlmostEqual": 3, "assertIsInstance": 2, "assertNotIsInstance": 2,
          "assertRegex": 2, "assertNotRegex": 2}


def _strip_messages(fn: ast.FunctionDef) -> None:
    """Removes the failure messages (``msg``) of ``self.assertX`` calls: the rewrite words
    its own, and a message that reads an expected value must not count as another use of it."""
    for n in ast.walk(fn):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and isinstance(n.func.value, ast.Name) \
                and n.func.value.id == "self" and n.func.attr in _ARITY \
                and not any(isinstance(a, ast.Starred) for a in n.args):
            n.args = n.args[:_ARITY[n.func.attr]]
            n.keywords = [k for k in n.keywords if k.arg != "msg"]


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
    def __init__(self, numpy_names: set[str], scope: slices.ModuleScope | None = None):
        self.sites: list[Site] = []
        self.raises_names: set[str] = set()  # `as` names of raises-blocks: their .match() is a check
        self.numpy_names = numpy_names  # names the script reaches numpy by
        self.scope = scope  # what the module binds without the program (None: no computed sides)
        self.operands: list[slices.Operand] = []  # expected sides the slice computes
        self.taints: dict[str, slices.FunctionTaint] = {}
        self.computed_names: set[str] = set()  # module names and self attributes the operands read

    def operand(self, node: ast.expr, qualname: str, top: int) -> Computed:
        self.operands.append(slices.Operand(qualname, top, ast.unparse(node), getattr(node, "lineno", 0)))
        return Computed(len(self.operands) - 1)

    def taint(self, fn: ast.FunctionDef, qualname: str) -> slices.FunctionTaint | None:
        if self.scope is None:
            return None
        return self.scope.taint(fn, qualname.split(".")[0] if "." in qualname else "")

    def function(self, fn: ast.FunctionDef, qualname: str) -> None:
        """Rewrites ``fn`` in place. A local used both as an expected value and as anything
        else (an input the program sees) is not treated as known: the parent's copy and the
        child's could differ."""
        if isinstance(fn, ast.AsyncFunctionDef):
            raise _NotRewritable(f"{qualname}: an async test")
        _strip_messages(fn)
        original_body = fn.body
        known = _known_locals(fn)
        loads = _loads(fn)
        taint = self.taint(fn, qualname)
        while True:
            mark, operands_mark = len(self.sites), len(self.operands)
            fn.body = [_deep_copy(s) for s in original_body]
            rewriter = _FunctionRewriter(self, qualname, known, taint)
            body: list[ast.stmt] = []
            for top, statement in enumerate(fn.body):
                rewriter.top, rewriter.top_statement = top, statement
                body += rewriter.block([statement], True)
            fn.body = body
            shared = [name for name, used in rewriter.used_known.items() if used != loads.get(name, 0)]
            if not shared:
                break
            del self.sites[mark:]
            del self.operands[operands_mark:]
            for name in shared:
                known.pop(name)
        if rewriter.count == 0:
            raise _NotRewritable(f"{qualname}: no check whose expected side is known before the run")
        # Expected values never enter the child: the assignments of locals used only as
        # expected sides are dropped from the script.
        dropped = set(rewriter.used_known)
        fn.body = [s for s in fn.body if not (isinstance(s, ast.Assign) and len(s.targets) == 1
                                              and isinstance(s.targets[0], ast.Name) and s.targets[0].id in dropped)]
        if taint is not None and len(self.operands) > operands_mark:
            self.taints[qualname] = taint
            local = {n for n in rewriter.computed_names if n not in self.scope.clean and not n.startswith("self.")}
            bound = {n for s in fn.body for n in slices.bound_names(s)}
            fn.body, kept = slices.drop_expected_only(fn.body, local, taint.every_attribute, bound)
            if kept:
                raise _NotRewritable(f"{qualname}: the statement that computes {sorted(kept)[0]} cannot be left out")
            self.computed_names |= rewriter.computed_names - local
        if not fn.body:
            fn.body = [ast.Pass()]


def _deep_copy(node: ast.AST) -> ast.AST:
    return copy.deepcopy(node)


_SPECIAL_METHODS = {"setUp", "tearDown", "setUpClass", "tearDownClass", "setup_method", "teardown_method"}


def _inline_helpers(module: ast.Module, framework: str) -> None:
    """Writes out, in each test function, the calls of a helper method that checks
    (``self.check_plot(ax, expected)`` as a statement): the helper's body with its parameters
    bound first and its locals renamed (``_h3_ax``), so that its checks are rewritten as the
    test's own. A helper with a ``return``, ``*args``, decorators or a nested function is
    left as it is (and its checks with it: the test stays in-process). A helper no longer
    called is removed."""
    counter = [0]
    test_classes = {q.split(".")[0] for _, q in _test_functions(module, framework) if "." in q}
    for cls in [n for n in module.body if isinstance(n, ast.ClassDef) and n.name in test_classes]:
        helpers = {m.name: m for m in cls.body if isinstance(m, ast.FunctionDef) and not m.name.startswith("test")
                   and not m.name.startswith("__") and m.name not in _SPECIAL_METHODS and _inlinable(m)}
        if not helpers:
            continue

        def expand(statements: list[ast.stmt], depth: int) -> list[ast.stmt]:
            out: list[ast.stmt] = []
            for st in statements:
                call = st.value if isinstance(st, ast.Expr) and isinstance(st.value, ast.Call) else None
                helper = None
                if call is not None and isinstance(call.func, ast.Attribute) \
                        and isinstance(call.func.value, ast.Name) and call.func.value.id == "self":
                    helper = helpers.get(call.func.attr)
                bound = _bind_call(helper, call) if helper is not None and depth < 4 else None
                if bound is None:
                    for field in ("body", "orelse", "finalbody"):
                        if isinstance(getattr(st, field, None), list) and not isinstance(st, (ast.FunctionDef,
                                                                                            ast.ClassDef)):
                            setattr(st, field, expand(getattr(st, field), depth))
                    for handler in getattr(st, "handlers", ()):
                        handler.body = expand(handler.body, depth)
                    out.append(st)
                    continue
                counter[0] += 1
                prefix = f"_h{counter[0]}_"
                local = {a.arg for a in helper.args.args[1:]} | {n for s in helper.body for n in slices.bound_names(s)}
                body = [_deep_copy(s) for s in helper.body]
                for s in body:
                    for n in ast.walk(s):
                        if isinstance(n, ast.Name) and n.id in local:
                            n.id = prefix + n.id
                        elif isinstance(n, ast.arg) and n.arg in local:
                            n.arg = prefix + n.arg
                assigns = [ast.copy_location(ast.Assign([ast.Name(prefix + name, ast.Store())], value), st)
                           for name, value in bound]
                out += [ast.fix_missing_locations(ast.copy_location(a, st)) for a in assigns]
                for s in body:
                    for n in ast.walk(s):
                        if hasattr(n, "lineno"):
                            ast.copy_location(n, st)
                out += expand(body, depth + 1)
            return out

        for m in cls.body:
            if isinstance(m, ast.FunctionDef) and m.name.startswith("test"):
                m.body = expand(m.body, 0)
        used = {n.attr for m in cls.body if not (isinstance(m, ast.FunctionDef) and m.name in helpers)
                for n in ast.walk(m) if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)
                and n.value.id == "self"}
        cls.body = [m for m in cls.body if not (isinstance(m, ast.FunctionDef) and m.name in helpers
                                                and m.name not in used)] or [ast.Pass()]


def _inlinable(fn: ast.FunctionDef) -> bool:
    args = fn.args
    if fn.decorator_list or args.vararg or args.kwarg or args.kwonlyargs or args.posonlyargs or not args.args \
            or args.args[0].arg != "self":
        return False
    for n in ast.walk(fn):
        if isinstance(n, (ast.Return, ast.Yield, ast.YieldFrom, ast.Global, ast.Nonlocal, ast.Lambda,
                          ast.AsyncFunctionDef, ast.ClassDef)) \
                or (isinstance(n, ast.FunctionDef) and n is not fn):
            return False
        if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "self" \
                and n.attr == fn.name:
            return False  # recursive
    return True


def _bind_call(helper: ast.FunctionDef, call: ast.Call) -> list[tuple[str, ast.expr]] | None:
    """(parameter, argument) for each parameter of ``helper`` called by ``call``, defaults
    included; None when the call's arguments do not bind plainly."""
    params = [a.arg for a in helper.args.args[1:]]
    if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords) \
            or len(call.args) > len(params):
        return None
    given = dict(zip(params, call.args))
    for k in call.keywords:
        if k.arg not in params or k.arg in given:
            return None
        given[k.arg] = k.value
    defaults = dict(zip(params[len(params) - len(helper.args.defaults):], helper.args.defaults))
    if set(params) - set(given) - set(defaults):
        return None
    return [(p, given.get(p, defaults.get(p))) for p in params]


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
    slice: str | None = None  # the slice that computes the Computed sides (harness.verdicts.slices)
    context: str = ""  # the code the slice runs on
    fallback: str = ""  # the script as it was: run in-process where the slice fails
    operands: list = dataclasses.field(default_factory=list)  # slices.Operand, by index

    def table(self) -> dict:
        """What the parent keeps (``TestCase.expected`` of the rewritten test), as JSON-able
        plain data: expected values as plaindata trees; a side the slice computes as
        ``"computed": k`` (its operand), filled in by ``harness.verdicts.expected``."""
        sites = []
        for s in self.sites:
            site = {"op": s.op, "expected": None, "tolerance": s.tolerance, "function": s.function, "line": s.line,
                    "required": s.required}
            if isinstance(s.expected, Computed):
                site["computed"] = s.expected.index
            else:
                site["expected"] = plaindata.to_tree(s.expected)
            if s.values is not None:
                site["values"] = [None if isinstance(v, Computed) else plaindata.to_tree(v) for v in s.values]
                site["computed_in"] = [[k, v.index] for k, v in enumerate(s.values) if isinstance(v, Computed)]
            sites.append(site)
        table = {"functions": list(self.functions), "sites": sites}
        if self.slice is not None:
            table["slice"] = {"context": self.context, "fallback": self.fallback,
                              "functions": [op.function for op in self.operands]}
        return table


def rewrite_script(script: str, framework: str, context: str = "") -> tuple[RewrittenScript | None, str]:
    """(the rewritten script, "") or (None, why it stays in-process). ``context``: trusted
    module-level code the script's names may come from (``slices.context_of``)."""
    with slices.memo():
        return _rewrite_script(script, framework, context)


def _prepared(script: str, framework: str) -> ast.Module:
    """The script as the rewrite reads it: parsed, redefined tests dropped, helpers written out."""
    from codea1.harness.verdicts.syntax import (
        parse_untrusted,  # parent side: this module's imports travel to the sandbox
    )

    module = parse_untrusted(script)
    _drop_redefined(module)
    _inline_helpers(module, framework)
    return module


def _rewrite_script(script: str, framework: str, context: str) -> tuple[RewrittenScript | None, str]:
    try:
        module = _prepared(script, framework)
    except SyntaxError as exc:
        return None, f"syntax error: {exc}"
    scope = slices.module_scope(module, context, framework)
    rewriter = _ScriptRewriter(_numpy_names(module), scope)
    functions = _test_functions(module, framework)
    if not functions:
        return None, "no test function"
    try:
        for fn, qualname in functions:
            if any(isinstance(n, (ast.Yield, ast.YieldFrom)) for n in ast.walk(fn)):
                raise _NotRewritable(f"{qualname}: a generator test")
            rewriter.function(fn, qualname)
        if rewriter.operands:
            with slices.no_memo():  # the rewrite changed the classes' methods
                _drop_shared_expected(module, rewriter, scope)
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
    sliced = None
    if rewriter.operands:
        # the slice is cut from the script as it was before the rewrite changed it (parsed again:
        # cheaper than a copy kept for the few scripts that have a slice)
        sliced = slices.slice_script(_prepared(script, framework), framework, scope, rewriter.taints,
                                     rewriter.operands, REPORT, IMPORT_LINE)
    # Names the test module binds itself (its imports, `from solution import f`, helpers)
    # keep their meaning; any other name that shadows a builtin (the program's `len`,
    # `isinstance`, arriving by `from solution import *` or through the solution's namespace)
    # is removed, so that the actual sides are computed with the real builtins.
    keep = sorted(_top_level_names(module))
    text = (IMPORT_LINE + ast.unparse(ast.fix_missing_locations(module))
            + f"\n{UNSHADOW}(globals(), {keep!r})\n")
    return RewrittenScript(text, rewriter.sites, [q for _, q in functions], sliced, context, script,
                           rewriter.operands), ""


def _drop_shared_expected(module: ast.Module, rewriter: _ScriptRewriter, scope: slices.ModuleScope) -> None:
    """Leaves out of the rewritten module the setUp statements and module-level assignments
    that compute only expected sides the slice computes (nothing else reads them): their
    values stay out of the program's process. Raises when one of them cannot be left out."""
    names = rewriter.computed_names
    attributes = {n for n in names if n.startswith("self.")}
    data = names & scope.data
    for cls in [n for n in module.body if isinstance(n, ast.ClassDef)]:
        every = scope.all_attributes.get(cls.name, set())
        setups = [m for m in cls.body if isinstance(m, ast.FunctionDef) and m.name in slices.SETUP_METHODS]
        others = [m for m in cls.body if not any(m is x for x in setups)]
        read_elsewhere = set()
        for m in others:
            read_elsewhere |= slices.loaded_names(m, every)
        for m in setups:
            m.body, kept = slices.drop_expected_only(m.body, attributes - read_elsewhere, every)
            if kept:
                raise _NotRewritable(f"{cls.name}.{m.name}: the statement that computes {sorted(kept)[0]} "
                                     f"cannot be left out")
    if data:
        read_elsewhere = set()
        for node in module.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                read_elsewhere |= slices.loaded_names(node)
        defs = [n for n in module.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]
        rest = [n for n in module.body if not any(n is d for d in defs)]
        kept_rest, kept = slices.drop_expected_only(rest, data - read_elsewhere, set())
        if kept:
            raise _NotRewritable(f"the module-level statement that computes {sorted(kept)[0]} cannot be left out")
        module.body = [n for n in module.body if any(n is d for d in defs) or any(n is k for k in kept_rest)]


def rewrite_test(test, context: str = ""):
    """A script ``TestCase`` judged in the parent where its script can be rewritten; the test
    itself (judged in-process) where it cannot. A rewritten test whose expected sides the
    slice computes carries the slice as its ``expected_source``: it runs only once
    ``harness.verdicts.expected`` has settled them."""
    if test.kind != "script" or test.judged == "parent":
        return test
    rewritten, _why = rewrite_script(test.script, test.framework or "unittest", context)
    if rewritten is None:
        return test
    return _judged_in_parent(test, rewritten)


def _judged_in_parent(test, rewritten: RewrittenScript):
    return dataclasses.replace(test, script=rewritten.script, judged="parent", expected=rewritten.table(),
                               has_expected=True, expected_source=rewritten.slice)


REWRITE_VERSION = "3"  # bump when what a rewrite produces changes: the disk cache keys on it


def split_test(test, context: str = "") -> list:
    """``_split_test``, remembered on disk by the test's content (the cache folder's
    ``rewrites/``): loading a benchmark rewrites each script once, not on every run."""
    if test.kind != "script" or test.judged == "parent":
        return [test]
    import hashlib
    import json

    from codea1.harness.records import TestCase
    from codea1.harness.verdicts.reference import atomic_write, cache_dir

    digest = hashlib.sha256("\0".join((REWRITE_VERSION, test.id, test.framework or "", context,
                                       test.script)).encode()).hexdigest()
    path = cache_dir() / "rewrites" / f"{digest}.json"
    try:
        return [TestCase.from_json(t) for t in json.loads(path.read_text())]
    except (OSError, ValueError, TypeError, KeyError):
        pass
    tests = _split_test(test, context)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, json.dumps([t.to_json() for t in tests]))
    except (OSError, ValueError, TypeError):
        pass  # a read-only cache, or a value JSON cannot hold: rewritten again next time
    return tests


def _split_test(test, context: str = "") -> list:
    """For benchmark loaders: a script test as ``rewrite_test`` makes it where the whole
    script can be rewritten; else, where some of its test functions can (each with the
    module's other statements), two tests: the rewritable functions, judged in the parent
    (same id), and the others, judged in-process (id + "/in-process"); else the test as it
    is. (unittest runs each method on its own instance, pytest each function: taking some
    out does not change how the others run, but for state one test leaves to the next.)"""
    whole = rewrite_test(test, context)
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
    alone = [q for q in names if rewrite_script(_without(module, framework, set(names) - {q}), framework, context)[0]]
    if not alone:
        return [test]
    rewritten, _why = rewrite_script(_without(module, framework, set(names) - set(alone)), framework, context)
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

