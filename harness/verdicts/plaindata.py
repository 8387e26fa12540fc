"""Plain-data codec: the only form in which values cross a sandbox boundary.

Values produced by untrusted code are encoded *inside* the sandbox into JSON built from
builtin types only, and decoded in the trusted parent into fresh builtin objects. Nothing
the untrusted code defines (an ``__eq__`` that always returns True, a ``float`` subclass
with a lying ``__lt__``) survives the trip, so comparisons made by the harness are honest.

Tags keep the distinctions ``==`` cares about (tuple vs list, set vs list, bytes vs str):

=========  ==================================
JSON       Python
=========  ==================================
null/bool  None / bool
number     int / float (NaN and infinities as JSON's NaN/Infinity)
string     str
array      list
{"t": []}  tuple        {"s": []}  set       {"f": []}  frozenset
{"d": []}  dict, as [key, value] pairs       {"b": ""}  bytes (latin-1 text)
{"c": []}  complex      {"o": "name"}  an object that is not plain data (Opaque)
{"h": ""}  int of more than 256 bits, in hex (decimal conversion is quadratic in CPython)
{"a": []}  numpy array, pandas Index, Series or DataFrame (``Array``): [kind, shape,
           items in C order(, keys)]; made only by ``to_tree(..., arrays=True)``
           (script tests' reports)
=========  ==================================

Arrays. Script tests check numpy arrays and pandas objects (``assertIn("x", df.columns)``,
``assertEqual(arr, 80)`` on a one-element array). With ``arrays``, the child reads exactly
numpy's ``ndarray`` (and ``numpy.ma.MaskedArray``) with ndarray's own C methods, and exactly
pandas' ``Index``, ``RangeIndex``, ``Series`` and ``DataFrame`` (their values through such an
ndarray); every other class, subclasses included, stays opaque. The parent gets an ``Array``
of plain items and applies numpy's and pandas' semantics to it itself.

Why a program cannot forge a check this way. What the child sends is at most a value the
program could have returned (an object array holds any plain items), and the comparison is
the parent's own. numpy's ndarray is a C type: a program can neither make one (every class
made in Python is a heap type; the flags, module and name are read with ``type``'s own
descriptors, bound before the program runs, so no metaclass answers for its classes) nor
change its methods (``ndarray.tolist = ...`` raises: the type is immutable). A lying
``tolist`` or ``__eq__`` therefore belongs to a subclass, and a subclass is opaque, never
equal to anything. pandas' classes are Python classes a program can patch (``Index.tolist
= ...``), and so can it replace ``sys.modules["pandas"]``: what it gets that way is walked as
plain data too, the same value it could have put in a genuine Index.

This module imports only the standard library: it runs inside the sandbox child.
"""

from __future__ import annotations

import cmath
import json
import math
import operator
import sys
from typing import Any

# Deep or huge values are refused rather than allowed to exhaust the parent. Values nested
# deeper than the interpreter's recursion goes are walked with an explicit stack (the
# ``_deep`` functions): the limits here decide, never the recursion limit.
MAX_DEPTH = 10_000
MAX_ITEMS = 50_000_000
MAX_EMPTY_ARRAY_EXTENT = 100_000  # the product of an empty array's non-zero dimensions
_CONTAINERS = (list, tuple, dict, set, frozenset)

_SCALARS = frozenset((int, float, str, bool, type(None)))

if hasattr(sys, "set_int_max_str_digits"):
    # Big integers are legitimate outputs (factorials, fibonacci); 3.11 refuses them by default.
    sys.set_int_max_str_digits(0)


class PlainDataError(ValueError):
    """A value cannot be represented, or a payload is malformed."""


class NotPlain(Exception):
    """Raised inside a strict walk at the first value that is not plain data."""


class Opaque:
    """Stands for a value of a non-plain type: it is never equal to anything, itself included.

    ``Opaque`` keeps "the code returned *something* of type X" (MBPP+ checks some outputs only
    for ``is not None``) without letting the object's own behaviour reach the parent.
    """

    __slots__ = ("type_name",)

    def __init__(self, type_name: str):
        self.type_name = type_name

    def __eq__(self, other: object) -> bool:
        return False

    def __ne__(self, other: object) -> bool:
        return True

    __hash__ = object.__hash__

    def __repr__(self) -> str:
        return f"<opaque {self.type_name}>"


