"""A restricted evaluator for the data of a generated test: its arguments and its answer.

A model-written assert is code, and code that runs beside the program under test can read
``solution.py``, inspect the function, depend on ``os.urandom`` or the clock, or sleep past a
mutant's budget. So the data parts of ``assert f(ARGS) == ANSWER`` are evaluated here, in the
trusted parent, by walking the expression's AST and allowing only what builds plain data:

* literals (numbers, strings, bytes, None, True, False; f-strings without code), tuples,
  lists, sets and dicts (``*`` and ``**`` unpacking included);
* unary ``-``, ``+``, ``~``, ``not``; arithmetic, bitwise and shift operators on numbers;
  ``+`` and ``*`` on strings, bytes, lists and tuples; ``|``, ``&``, ``-``, ``^`` on sets,
  ``|`` on dicts; comparisons, ``and``/``or``, ``x if c else y``; subscripts and slices
  of values built here;
* list, set and dict comprehensions and generator expressions over such values;
* calls of a short allow-list of pure builtins (``ALLOWED_CALLS``).

Anything else (other names, attribute access, other calls, lambdas, walrus, ``await``...)
raises ``NotData`` with the reason ("not data: calls open"). Every step is bounded, since
this runs in the trusted process: the steps interpreted (``MAX_WORK``), the sizes made (``MAX_MEMORY``
units: an element, a character, 64 bits of an integer), the length of any one value
(``MAX_LENGTH``), the size of integers (``MAX_INT_BITS``), exponents and shifts, and the
nesting of the expression (``MAX_DEPTH``). A refused expression is refused quickly.
"""

from __future__ import annotations

import ast
import operator
import re
from typing import Any, Callable

from codea1.harness.verdicts.syntax import parse_untrusted

MAX_WORK = 300_000  # interpreted steps per expression (a node, an iteration, an element walked)
MAX_MEMORY = 10_000_000  # units allocated per expression (an element, a character, 64 bits of an integer)
MAX_DATA = 4_000_000  # size of a finished value, shared parts counted each time (as it is encoded)
MAX_LENGTH = 1_000_000  # elements of one container, characters of one string
MAX_INT_BITS = 65_536
MAX_DEPTH = 100  # nesting of the expression's AST
MAX_SOURCE = 200_000  # characters of an expression's text
MAX_DIGITS = 5_000  # digits of one number literal (CPython's int() is quadratic above a few thousand)

_PLAIN_SCALARS = (type(None), bool, int, float, complex, str, bytes)
_PLAIN_CONTAINERS = (list, tuple, set, frozenset, dict)
_LONG_NUMBER = re.compile(r"[0-9_]{%d,}" % (MAX_DIGITS + 1))


