"""Truthy checks with comparisons inside, decided in the parent on plain data.

``self.assertTrue(all(60 <= s <= 70 for s in df["Score"]))`` would compare in the child,
where the program's objects decide every comparison. The rewrite (``script_tests``) splits
such a check: the child reports only the *leaves*, the parts that read the program's values
and compare nothing (``df["Score"]``, ``len(result)``, ``ax.get_title()``), each as plain
data or the exception it raised; the parent evaluates the rest (the comparisons, ``all``,
``any``, the comprehensions, ``np.isclose`` ...) with this module's evaluator, over those
leaves and the expected sides it knows (literals, or values the slice computed).

The evaluator runs no code of the program's nor of the test's: it walks the check's syntax
tree, which the rewrite accepted only when ``supported`` says every node is one it knows, over
plain values (numbers, strings, lists, tuples, dicts, sets and ``plaindata.Array``). Its work
is bounded by ``budget`` steps, a multiple of the size of what the child sent: a check that
would take longer fails ("too costly to decide in the parent").

A leaf that raised is an error only where the evaluation reads it (``a is None or a[0] ==
1`` reads ``a[0]`` only when ``a`` is not None, as Python would).

Standard library and plaindata only.
"""

from __future__ import annotations

import ast
import math
import operator
from typing import Any

from codea1.harness.verdicts import plaindata

LEAF, VALUE = "_v", "_e"  # the parent-side names of leaf k (``_v3``) and expected value k (``_e0``)
STEP_BUDGET = 200_000  # steps, plus STEPS_PER_ITEM for every item received
STEPS_PER_ITEM = 64

_COMPARE = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
            ast.Gt: operator.gt, ast.GtE: operator.ge, ast.Is: operator.is_, ast.IsNot: operator.is_not,
            ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b}
_ARITHMETIC = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
               ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow}
_FUNCTIONS = {"len": len, "abs": abs, "round": round, "min": min, "max": max, "sum": sum, "sorted": sorted,
              "set": set, "list": list, "tuple": tuple, "all": all, "any": any, "int": int, "float": float,
              "str": str, "bool": bool, "enumerate": enumerate, "zip": zip, "range": range, "isinstance": isinstance,
              "frozenset": frozenset, "dict": dict, "reversed": reversed}
_TYPES = {"int": int, "float": float, "str": str, "list": list, "tuple": tuple, "dict": dict, "set": set,
          "bool": bool, "frozenset": frozenset}
_METHODS = {
    str: {"startswith", "endswith", "isalpha", "isdigit", "isalnum", "isupper", "islower", "isspace", "isnumeric",
          "isdecimal", "isidentifier", "istitle", "lower", "upper", "strip", "lstrip", "rstrip", "split", "count",
          "find", "index", "join", "title", "capitalize", "splitlines", "rsplit", "casefold"},
    list: {"count", "index"}, tuple: {"count", "index"},
    dict: {"keys", "values", "items", "get"},
}
_ARRAY_METHODS = {"all", "any", "tolist"}
_NUMPY = {"isclose", "allclose", "all", "any", "array_equal", "abs", "array", "asarray", "isnan", "isinf",
          "isfinite", "sum", "min", "max", "mean"}
_MATH = {"isclose", "isnan", "isinf", "isfinite", "sqrt", "fabs", "floor", "ceil"}


class Unsupported(Exception):
    pass


