"""Validation of generated tests for training (the paper's Step 3): a test is valid when it
parses, its call is unique within its suite, it runs on the reference and its answer is
right; a wrong answer is corrected to the reference's and kept (still invalid); the rest is
dropped. Checking against the reference is the core's (``harness.verdicts.validity.check_suites``,
shared with ``evaluate-tests``); what training adds is here.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from codea1.harness.records import Problem, TestCase
from codea1.harness.verdicts.asserts import _calls
from codea1.harness.verdicts.syntax import parse_untrusted
from codea1.harness.verdicts.validity import check_suites, parse_suite

# Statuses of a generated test, position by position: the test keeps its place in the suite.
VALID, WRONG, ERROR, UNPARSED, DUPLICATE, MISSING = "valid", "wrong", "error", "unparsed", "duplicate", "missing"
NONDETERMINISTIC = "nondeterministic"  # its outcome on the reference differs between two runs: dropped


@dataclass
class ValidatedSuite:
    """A generated suite after validation: per requested position its status, and the tests
    that run against the candidate codes (``kept``: the valid ones and the wrong ones
    corrected to the reference's answer), with their sources (what the Mistake Book stores)."""

    status: list[str]
    kept: list[TestCase]
    kept_sources: list[str]
    kept_times: list[float] = dataclasses.field(default_factory=list)  # the reference's time per kept test

    def count(self, status: str) -> int:
        return self.status.count(status)


def call_key(test: TestCase) -> str:
    """What makes two tests the same call: the call expression up to spacing and quotes (a
    data test: its arguments and wrapper)."""
    import ast

    if test.call is None:
        return repr((test.args, test.kwargs, test.wrap))
    source = test.call
    try:
        return ast.dump(parse_untrusted(source, mode="eval"))
    except SyntaxError:
        return source


def corrected(test: TestCase, value: Any, entry_point: str | None = None) -> tuple[TestCase, str] | None:
    """The test with the reference's answer: ``assert CALL == <value>``; None when the value
    has no literal form (an opaque object, a NaN) to write into an assert."""
    import ast

    text = repr(value)
    try:
        if ast.literal_eval(text) != value or type(ast.literal_eval(text)) is not type(value):
            return None
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None
    source = f"assert {call_source(test, entry_point)} == {text}"
    return dataclasses.replace(test, op="==", expected=value, expected_source=None, source=source), source


def call_source(test: TestCase, entry_point: str | None) -> str:
    """The call side of a test's assert, as written (a data test keeps its source; its call
    side is the one that calls ``entry_point``)."""
    import ast

    if test.call is not None:
        return test.call
    node = parse_untrusted(test.source or "").body[0].test
    left, right = node.left, node.comparators[0]
    side = right if entry_point and _calls(right, entry_point) else left
    return ast.get_source_segment(test.source, side) or ast.unparse(side)


def _parse_once(parses: dict, problem: Problem, source: str, position: int) -> tuple[TestCase | None, str]:
    """``source`` at ``position`` parsed as ``parse_suite`` does (None when unusable), with
    its ``call_key``; kept in ``parses``."""
    [test], _ = parse_suite(problem, [source])
    if test is not None:
        test.id = f"test/{position}"
    parses[problem.task_id, source] = found = (test, "" if test is None else call_key(test))
    return found


def validate_for_training(executor, suites: Mapping[str, tuple[Problem, Sequence[str]]], requested: int, *,
                          memory_mb: int = 4096) -> dict[str, ValidatedSuite]:
    """The paper's test validation, one executor batch for every suite: a test is valid when
    it parses, its call is unique within the suite, it runs on the reference and its answer
    is right. A wrong answer is corrected and kept (still invalid); the rest is dropped.
    Positions beyond what the writer produced, up to ``requested``, are "missing".

    The suites of one question share most of their asserts (M programs x N suites of K): each
    distinct assert of a question runs once on its reference, in one job per question."""
    positions: dict[str, list[tuple[str, TestCase | None]]] = {}  # suite -> (source, test) per position
    distinct: dict[str, dict[str, TestCase]] = {}  # question -> source -> test
    problems: dict[str, Problem] = {}
    # A question's suites repeat most of their asserts: each distinct source of a question is
    # parsed once (the parse is the same wherever it appears but for the test's id, that of
    # the position where it was first parsed; layouts rename every test they run).
    parses: dict[tuple[str, str], tuple[TestCase | None, str]] = {}
    for key, (problem, sources) in suites.items():
        problems[problem.task_id] = problem
        seen, row = set(), []
        for position, src in enumerate(list(sources)[:requested]):
            test, call = parses.get((problem.task_id, src)) or _parse_once(parses, problem, src, position)
            if test is not None:
                if call in seen:
                    test = DUPLICATE  # a marker: its position is a duplicate call
                else:
                    seen.add(call)
                    distinct.setdefault(problem.task_id, {}).setdefault(src.strip(), test)
            row.append((src.strip(), test))
        positions[key] = row
    checks = check_suites(executor, {task: (problems[task], list(tests.values())) for task, tests in distinct.items()},
                          memory_mb=memory_mb, recheck_outputs=True)
    verdicts: dict[tuple[str, str], tuple[str, TestCase | None, str, float]] = {}
    for task, tests in distinct.items():
        check = checks[task]
        for i, (src, test) in enumerate(tests.items()):
            if i in check.nondeterministic:
                verdicts[(task, src)] = (NONDETERMINISTIC, None, "", 0.0)
            elif check.valid[i]:
                verdicts[(task, src)] = (VALID, check.tests[i], test.source or src, check.times[i])
            elif check.reference is not None and check.usable().get(i) in check.reference.values:
                fixed = corrected(test, check.reference_value(i), problems[task].entry_point)  # it ran: a wrong answer
                verdicts[(task, src)] = (WRONG, *(fixed or (None, "")), check.times[i])
            else:
                verdicts[(task, src)] = (ERROR, None, "", 0.0)
    out = {}
    for key, row in positions.items():
        task = suites[key][0].task_id
        suite = ValidatedSuite([], [], [], [])
        for src, test in row:
            if test is DUPLICATE or test is None:
                suite.status.append(DUPLICATE if test is DUPLICATE else UNPARSED)
                continue
            status, kept, kept_source, took = verdicts[(task, src)]
            suite.status.append(status)
            if kept is not None:
                suite.kept.append(kept)
                suite.kept_sources.append(kept_source)
                suite.kept_times.append(took)
        suite.status += [MISSING] * (requested - len(suite.status))
        out[key] = suite
    return out
