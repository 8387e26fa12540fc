"""Test validity: do a suite's tests hold on the reference solution?

One executor batch for any number of suites (a suite per task in ``codea1 evaluate-tests``;
a suite per sampled test-writer response in training). A test is valid when it parses into
a usable assert, executes on the reference and its assertion holds; an unparseable assert
is an invalid test in its position, so positions (the first k of a suite) keep their
meaning. Training adds unique calls and wrong answers corrected to the reference's and kept
(the paper's Step 3: ``codea1.trainers.method.validation``).

Every test that ran on the reference runs there a second time, under another hash seed and
another random seed, and under the time limit a candidate or mutant gets for it later
(``candidate_time_limits``: evalplus' rule on the first run's time). A test whose outcome (its
output, its exception, its verdict) differs between the two runs is invalid,
"nondeterministic": it depends on os.urandom, time, hash or set order, or unseeded random,
and would fail correct programs at random; one that times out under its own limit would
time out on an equally fast mutant or candidate by design.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

from codea1.harness.records import Problem, TestCase
from codea1.harness.verdicts.asserts import AssertParseError, parse_assert
from codea1.harness.verdicts.execution import DEFAULT_MIN_TIME_LIMIT, DEFAULT_TIME_FACTOR, time_limits
from codea1.harness.verdicts.expected import settle_expected_sources
from codea1.harness.verdicts.reference import ReferenceRun, run_references

SECOND_SEED = 1  # the hash seed and random seed of validity's second run (the first: 0, as every job)
NONDETERMINISTIC_REASON = "nondeterministic"


def candidate_time_limits(reference_times: Sequence[float]) -> list[float]:
    """The per-test limits a valid test gets everywhere after validation (the second
    validation run, candidates in training, mutants): max(1 s, 4 x the reference's time)."""
    return time_limits(reference_times, DEFAULT_MIN_TIME_LIMIT, DEFAULT_TIME_FACTOR)


@dataclass
class SuiteCheck:
    """One suite on the reference, per position: the parsed test (None: unusable), valid,
    why not ("" when valid), and the reference's time. ``reference`` holds the reference's
    outputs for the usable tests (``usable`` maps a position to its index there)."""

    tests: list[TestCase | None]
    valid: list[bool]
    reasons: list[str]
    times: list[float]
    reference: ReferenceRun | None = None
    nondeterministic: set[int] = dataclasses.field(default_factory=set)  # positions whose two runs differ

    def usable(self) -> dict[int, int]:
        return {pos: j for j, pos in enumerate(i for i, t in enumerate(self.tests) if t is not None)}

    def reference_value(self, position: int) -> Any:
        """The reference's output for the call of the test at ``position`` (what a corrected
        test would expect)."""
        return self.reference.value(self.usable()[position]) if self.reference else None


def parse_suite(problem: Problem, sources: Sequence[str], *, allow_other_forms: bool = False
                ) -> tuple[list[TestCase | None], list[str]]:
    """Each assert as a test, in order; an unusable one is None with its reason. Only the
    paper's form (``asserts.parse_assert``) unless ``allow_other_forms``: then the rest is
    parsed as before and marked ``judged="in-process"``."""
    parsed, reasons = [], []
    for i, src in enumerate(sources):
        try:
            parsed.append(parse_assert(src, problem.entry_point, f"test/{i}", allow_other_forms=allow_other_forms))
            reasons.append("")
        except AssertParseError as exc:
            parsed.append(None)
            reasons.append(f"not a usable assert: {exc.reason}")
    return parsed, reasons


def _outside_form(test: TestCase, problem: Problem) -> str:
    """Why a golden call test parsed outside the paper's form (judged in-process) is not
    usable by default ("" for any other test)."""
    if test.kind != "call" or test.judged != "in-process":
        return ""
    try:
        parse_assert(test.source or "", problem.entry_point)
    except AssertParseError as exc:
        return f"not a usable assert: {exc.reason}"
    return ""


def check_suites(executor, suites: Mapping[str, tuple[Problem, Sequence[str | TestCase]]], *,
                 memory_mb: int = 4096, expected_from_reference: Callable[[Problem], bool] = lambda p: False,
                 progress: bool = False, stage: str = "validity", recheck_outputs: bool = False,
                 allow_other_forms: bool = False
                 ) -> dict[str, SuiteCheck]:
    """Check every suite (key -> its problem and tests: assert strings, or TestCases as
    golden tests are) against its problem's reference, in one executor batch.

    Asserts must be in the paper's form (``asserts.parse_assert``), golden call tests too
    when their loader marked them in-process; ``allow_other_forms`` (evaluate-tests' option,
    never training) runs the rest as before, marked ``judged="in-process"``.

    ``expected_from_reference(problem)`` is True for tests that carry no expected values
    (HumanEval+'s golden inputs): there the reference only has to answer them.

    The second run takes the tests that passed; with ``recheck_outputs`` also those that ran
    to a wrong answer (training corrects them to the reference's output, which must then
    be deterministic too).

    Expected sides that are expressions are computed first, once, in jobs of their own
    (``harness.verdicts.expected``): the checks' ``tests`` hold them as data (or with the error that
    fails them), and every later job (the mutants') is built from those."""
    checks: dict[str, SuiteCheck] = {}
    to_run: list[Problem] = []
    for key, (problem, tests) in suites.items():
        if all(isinstance(t, TestCase) for t in tests):
            reasons = ["" if allow_other_forms else _outside_form(t, problem) for t in tests]
            parsed = [None if reason else t for t, reason in zip(tests, reasons)]
        else:
            parsed, reasons = parse_suite(problem, [str(t) for t in tests], allow_other_forms=allow_other_forms)
        checks[key] = SuiteCheck(parsed, [False] * len(parsed), reasons, [0.0] * len(parsed))
        usable = [t for t in parsed if t is not None]
        if usable:  # the suite runs as a problem of its own: its key is the job's task id
            to_run.append(dataclasses.replace(problem, task_id=key, tests=usable))
    # Expected sides that are expressions (golden asserts, --allow-other-forms) are computed
    # in jobs of their own before anything runs: no job of a program carries them.
    to_run = settle_expected_sources(executor, to_run, memory_mb=memory_mb, progress=progress)
    for problem in to_run:
        settled = iter(problem.tests)
        check = checks[problem.task_id]
        check.tests = [None if t is None else next(settled) for t in check.tests]
    refs = run_references(to_run, executor, checks_tests=lambda p: not expected_from_reference(p),
                          memory_mb=memory_mb, progress=progress, stage=stage, use_cache=False)
    for key, check in checks.items():
        ref = refs.get(key)
        check.reference = ref
        for position, j in check.usable().items():
            if ref is None:
                check.reasons[position] = "not run"
                continue
            check.times[position] = ref.times[j] if j < len(ref.times) else 0.0
            if j in ref.failed:
                check.reasons[position] = f"fails on the reference: {ref.failed[j][:300]}"
            else:
                check.valid[position] = True
    _second_run(executor, checks, to_run, expected_from_reference, memory_mb, recheck_outputs)
    return checks


def _same_output(first: ReferenceRun, i: int, second: ReferenceRun, j: int) -> bool:
    if first.digests.get(i) and second.digests.get(j):  # large outputs: their SHA-256s
        return first.digests[i] == second.digests[j]
    a, b = first.value(i), second.value(j)
    try:
        if a == b:
            return True
    except Exception:  # noqa: BLE001 - plain data compares; anything else is not the same
        return False
    return type(a) is type(b) and repr(a) == repr(b)  # NaN inside equal structures


def _second_run(executor, checks: dict[str, SuiteCheck], first_problems: list[Problem],
                expected_from_reference: Callable[[Problem], bool], memory_mb: int, recheck_outputs: bool) -> None:
    """Run again every test that passed on the reference (with ``recheck_outputs``, every
    one that has an output a wrong answer is corrected to), under SECOND_SEED and the limits
    of candidate_time_limits; mark the positions whose outcome differs "nondeterministic"
    (and invalid)."""
    again: list[Problem] = []
    rerun: dict[str, list[int]] = {}  # suite key -> the indices (of the first run) run again
    for problem in first_problems:
        check = checks[problem.task_id]
        ref = check.reference
        if ref is None or ref.error:
            continue
        indices = [j for j in range(len(problem.tests)) if j not in ref.failed or (recheck_outputs and j in ref.values)]
        if indices:
            rerun[problem.task_id] = indices
            again.append(dataclasses.replace(problem, tests=[problem.tests[j] for j in indices]))
    if not again:
        return
    limits = {key: candidate_time_limits([checks[key].reference.times[j] for j in indices]) for key, indices in rerun.items()}
    seconds = run_references(again, executor, checks_tests=lambda p: not expected_from_reference(p),
                             memory_mb=memory_mb, stage="validity (second run)", use_cache=False, seed=SECOND_SEED,
                             limits=lambda p: limits[p.task_id])
    for key, indices in rerun.items():
        check, second = checks[key], seconds.get(key)
        first = check.reference
        positions = {j: pos for pos, j in check.usable().items()}
        for jj, j in enumerate(indices):
            if second is None:
                why = "its second run on the reference got no result"
            elif (j in first.failed) != (jj in second.failed):
                took = f"{limits[key][jj]:.1f}"
                why = (f"passes on the reference under one hash and random seed, not under another "
                       f"(limit {took} s): {second.failed.get(jj, first.failed.get(j, ''))[:200]}")
            elif (j in first.values) != (jj in second.values) or (j in first.values and not _same_output(first, j, second, jj)):
                why = "the reference's output differs between two runs (hash seed, random state, time)"
            else:
                continue
            pos = positions[j]
            check.valid[pos] = False
            check.nondeterministic.add(pos)
            check.reasons[pos] = f"{NONDETERMINISTIC_REASON}: {why}"