def supported(node: ast.AST, numpy_names: set[str], names: set[str]) -> None:
    """Raises ``Unsupported`` unless the evaluator knows every node of ``node`` (an
    expression whose names are leaves, values, comprehension variables or ``names``)."""
    bound = set(names)
    called = {id(n.func) for n in ast.walk(node) if isinstance(n, ast.Call)}
    for n in ast.walk(node):
        if isinstance(n, ast.comprehension):
            bound |= {t.id for t in ast.walk(n.target) if isinstance(t, ast.Name)}
    for n in ast.walk(node):
        if isinstance(n, (ast.Constant, ast.Compare, ast.BoolOp, ast.UnaryOp, ast.Tuple, ast.List, ast.Set,
                          ast.Dict, ast.GeneratorExp, ast.ListComp, ast.SetComp, ast.comprehension, ast.Load,
                          ast.Store, ast.IfExp, ast.Subscript, ast.Slice, ast.keyword, ast.Starred)
                      + tuple(_COMPARE) + tuple(_ARITHMETIC) + (ast.And, ast.Or, ast.Not, ast.USub, ast.UAdd)):
            continue
        if isinstance(n, ast.BinOp) and type(n.op) in _ARITHMETIC:
            continue
        if isinstance(n, ast.Name):
            if n.id in bound or n.id in _FUNCTIONS or n.id in _TYPES or n.id in ("True", "False", "None") \
                    or n.id in numpy_names or n.id == "math" or n.id.startswith((LEAF, VALUE)):
                continue
            raise Unsupported(f"the name {n.id}")
        if isinstance(n, ast.Call):
            func = n.func
            if isinstance(func, ast.Name) and func.id in _FUNCTIONS:
                continue
            if isinstance(func, ast.Attribute):
                base = func.value
                if isinstance(base, ast.Name) and base.id in numpy_names:
                    if func.attr in _NUMPY:
                        continue
                    raise Unsupported(f"{base.id}.{func.attr}")
                if isinstance(base, ast.Name) and base.id == "math":
                    if func.attr in _MATH:
                        continue
                    raise Unsupported(f"math.{func.attr}")
                if func.attr in _ARRAY_METHODS or any(func.attr in m for m in _METHODS.values()):
                    continue
            raise Unsupported(f"the call {ast.unparse(n)[:60]}")
        if isinstance(n, ast.Attribute) and id(n) in called:
            continue  # checked with its call
        raise Unsupported(type(n).__name__)


class _Budget(Exception):
    pass


