"""Registries of plugin classes, one per kind, each with the base class it accepts, "did you
mean" for unknown names, and each plugin's own options."""

from __future__ import annotations

import dataclasses
import difflib
import typing
from dataclasses import dataclass
from typing import Any

from codea1.harness.errors import Codea1Error


class UnknownPluginError(Codea1Error):
    pass


class OptionError(Codea1Error):
    pass


class PluginLoadError(Codea1Error):
    """A plugin could not be loaded or registered something it may not."""


def did_you_mean(name: str, known, list_at_most: int = 20) -> str:
    """"; did you mean ...?" and the known names, when there are few enough to read (a
    benchmark's 164 task ids are a count and where to list them instead)."""
    close = difflib.get_close_matches(name, list(known), n=3, cutoff=0.5)
    hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
    if len(known) > list_at_most:
        return f"{hint} ({len(known)} known: `codea1 tasks` lists them)"
    return f"{hint} (known: {', '.join(sorted(known)) or 'none'})"


def qualified_name(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


@dataclass
class Entry:
    name: str
    cls: Any
    kind: str
    plugin: str  # the plugin module that registered it
    distribution: str  # where that plugin came from: built-in, a distribution, or a file

    @property
    def description(self) -> str:
        return getattr(self.cls, "description", "") or (self.cls.__doc__ or "").strip().split("\n")[0]

    def options(self) -> list[dict[str, str]]:
        """The plugin's options as users set them: name, type and default."""
        options_cls = getattr(self.cls, "Options", None)
        if options_cls is None:
            return []
        hints = typing.get_type_hints(options_cls)
        out = []
        for f in dataclasses.fields(options_cls):
            default = f.default if f.default is not dataclasses.MISSING else (
                f.default_factory() if f.default_factory is not dataclasses.MISSING else None)
            hint = hints.get(f.name, str)
            out.append({"name": f.name, "type": getattr(hint, "__name__", str(hint).replace("typing.", "")),
                        "default": repr(default)})
        return out


class Registry:
    """Plugin classes of one kind by name. ``base``: the class (or classes) every entry must
    subclass; anything else is refused, naming the plugin that offered it."""

    def __init__(self, kind: str, base: type | tuple[type, ...] = object):
        self.kind = kind
        self.base = base if isinstance(base, tuple) else (base,)
        self.entries: dict[str, Entry] = {}
        self._current = ("", "")

    @property
    def singular(self) -> str:
        return self.kind[:-1]

    def add(self, cls: Any, name: str | None = None) -> Any:
        """Register ``cls`` under ``name`` (default: ``cls.name``). A name may be taken once."""
        plugin, origin = self._current
        offered_by = f"plugin {plugin} ({origin})" if plugin else "a plugin"
        if not (isinstance(cls, type) and issubclass(cls, self.base)) or cls in self.base:
            wanted = " or ".join(qualified_name(b) for b in self.base)
            raise PluginLoadError(f"{offered_by} registered {cls!r} as a {self.singular}, but a {self.singular} "
                                  f"must be a subclass of {wanted}")
        name = name or getattr(cls, "name", "")
        if not name:
            raise PluginLoadError(f"{offered_by} registered {qualified_name(cls)} as a {self.singular} without a name")
        if name in self.entries:
            other = self.entries[name]
            raise PluginLoadError(f"{self.singular} {name!r} is registered twice: by {other.plugin} "
                                  f"({other.distribution}) and by {plugin} ({origin})")
        self.entries[name] = Entry(name, cls, self.kind, plugin, origin)
        return cls

    def get(self, name: str) -> Entry:
        try:
            return self.entries[name]
        except KeyError:
            raise UnknownPluginError(f"unknown {self.singular} {name!r}{did_you_mean(name, self.entries)}") from None

    def names(self) -> list[str]:
        return sorted(self.entries)

    def of_type(self, base: type) -> list[str]:
        """Names of the entries that subclass ``base`` (e.g. the code metrics)."""
        return [n for n in self.names() if issubclass(self.entries[n].cls, base)]

    def create(self, name: str, options: Any = None, **kwargs) -> Any:
        """The plugin ``name`` with ``options``: raw values by key (``parse_options`` checks them)
        or its Options instance, already built (the train flow's resolved config)."""
        entry = self.get(name)
        options_cls = getattr(entry.cls, "Options", None)
        if options is None or isinstance(options, dict):
            options = parse_options(entry, options or {})
        elif options_cls is None or not isinstance(options, options_cls):
            raise TypeError(f"{entry.kind[:-1]} {name!r} takes a dict or {qualified_name(options_cls or dict)}, "
                            f"not {type(options).__name__}")
        return entry.cls(options, **kwargs) if options is not None else entry.cls(**kwargs)


def parse_options(entry: Entry, raw: dict[str, Any]) -> Any:
    """Build the plugin's Options dataclass from raw values; each plugin owns its options."""
    options_cls = getattr(entry.cls, "Options", None)
    if options_cls is None:
        if raw:
            raise OptionError(f"{entry.kind[:-1]} {entry.name!r} takes no options (got {', '.join(raw)})")
        return None
    return build_dataclass(options_cls, raw, f"{entry.kind[:-1]} {entry.name!r}: ", "option")


def build_dataclass(cls: type, raw: dict[str, Any], label: str, noun: str, widen: bool = True) -> Any:
    """``cls`` from raw values by key: text (a command line's ``--option k=v``) is parsed,
    a typed value (TOML's) is checked, against each field's type. Every error is ``label``
    then what is wrong with which ``noun``: "executor 'subprocess': option 'file_mb':
    expected an integer, got 'lots'". ``widen``: an integer given for a float field is
    stored as a float (else as given)."""
    fields = {f.name for f in dataclasses.fields(cls)}
    hints = typing.get_type_hints(cls)
    values = {}
    for key, value in raw.items():
        name = key.replace("-", "_")
        if name not in fields:
            raise OptionError(f"{label}unknown {noun} {key!r}{did_you_mean(name, fields)}")
        values[name] = convert(hints.get(name, str), value, f"{label}{noun} {key!r}", widen)
    try:
        return cls(**values)
    except (TypeError, ValueError) as exc:
        raise OptionError(f"{label}{exc}") from None


TYPE_NAMES = {int: "an integer", float: "a number", str: "a string", bool: "true or false", list: "a list",
              dict: "a table"}


def convert(hint: Any, value: Any, what: str, widen: bool = True) -> Any:
    """``value`` as ``hint`` wants it; a mismatch fails naming ``what`` (the key), the type
    expected and the value got."""
    if not isinstance(value, str):
        wrong = typed_mismatch(hint, value)
        if wrong is not None:
            raise OptionError(f"{what}: expected {TYPE_NAMES.get(wrong, getattr(wrong, '__name__', wrong))}, "
                              f"got {value!r}")
        return float(value) if widen and value is not None and _base_type(hint) is float else value
    base = _base_type(hint)
    if value.lower() in ("", "none", "null") and type(None) in typing.get_args(hint):
        return None
    try:
        if base is bool:
            if value.lower() in ("1", "true", "yes", "on"):
                return True
            if value.lower() in ("0", "false", "no", "off"):
                return False
            raise ValueError(value)
        if base in (int, float):
            return base(value)
        if base in (list, dict):  # no text spells one
            raise ValueError(value)
    except ValueError:
        raise OptionError(f"{what}: expected {TYPE_NAMES[base]}, got {value!r}") from None
    return value


def _base_type(hint: Any) -> Any:
    """``int`` for ``int``, ``int | None`` and ``Optional[int]``; ``list`` for ``list[str]``."""
    origin = typing.get_origin(hint)
    if origin is typing.Union or str(origin) == "types.UnionType":
        hint = next((a for a in typing.get_args(hint) if a is not type(None)), str)
    return typing.get_origin(hint) or hint


def typed_mismatch(hint: Any, value: Any) -> type | None:
    """The type a value that arrived typed (from a TOML file) should have had for ``hint``,
    or None when it fits (an int fits a float; None fits an optional; unknown types fit)."""
    if value is None and type(None) in typing.get_args(hint):
        return None
    base = _base_type(hint)
    ok = {bool: lambda v: type(v) is bool, int: lambda v: type(v) is int,
          float: lambda v: type(v) in (int, float), str: lambda v: type(v) is str,
          list: lambda v: isinstance(v, list), dict: lambda v: isinstance(v, dict)}.get(base, lambda v: True)
    return None if ok(value) else base
