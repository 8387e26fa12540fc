"""Expected sides that are expressions (``TestCase.expected_source``), settled before any
program runs.

A golden assert whose expected side is not data (``assert f(2) == math.sqrt(2)``: the demo's
and KodCode's golden tests parsed by ``asserts.parse_legacy_assert``, ULT's asserts and
tests files under ``evaluate-tests --allow-other-forms``) keeps that side as source text.
Its value is computed here, in a sandbox job of its own, one per distinct tests list (a
problem's jobs share its list): the job's program is the problem's prelude and nothing
else, and each expression is one of its call tests, run by the usual machinery, so the
value comes back as plain data as any test's output does. Each such test is then replaced
by a data test (``expected`` set, ``expected_source`` None); one whose expression raised,
timed out or needed a prelude that did not load carries why instead (``expected_error``),
and the judge fails it: "the expected value could not be computed: ...".

So no expected value, nor its source, enters a process that runs a program under test
(the reference's included): such a program cannot read the value (from its frames, the
garbage collector, the job it was sent) nor change how it is computed. Every flow settles
its problems where it prepares them, before their reference runs: ``codea1 evaluate``
(``flows.evaluate.reference_stage``; ``tts`` evaluates through it), test validation
(``harness.verdicts.validity.check_suites``: ``evaluate-tests``, golden or ``--allow-other-forms``,
and training's validation), the trainers' golden tests (``trainers.method.rollouts.GoldenTests``)
and SFT's search for failing candidates. ``harness.verdicts.execution`` refuses to encode a test
that still has an expression for the sandbox.

Values are computed once, under hash seed 0 and random seed 0 (as every program job's
state), not again per job: an expected side that depends on the hash seed or the clock has
one value for every program it judges.
"""

from __future__ import annotations

import dataclasses
from typing import Sequence

from codea1.harness.progress import stage_bar
from codea1.harness.records import EXPECTED_SANDBOX_ERROR, ExecJob, Problem, RawResult, TestCase
from codea1.harness.verdicts import slice_jobs
from codea1.harness.verdicts.execution import stream_jobs

EXPECTED_TIME_LIMIT = 60.0  # seconds per expression: the reference's per-test limit
PRELUDE_FAILED = "prelude failed: "
TIMED_OUT = "timed out evaluating the expected value"


def has_expected_sources(tests: Sequence[TestCase]) -> bool:
    return any(t.expected_source for t in tests)


def expected_job(job_id: str, tests: Sequence[TestCase], prelude: str = "", *, memory_mb: int = 4096,
                 time_limit: float = EXPECTED_TIME_LIMIT) -> ExecJob:
    """The job that computes the expected sides of ``tests`` (those with one, in order):
    ``prelude`` loaded as the program, each expression a call test. No program under test
    is in it, and no expected value either."""
    calls = [TestCase(id=t.id, kind="call", call=t.expected_source, op="==", expected=None, has_expected=False)
             for t in tests if t.expected_source and t.kind != "script"]
    limits = [time_limit] * len(calls)
    return ExecJob(job_id=job_id, code=prelude, tests=calls, entry_point=None, prelude="", time_limits=limits,
                   batch_timeout=min(sum(limits), 1800.0) + 10, memory_mb=memory_mb, fail_fast=False,
                   large_output="value")


def settled_tests(tests: Sequence[TestCase], raw: RawResult) -> list[TestCase]:
    """``tests`` with each expected side that ``raw`` (the result of ``expected_job`` for
    them) answered made data, or its error kept on the test."""
    out, outcomes = [], iter(raw.outcomes)
    for test in tests:
        if not test.expected_source or test.kind == "script":
            out.append(test)
            continue
        outcome = next(outcomes)
        error = None
        if raw.sandbox_error:
            error = EXPECTED_SANDBOX_ERROR + raw.sandbox_error
        elif raw.load_error:
            error = PRELUDE_FAILED + raw.load_error
        elif raw.exit.startswith("protocol:"):  # the prelude or an expression wrote into the result channel
            error = f"the result channel was tampered with ({raw.exit})"
        elif outcome.status == "ok":
            out.append(dataclasses.replace(test, expected=outcome.value, expected_source=None, expected_error=None))
            continue
        elif outcome.status == "timeout":
            error = TIMED_OUT
        else:
            error = outcome.message or f"{outcome.status}: {raw.exit}"
        out.append(dataclasses.replace(test, expected=None, expected_source=None, expected_error=error))
    return out


