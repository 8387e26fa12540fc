"""The Mistake Book: per question, the tests candidate codes failed, with how often.

Retrieval: a question's ``top`` tests (8) by frequency, most frequent first, ties in the
order they entered the book; every candidate of the question runs the same list. Update,
per candidate code that loads (the paper's "valid candidate"): each kept generated test it
failed gets +1 (entering the book with 1), each book test it passed gets -1, and a test at
0 leaves the book. A test failed in several of one candidate's suites counts once for that
candidate. Saved atomically as JSON after every step; ``codea1 mistake-book show FILE``
prints one. ``record`` takes one program's results as the trainers read them back
(``layout.ProgramResult``).

File format: {"version": 1, "questions": {question_id: [{"test": assert, "frequency": n},
...]}}, each list in book order (the order tests entered).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Protocol

from codea1.harness.errors import Codea1Error

VERSION = 1
TOP = 8


class MistakeBookError(Codea1Error):
    """A Mistake Book file that cannot be read; names the file and what is wrong."""


@dataclass
class Change:
    """What one update did to one question: tests added, incremented, decremented, removed."""

    added: list[str] = field(default_factory=list)
    incremented: list[str] = field(default_factory=list)
    decremented: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)


class ProgramStatuses(Protocol):
    """What ``MistakeBook.record`` reads of one program's results."""

    loads: bool
    sandbox_error: str | None
    new_statuses: list[tuple[str, str]]  # (source, status) of each generated test it ran
    book_statuses: list[tuple[str, str]]  # (source, status) of each book test it ran


class MistakeBook:
    def __init__(self, questions: dict[str, dict[str, int]] | None = None):
        # question -> {test: frequency}; dicts keep insertion order, which is book order.
        self.questions: dict[str, dict[str, int]] = {q: dict(t) for q, t in (questions or {}).items()}

    def retrieve(self, question: str, top: int = TOP) -> list[str]:
        """The question's ``top`` most frequent tests; ties in book order."""
        tests = self.questions.get(question, {})
        order = {t: i for i, t in enumerate(tests)}
        return sorted(tests, key=lambda t: (-tests[t], order[t]))[:top]

    def update(self, question: str, failed_new: Iterable[str], passed_book: Iterable[str]) -> Change:
        """One candidate's results: generated tests it failed, book tests it passed."""
        tests = self.questions.setdefault(question, {})
        change = Change()
        for test in dict.fromkeys(failed_new):
            if test in tests:
                tests[test] += 1
                change.incremented.append(test)
            else:
                tests[test] = 1
                change.added.append(test)
        for test in dict.fromkeys(passed_book):
            if test not in tests:
                continue
            tests[test] -= 1
            if tests[test] <= 0:
                del tests[test]
                change.removed.append(test)
            else:
                change.decremented.append(test)
        if not tests:
            del self.questions[question]
        return change

    def update_from_statuses(self, question: str, new: Iterable[tuple[str, str]], book: Iterable[tuple[str, str]]
                             ) -> Change:
        """``update`` from per-test statuses (pass | fail | timeout | not_run) of one candidate
        on its generated tests and on the book's tests: a generated test enters on a "fail"
        (a wrong answer or an exception) and a book test leaves on a "pass". A timeout is
        evidence of time, not of a mistake, and a test that did not run is no evidence at
        all: neither adds nor removes."""
        return self.update(question, [src for src, status in new if status == "fail"],
                           [src for src, status in book if status == "pass"])

    def record(self, question: str, result: ProgramStatuses) -> Change:
        """One program's results: a program that does not load (no "valid candidate") or
        whose sandbox failed (no verdict) changes nothing; otherwise ``update_from_statuses``."""
        if not result.loads or result.sandbox_error:
            return Change()
        return self.update_from_statuses(question, result.new_statuses, result.book_statuses)

    def size(self) -> int:
        return sum(len(t) for t in self.questions.values())

    def to_json(self) -> dict:
        return {"version": VERSION, "questions": {q: [{"test": t, "frequency": f} for t, f in tests.items()]
                                                  for q, tests in self.questions.items()}}

    def save(self, path: str | Path) -> None:
        """Atomically: a reader (or a resumed run after a kill) sees the old file or the new."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(self.to_json(), indent=1, ensure_ascii=False) + "\n")
        os.replace(tmp, path)

    @classmethod
    def load(cls, path: str | Path) -> "MistakeBook":
        path = Path(path)
        try:
            data = json.loads(path.read_text())
        except OSError as exc:
            raise MistakeBookError(f"{path}: {exc.strerror}") from None
        except json.JSONDecodeError as exc:
            raise MistakeBookError(f"{path}:{exc.lineno}: not JSON ({exc.msg})") from None
        if not isinstance(data, dict) or data.get("version") != VERSION or not isinstance(data.get("questions"), dict):
            raise MistakeBookError(f"{path}: not a Mistake Book (expected version {VERSION} and field 'questions')")
        questions = {}
        for q, entries in data["questions"].items():
            try:
                questions[q] = {str(e["test"]): int(e["frequency"]) for e in entries}
            except (TypeError, KeyError, ValueError):
                raise MistakeBookError(f"{path}: question {q!r}: entries need fields 'test' and 'frequency'") from None
            if any(f < 1 for f in questions[q].values()):
                raise MistakeBookError(f"{path}: question {q!r}: a frequency below 1 (such tests leave the book)")
        return cls(questions)