def _numpy_scalar(value: Any) -> Any:
    """numpy scalars become Python scalars (numpy.float64(1.5) == 1.5 in evalplus as well)."""
    np = sys.modules.get("numpy")
    if np is not None and isinstance(value, np.generic):
        return value.item()
    return None


def to_tree(value: Any, strict: bool = False, arrays: bool = False) -> Any:
    """Turn ``value`` into a JSON-able tree of builtins; never calls methods of user classes
    except the base-type constructors of builtin subclasses. A value that is not plain data
    becomes an opaque leaf, or, with ``strict``, stops the walk (``NotPlain``). With
    ``arrays``, numpy arrays and pandas indexes become arrays (``_array_parts``)."""
    if type(value) is list and len(value) < MAX_ITEMS:  # most values: no walk to set up
        fast = _scalar_list(value)
        if fast is not None:
            return fast
    budget = [MAX_ITEMS]

    def walk(v: Any, depth: int) -> Any:
        budget[0] -= 1
        if budget[0] < 0:
            raise PlainDataError(f"value has more than {MAX_ITEMS} items")
        if depth > MAX_DEPTH:
            raise PlainDataError(f"value is nested deeper than {MAX_DEPTH}")
        t = type(v)
        if v is None or t is bool or t is str or t is float:
            return v
        if t is int:
            return v if v.bit_length() <= 256 else {"h": hex(v)}
        if t is list or t is tuple:
            fast = _scalar_list(v)
            if fast is not None:
                budget[0] -= len(v)
                if budget[0] < 0:
                    raise PlainDataError(f"value has more than {MAX_ITEMS} items")
                return fast if t is list else {"t": fast}
            items = [walk(x, depth + 1) for x in v]
            return items if t is list else {"t": items}
        if t is dict:
            return {"d": [[walk(k, depth + 1), walk(x, depth + 1)] for k, x in v.items()]}
        if t is set or t is frozenset:
            items = [walk(x, depth + 1) for x in v]
            return {"s" if t is set else "f": items}
        if t is bytes or t is bytearray:
            return {"b": bytes(v).decode("latin-1")}
        if t is complex:
            return {"c": [v.real, v.imag]}
        if t is Guarded:  # before any isinstance: the proxy answers those for its value
            return walk(v._codea1_value, depth)
        parts = _own_array_parts(v) if t is Array else _array_parts(v, t) if arrays else None
        if parts is not None:
            kind, shape, *lists = parts  # items, and the keys of a Series or DataFrame
            budget[0] -= sum(map(len, lists))
            if budget[0] < 0:
                raise PlainDataError(f"value has more than {MAX_ITEMS} items")
            return {"a": [kind, list(shape), *[_scalar_list(x) or [walk(y, depth + 1) for y in x] for x in lists]]}
        # Subclasses of builtins are reduced to the builtin value: their overridden
        # operators stay behind.
        if isinstance(v, bool):
            return bool(v)
        if isinstance(v, int):
            return walk(int.__index__(v), depth)
        if isinstance(v, float):
            return float.__float__(v)
        if isinstance(v, str):
            return str.__str__(v)
        scalar = _numpy_scalar(v)
        if scalar is not None:
            return walk(scalar, depth + 1)
        if isinstance(v, (list, tuple, dict, set, frozenset)):
            base = next(b for b in (list, tuple, dict, set, frozenset) if isinstance(v, b))
            if base is dict:
                return walk(dict(dict.items(v)), depth)
            return walk(base(base.__iter__(v)), depth)
        if strict:
            raise NotPlain()
        return {"o": f"{t.__module__}.{t.__qualname__}"}

    try:
        return walk(value, 0)
    except RecursionError:
        budget[0] = MAX_ITEMS
        return _to_tree_deep(value, walk, budget)


