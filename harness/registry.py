"""Registries of plugin classes, one per kind, with "did you mean" for unknown names."""

from __future__ import annotations

import dataclasses
import difflib
import typing
from dataclasses import dataclass
from typing import Any

KINDS = ("executors", "generators", "metrics", "benchmarks", "trainers", "reporters")


class UnknownPluginError(LookupError):
    pass


class OptionError(ValueError):
    pass


def did_you_mean(name: str, known) -> str:
    close = difflib.get_close_matches(name, list(known), n=3, cutoff=0.5)
    hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
    return f"{hint} (known: {', '.join(sorted(known)) or 'none'})"


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


class Registry:
    def __init__(self, kind: str):
        self.kind = kind
        self.entries: dict[str, Entry] = {}
        self._current = ("", "")

    def add(self, cls: Any, name: str | None = None) -> Any:
        """Register ``cls`` under ``name`` (default: ``cls.name``). A name may be taken once."""
        name = name or getattr(cls, "name", "")
        if not name:
            raise ValueError(f"{self.kind}: {cls!r} has no name")
        if name in self.entries:
            other = self.entries[name]
            raise ValueError(f"{self.kind} {name!r} is registered twice: by {other.plugin} and by {self._current[0]}")
        self.entries[name] = Entry(name, cls, self.kind, *self._current)
        return cls

    def get(self, name: str) -> Entry:
        try:
            return self.entries[name]
        except KeyError:
            raise UnknownPluginError(f"unknown {self.kind[:-1]} {name!r}{did_you_mean(name, self.entries)}") from None

    def names(self) -> list[str]:
        return sorted(self.entries)

    def create(self, name: str, options: dict[str, str] | None = None, **kwargs) -> Any:
        entry = self.get(name)
        opts = parse_options(entry, options or {})
        return entry.cls(opts, **kwargs) if opts is not None else entry.cls(**kwargs)


def parse_options(entry: Entry, raw: dict[str, str]) -> Any:
    """Build the plugin's Options dataclass from strings; each plugin owns its options."""
    options_cls = getattr(entry.cls, "Options", None)
    if options_cls is None:
        if raw:
            raise OptionError(f"{entry.kind[:-1]} {entry.name!r} takes no options (got {', '.join(raw)})")
        return None
    fields = {f.name: f for f in dataclasses.fields(options_cls)}
    hints = typing.get_type_hints(options_cls)
    values = {}
    for key, text in raw.items():
        field_name = key.replace("-", "_")
        if field_name not in fields:
            raise OptionError(f"{entry.kind[:-1]} {entry.name!r} has no option {key!r}{did_you_mean(field_name, fields)}")
        values[field_name] = _convert(entry, field_name, hints.get(field_name, str), text)
    try:
        return options_cls(**values)
    except (TypeError, ValueError) as exc:
        raise OptionError(f"{entry.kind[:-1]} {entry.name!r}: {exc}") from None


def _convert(entry: Entry, key: str, hint: Any, text: Any) -> Any:
    if not isinstance(text, str):
        return text
    origin = typing.get_origin(hint)
    if origin is typing.Union or str(origin) == "types.UnionType":
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        if text.lower() in ("", "none", "null") and len(args) < len(typing.get_args(hint)):
            return None
        hint = args[0] if args else str
    try:
        if hint is bool:
            if text.lower() in ("1", "true", "yes", "on"):
                return True
            if text.lower() in ("0", "false", "no", "off"):
                return False
            raise ValueError(text)
        if hint in (int, float):
            return hint(text)
    except ValueError:
        raise OptionError(f"{entry.kind[:-1]} {entry.name!r}: option {key!r} expects {hint.__name__}, got {text!r}") from None
    return text
