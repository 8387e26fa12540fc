"""The Mistake Book: per question, the tests candidate codes failed, with how often.

Retrieval: a question's ``top`` tests (8) by frequency, most frequent first, ties in the
order they entered the book; every candidate of the question runs the same list. Update,
per candidate code that loads (the paper's "valid candidate"): each kept generated test it
failed gets +w (entering the book with w; below), each book test it passed gets -1, and a
test at 0 or below leaves the book. ``record`` takes one program's results as the trainers read them back
(``layout.ProgramResult``).

What a program's failures are worth is weighed by evidence:

* a test is one entry per call (``validation.call_key``: the same values reaching the
  function): respelled copies of a failed call add to one entry, and a test failed in several
  of one candidate's suites counts once for that candidate;
* a failure is worth w, the failing program's pass rate on the generated tests it ran (the
  paper's +1 is w = 1): a test failed by a program right almost everywhere says more about
  finding bugs than one failed by a program wrong almost everywhere. A program that passed
  none of them (it raises, or answers wrongly, everywhere) adds nothing, and one that passes
  a trivial test adds little: a broken program cannot fill the book with easy tests and push
  the hard ones, which nearly right programs fail, out of the top;
* each entry keeps the reference's time for its call, and runs under the limit every other
  test gets (``layout``: max(1 s, 4 x that time)), not a flat one that a slow valid test
  would exceed on every correct program;
* the book holds at most ``limit`` entries a question: the least frequent leave first, the
  newest among them, so that a burst of new entries cannot push out what the book already
  holds; the trainers keep the last ``book_history`` step files.

Saved atomically as JSON after every step; ``codea1 mistake-book show FILE`` prints one.

File format (version 2): {"version": 2, "questions": {question_id: [{"test": assert,
"frequency": n (a positive number, 6 decimals), "call": key, "time": seconds}, ...]}}, each list in book order (the order
tests entered). Version 1 files (no "call" nor "time") load as entries keyed by their text,
run under the old flat limit.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Mapping, Protocol

from codea1.harness.errors import Codea1Error

VERSION = 2
TOP = 8
LIMIT = 256  # entries a question: a step's file stays small however long the run


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
    new_statuses: list[tuple[str, str, str, float]]  # (source, status, call, reference's time) per generated test
    book_statuses: list[tuple[str, str]]  # (source, status) of each book test it ran


class MistakeBook:
    def __init__(self, questions: dict[str, dict[str, float]] | None = None, limit: int = LIMIT,
                 calls: dict[str, dict[str, str]] | None = None, times: dict[str, dict[str, float]] | None = None):
        # question -> {test: frequency}; dicts keep insertion order, which is book order.
        self.questions: dict[str, dict[str, float]] = {q: dict(t) for q, t in (questions or {}).items()}
        self.calls: dict[str, dict[str, str]] = {q: dict(c) for q, c in (calls or {}).items()}  # test -> call key
        self.times: dict[str, dict[str, float]] = {q: dict(s) for q, s in (times or {}).items()}  # test -> seconds
        if limit < 1:
            raise ValueError("a Mistake Book holds at least one test a question")
        self.limit = limit

    def retrieve(self, question: str, top: int = TOP) -> list[str]:
        """The question's ``top`` most frequent tests; ties in book order."""
        tests = self.questions.get(question, {})
        order = {t: i for i, t in enumerate(tests)}
        return sorted(tests, key=lambda t: (-tests[t], order[t]))[:top]

    def time(self, question: str, test: str) -> float | None:
        """The reference's time for the test's call; None where the book does not know it."""
        return self.times.get(question, {}).get(test)

    def update(self, question: str, failed_new: Iterable[str], passed_book: Iterable[str],
               calls: Mapping[str, str] | None = None, times: Mapping[str, float] | None = None,
               weight: float = 1) -> Change:
        """One candidate's results: generated tests it failed (``calls``: each one's call key,
        by default its text; ``times``: the reference's time; each failure adds ``weight``),
        book tests it passed (each takes 1 away)."""
        tests = self.questions.setdefault(question, {})
        keys = self.calls.setdefault(question, {})
        seconds = self.times.setdefault(question, {})
        entry_of = {keys.get(test, test): test for test in tests}  # call key -> the entry that holds it
        change = Change()
        counted = set()
        for test in failed_new:
            key = (calls or {}).get(test, test)
            if key in counted:  # the same call, failed again by the same candidate
                continue
            counted.add(key)
            entry = entry_of.get(key)
            if entry is not None:
                tests[entry] = _frequency(tests[entry] + weight)
                change.incremented.append(entry)
            else:
                tests[test] = _frequency(weight)
                keys[test] = key
                if times and test in times:
                    seconds[test] = times[test]
                entry_of[key] = test
                change.added.append(test)
        for test in dict.fromkeys(passed_book):
            if test not in tests:
                continue
            tests[test] = _frequency(tests[test] - 1)
            if tests[test] <= 0:
                self._drop(question, test)
                change.removed.append(test)
            else:
                change.decremented.append(test)
        if len(tests) > self.limit:  # the least frequent leave first, the newest among them
            order = {t: i for i, t in enumerate(tests)}
            for weakest in sorted(tests, key=lambda t: (tests[t], -order[t]))[:len(tests) - self.limit]:
                self._drop(question, weakest)
                change.removed.append(weakest)
        if not tests:
            self._forget(question)
        return change

    def remove(self, question: str, sources: Iterable[str]) -> list[str]:
        """Takes the given tests out of the question's entries; returns those it held."""
        gone = [t for t in dict.fromkeys(sources) if t in self.questions.get(question, {})]
        for test in gone:
            self._drop(question, test)
        if question in self.questions and not self.questions[question]:
            self._forget(question)
        return gone

    def _drop(self, question: str, test: str) -> None:
        del self.questions[question][test]
        self.calls.get(question, {}).pop(test, None)
        self.times.get(question, {}).pop(test, None)

    def _forget(self, question: str) -> None:
        for table in (self.questions, self.calls, self.times):
            table.pop(question, None)

    def update_from_statuses(self, question: str, new: Iterable[tuple], book: Iterable[tuple[str, str]]
                             ) -> Change:
        """``update`` from per-test statuses (pass | fail | timeout | not_run) of one candidate
        on its generated tests ((source, status, call, time)) and on the book's tests
        ((source, status)): a generated test enters on a "fail" (a wrong answer or an
        exception) and a book test leaves on a "pass". A timeout is evidence of time, not of a
        mistake, and a test that did not run is no evidence at all: neither adds nor removes.
        Each failure adds the candidate's pass rate on the generated tests that ran (timeouts
        among them; a call counted once with each status it got): one that passed none adds
        nothing (see the module)."""
        new = list(new)
        failed = [entry for entry in new if entry[1] == "fail"]
        ran = {(entry[2] if len(entry) > 2 else entry[0], entry[1]) for entry in new if entry[1] != "not_run"}
        weight = _frequency(sum(status == "pass" for _, status in ran) / len(ran)) if ran else 0
        if weight <= 0:
            failed = []
        return self.update(question, [e[0] for e in failed], [src for src, status in book if status == "pass"],
                           {e[0]: e[2] for e in failed if len(e) > 2}, {e[0]: e[3] for e in failed if len(e) > 3},
                           weight)

    def record(self, question: str, result: ProgramStatuses) -> Change:
        """One program's results: a program that does not load (no "valid candidate") or
        whose sandbox failed (no verdict) changes nothing; otherwise ``update_from_statuses``."""
        if not result.loads or result.sandbox_error:
            return Change()
        return self.update_from_statuses(question, result.new_statuses, result.book_statuses)

    def size(self) -> int:
        return sum(len(t) for t in self.questions.values())

    def to_json(self) -> dict:
        def entry(q: str, test: str, frequency: int) -> dict:
            found = {"test": test, "frequency": frequency, "call": self.calls.get(q, {}).get(test, test)}
            if self.time(q, test) is not None:
                found["time"] = self.time(q, test)
            return found

        return {"version": VERSION, "questions": {q: [entry(q, t, f) for t, f in tests.items()]
                                                  for q, tests in self.questions.items()}}

    def save(self, path: str | Path) -> None:
        """Atomically: a reader (or a resumed run after a kill) sees the old file or the new."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(self.to_json(), indent=1, ensure_ascii=False) + "\n")
        os.replace(tmp, path)

    @classmethod
    def load(cls, path: str | Path, limit: int = LIMIT) -> "MistakeBook":
        path = Path(path)
        try:
            data = json.loads(path.read_text())
        except OSError as exc:
            raise MistakeBookError(f"{path}: {exc.strerror}") from None
        except json.JSONDecodeError as exc:
            raise MistakeBookError(f"{path}:{exc.lineno}: not JSON ({exc.msg})") from None
        if not isinstance(data, dict) or data.get("version") not in (1, VERSION) \
                or not isinstance(data.get("questions"), dict):
            raise MistakeBookError(f"{path}: not a Mistake Book (expected version {VERSION} and field 'questions')")
        questions, calls, times = {}, {}, {}
        for q, entries in data["questions"].items():
            try:
                questions[q] = {str(e["test"]): _frequency(_number(e["frequency"])) for e in entries}
                calls[q] = {str(e["test"]): str(e.get("call", e["test"])) for e in entries}
                times[q] = {str(e["test"]): float(e["time"]) for e in entries if e.get("time") is not None}
            except (TypeError, KeyError, ValueError):
                raise MistakeBookError(f"{path}: question {q!r}: entries need fields 'test' and 'frequency'") from None
            if any(f <= 0 for f in questions[q].values()):
                raise MistakeBookError(f"{path}: question {q!r}: a frequency of 0 or below (such tests leave the book)")
        return cls(questions, limit, calls, times)


def _frequency(value: float) -> float:
    """A frequency as the book keeps it: 6 decimals (sums of pass rates stay exact in the
    file and across a resume), an integer where it is one (the paper's counts read as such)."""
    value = round(value, 6)
    return int(value) if value == int(value) else value


def _number(value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"not a number: {value!r}")
    return value