def _to_tree_deep(value: Any, walk, budget: list) -> Any:
    """``to_tree`` for values nested deeper than recursion goes: containers (builtin ones,
    their subclasses reduced to the builtin value, proxies) with an explicit stack, every
    other value by ``walk``; the same tree."""
    root: list = [None]
    stack = [(value, root, 0, 0)]  # (value, where its tree goes: container and index, depth)
    while stack:
        v, into, at, depth = stack.pop()
        budget[0] -= 1
        if budget[0] < 0:
            raise PlainDataError(f"value has more than {MAX_ITEMS} items")
        if depth > MAX_DEPTH:
            raise PlainDataError(f"value is nested deeper than {MAX_DEPTH}")
        while type(v) is Guarded:
            v = v._codea1_value
        t = type(v)
        if t not in _CONTAINERS:
            if t in _SCALARS or t is Array or not isinstance(v, _CONTAINERS) or isinstance(v, (bool, int, float, str)):
                into[at] = walk(v, depth)
                continue
            base = next(b for b in _CONTAINERS if isinstance(v, b))
            v = dict(dict.items(v)) if base is dict else base(base.__iter__(v))
            t = base
        if t is dict:
            pairs = [[None, None] for _ in range(len(v))]
            into[at] = {"d": pairs}
            for pair, (k, x) in zip(pairs, v.items()):
                stack.append((x, pair, 1, depth + 1))
                stack.append((k, pair, 0, depth + 1))
            continue
        items = [None] * len(v)
        into[at] = items if t is list else {"t" if t is tuple else "s" if t is set else "f": items}
        for i, x in enumerate(v):
            stack.append((x, items, i, depth + 1))
    return root[0]


_HEAP_TYPE = 1 << 9  # Py_TPFLAGS_HEAPTYPE: set on every class a class statement or type() makes
# Bound before any program runs; a metaclass cannot answer these for its classes.
_FLAGS, _MODULE, _NAME = (type.__dict__[k].__get__ for k in ("__flags__", "__module__", "__qualname__"))
_MRO = type.__dict__["__mro__"].__get__


def _numpy_c_type(t: type, name: str) -> bool:
    """``t`` is numpy's own C type ``numpy.<name>`` (not a class a program made)."""
    return not _FLAGS(t) & _HEAP_TYPE and _MODULE(t) == "numpy" and _NAME(t) == name


def _array_parts(v: Any, t: type) -> tuple | None:
    """(kind, shape, items in C order[, keys]) of exactly numpy's ndarray or MaskedArray (masked
    items as None, as its tolist gives them) or pandas' Index, RangeIndex, Series or DataFrame
    (with their index or columns as keys); None for anything else."""
    if _numpy_c_type(t, "ndarray"):
        if t.dtype.__get__(v).kind in ("m", "M"):
            return None  # datetime64, timedelta64: tolist gives ints (ns) that numpy would not compare as such
        # flat, in C order: tolist of the array itself would nest a list per item per axis
        # (an array of 64 axes of length 1 makes 63 lists per item)
        return "ndarray", t.shape.__get__(v), t.tolist(t.reshape(v, -1))
    if any(_numpy_c_type(b, "ndarray") for b in _MRO(t)[1:]):
        return _masked_parts(v, t)
    pandas = sys.modules.get("pandas")
    kind = next((k for k in ("Index", "RangeIndex", "Series", "DataFrame") if t is getattr(pandas, k, None)), None)
    if kind in ("Index", "RangeIndex"):
        items = t.tolist(v)
        return ("Index", (len(items),), items) if type(items) is list else None
    if kind in ("Series", "DataFrame"):
        values, keys = t.to_numpy(v), (v.index if kind == "Series" else v.columns).tolist()
        parts = _array_parts(values, type(values)) if _numpy_c_type(type(values), "ndarray") else None
        return (kind, parts[1], parts[2], keys) if parts and type(keys) is list else None
    return None


def _masked_parts(v: Any, t: type) -> tuple[str, tuple, list] | None:
    """A numpy.ma.MaskedArray read with ndarray's own methods: its data, and its mask from the
    instance (a bool array of the same shape, or numpy's False scalar: nothing masked)."""
    ndarray = next(b for b in _MRO(t) if _numpy_c_type(b, "ndarray"))
    if t is not getattr(sys.modules.get("numpy.ma"), "MaskedArray", None) or ndarray.dtype.__get__(v).kind in ("m", "M"):
        return None  # another subclass: its own methods would decide what it holds
    shape = ndarray.shape.__get__(v)
    items = _flatten(ndarray.tolist(v), len(shape))
    mask = object.__getattribute__(v, "__dict__").get("_mask")
    if type(mask) is ndarray and ndarray.shape.__get__(mask) == shape:
        return "ndarray", shape, [None if m else x for x, m in zip(items, _flatten(ndarray.tolist(mask), len(shape)))]
    if (_numpy_c_type(type(mask), "bool_") or _numpy_c_type(type(mask), "bool")) and not mask:
        return "ndarray", shape, items  # numpy.ma.nomask
    return None