def settle_test_lists(executor, lists: Sequence[tuple[list[TestCase], str]], *, memory_mb: int = 4096,
                      time_limit: float = EXPECTED_TIME_LIMIT, progress: bool = False,
                      names: Sequence[str] | None = None) -> list[list[TestCase]]:
    """Each (tests, prelude) with its expected sides settled, in one executor batch: one job
    per distinct pair for its expressions (the same list object with the same prelude runs
    once, and every occurrence gets the same new list, so jobs built from it still share one
    list), and one job per script test that has a slice (``slice_jobs``; cached on disk).
    A list without expressions or slices comes back as it is."""
    jobs: dict[str, ExecJob] = {}
    plans: dict[tuple[int, str], tuple[str | None, dict[int, str | dict]]] = {}
    for n, (tests, prelude) in enumerate(lists):
        key = (id(tests), prelude)
        if key in plans or not has_expected_sources(tests):
            continue
        label = names[n] if names is not None else str(n)
        call_job = None
        if any(t.expected_source and t.kind != "script" for t in tests):
            call_job = f"expected:{len(plans)}:{label}"
            jobs[call_job] = expected_job(call_job, tests, prelude, memory_mb=memory_mb, time_limit=time_limit)
        sliced: dict[int, str | dict] = {}
        for i, test in enumerate(tests):
            if test.kind == "script" and test.expected_source:
                cached = slice_jobs.cached(test)
                if cached is not None:
                    sliced[i] = cached
                    continue
                job = slice_jobs.slice_job(f"slice:{len(plans)}:{i}:{label}", test, memory_mb=memory_mb,
                                              time_limit=time_limit)
                jobs[job.job_id] = job
                sliced[i] = job.job_id
        plans[key] = (call_job, sliced)
    if not plans:
        return [tests for tests, _ in lists]
    raws: dict[str, RawResult] = {}
    if jobs:
        with stage_bar("expected values", len(jobs), progress) as bar:
            def landed(raw: RawResult) -> None:
                raws[raw.job_id] = raw
                bar.update(1)

            stream_jobs(executor, list(jobs.values()), on_result=landed)
    done: dict[tuple[int, str], list[TestCase]] = {}
    out = []
    for tests, prelude in lists:
        key = (id(tests), prelude)
        if key not in plans:
            out.append(tests)
            continue
        if key not in done:
            call_job, sliced = plans[key]
            settled = settled_tests(tests, raws[call_job]) if call_job else list(tests)
            for i, how in sliced.items():
                values = how if isinstance(how, dict) else slice_jobs.slice_values(tests[i], raws[how])
                settled[i] = slice_jobs.settled(tests[i], values)
            done[key] = settled
        out.append(done[key])
    return out


def settle_expected_sources(executor, problems: Sequence[Problem], *, memory_mb: int = 4096,
                            time_limit: float = EXPECTED_TIME_LIMIT, progress: bool = False) -> list[Problem]:
    """``problems`` (same order) whose tests hold no ``expected_source``: each expression's
    value computed in a sandbox job of its own (see the module's docstring). A problem
    without one is returned as it is; the others as copies with settled tests."""
    lists = settle_test_lists(executor, [(p.tests, p.prelude) for p in problems], memory_mb=memory_mb,
                              time_limit=time_limit, progress=progress, names=[p.task_id for p in problems])
    return [p if tests is p.tests else dataclasses.replace(p, tests=tests) for p, tests in zip(problems, lists)]


def settle_tests(executor, tests: list[TestCase], prelude: str = "", *, memory_mb: int = 4096,
                 time_limit: float = EXPECTED_TIME_LIMIT) -> list[TestCase]:
    """One tests list settled (for jobs built by hand: the executor conformance suite)."""
    return settle_test_lists(executor, [(tests, prelude)], memory_mb=memory_mb, time_limit=time_limit)[0]
