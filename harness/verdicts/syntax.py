"""Parsing text the harness did not write: model output, samples and tests files, benchmark data.

Python reports some problems of a source text while parsing it, through the ``warnings``
module: an invalid escape sequence in a non-raw string (``"\\d"``) is a ``SyntaxWarning``
(a ``DeprecationWarning`` before Python 3.12), printed as ``<unknown>:3: SyntaxWarning:
invalid escape sequence '\\d'`` on the terminal of whoever parses it, once per program, and
turned into a ``SyntaxError`` by a ``-W error`` filter. Such a text is data here: what it
deserves is the program's concern, judged by running it in the sandbox (whose output is
captured), never a line on the user's terminal.

``parse_untrusted(text, mode="exec", filename="<unknown>")`` is ``ast.parse`` with those
warnings suppressed: the same tree, the same exceptions (``SyntaxError``, ``ValueError`` for
a null byte, ``RecursionError``, ``MemoryError``), whatever the process' warning filters.
``quiet_parsing()`` is the context it parses in, for a library call that parses with
``ast.parse`` itself (evalplus' sanitizer). Every parent-side parse of such text goes
through here; the sandbox child compiles the program itself, its stderr captured.
"""

from __future__ import annotations

import ast
import threading
import warnings
from contextlib import contextmanager
from typing import Iterator

# warnings.catch_warnings swaps the process' filter list: two threads inside at once could
# restore each other's copy and leave the suppression in place for good.
_LOCK = threading.RLock()


@contextmanager
def quiet_parsing() -> Iterator[None]:
    """Parse-time ``SyntaxWarning`` and ``DeprecationWarning`` are ignored inside."""
    with _LOCK, warnings.catch_warnings():
        warnings.simplefilter("ignore", SyntaxWarning)
        warnings.simplefilter("ignore", DeprecationWarning)
        yield


def parse_untrusted(text: str | bytes, mode: str = "exec", filename: str = "<unknown>") -> ast.AST:
    """``ast.parse(text, filename, mode)``, no warning shown or raised while parsing."""
    with quiet_parsing():
        return ast.parse(text, filename=filename, mode=mode)