def _own_array_parts(v: Array) -> tuple:
    """An Array's parts, checked (a program can make one and set its slots)."""
    kind, shape, items, keys = v.kind, v.shape, v.items, v.keys
    if type(kind) is not str or type(shape) is not tuple or not _array_well_formed(kind, list(shape), items, keys):
        raise PlainDataError("malformed array")
    return (kind, shape, items) if keys is None else (kind, shape, items, keys)


def _array_well_formed(kind: Any, shape: list, items: Any, keys: Any) -> bool:
    # An empty array's other dimensions are bounded too: (10**18, 0) holds no item, and
    # iterating or printing it would take 10**18 steps.
    return kind in Array.KINDS and len(shape) <= 64 and all(type(n) is int and n >= 0 for n in shape) \
        and type(items) is list and math.prod(shape) == len(items) \
        and math.prod(n for n in shape if n) <= max(len(items), MAX_EMPTY_ARRAY_EXTENT) \
        and (type(keys) is list if kind in ("Series", "DataFrame") else keys is None) \
        and (kind == "ndarray" or len(shape) == (2 if kind == "DataFrame" else 1)) \
        and (keys is None or len(keys) == shape[-1 if kind == "DataFrame" else 0])


def _flatten(nested: Any, ndim: int) -> list:
    """ndarray.tolist's nested lists (a scalar for 0-d) -> the items in C order."""
    items = [nested]
    for _ in range(ndim):
        items = [x for row in items for x in row]
    return items


def _scalar_list(v: list | tuple) -> list | None:
    """Fast path (C-level scans): a list/tuple of exact scalars with no huge int is its own
    tree. Returns None when the slow walk is needed."""
    kinds = set(map(type, v))
    if not kinds <= _SCALARS:
        return None
    if int in kinds:
        # Every int must fit in 256 bits (larger ones take the walk's hex form); mixed lists
        # (HumanEval/130 returns ints and floats, millions of them) are checked here too.
        ints = v if len(kinds) == 1 else [x for x in v if type(x) is int]
        if max(map(int.bit_length, ints)) > 256:
            return None
    return v if type(v) is list else list(v)


def from_tree(tree: Any, arrays: bool = True) -> Any:
    """Inverse of :func:`to_tree`; raises PlainDataError on anything it did not produce.
    ``arrays`` False refuses arrays (what ``to_tree`` makes only with ``arrays``: a call's
    value never holds one)."""
    try:
        return _from_tree(tree, arrays)
    except RecursionError:
        return _from_tree_deep(tree, arrays)


def _from_tree(tree: Any, arrays: bool = True) -> Any:
    t = type(tree)
    if tree is None or t is bool or t is str or t is int or t is float:
        return tree
    if t is list:
        kinds = set(map(type, tree))
        if dict not in kinds and list not in kinds:
            return tree  # JSON scalars only: nothing to rebuild
        return [_from_tree(x, arrays) for x in tree]
    if t is dict and len(tree) == 1:
        (tag, body), = tree.items()
        if tag == "t" and type(body) is list:
            return tuple(_from_tree(x, arrays) for x in body)
        if tag == "d" and type(body) is list:
            out = {}
            for pair in body:
                if type(pair) is not list or len(pair) != 2:
                    raise PlainDataError("malformed dict entry")
                out[_hashable(_from_tree(pair[0], arrays))] = _from_tree(pair[1], arrays)
            return out
        if tag in ("s", "f") and type(body) is list:
            items = [_hashable(_from_tree(x, arrays)) for x in body]
            return set(items) if tag == "s" else frozenset(items)
        if tag == "b" and type(body) is str:
            return body.encode("latin-1")
        if tag == "h" and type(body) is str:
            return int(body, 16)
        if tag == "c" and type(body) is list and len(body) == 2:
            return complex(float(body[0]), float(body[1]))
        if tag == "o" and type(body) is str:
            return Opaque(body)
        if tag == "a" and arrays and type(body) is list and len(body) in (3, 4):
            return _array_from_tree(*body)
    raise PlainDataError(f"not a plain-data tree: {str(tree)[:80]}")


_BUILD = {"t": tuple, "s": set, "f": frozenset}