class Evaluator:
    """Evaluates one accepted check over ``leaves`` (``[True, value]`` or ``[False, message]``
    each) and ``values`` (plain data), within a step budget."""

    def __init__(self, leaves: list, values: list, numpy_names: set[str]):
        self.env: dict[str, Any] = {}
        self.errors: dict[str, str] = {}
        size = 0
        for k, (ok, value) in enumerate(leaves):
            if ok:
                self.env[f"{LEAF}{k}"] = value
                size += _size(value)
            else:
                self.errors[f"{LEAF}{k}"] = str(value)
        for k, value in enumerate(values):
            self.env[f"{VALUE}{k}"] = value
            size += _size(value)
        self.steps = STEP_BUDGET + STEPS_PER_ITEM * size
        self.numpy_names = numpy_names

    def tick(self, n: int = 1) -> None:
        self.steps -= n
        if self.steps < 0:
            raise _Budget("too costly to decide in the parent")

    def run(self, source: str) -> Any:
        return self.eval(ast.parse(source, mode="eval").body, {})

    def eval(self, node: ast.AST, local: dict) -> Any:
        self.tick()
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            if node.id in local:
                return local[node.id]
            if node.id in self.env:
                return self.env[node.id]
            if node.id in self.errors:
                raise ValueError(f"evaluating it raised {self.errors[node.id]}")
            if node.id in _TYPES:
                return _TYPES[node.id]
            if node.id in _FUNCTIONS:
                return _FUNCTIONS[node.id]
            return {"True": True, "False": False, "None": None}[node.id]
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            return {ast.Tuple: tuple, ast.List: list, ast.Set: set}[type(node)](self.items(node.elts, local))
        if isinstance(node, ast.Dict):
            return {self.eval(k, local): self.eval(v, local) for k, v in zip(node.keys, node.values)}
        if isinstance(node, ast.BoolOp):
            value = None
            for v in node.values:
                value = self.eval(v, local)
                if isinstance(node.op, ast.And) != bool(self.truth(value)):
                    return value
            return value
        if isinstance(node, ast.UnaryOp):
            value = self.eval(node.operand, local)
            if isinstance(node.op, ast.Not):
                return not self.truth(value)
            self.number(value)
            return -value if isinstance(node.op, ast.USub) else +value
        if isinstance(node, ast.IfExp):
            return self.eval(node.body if self.truth(self.eval(node.test, local)) else node.orelse, local)
        if isinstance(node, ast.BinOp):
            left, right = self.eval(node.left, local), self.eval(node.right, local)
            if plaindata.Array in (type(left), type(right)):  # numpy's and pandas' item by item
                return self.arithmetic(node.op, left, right)
            if not (self.is_number(left) and self.is_number(right)):
                if isinstance(node.op, ast.Add) and type(left) is type(right) and type(left) in (str, list, tuple):
                    self.tick(len(left) + len(right))
                    return left + right
                if isinstance(node.op, ast.Mod) and type(left) is str:
                    raise Unsupported("string formatting")
                raise TypeError("arithmetic on values that are not numbers")
            if isinstance(node.op, ast.Pow) and (abs(right) > 64 and abs(left) > 1):
                raise _Budget("a power too large to decide in the parent")
            if any(type(v) is int and v.bit_length() > 4096 for v in (left, right)):
                raise _Budget("an integer too large to decide in the parent")
            return _ARITHMETIC[type(node.op)](left, right)
        if isinstance(node, ast.Compare):
            left = self.eval(node.left, local)
            for op, comparator in zip(node.ops, node.comparators):
                right = self.eval(comparator, local)
                if not self.truth(self.compare(op, left, right)):
                    return False
                left = right
            return True
        if isinstance(node, ast.Subscript):
            value = self.eval(node.value, local)
            if type(value) is plaindata.Array:
                return self.index(value, node.slice, local)
            if type(value) not in (list, tuple, str, dict):
                raise TypeError(f"indexing a {type(value).__name__} in the parent")
            if isinstance(node.slice, ast.Slice):
                parts = [None if p is None else self.eval(p, local)
                         for p in (node.slice.lower, node.slice.upper, node.slice.step)]
                self.tick(len(value))
                return value[slice(*parts)]
            return value[self.eval(node.slice, local)]
        if isinstance(node, (ast.GeneratorExp, ast.ListComp, ast.SetComp)):
            items = list(self.comprehension(node.elt, node.generators, local))
            return set(items) if isinstance(node, ast.SetComp) else items
        if isinstance(node, ast.Call):
            return self.call(node, local)
        raise TypeError(f"{type(node).__name__} is not decided in the parent")

    def arithmetic(self, op: ast.operator, left: Any, right: Any) -> plaindata.Array:
        fn = _ARITHMETIC[type(op)]

        def item(x, y):
            if not (self.is_number(x) and self.is_number(y)):
                raise TypeError("arithmetic on items that are not numbers")
            if isinstance(op, ast.Pow) and abs(y) > 64 and abs(x) > 1:
                raise _Budget("a power too large to decide in the parent")
            return fn(x, y)

        items = plaindata.elementwise(item, left, right)
        self.tick(len(items))
        array = left if type(left) is plaindata.Array and len(left.items) == len(items) else right
        return plaindata.Array("ndarray" if array.kind == "Index" else array.kind, array.shape, items, array.keys)

    def index(self, array: plaindata.Array, index: ast.expr, local: dict) -> Any:
        """``a[i]`` and ``a[i:j]`` of a one-dimensional ndarray (a Series: where its index is
        0, 1, ... so that labels are positions)."""
        if len(array.shape) != 1 or array.kind not in ("ndarray", "Series", "Index") \
                or (array.kind == "Series" and array.keys != list(range(len(array.items)))):
            raise TypeError(f"indexing a {array.kind} of shape {array.shape} in the parent")
        if isinstance(index, ast.Slice):
            parts = [None if p is None else self.eval(p, local) for p in (index.lower, index.upper, index.step)]
            items = array.items[slice(*parts)]
            self.tick(len(items))
            return plaindata.Array("ndarray", (len(items),), items)
        position = self.eval(index, local)
        if type(position) is not int:
            raise TypeError("indexing an array by a value that is not an int")
        return array.items[position]

    def items(self, nodes: list, local: dict) -> list:
        """The values of a display's elements or a call's arguments, ``*x`` spread."""
        out = []
        for n in nodes:
            if isinstance(n, ast.Starred):
                out += list(self.iterate(self.eval(n.value, local)))
            else:
                out.append(self.eval(n, local))
        return out

    def comprehension(self, elt: ast.expr, generators: list, local: dict):
        first, rest = generators[0], generators[1:]
        for item in self.iterate(self.eval(first.iter, local)):
            self.tick()
            inner = dict(local)
            self.bind(first.target, item, inner)
            if all(self.truth(self.eval(cond, inner)) for cond in first.ifs):
                if rest:
                    yield from self.comprehension(elt, rest, inner)
                else:
                    yield self.eval(elt, inner)

    def bind(self, target: ast.AST, value: Any, local: dict) -> None:
        if isinstance(target, ast.Name):
            local[target.id] = value
        elif isinstance(target, (ast.Tuple, ast.List)):
            items = list(self.iterate(value))
            if len(items) != len(target.elts):
                raise ValueError("cannot unpack")
            for t, v in zip(target.elts, items):
                self.bind(t, v, local)
        else:
            raise TypeError("an assignment target the parent does not bind")

    def iterate(self, value: Any):
        if type(value) in (list, tuple, str, set, frozenset, dict, range, plaindata.Array) \
                or type(value).__name__ in ("enumerate", "zip", "reversed", "dict_keys", "dict_values", "dict_items",
                                            "generator", "list_reverseiterator"):
            for item in value:
                self.tick()
                yield item
        else:
            raise TypeError(f"iterating a {type(value).__name__} in the parent")

    def call(self, node: ast.Call, local: dict) -> Any:
        func = node.func
        reduction = (func.id if isinstance(func, ast.Name) and func.id not in local else
                     func.attr if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)
                     and func.value.id in self.numpy_names else None)
        if reduction in ("all", "any") and len(node.args) == 1 and isinstance(node.args[0], ast.Compare) \
                and len(node.args[0].ops) == 1 and not node.keywords:
            # all(series > 0), np.all(a >= 0): the comparison item by item, as numpy and pandas make it
            items = self.elementwise(node.args[0], local, scalars=isinstance(func, ast.Attribute))
            return all(items) if reduction == "all" else any(items)
        args = self.items(node.args, local)
        kwargs = {k.arg: self.eval(k.value, local) for k in node.keywords if k.arg is not None}
        if isinstance(func, ast.Name):
            if func.id == "isinstance":
                kinds = args[1] if isinstance(args[1], tuple) else (args[1],)
                return isinstance(args[0], tuple(kinds))
            if func.id in _TYPES and not args:
                return _TYPES[func.id]()
            fn = _FUNCTIONS[func.id] if func.id not in _TYPES or args else _TYPES[func.id]
            if args and func.id in ("sorted", "set", "list", "tuple", "sum", "min", "max", "all", "any", "frozenset",
                                    "dict"):
                args[0] = list(self.iterate(args[0]))
                self.tick(len(args[0]))
            if func.id == "range":
                if any(not isinstance(a, int) for a in args):
                    raise TypeError("range of a value that is not an int")
                r = range(*args)
                self.tick(len(r))
                return r
            if func.id == "str" and args and not isinstance(args[0], (str, int, float, bool, type(None))):
                raise TypeError("str() of a container in the parent")
            return fn(*args, **kwargs)
        base = func.value
        if isinstance(base, ast.Name) and base.id in self.numpy_names and base.id not in local:
            return self.numpy(func.attr, args, kwargs)
        if isinstance(base, ast.Name) and base.id == "math" and base.id not in local:
            return self.math(func.attr, args, kwargs)
        if isinstance(base, ast.Compare) and func.attr in ("all", "any") and not args:
            items = self.elementwise(base, local)
            return all(items) if func.attr == "all" else any(items)
        value = self.eval(base, local)
        if type(value) is plaindata.Array and func.attr in _ARRAY_METHODS and not args:
            if func.attr == "tolist":
                return _nested(value)
            return (all if func.attr == "all" else any)(self.truth(x) for x in value.items)
        if type(value) is bool and func.attr in ("all", "any") and not args:
            return value
        methods = _METHODS.get(type(value), set())
        if func.attr not in methods:
            raise TypeError(f"{type(value).__name__}.{func.attr} is not decided in the parent")
        if type(value) is str:
            self.tick(len(value))
        return getattr(value, func.attr)(*args, **kwargs)

    def elementwise(self, node: ast.Compare, local: dict, scalars: bool = True) -> list:
        """``(a == b).all()``: the comparison item by item, numpy's rules (bounded broadcast)."""
        if len(node.ops) != 1:
            raise TypeError("a chained comparison of arrays")
        a, b = self.eval(node.left, local), self.eval(node.comparators[0], local)
        fn = _COMPARE[type(node.ops[0])]
        if type(a) is not plaindata.Array and type(b) is not plaindata.Array:
            if not scalars:  # all(1 == 1): a bool is not iterable, as Python says
                raise TypeError("all() or any() of a single truth value")
            return [bool(self.compare(node.ops[0], a, b))]  # numpy scalars compare to one truth value
        items = plaindata.elementwise(lambda x, y: bool(fn(x, y)), a, b)
        self.tick(len(items))
        return items

    def numpy(self, name: str, args: list, kwargs: dict) -> Any:
        if name in ("isclose", "allclose"):
            a, b = args[0], args[1]
            rtol, atol = kwargs.get("rtol", args[2] if len(args) > 2 else 1e-05), \
                kwargs.get("atol", args[3] if len(args) > 3 else 1e-08)
            nan = bool(kwargs.get("equal_nan", False))

            def close(x, y):
                self.number(x), self.number(y)
                if isinstance(x, complex) or isinstance(y, complex):
                    return abs(x - y) <= atol + rtol * abs(y)
                if math.isnan(x) or math.isnan(y):
                    return nan and math.isnan(x) and math.isnan(y)
                if math.inf in (abs(x), abs(y)):
                    return x == y
                return abs(x - y) <= atol + rtol * abs(y)

            if self.is_number(a) and self.is_number(b):
                return close(a, b)
            items = plaindata.elementwise(close, a, b)
            self.tick(len(items))
            if name == "allclose":
                return all(items)
            shapes = [x.shape for x in (plaindata.as_array(a), plaindata.as_array(b))]
            shape = next((sh for sh in shapes if _count(sh) == len(items)), (len(items),))
            return plaindata.Array("ndarray", shape, items)
        if name in ("all", "any"):
            value = args[0]
            items = value.items if type(value) is plaindata.Array else list(self.iterate(value)) \
                if type(value) in (list, tuple) else [value]
            return (all if name == "all" else any)(self.truth(x) for x in items)
        if name == "array_equal":
            try:
                a, b = plaindata.as_array(args[0]), plaindata.as_array(args[1])
            except ValueError:
                return False
            self.tick(len(a.items))
            return a.shape == b.shape and all(x == y for x, y in zip(a.items, b.items))
        if name in ("array", "asarray") and len(args) == 1 and not kwargs:
            return plaindata.as_array(args[0])
        if name == "abs" and self.is_number(args[0]):
            return abs(args[0])
        if name in ("isnan", "isinf", "isfinite") and self.is_number(args[0]):
            return getattr(math, name)(args[0])
        if name in ("sum", "min", "max", "mean"):
            value = args[0]
            items = value.items if type(value) is plaindata.Array and len(value.shape) == 1 else \
                list(self.iterate(value)) if type(value) in (list, tuple) else None
            if items is None or kwargs or len(args) > 1 or not all(self.is_number(x) for x in items):
                raise TypeError(f"np.{name} of this value is not decided in the parent")
            if name == "mean":
                return math.fsum(items) / len(items) if items else math.nan
            return {"sum": sum, "min": min, "max": max}[name](items)
        raise TypeError(f"np.{name} of these values is not decided in the parent")

    def math(self, name: str, args: list, kwargs: dict) -> Any:
        for a in args:
            self.number(a)
        return getattr(math, name)(*args, **kwargs)

    def compare(self, op: ast.cmpop, left: Any, right: Any) -> Any:
        if isinstance(op, (ast.In, ast.NotIn)) and type(right) in (list, tuple, str, plaindata.Array):
            self.tick(len(right) if type(right) is not plaindata.Array else len(right.items))
        if isinstance(op, (ast.Is, ast.IsNot)) and not (right is None or type(right) is bool):
            raise TypeError("'is' with a value that is not a singleton")
        return _COMPARE[type(op)](left, right)

    @staticmethod
    def truth(value: Any) -> bool:
        return bool(value)

    @staticmethod
    def is_number(value: Any) -> bool:
        return type(value) in (int, float, complex, bool)

    def number(self, value: Any) -> None:
        if not self.is_number(value):
            raise TypeError("a value that is not a number")