class NotData(ValueError):
    """The expression is not plain data the evaluator may compute; ``reason`` says why."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


def check_source(text: str) -> None:
    """Refuse a text before ``ast.parse`` sees it when parsing itself would be costly."""
    if len(text) > MAX_SOURCE:
        raise NotData(f"too long: {len(text)} characters (at most {MAX_SOURCE})")
    if _LONG_NUMBER.search(text):
        raise NotData(f"a number literal of more than {MAX_DIGITS} digits")


def evaluate_text(text: str) -> Any:
    """The value of an expression's text (see the module's docstring); raises NotData."""
    check_source(text)
    try:
        tree = parse_untrusted(text.strip(), mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        raise NotData(f"syntax error: {getattr(exc, 'msg', exc)}") from None
    return evaluate(tree.body)


def evaluate(node: ast.expr) -> Any:
    """The value of an expression node, which must be plain data; raises NotData."""
    value = _Evaluator().value(node)
    require_data(value)
    return value


def require_data(value: Any, what: str = "value") -> None:
    """Raise NotData unless ``value`` is made of builtin plain data only (no range, iterator
    or generator: they are not values a test can compare)."""
    stack, size = [value], 0
    while stack:
        v = stack.pop()
        size += 1
        t = type(v)
        flat = _flat_size(v)
        if flat is not None:
            size += flat
            if size > MAX_DATA:
                raise NotData(f"{what} too large (more than {MAX_DATA} elements and characters once written out)")
            continue
        if t is str or t is bytes:
            size += len(v)
        elif t is int:
            size += v.bit_length() // 64
        if size > MAX_DATA:
            raise NotData(f"{what} too large (more than {MAX_DATA} elements and characters once written out)")
        if t in _PLAIN_SCALARS:
            continue
        if t is dict:
            stack.extend(v.keys())
            stack.extend(v.values())
        elif t in _PLAIN_CONTAINERS:
            stack.extend(v)
        else:
            name = "a generator expression" if t is _Generated else f"a {t.__name__} object"
            raise NotData(f"not data: the {what} holds {name}")


_FLAT_SCALARS = frozenset((type(None), bool, int, float, str))


def _flat_size(v: Any) -> int | None:
    """Elements plus characters of a list or tuple of small scalars, at C speed; None for
    anything else."""
    if type(v) not in (list, tuple):
        return None
    kinds = set(map(type, v))
    if not kinds <= _FLAT_SCALARS:
        return None
    size = len(v)
    if str in kinds:
        size += sum(map(len, (x for x in v if type(x) is str)) if len(kinds) > 1 else map(len, v))
    if int in kinds and max(map(int.bit_length, (x for x in v if type(x) is int))) > 64:
        return None  # big integers: the slow walk sizes them
    return size


class _Generated(list):
    """A generator expression's items, computed eagerly (within the work budget). Usable as an
    argument of an allowed builtin or iterated; never a value of the test."""


def _call_name(func: ast.expr) -> str:
    try:
        text = ast.unparse(func)
    except Exception:  # noqa: BLE001 - only for the message
        text = type(func).__name__
    return text if len(text) <= 60 else text[:60] + "..."


_NODE_NAMES = {ast.Lambda: "a lambda", ast.NamedExpr: "an assignment expression", ast.Await: "await",
               ast.Yield: "yield", ast.YieldFrom: "yield", ast.FormattedValue: "an f-string with code",
               ast.Starred: "a starred expression here"}

_BIN = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
        ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow, ast.LShift: operator.lshift,
        ast.RShift: operator.rshift, ast.BitAnd: operator.and_, ast.BitOr: operator.or_, ast.BitXor: operator.xor}
_CMP = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt,
        ast.GtE: operator.ge, ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b,
        ast.Is: operator.is_, ast.IsNot: operator.is_not}
_NUMBERS = (bool, int, float, complex)
_SEQUENCES = (str, bytes, list, tuple)


class _Evaluator:
    def __init__(self):
        self.work = MAX_WORK
        self.memory = MAX_MEMORY
        self.depth = 0
        self.scopes: list[dict[str, Any]] = []  # comprehension variables, innermost last

    # -- budget ------------------------------------------------------------------------------
    def charge(self, units: int) -> None:
        self.work -= units
        if self.work < 0:
            raise NotData(f"too much work to evaluate (more than {MAX_WORK} steps)")

    def allocate(self, units: int) -> None:
        self.memory -= units
        if self.memory < 0:
            raise NotData(f"too large to evaluate (more than {MAX_MEMORY} elements and characters made)")

    def charge_deep(self, value: Any) -> None:
        """Charge what walking the whole value costs (comparing, hashing or sorting it costs
        as much): a container may hold the same large part many times."""
        stack = [value]
        while stack:
            v = stack.pop()
            t = type(v)
            flat = _flat_size(v)
            if flat is not None:  # the common case, measured at C speed
                self.charge(1 + flat // 4)
                continue
            if t is str or t is bytes:
                self.charge(1 + len(v) // 16)
            elif t is int:
                self.charge(1 + v.bit_length() // 64)
            elif t is dict:
                self.charge(1 + len(v))
                stack.extend(v.keys())
                stack.extend(v.values())
            elif t in (list, tuple, set, frozenset, _Generated):
                self.charge(1 + len(v))
                stack.extend(v)
            else:
                self.charge(1)

    def made(self, value: Any) -> Any:
        """Account for a value just made: its size, within the limits."""
        t = type(value)
        if t is int:
            bits = value.bit_length()
            if bits > MAX_INT_BITS:
                raise NotData(f"an integer of more than {MAX_INT_BITS} bits")
            self.allocate(1 + bits // 64)
        elif t in (str, bytes, list, tuple, set, frozenset, dict, _Generated):
            if len(value) > MAX_LENGTH:
                raise NotData(f"a value of more than {MAX_LENGTH} elements or characters")
            self.allocate(1 + len(value))
        return value

    def items(self, value: Any, what: str = "value") -> list:
        """The items of an iterable built here, as a list, within the limits."""
        if isinstance(value, (str, bytes, list, tuple, set, frozenset, dict, range)):
            try:
                n = len(value)
            except OverflowError:
                n = MAX_LENGTH + 1
            if n > MAX_LENGTH:
                raise NotData(f"iterates over more than {MAX_LENGTH} items")
            if type(value) is range:
                self.charge(1 + n)
            else:
                self.charge_deep(value)  # what hashing, sorting or comparing the items may cost
            return list(value)
        if type(value) in (zip, enumerate, reversed) or type(value).__name__.endswith("iterator"):
            out = []
            for item in value:
                self.charge(1)
                out.append(item)
                if len(out) > MAX_LENGTH:
                    raise NotData(f"iterates over more than {MAX_LENGTH} items")
            return out
        raise NotData(f"not data: cannot iterate over {what} of type {type(value).__name__}")

    def iterate(self, value: Any):
        """Lazily, for comprehensions: each item costs a unit of work."""
        if isinstance(value, range) or type(value) in (zip, enumerate, reversed) \
                or type(value).__name__.endswith("iterator"):
            for item in value:
                self.charge(1)
                yield item
        else:
            yield from self.items(value)

    # -- nodes -------------------------------------------------------------------------------
    def value(self, node: ast.expr) -> Any:
        self.charge(1)
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise NotData(f"nested deeper than {MAX_DEPTH}")
        try:
            method = getattr(self, "_" + type(node).__name__, None)
            if method is None:
                raise NotData("not data: " + _NODE_NAMES.get(type(node), type(node).__name__))
            try:
                return method(node)
            except NotData:
                raise
            except RecursionError:
                raise NotData(f"nested deeper than {MAX_DEPTH}") from None
            except MemoryError:
                raise NotData("too large") from None
            except Exception as exc:  # noqa: BLE001 - builtins on plain data: a TypeError, a ZeroDivisionError
                raise NotData(f"raises {type(exc).__name__}: {str(exc)[:200]}") from None
        finally:
            self.depth -= 1

    def _Constant(self, node: ast.Constant) -> Any:
        if not isinstance(node.value, _PLAIN_SCALARS):
            raise NotData(f"not data: {node.value!r}")
        return self.made(node.value)

    def _Attribute(self, node: ast.Attribute) -> Any:
        raise NotData(f"not data: attribute access .{node.attr}")

    def _JoinedStr(self, node: ast.JoinedStr) -> str:
        if not all(isinstance(v, ast.Constant) for v in node.values):
            raise NotData("not data: an f-string with code")
        return self.made("".join(v.value for v in node.values))

    def _elements(self, nodes: list[ast.expr]) -> list:
        out: list = []
        for n in nodes:
            if isinstance(n, ast.Starred):
                out.extend(self.items(self.value(n.value)))
            else:
                out.append(self.value(n))
            if len(out) > MAX_LENGTH:
                raise NotData(f"a value of more than {MAX_LENGTH} elements")
        return out

    def _Tuple(self, node: ast.Tuple) -> tuple:
        return self.made(tuple(self._elements(node.elts)))

    def _List(self, node: ast.List) -> list:
        return self.made(self._elements(node.elts))

    def _Set(self, node: ast.Set) -> set:
        elements = self._elements(node.elts)
        self.charge_deep(elements)  # hashing
        return self.made(set(elements))

    def _Dict(self, node: ast.Dict) -> dict:
        out: dict = {}
        for k, v in zip(node.keys, node.values):
            if k is None:  # {**other}
                other = self.value(v)
                if type(other) is not dict:
                    raise NotData("not data: ** of a value that is not a dict")
                self.charge(1 + len(other))
                out.update(other)
            else:
                key = self.value(k)
                self.charge_deep(key)  # hashing
                out[key] = self.value(v)
        return self.made(out)

    def _Name(self, node: ast.Name) -> Any:
        for scope in reversed(self.scopes):
            if node.id in scope:
                return scope[node.id]
        if node.id in ALLOWED_CALLS:
            raise NotData(f"not data: the builtin {node.id} used as a value")
        raise NotData(f"not data: the name {node.id}")

    def _UnaryOp(self, node: ast.UnaryOp) -> Any:
        operand = self.value(node.operand)
        if isinstance(node.op, ast.Not):
            return not operand
        if not isinstance(operand, _NUMBERS) or (isinstance(node.op, ast.Invert) and not isinstance(operand, int)):
            raise NotData(f"not data: {type(node.op).__name__} of a {type(operand).__name__}")
        op = {ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Invert: operator.invert}[type(node.op)]
        return self.made(op(operand))

    def _BinOp(self, node: ast.BinOp) -> Any:
        left, right = self.value(node.left), self.value(node.right)
        op = type(node.op)
        if op not in _BIN:
            raise NotData(f"not data: the operator {op.__name__}")
        lt, rt = type(left), type(right)
        if isinstance(left, _NUMBERS) and isinstance(right, _NUMBERS):
            self._check_numbers(op, left, right)
        elif op is ast.Add and lt is rt and lt in _SEQUENCES:
            if len(left) + len(right) > MAX_LENGTH:
                raise NotData(f"a value of more than {MAX_LENGTH} elements or characters")
        elif op is ast.Mult and ((lt in _SEQUENCES and rt in (int, bool)) or (rt in _SEQUENCES and lt in (int, bool))):
            seq, n = (left, right) if lt in _SEQUENCES else (right, left)
            if n > 0 and len(seq) * n > MAX_LENGTH:
                raise NotData(f"a value of more than {MAX_LENGTH} elements or characters")
        elif op in (ast.BitOr, ast.BitAnd, ast.Sub, ast.BitXor) and lt in (set, frozenset) and rt in (set, frozenset):
            pass
        elif op is ast.BitOr and lt is dict and rt is dict:
            pass
        else:
            raise NotData(f"not data: {lt.__name__} {op.__name__} {rt.__name__}")
        return self.made(_BIN[op](left, right))

    def _check_numbers(self, op, left, right) -> None:
        """Refuse an integer operation whose result would exceed the size limit, before
        computing it."""
        if not (type(left) in (int, bool) and type(right) in (int, bool)):
            return  # floats and complexes overflow to an exception or inf, quickly
        lb, rb = abs(left).bit_length(), abs(right).bit_length()
        if op is ast.Mult and lb + rb > MAX_INT_BITS + 1:
            raise NotData(f"an integer of more than {MAX_INT_BITS} bits")
        if op is ast.Pow and right > 0 and abs(left) > 1 and (right > MAX_INT_BITS or lb * right > MAX_INT_BITS):
            raise NotData(f"an integer of more than {MAX_INT_BITS} bits")
        if op is ast.Pow and right < 0 and -right > MAX_INT_BITS:
            raise NotData("an exponent too large")
        if op is ast.LShift and right > 0 and lb + right > MAX_INT_BITS:
            raise NotData(f"an integer of more than {MAX_INT_BITS} bits")

    def _BoolOp(self, node: ast.BoolOp) -> Any:
        is_and = isinstance(node.op, ast.And)
        value = None
        for n in node.values:
            value = self.value(n)
            if bool(value) != is_and:
                return value
        return value

    def _Compare(self, node: ast.Compare) -> bool:
        left = self.value(node.left)
        for op, n in zip(node.ops, node.comparators):
            right = self.value(n)
            self.charge_deep(left)
            self.charge_deep(right)
            if not _CMP[type(op)](left, right):
                return False
            left = right
        return True

    def _IfExp(self, node: ast.IfExp) -> Any:
        return self.value(node.body) if self.value(node.test) else self.value(node.orelse)

    def _Subscript(self, node: ast.Subscript) -> Any:
        container = self.value(node.value)
        if type(container) not in (str, bytes, list, tuple, dict, range):
            raise NotData(f"not data: a subscript of a {type(container).__name__}")
        if isinstance(node.slice, ast.Slice):
            bounds = (node.slice.lower, node.slice.upper, node.slice.step)
            parts = [None if p is None else self.value(p) for p in bounds]
            if not all(p is None or type(p) in (int, bool) for p in parts):
                raise NotData("not data: a slice bound that is not an integer")
            key: Any = slice(*parts)
        else:
            key = self.value(node.slice)
            self.charge_deep(key)  # hashing
        result = container[key]
        if type(result) is range:
            return result
        return self.made(result)

    # -- comprehensions ------------------------------------------------------------------------
    def _comprehension(self, node, emit: Callable[[], None]) -> None:
        def loop(index: int) -> None:
            if index == len(node.generators):
                emit()
                return
            gen = node.generators[index]
            if gen.is_async:
                raise NotData("not data: an async comprehension")
            iterable = self.value(gen.iter)
            _target_names(gen.target)  # refuses targets other than names
            scope: dict[str, Any] = {}
            self.scopes.append(scope)
            try:
                for item in self.iterate(iterable):
                    _bind(gen.target, item, scope)
                    if all(self.value(cond) for cond in gen.ifs):
                        loop(index + 1)
            finally:
                self.scopes.pop()

        loop(0)

    def _ListComp(self, node: ast.ListComp) -> list:
        out: list = []
        self._comprehension(node, lambda: self._append(out, self.value(node.elt)))
        return self.made(out)

    def _GeneratorExp(self, node: ast.GeneratorExp) -> _Generated:
        out = _Generated()
        self._comprehension(node, lambda: self._append(out, self.value(node.elt)))
        return self.made(out)

    def _SetComp(self, node: ast.SetComp) -> set:
        out: list = []
        self._comprehension(node, lambda: self._append(out, self.value(node.elt)))
        self.charge_deep(out)  # hashing
        return self.made(set(out))

    def _DictComp(self, node: ast.DictComp) -> dict:
        out: dict = {}

        def emit():
            key = self.value(node.key)
            self.charge_deep(key)  # hashing
            out[key] = self.value(node.value)
            if len(out) > MAX_LENGTH:
                raise NotData(f"a value of more than {MAX_LENGTH} elements")

        self._comprehension(node, emit)
        return self.made(out)

    def _append(self, out: list, item: Any) -> None:
        out.append(item)
        if len(out) > MAX_LENGTH:
            raise NotData(f"a value of more than {MAX_LENGTH} elements")

    # -- calls -----------------------------------------------------------------------------------
    def _Call(self, node: ast.Call) -> Any:
        func = node.func
        if not isinstance(func, ast.Name) or func.id not in ALLOWED_CALLS \
                or any(func.id in scope for scope in self.scopes):
            raise NotData(f"not data: calls {_call_name(func)}")
        args = self._elements(node.args)
        kwargs: dict[str, Any] = {}
        for kw in node.keywords:
            if kw.arg is None:
                raise NotData(f"not data: ** in a call of {func.id}")
            kwargs[kw.arg] = self.value(kw.value)
        allowed_keywords = _KEYWORDS.get(func.id, ())
        for name in kwargs:
            if allowed_keywords != "*" and name not in allowed_keywords:
                raise NotData(f"not data: {func.id}() with the keyword {name}")
        return ALLOWED_CALLS[func.id](self, *args, **kwargs)


def _target_names(target: ast.expr) -> list[str]:
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, (ast.Tuple, ast.List)):
        return [n for elt in target.elts for n in _target_names(elt)]
    raise NotData(f"not data: a comprehension target {type(target).__name__}")


def _bind(target: ast.expr, value: Any, scope: dict[str, Any]) -> None:
    if isinstance(target, ast.Name):
        scope[target.id] = value
        return
    if isinstance(target, (ast.Tuple, ast.List)):
        if isinstance(value, (str, bytes, list, tuple)) and len(value) == len(target.elts):
            for t, v in zip(target.elts, value):
                _bind(t, v, scope)
            return
        raise NotData("raises ValueError: cannot unpack the item into the comprehension's names")
    raise NotData(f"not data: a comprehension target {type(target).__name__}")


# -- the allowed builtins, each bounded ----------------------------------------------------------

def _numbers(ev: _Evaluator, values: list, name: str) -> list:
    for v in values:
        if not isinstance(v, _NUMBERS):
            raise NotData(f"raises TypeError: {name}() of a {type(v).__name__}")
    return values


def _range(ev, *args):
    if not args or len(args) > 3 or not all(type(a) in (int, bool) for a in args):
        raise NotData("raises TypeError: range() takes 1 to 3 integers")
    return range(*args)


def _float(ev, x=0.0):
    if isinstance(x, str) and len(x) > 400:
        raise NotData("float() of a string longer than 400 characters")
    if not isinstance(x, (str, int, float, bool)):
        raise NotData(f"raises TypeError: float() of a {type(x).__name__}")
    return ev.made(float(x))


def _int(ev, x=0, *base):
    if isinstance(x, (str, bytes)) and len(x) > MAX_DIGITS:
        raise NotData(f"int() of a string longer than {MAX_DIGITS} characters")
    if not isinstance(x, (str, bytes, int, float, bool)):
        raise NotData(f"raises TypeError: int() of a {type(x).__name__}")
    return ev.made(int(x, *base))


def _estimated_text(ev: _Evaluator, value: Any) -> int:
    """An upper bound of len(repr(value)) (work charged per element), to refuse a huge text
    before making it: a list may hold the same long string a million times."""
    total, stack = 0, [value]
    while stack:
        v = stack.pop()
        ev.charge(1)
        t = type(v)
        if t in (str, bytes):
            total += 4 * len(v) + 3
        elif t is int:
            total += v.bit_length() // 3 + 2
        elif t is dict:
            total += 2 + 4 * len(v)
            stack.extend(v.keys())
            stack.extend(v.values())
        elif t in (list, tuple, set, frozenset):
            total += 2 + 2 * len(v) + 11
            stack.extend(v)
        else:
            total += 40
        if total > MAX_LENGTH:
            raise NotData(f"a string of more than {MAX_LENGTH} characters")
    return total


def _str(ev, x=""):
    if type(x) is str:
        return x
    require_data(x, "argument of str()")
    _estimated_text(ev, x)
    return ev.made(str(x))


def _bool(ev, x=False):
    return bool(x)


def _container(kind):
    def make(ev, x=()):
        if kind is dict and type(x) is dict:
            return ev.made(dict(x))
        items = ev.items(x)
        return ev.made(kind(items))

    return make


def _dict(ev, x=None, **kwargs):
    out = {} if x is None else _container(dict)(ev, x)
    out.update(kwargs)
    return ev.made(out)


def _sorted(ev, x, reverse=False):
    items = ev.items(x)
    ev.charge(len(items) * max(1, len(items).bit_length()))
    return ev.made(sorted(items, reverse=reverse))


def _len(ev, x):
    if type(x) is _Generated or not isinstance(x, (str, bytes, list, tuple, set, frozenset, dict, range)):
        raise NotData(f"raises TypeError: len() of a {type(x).__name__}")
    return len(x)


def _min_max(fn):
    def pick(ev, *args, **kwargs):
        values = ev.items(args[0]) if len(args) == 1 else list(args)
        ev.charge_deep(values)  # comparing
        return fn(values, **kwargs)

    return pick


def _sum(ev, x, start=0):
    values = _numbers(ev, ev.items(x), "sum") + _numbers(ev, [start], "sum")
    total = start
    for v in values[:-1]:
        ev._check_numbers(ast.Add, total, v)
        total = ev.made(total + v)
    return total


def _abs(ev, x):
    _numbers(ev, [x], "abs")
    return abs(x)


def _round(ev, x, ndigits=None):
    _numbers(ev, [x], "round")
    if ndigits is not None and (type(ndigits) not in (int, bool) or abs(ndigits) > 400):
        raise NotData("round() with ndigits that is not an integer within 400")
    return ev.made(round(x) if ndigits is None else round(x, ndigits))


def _reversed(ev, x):
    if type(x) not in (str, bytes, list, tuple, range, dict):
        x = ev.items(x)
    return reversed(x)


def _enumerate(ev, x, start=0):
    if type(start) not in (int, bool):
        raise NotData("raises TypeError: enumerate() start must be an integer")
    return enumerate(ev.iterate(x), start)


def _zip(ev, *xs):
    return zip(*(ev.iterate(x) for x in xs))


def _chr(ev, x):
    return chr(x)


def _ord(ev, x):
    return ord(x)


def _any(ev, x):
    return any(item for item in ev.iterate(x))


def _all(ev, x):
    return all(item for item in ev.iterate(x))


# The builtins a test's data may call, and the keywords each takes.
ALLOWED_CALLS: dict[str, Callable[..., Any]] = {
    "range": _range, "float": _float, "int": _int, "str": _str, "bool": _bool,
    "tuple": _container(tuple), "list": _container(list), "set": _container(set),
    "frozenset": _container(frozenset), "dict": _dict, "sorted": _sorted, "len": _len,
    "min": _min_max(min), "max": _min_max(max), "sum": _sum, "abs": _abs, "round": _round,
    "reversed": _reversed, "enumerate": _enumerate, "zip": _zip, "chr": _chr, "ord": _ord,
    "any": _any, "all": _all,
}
_KEYWORDS: dict[str, Any] = {"sorted": ("reverse",), "min": ("default",), "max": ("default",), "sum": ("start",),
                             "enumerate": ("start",), "dict": "*", "round": ("ndigits",)}