def _from_tree_deep(tree: Any, arrays: bool = True) -> Any:
    """``from_tree`` for trees nested deeper than recursion goes: lists and the tags that hold
    lists (tuple, set, frozenset, dict) with an explicit stack, every other node by
    ``_from_tree``. A node's value is built once its children's are (sets and dict keys need
    them whole)."""
    done: list = []  # values of finished nodes, in the order their parents pop them
    stack: list = [(tree, False)]
    while stack:
        node, expanded = stack.pop()
        t = type(node)
        kind, body = None, None
        if t is list:
            kind, body = "l", node
        elif t is dict and len(node) == 1:
            (tag, inner), = node.items()
            if tag in ("t", "s", "f", "d") and type(inner) is list:
                kind, body = tag, inner
        if kind is None:
            done.append(_from_tree(node, arrays))
            continue
        if kind == "d" and any(type(pair) is not list or len(pair) != 2 for pair in body):
            raise PlainDataError("malformed dict entry")
        children = [x for pair in body for x in pair] if kind == "d" else body
        if not expanded:
            stack.append((node, True))
            stack.extend((child, False) for child in reversed(children))
            continue
        values = done[len(done) - len(children):] if children else []
        del done[len(done) - len(children):]
        if kind == "l":
            done.append(values)
        elif kind == "d":
            done.append({_hashable(values[i]): values[i + 1] for i in range(0, len(values), 2)})
        elif kind == "t":
            done.append(tuple(values))
        else:
            done.append(_BUILD[kind](_hashable(x) for x in values))
    return done[0]


def equal(a: Any, b: Any) -> bool:
    """``a == b`` for plain data, also for values nested deeper than the comparison's
    recursion goes: lists, tuples and dicts are then compared with an explicit stack, each
    pair of other values with ``==`` (list equality's own rules: identity, then ``==``)."""
    try:
        return bool(a == b)
    except RecursionError:
        pass
    stack = [(a, b)]
    while stack:
        x, y = stack.pop()
        if x is y:
            continue
        t = type(x)
        if t is type(y) and t in (list, tuple):
            if len(x) != len(y):
                return False
            stack.extend(zip(x, y))
        elif t is dict and type(y) is dict:
            if len(x) != len(y) or any(k not in y for k in x):
                return False
            stack.extend((v, y[k]) for k, v in x.items())
        elif not x == y:
            return False
    return True


def _array_from_tree(kind: Any, shape: Any, items: Any, keys: Any = None) -> Array:
    if type(kind) is not str or type(shape) is not list or not _array_well_formed(kind, shape, items, keys):
        raise PlainDataError(f"malformed array: {str([kind, shape])[:80]}")
    return Array(kind, tuple(shape), from_tree(items), None if keys is None else from_tree(keys))


def _hashable(v: Any) -> Any:
    try:
        hash(v)
    except TypeError as exc:
        raise PlainDataError(f"unhashable key in plain data: {exc}") from None
    return v


def dumps(value: Any) -> str:
    return json.dumps(to_tree(value), separators=(",", ":"))


def loads(text: str) -> Any:
    return from_tree(json.loads(text))


def plainify(value: Any) -> Any:
    """Round-trip a value through the codec: what is left is builtins only."""
    return from_tree(to_tree(value))


# -- arrays, as the parent sees them -------------------------------------------------------------