def _count(shape: tuple) -> int:
    n = 1
    for k in shape:
        n *= k
    return n


def _nested(array: plaindata.Array) -> list:
    """numpy's ``tolist``: the items nested by the shape (a Series or an Index: its items)."""
    items = list(array.items)
    if array.kind != "ndarray" or len(array.shape) <= 1:
        return items if array.shape else items[0]
    for n in reversed(array.shape[1:]):
        items = [items[i:i + n] for i in range(0, len(items), n)] if n else [[] for _ in range(len(items))]
    return items


def _size(value: Any) -> int:
    """Items in a plain value, roughly (containers' lengths summed, bounded by a walk)."""
    total, stack = 0, [value]
    while stack and total < 10_000_000:
        v = stack.pop()
        total += 1
        if type(v) in (list, tuple, set, frozenset):
            stack.extend(v)
        elif type(v) is dict:
            stack.extend(v.keys())
            stack.extend(v.values())
        elif type(v) is plaindata.Array:
            total += len(v.items)
        elif type(v) is str:
            total += len(v) // 16
    return total


def decide(source: str, leaves: list, values: list, numpy_names: list) -> tuple[bool, str]:
    """The check's truth: (holds, why not)."""
    evaluator = Evaluator(leaves, values, set(numpy_names))
    try:
        return bool(evaluator.truth(evaluator.run(source))), ""
    except _Budget as exc:
        return False, str(exc)
    except RecursionError:
        return False, "nested too deeply to decide in the parent"
    except Exception as exc:  # noqa: BLE001 - plain data only: a check that raises does not hold
        return False, f"{type(exc).__name__}: {exc}"[:300]
