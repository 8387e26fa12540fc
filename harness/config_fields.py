"""Checks a config record's fields against their annotations, so that the Python API refuses
what the command line would: ``EvaluateConfig(k="1,5")`` is a ``ConfigError`` naming the
field and the form it takes, not a TypeError from deep inside a flow.

Understood: ``str``, ``int`` (not a bool), ``float`` (an int too), ``bool``, ``X | None``,
``list[X]`` (a tuple too), ``dict[str, X]`` and classes (an instance). Anything else (``Any``,
a name that does not resolve) is left to the flow.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import types
import typing

from codea1.harness.errors import ConfigError


def check_fields(record) -> None:
    """Raises ``ConfigError`` for the first field whose value does not have its declared type."""
    cls = type(record)
    namespace = vars(sys.modules[cls.__module__]) if cls.__module__ in sys.modules else {}
    for f in dataclasses.fields(record):
        kind = _resolve(f.type, namespace)
        if kind is None:
            continue
        value = getattr(record, f.name)
        if not _fits(value, kind):
            raise ConfigError(f"{cls.__name__}.{f.name}: expected {_describe(kind)}, not {value!r} "
                              f"({type(value).__name__}){_hint(value, kind)}")


def _resolve(annotation, namespace: dict):
    if not isinstance(annotation, str):
        return annotation
    try:
        return eval(annotation, {**vars(typing), **namespace})  # noqa: S307 - the harness' own annotations
    except Exception:  # noqa: BLE001 - a name only a type checker sees: the flow checks that field
        return None


def _parts(kind) -> tuple:
    origin = typing.get_origin(kind)
    return origin, typing.get_args(kind)


def _fits(value, kind) -> bool:
    if kind is typing.Any:
        return True
    if kind is None or kind is type(None):
        return value is None
    origin, args = _parts(kind)
    if origin in (typing.Union, types.UnionType):
        return any(_fits(value, arm) for arm in args)
    if origin is list:
        return isinstance(value, (list, tuple)) and (not args or all(_fits(v, args[0]) for v in value))
    if origin is dict:
        return isinstance(value, dict) and (not args or all(
            _fits(k, args[0]) and _fits(v, args[1]) for k, v in value.items()))
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if kind is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind is str:
        return isinstance(value, (str, os.PathLike))
    if kind is list or kind is dict:
        return isinstance(value, (list, tuple) if kind is list else dict)
    if isinstance(kind, type):
        return isinstance(value, kind)
    return True  # a form not listed above: the flow checks it


def _describe(kind, article: bool = True) -> str:
    if kind is None or kind is type(None):
        return "None"
    origin, args = _parts(kind)
    if origin in (typing.Union, types.UnionType):
        arms = [a for a in args if a is not type(None)]
        text = " or ".join(_describe(a, article) for a in arms)
        return text + " or None" if len(arms) < len(args) else text
    if origin is list:
        return f"a list of {_describe(args[0], False)}" if args else "a list"
    if origin is dict:
        return f"a dict of {_describe(args[0], False)} to {_describe(args[1], False)}" if args else "a dict"
    name = {int: "int", float: "number", str: "str", bool: "bool", list: "list", dict: "dict"}.get(
        kind, getattr(kind, "__name__", str(kind)))
    if not article:
        return name
    return ("an " if name[0] in "aeiou" else "a ") + name


def _hint(value, kind) -> str:
    """The command line's spelling, written as the API takes it."""
    if not isinstance(value, str):
        return ""
    origin, args = _parts(kind)
    arms = [a for a in args if a is not type(None)] if origin in (typing.Union, types.UnionType) else [kind]
    for arm in arms:
        arm_origin, arm_args = _parts(arm)
        if arm_origin is list:
            items = [v.strip() for v in value.split(",") if v.strip()]
            if arm_args and arm_args[0] is int and all(v.lstrip("-").isdigit() for v in items):
                return f": the command line's {value!r} is {[int(v) for v in items]!r} here"
            return f": the command line's {value!r} is {items!r} here"
        if arm_origin is dict and "=" in value:
            pairs = dict(p.split("=", 1) for p in value.split(",") if "=" in p)
            return f": the command line's {value!r} is {pairs!r} here"
        if arm in (int, float):
            try:
                return f": write {arm(value)!r}, not a string"
            except ValueError:
                return ""
    return ""