class Array:
    """A numpy array or a pandas Index, Series or DataFrame as plain data: ``kind``
    ("ndarray", "Index", "Series", "DataFrame"), ``shape``, ``items`` (the values, plain data
    in C order) and ``keys`` (a Series' index, a DataFrame's columns), with numpy's and
    pandas' semantics for what tests do with one.

    ``==``, ``!=``, ``<``, ``<=``, ``>``, ``>=`` apply element by element (numpy's broadcasting,
    bounded: see ``elementwise``; two arrays of different shapes, neither 0-d, are unequal at
    once; nested lists and tuples count as arrays, anything else as one item), and their answer is
    the truth of the result, as ``if not a == b`` takes it in unittest: one element's truth,
    else ValueError (numpy's "ambiguous"; numpy 2 says so of empty arrays too); a Series' or
    DataFrame's result is always ambiguous. ``x in a``: numpy's ``(a == x).any()``; pandas'
    key lookup in an Index, a Series' index or a DataFrame's columns (hashable keys; NaN is
    found). ``len`` and iteration as numpy's and pandas' (a DataFrame iterates its columns),
    ``bool`` as numpy's (pandas' objects: ValueError). No arithmetic.
    """

    KINDS = ("ndarray", "Index", "Series", "DataFrame")
    __slots__ = ("items", "keys", "kind", "shape")
    __hash__ = None  # type: ignore[assignment]  (numpy arrays and pandas objects are unhashable)

    def __init__(self, kind: str, shape: tuple, items: list, keys: list | None = None):
        self.kind, self.shape, self.items, self.keys = kind, shape, items, keys

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __iter__(self):
        if not self.shape:
            raise TypeError("iteration over a 0-d array")
        if self.kind == "DataFrame":
            return iter(self.keys)
        if len(self.shape) == 1:
            return iter(self.items)
        step = len(self.items) // self.shape[0] if self.shape[0] else 0
        return (Array("ndarray", self.shape[1:], self.items[k * step:(k + 1) * step]) for k in range(self.shape[0]))

    def __bool__(self) -> bool:
        if self.kind != "ndarray":
            raise ValueError(f"the truth value of a {self.kind} is ambiguous")
        return _truth(self.items)

    def _compare(self, op, other: object) -> bool:
        if self.kind in ("Series", "DataFrame"):
            raise ValueError(f"the truth value of a {self.kind} is ambiguous")
        if op in (operator.eq, operator.ne):
            # Arrays of different shapes are unequal at once, never broadcast (numpy would
            # broadcast, then find the answer ambiguous unless it has one element).
            try:
                shape = as_array(other).shape
            except ValueError:
                return op is operator.ne
            if shape and self.shape and shape != self.shape:
                return op is operator.ne
        return _truth(elementwise(op, self, other))

    def __eq__(self, other: object) -> bool:
        return self._compare(operator.eq, other)

    def __ne__(self, other: object) -> bool:
        return self._compare(operator.ne, other)

    def __lt__(self, other: object) -> bool:
        return self._compare(operator.lt, other)

    def __le__(self, other: object) -> bool:
        return self._compare(operator.le, other)

    def __gt__(self, other: object) -> bool:
        return self._compare(operator.gt, other)

    def __ge__(self, other: object) -> bool:
        return self._compare(operator.ge, other)

    def __contains__(self, key: object) -> bool:
        if self.kind == "ndarray":
            return any(elementwise(operator.eq, self, key))
        hash(key)  # pandas: TypeError for an unhashable key
        return any(item == key or (is_nan(item) and is_nan(key)) for item in
                   (self.items if self.kind == "Index" else self.keys))

    def nested(self) -> Any:
        """The values as ndarray.tolist() gives them: nested lists, the item itself for 0-d."""
        if not self.shape:
            return self.items[0]
        if len(self.shape) == 1:
            return list(self.items)
        step = len(self.items) // self.shape[0] if self.shape[0] else 0
        return [Array("ndarray", self.shape[1:], self.items[k * step:(k + 1) * step]).nested()
                for k in range(self.shape[0])]

    def __repr__(self) -> str:
        if len(self.items) > 1000 or not self.items:  # bounded: messages print it
            return f"{self.kind}(shape={self.shape}, {len(self.items)} items)"
        keys = "" if self.keys is None else f", {'index' if self.kind == 'Series' else 'columns'}={self.keys!r}"
        return f"{self.kind}({self.nested()!r}{keys})"


def is_nan(x: Any) -> bool:
    return (type(x) is float and math.isnan(x)) or (type(x) is complex and cmath.isnan(x))


def _truth(items: list) -> bool:
    if len(items) != 1:
        raise ValueError(f"the truth value of an array of {len(items)} elements is ambiguous")
    return bool(items[0])


def as_array(value: Any) -> Array:
    """What numpy.asarray makes of plain data: nested lists and tuples of one shape become
    its dimensions, anything else is an item. ValueError for ragged nesting, as numpy's."""
    if type(value) is Array:
        return value
    shape, level = [], [value]
    while level and all(type(x) in (list, tuple) for x in level):
        n = len(level[0])
        if any(len(x) != n for x in level):
            raise ValueError("an inhomogeneous shape")
        shape.append(n)
        level = [y for x in level for y in x]
    if any(type(x) in (list, tuple) for x in level):
        raise ValueError("an inhomogeneous shape")
    return Array("ndarray", tuple(shape), level)


