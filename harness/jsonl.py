"""Reading JSON files row by row; every error names the file and the line.

* ``json_rows``: a JSON Lines input file (samples, tests, replayed generations): strict.
* ``appended_rows``: a file this project appends to as work lands (a run's rows, the
  generation cache): a torn last line, left by a process killed mid-write, is dropped and
  cut from the file so the next append starts clean.
* ``json_records``: a data file that is either one JSON array or JSON Lines, optionally
  gzip-compressed (ULT, KodCode); ``first_row``: the first record of a JSON Lines file.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any, Callable, Iterator


def json_rows(path: str, error: type[Exception] = ValueError, label: str = "",
              what: str = "a row") -> Iterator[tuple[str, dict]]:
    """Yield ``("FILE:LINE", row)`` for each non-blank line; raise ``error`` for a file that
    cannot be opened (``label`` goes in front of its name: "--tests "), a line that is not
    JSON, or a value that is not an object (``what`` names it: "a sample")."""
    try:
        fh = open(path, "rb")
    except OSError as exc:
        raise error(f"{label}{path}: {exc.strerror}") from None
    with fh:
        if fh.read(2) == b"\x1f\x8b":
            raise error(f"{label}{path}: not a UTF-8 text file (it is gzip-compressed)")
        fh.seek(0)
        for lineno, raw in enumerate(fh, 1):
            where = f"{path}:{lineno}"
            line = _decoded(raw, lineno, where, error)
            if line.strip():
                yield where, _object(line, where, error, what)


def _decoded(raw: bytes, lineno: int, where: str, error: type[Exception]) -> str:
    """One line as text; a UTF-8 byte order mark on the first is dropped (editors on Windows
    write one); bytes that are not UTF-8 are an error naming the line and column."""
    if lineno == 1 and raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise error(f"{where}: not UTF-8 text (byte 0x{raw[exc.start]:02x} at column {exc.start + 1})") from None


def json_error(exc: json.JSONDecodeError) -> str:
    """json's message with its column: "Expecting value at column 1", "Unterminated string
    starting at column 12" (some of its messages end in "at" already)."""
    at = "" if exc.msg.endswith(" at") else " at"
    return f"{exc.msg}{at} column {exc.colno}"


def _object(line: str | bytes, where: str, error: type[Exception], what: str) -> dict:
    try:
        row = json.loads(line)
    except json.JSONDecodeError as exc:
        raise error(f"{where}: invalid JSON ({json_error(exc)})") from None
    if not isinstance(row, dict):
        raise error(f"{where}: {what} must be a JSON object")
    return row


def appended_rows(path: str | Path, convert: Callable[[dict], Any] = lambda row: row,
                  error: type[Exception] | None = ValueError, hint: str = "", repair: bool = True) -> list:
    """Rows of a file written by appending, each through ``convert``. A torn last line is
    dropped (and, with ``repair``, cut from the file); a bad line elsewhere raises ``error``
    naming it (with ``hint``: what to do about it), or is skipped when ``error`` is None."""
    path = Path(path)
    if not path.exists():
        return []
    raw = path.read_bytes()
    lines = raw.split(b"\n")
    rows: list = []
    good_bytes = 0
    for i, line in enumerate(lines):
        if line.strip():
            try:
                row = json.loads(line)
                if not isinstance(row, dict):
                    raise ValueError("not a JSON object")
                rows.append(convert(row))
            except (json.JSONDecodeError, TypeError, ValueError, KeyError) as exc:
                if i == len(lines) - 1 or (i == len(lines) - 2 and not lines[-1].strip()):
                    if repair:  # torn by a kill mid-write: cut it, so the next append starts clean
                        with open(path, "r+b") as fh:
                            fh.truncate(good_bytes)
                    break
                if error is not None:
                    raise error(f"{path}:{i + 1}: unreadable row ({exc}){hint}") from None
        good_bytes += len(line) + 1
    return rows


def json_records(path: str, error: type[Exception] = ValueError) -> list[tuple[str, dict]]:
    """``("FILE:LINE", record)`` pairs from a JSON array (line 1 for all) or JSON Lines,
    plain or gzip-compressed."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise error(f"{path}: {exc.strerror}") from None
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    text = "".join(_decoded(raw, n, f"{path}:{n}", error) for n, raw in enumerate(data.splitlines(True), 1))
    if text.lstrip().startswith("["):
        try:
            array = json.loads(text)
        except json.JSONDecodeError as exc:
            raise error(f"{path}:{exc.lineno}: invalid JSON ({json_error(exc)})") from None
        for i, record in enumerate(array):
            if not isinstance(record, dict):
                raise error(f"{path}: item {i} of the JSON array is not an object")
        return [(f"{path}:1", r) for r in array]
    return [(f"{path}:{n}", _object(line, f"{path}:{n}", error, "a record"))
            for n, line in enumerate(text.splitlines(), 1) if line.strip()]


def first_row(path: str, error: type[Exception] = ValueError) -> dict:
    """The first record of a JSON Lines file, plain or gzip-compressed: enough to tell which
    data set a file holds before a loader that would fail obscurely reads all of it."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(2)
        opener = gzip.open if head == b"\x1f\x8b" else open
        with opener(path, "rt", encoding="utf-8-sig") as fh:
            for lineno, line in enumerate(fh, 1):
                if line.strip():
                    return _object(line, f"{path}:{lineno}", error, "a record")
    except (OSError, UnicodeDecodeError, EOFError) as exc:
        raise error(f"{path}: cannot be read as JSON Lines ({exc})") from None
    raise error(f"{path}: no records")

