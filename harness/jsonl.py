"""JSON Lines files, read row by row, every error naming the file and the line."""

from __future__ import annotations

import json
from typing import Iterator


def json_rows(path: str, error: type[Exception] = ValueError, label: str = "",
              what: str = "a row") -> Iterator[tuple[str, dict]]:
    """Yield ``("FILE:LINE", row)`` for each non-blank line; raise ``error`` for a file that
    cannot be opened (``label`` goes in front of its name: "--tests "), a line that is not
    JSON, or a value that is not an object (``what`` names it: "a sample")."""
    try:
        fh = open(path, encoding="utf-8")
    except OSError as exc:
        raise error(f"{label}{path}: {exc.strerror}") from None
    with fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            where = f"{path}:{lineno}"
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise error(f"{where}: invalid JSON ({exc.msg} at column {exc.colno})") from None
            if not isinstance(row, dict):
                raise error(f"{where}: {what} must be a JSON object")
            yield where, row