def elementwise(op, left: Any, right: Any) -> list:
    """``op`` applied to the items of two arrays broadcast together (numpy's rules), where the
    result is no larger than the larger of the two: one side stretched along its length-1
    axes to the other's shape, or a single item against an array. A broadcast that would make
    something larger than either side (an outer product, ``(n, 1)`` against ``(m,)``) raises
    ValueError: the parent's time and memory stay bounded by the items it received."""
    a, b = as_array(left), as_array(right)
    if a.shape == b.shape:
        return [op(x, y) for x, y in zip(a.items, b.items)]
    if not b.shape:
        return [op(x, b.items[0]) for x in a.items]
    if not a.shape:
        return [op(a.items[0], y) for y in b.items]
    n = max(len(a.shape), len(b.shape))
    sa, sb = (1,) * (n - len(a.shape)) + a.shape, (1,) * (n - len(b.shape)) + b.shape
    if any(x != y and 1 not in (x, y) for x, y in zip(sa, sb)):
        raise ValueError(f"operands could not be broadcast together with shapes {a.shape} {b.shape}")
    shape = tuple(y if x == 1 else x for x, y in zip(sa, sb))
    if shape not in (sa, sb):
        raise ValueError(f"arrays of shapes {a.shape} and {b.shape} would broadcast to a larger one: not compared")
    if shape == sa:
        return [op(x, y) for x, y in zip(a.items, _spread(b.items, sb, shape))]
    return [op(x, y) for x, y in zip(_spread(a.items, sa, shape), b.items)]


def _spread(items: list, shape: tuple, target: tuple) -> list:
    """The items of an array of ``shape`` repeated along its length-1 axes to ``target``: the
    offsets are built axis by axis, so the cost is the target's size (axes of length 1 in both
    cost nothing, however many)."""
    strides, step = [], 1
    for n in reversed(shape):
        strides.append(step)
        step *= n
    strides.reverse()
    offsets = [0]
    for n, m, stride in zip(shape, target, strides):
        if m == 1:
            continue
        stride = 0 if n == 1 else stride
        offsets = [o + i * stride for o in offsets for i in range(m)]
    return [items[o] for o in offsets]


# -- values handed to test expressions ---------------------------------------------------------

def guard(value: Any) -> Any:
    """What a call made by a test expression returns: the value as plain data when it is plain
    data (builtin subclasses reduced to their builtin value), else the value behind a
    ``Guarded`` proxy. Raises PlainDataError for values too large or too deep to encode."""
    try:
        return from_tree(to_tree(value, strict=True))
    except NotPlain:
        return Guarded(value)


def unguard(value: Any) -> Any:
    """The value behind a proxy (what the program itself returned), for passing back to it."""
    return value._codea1_value if type(value) is Guarded else value


class Guarded:
    """A value that is not plain data (a generator, an iterator, an instance of the program's
    own class), as a test expression sees it.

    A test may use it the way tests use such values: iterate it (``list(f(x))``,
    ``sorted(f(x))``), advance it (``next(f(x))``), index it, take its length, test membership,
    read attributes and call methods (``f(x).name``, ``f(x).area()``), convert it to str,
    repr or bool, or check ``isinstance``. Everything that comes back is guarded again, so
    the plain parts of the program's answer reach the test as plain data.

    A test may not compare it or compute with it (``==``, ``<``, ``-``, ...): those operators
    are the program's own methods, and an object whose ``__eq__`` always answers True must
    not steer an assertion written around the call. Without them the proxy behaves as the
    opaque value does: equal to nothing but itself, and a TypeError for order and
    arithmetic. Whatever the expression ends with is encoded as plain data and compared by
    the harness, outside the program's process.
    """

    __slots__ = ("_codea1_value",)

    def __init__(self, value: Any):
        object.__setattr__(self, "_codea1_value", value)

    @property
    def __class__(self):  # isinstance(f(x), Foo) answers as for the value itself
        return type(self._codea1_value)

    def __iter__(self):
        return (guard(item) for item in iter(self._codea1_value))

    def __reversed__(self):
        return (guard(item) for item in reversed(self._codea1_value))

    def __next__(self):
        return guard(next(self._codea1_value))

    def __len__(self):
        return len(self._codea1_value)

    def __getitem__(self, key):
        return guard(self._codea1_value[unguard(key)])

    def __contains__(self, item):
        return unguard(item) in self._codea1_value

    def __getattr__(self, name):
        return guard(getattr(self._codea1_value, name))

    def __call__(self, *args, **kwargs):
        return guard(self._codea1_value(*map(unguard, args), **{k: unguard(v) for k, v in kwargs.items()}))

    def __bool__(self):
        return bool(self._codea1_value)

    def __str__(self):
        return str(self._codea1_value)

    def __repr__(self):
        return repr(self._codea1_value)

    __hash__ = object.__hash__
