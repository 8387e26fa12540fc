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
=========  ==================================

This module imports only the standard library: it runs inside the sandbox child.
"""

from __future__ import annotations

import json
import sys
from typing import Any

# Deep or huge values are refused rather than allowed to exhaust the parent.
MAX_DEPTH = 100
MAX_ITEMS = 50_000_000

_SCALARS = frozenset((int, float, str, bool, type(None)))

if hasattr(sys, "set_int_max_str_digits"):
    # Big integers are legitimate outputs (factorials, fibonacci); 3.11 refuses them by default.
    sys.set_int_max_str_digits(0)


class PlainDataError(ValueError):
    """A value cannot be represented, or a payload is malformed."""


class _NotPlain(Exception):
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


def to_tree(value: Any, strict: bool = False) -> Any:
    """Turn ``value`` into a JSON-able tree of builtins; never calls methods of user classes
    except the base-type constructors of builtin subclasses. A value that is not plain data
    becomes an opaque leaf, or, with ``strict``, stops the walk (``_NotPlain``)."""
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
            raise _NotPlain()
        return {"o": f"{t.__module__}.{t.__qualname__}"}

    return walk(value, 0)


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


def from_tree(tree: Any) -> Any:
    """Inverse of :func:`to_tree`; raises PlainDataError on anything it did not produce."""
    t = type(tree)
    if tree is None or t is bool or t is str or t is int or t is float:
        return tree
    if t is list:
        kinds = set(map(type, tree))
        if dict not in kinds and list not in kinds:
            return tree  # JSON scalars only: nothing to rebuild
        return [from_tree(x) for x in tree]
    if t is dict and len(tree) == 1:
        (tag, body), = tree.items()
        if tag == "t" and type(body) is list:
            return tuple(from_tree(x) for x in body)
        if tag == "d" and type(body) is list:
            out = {}
            for pair in body:
                if type(pair) is not list or len(pair) != 2:
                    raise PlainDataError("malformed dict entry")
                out[_hashable(from_tree(pair[0]))] = from_tree(pair[1])
            return out
        if tag in ("s", "f") and type(body) is list:
            items = [_hashable(from_tree(x)) for x in body]
            return set(items) if tag == "s" else frozenset(items)
        if tag == "b" and type(body) is str:
            return body.encode("latin-1")
        if tag == "h" and type(body) is str:
            return int(body, 16)
        if tag == "c" and type(body) is list and len(body) == 2:
            return complex(float(body[0]), float(body[1]))
        if tag == "o" and type(body) is str:
            return Opaque(body)
    raise PlainDataError(f"not a plain-data tree: {str(tree)[:80]}")


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


# -- values handed to test expressions ---------------------------------------------------------

def guard(value: Any) -> Any:
    """What a call made by a test expression returns: the value as plain data when it is plain
    data (builtin subclasses reduced to their builtin value), else the value behind a
    ``Guarded`` proxy. Raises PlainDataError for values too large or too deep to encode."""
    try:
        return from_tree(to_tree(value, strict=True))
    except _NotPlain:
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
