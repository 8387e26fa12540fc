"""One program's tests in a training step, and its results read back part by part.

A program runs, in one job, the kept tests of the suites it faces (Code-A1: its own N
suites; Self-Play: its question's N suites), then its question's Mistake Book tests, then
the golden tests (Code-A1 logs their pass rate; they are never rewarded). ``SuiteLayout``
builds that list with each test's time limit and remembers where each part lies;
``read`` slices the program's statuses back into a ``ProgramResult``: the suites' counts
(the rewards), the book's (the rewards and the book's update) and the golden passes.
(The job itself runs each distinct call of that list once: ``rollouts.run_codes``.)
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Mapping, Sequence

from codea1.harness.records import Problem, TestCase
from codea1.harness.verdicts.asserts import AssertParseError, parse_assert
from codea1.harness.verdicts.judge import Checker
from codea1.trainers.method.rewards import SuiteResult
from codea1.trainers.method.rollouts import CodeRun
from codea1.trainers.method.validation import VALID, ValidatedSuite

BOOK_TIME_LIMIT = 2.0  # seconds per Mistake Book test whose reference time the book does not know


def book_tests(question, sources: Sequence[str], times: Mapping[str, float] | None = None
               ) -> list[tuple[str, TestCase, float]]:
    """The Mistake Book's tests for a question as (source, call test, time limit) triples (ids
    book/i): the limit every test gets, max(1 s, 4 x the reference's time) where ``times``
    (the book's) knows it, else BOOK_TIME_LIMIT. A stored test that no longer parses is
    skipped."""
    out = []
    for i, src in enumerate(sources):
        try:
            test = parse_assert(src, question.entry_point, f"book/{i}")
        except AssertParseError:
            continue
        took = (times or {}).get(src)
        out.append((src, test, BOOK_TIME_LIMIT if took is None else max(1.0, 4 * took)))
    return out


def _renamed(test: TestCase, test_id: str) -> TestCase:
    """A shallow copy of ``test`` under another id (``dataclasses.replace`` would check it
    again: a paper-sized step copies 70,000 tests)."""
    renamed = copy.copy(test)
    renamed.id = test_id
    return renamed


@dataclass
class ProgramResult:
    """One program's statuses (pass | fail | timeout | not_run) read back part by part."""

    loads: bool
    sandbox_error: str | None
    suites: list[tuple[int, int, int]]  # per suite: (passed, failed, not run) of its kept tests
    book: tuple[int, int, int]  # the same on the Mistake Book's tests
    book_total: int
    golden_passes: list[bool]
    new_statuses: list[tuple[str, str, str, float]]  # (source, status, call, reference's time) per kept test
    book_statuses: list[tuple[str, str]]  # (source, status) of every book test

    @property
    def golden_pass_rate(self) -> float:
        return sum(self.golden_passes) / len(self.golden_passes) if self.golden_passes else 0.0

    @property
    def book_pass_rate(self) -> float | None:
        """Passed / book tests that ran; None when none ran."""
        passed, _, not_run = self.book
        ran = self.book_total - not_run
        return passed / ran if ran > 0 else None


def _book_key(call: str, test: TestCase) -> str:
    """What makes two failed tests one Mistake Book entry: the call and its wrapper (a weak
    ``len(f(x)) == 3`` must not hold the slot of ``f(x) == [...]``, which finds more)."""
    return call if test.wrap is None else f"{call} {test.wrap!r}"


class LayoutChecker(Checker):
    """One judge per kind of test: the golden tests by the benchmark's checker (its special
    oracles judge its own tests, as evaluation does), every generated and Mistake Book test by
    the plain rule that validated it on the reference. A test is then judged by the same rule
    on the reference and on every candidate: a special oracle that accepts any program's 0
    (MBPP+'s sum_div) or rejects the reference's own answer (check_str's None) never decides a
    generated test."""

    def __init__(self, golden: frozenset[int], benchmark: Checker):
        self.golden = golden  # ids of the layout's golden TestCase objects
        self.benchmark = benchmark

    def check(self, test: TestCase, value, expected) -> tuple[bool, str]:
        if id(test) in self.golden:
            return self.benchmark.check(test, value, expected)
        return super().check(test, value, expected)


class SuiteLayout:
    """The tests one program runs: ``suites``' kept tests (ids s{n}/{j}, limit max(1 s, 4 x
    the reference's time)), then ``book`` ((source, test, limit) triples, ``book_tests``),
    then ``golden`` (tests and their limits)."""

    def __init__(self, suites: Sequence[ValidatedSuite], book: Sequence[tuple[str, TestCase, float]] = (),
                 golden: tuple[Sequence[TestCase], Sequence[float]] = ((), ())):
        self.validated = list(suites)
        self.book_sources = [src for src, _, _ in book]
        self.tests: list[TestCase] = []
        self.limits: list[float] = []
        self.spans = [self._add([_renamed(t, f"s{ni}/{j}") for j, t in enumerate(v.kept)],
                                [max(1.0, 4 * t) for t in v.kept_times]) for ni, v in enumerate(self.validated)]
        self.book_span = self._add([t for _, t, _ in book], [limit for _, _, limit in book])
        self.golden_span = self._add(list(golden[0]), list(golden[1]))

    def _add(self, tests: list[TestCase], limits: list[float]) -> tuple[int, int]:
        start = len(self.tests)
        self.tests += tests
        self.limits += limits
        return start, len(self.tests)

    def checker(self, bench, problem: Problem):
        """What makes this layout's checker (``LayoutChecker``), for ``rollouts.run_codes``."""
        golden = frozenset(map(id, self.tests[slice(*self.golden_span)]))
        return lambda: LayoutChecker(golden, bench.checker(problem))

    @property
    def part_starts(self) -> list[int]:
        """Where each part (a suite, the book, the golden tests) starts: a part's timeouts
        end that part only (``rollouts.run_codes``)."""
        return [start for start, _ in [*self.spans, self.book_span, self.golden_span]]

    @property
    def golden_seconds(self) -> float:
        """The golden tests' own time: a program's budget covers its generated and book
        tests (the paper's 10 s); the golden tests, logged and never rewarded, get theirs on top."""
        return sum(self.limits[slice(*self.golden_span)])

    def read(self, run: CodeRun) -> ProgramResult:
        b0, b1 = self.book_span
        statuses = run.statuses
        return ProgramResult(
            loads=run.loads, sandbox_error=run.sandbox_error, suites=[run.counts(s0, s1) for s0, s1 in self.spans],
            book=run.counts(b0, b1), book_total=b1 - b0, golden_passes=run.passes[slice(*self.golden_span)],
            new_statuses=[(src, statuses[s0 + j], _book_key(call, test), took)
                          for v, (s0, _) in zip(self.validated, self.spans)
                          for j, (src, test, call, took) in enumerate(zip(v.kept_sources, v.kept,
                                                                          v.kept_calls or v.kept_sources,
                                                                          v.kept_times or [0.0] * len(v.kept)))],
            book_statuses=list(zip(self.book_sources, statuses[b0:b1])))

    def suite_results(self, result: ProgramResult, requested: int, responses: Sequence[str]) -> list[SuiteResult]:
        """The rewards' view of each suite against this program (``responses``: the test
        writer's text of each suite, for the non-printable penalty)."""
        book_passed, _, book_not_run = result.book
        return [SuiteResult(requested=requested, valid=v.count(VALID), corrected=len(v.kept) - v.count(VALID),
                            kept_passed=passed, kept_failed=failed, kept_not_run=not_run, book_passed=book_passed,
                            book_total=result.book_total, book_not_run=book_not_run, code_loads=result.loads,
                            response=response)
                for v, (passed, failed, not_run), response in zip(self.validated, result.suites, responses)]
