"""Rollouts and their execution: the chat prompt for a question, programs from code
responses, one executor batch for any number of (program, tests) pairs, each program's
distinct tests once, with the continuations after a timeout, and the golden tests prepared
once per question.
"""

from __future__ import annotations

import bisect
import dataclasses
import hashlib
import json
from dataclasses import dataclass
from typing import Any, Callable, Hashable, Mapping, Sequence

from codea1.harness.prompts import question_messages
from codea1.harness.records import ERROR, NOT_RUN, SANDBOX_ERROR, ExecJob, Problem, RawResult, TestCase
from codea1.harness.verdicts.execution import DEFAULT_TIME_FACTOR, adopt_encoded_tests, encoded_test, run_jobs
from codea1.harness.verdicts.expected import settle_expected_sources
from codea1.harness.verdicts.judge import Checker, judge
from codea1.harness.verdicts.reference import run_references
from codea1.harness.verdicts.responses import program_from_response

# The chat messages of a prompt (harness/prompts/paper.toml) for one question.
prompt_messages = question_messages


def program(problem: Problem, response: str) -> str:
    return program_from_response(problem.prompt, problem.entry_point, response)


@dataclass
class CodeRun:
    """One program against a list of tests: did it load, each test's status (pass | fail |
    timeout | not_run), and the executor's failure when it gave no verdict at all."""

    loads: bool
    statuses: list[str]
    sandbox_error: str | None = None

    @property
    def passes(self) -> list[bool]:
        return [s == "pass" for s in self.statuses]

    def counts(self, start: int, stop: int) -> tuple[int, int, int]:
        """(passed, failed, not run) among tests ``start:stop``: a timeout is a failure of
        that test; a test that did not run is neither."""
        span = self.statuses[start:stop]
        passed, not_run = span.count("pass"), span.count("not_run")
        return passed, len(span) - passed - not_run, not_run


LOAD_ALLOWANCE = 5.0  # seconds of a job's budget for starting and loading the program
MIN_CONTINUATION = 1.0  # budget left below which the tests after a timeout are not run
# Timeouts a part (a suite, the book, the golden tests) may have before the rest of it is
# left unrun: the first costs one limit and the part goes on; the second ends the part, and
# the program goes on with the next one, so no part's timeouts leave another part unrun. A
# program that has passed nothing gets one continuation (``_run_with_continuations``): one
# that hangs on every input costs two limits, not one per part nor its whole budget one
# limit at a time (on the paper-sized step that made execution 11 times slower).
TIMEOUTS_PER_PART = 2


def run_codes(executor, runs: Mapping[Hashable, tuple[Problem, str, list[TestCase], list[float]]], bench,
              code_timeout: float, budgets: Mapping[Hashable, float] | None = None,
              checkers: Mapping[Hashable, Callable[[], Checker]] | None = None,
              parts: Mapping[Hashable, Sequence[int]] | None = None) -> dict[Hashable, CodeRun]:
    """Every (problem, program, tests, per-test limits) in one executor batch, no early stop
    (every test's result counts); a program gets ``code_timeout`` seconds for all its tests
    (``budgets[key]`` where given), and at least a quarter of the sum of their limits (a
    limit is at least 4 x the reference's time), so that a program as fast as the reference
    never runs out of budget.

    A program runs each distinct test once: tests that the sandbox would run alike (the same
    call, ``execution.encoded_test``) under the same limit, in several suites, the book or
    the golden tests, are one test of its job, whose outcome is judged against each
    appearance's own expected answer. Identical jobs (program, entry point, prelude, memory,
    budget and distinct tests) run once, whichever runs they serve.

    A timeout is the timed-out test's failure and nothing more: a job stops at its first
    timeout (the process may be wedged), and the tests after it run in a fresh job, a
    continuation with what is left of the program's budget. ``parts[key]`` (the indexes
    where each part of a run's tests starts: its suites, the book, the golden tests; one
    part by default) bounds them: a part's second timeout (TIMEOUTS_PER_PART) leaves the
    rest of that part unrun and the continuation goes on with the next part, so a part's
    timeouts cannot starve another. The tests that no job reaches are "not_run", counted
    neither passed nor failed (one slow test in one suite must not fail its sibling suites
    and the Mistake Book's tests). A distinct test serving several parts is left unrun only
    when all of them have ended.

    ``checkers[key]`` makes the checker that judges a run's tests (by default the benchmark's,
    ``bench.checker(problem)``: its special oracles are for its own golden tests)."""
    encodings: dict[tuple, str | None] = {}
    lists: dict[tuple, list[TestCase]] = {}  # one list per distinct tests (the executor groups jobs by it)
    jobs: dict[str, _DistinctJob] = {}  # by digest of what the sandbox runs
    uses: dict[Hashable, _Use] = {}
    for key, (problem, code, tests, limits) in runs.items():
        if not tests:
            continue
        # The budget is the run's, over all its tests (repeats included), as when each ran.
        budget = max((budgets or {}).get(key, code_timeout), sum(limits) / DEFAULT_TIME_FACTOR)
        starts = sorted(set((parts or {}).get(key, ())) | {0})
        slot: dict[tuple, int] = {}
        distinct: list[TestCase] = []
        distinct_limits: list[float] = []
        texts: list[str | None] = []
        serves: list[set[int]] = []  # per distinct test: the parts it serves
        index = []  # per test of the run: its test in the job
        for i, (test, limit) in enumerate(zip(tests, limits, strict=True)):
            text = _encoding(encodings, test)
            same = (text if text is not None else id(test), limit, test.judged)  # judged: which records count
            if same not in slot:
                slot[same] = len(distinct)
                distinct.append(test)
                distinct_limits.append(limit)
                texts.append(text)
                serves.append(set())
            index.append(slot[same])
            serves[slot[same]].add(bisect.bisect_right(starts, i) - 1)
        served = [sorted(s) for s in serves]
        encoded = None if None in texts else "[" + ",".join(texts) + "]"
        identity = json.dumps([code, problem.entry_point, problem.prelude, bench.memory_mb, budget, distinct_limits,
                               [t.judged for t in distinct], served, encoded if encoded is not None else repr(key)])
        digest = hashlib.sha256(identity.encode("utf-8", "surrogatepass")).hexdigest()[:16]
        if digest not in jobs:
            if encoded is not None:
                # Programs that run the same tests (a question's golden tests, a Self-Play
                # question's suites) share one list: a zygote then receives them once.
                same_tests = (encoded, tuple(t.judged for t in distinct))
                if same_tests not in lists:
                    lists[same_tests] = distinct
                    adopt_encoded_tests(distinct, encoded)  # the sandbox's payload, encoded once
                distinct = lists[same_tests]
            jobs[digest] = _DistinctJob(_code_job(f"{problem.task_id}@{digest}", code, problem, distinct,
                                                  distinct_limits, budget, bench.memory_mb), budget, served)
        jobs[digest].users.append(key)
        checker = (checkers or {}).get(key) or (lambda problem=problem: bench.checker(problem))
        uses[key] = _Use(problem, tests, index, checker)
    done = _run_with_continuations(executor, list(jobs.values()), uses)
    return {key: done.get(key) or CodeRun(loads=True, statuses=[]) for key in runs}


@dataclass
class _DistinctJob:
    """A program's distinct tests (``first``), its budget, the parts each test serves, and
    the runs it serves."""

    first: ExecJob
    budget: float
    serves: list[list[int]]
    users: list = dataclasses.field(default_factory=list)


@dataclass
class _Use:
    """A run's problem, its own tests, per test its index among the job's, and its checker."""

    problem: Problem
    tests: list[TestCase]
    index: list[int]
    checker: Callable[[], Checker]  # makes the checker that judges this run's tests


def _encoding(encodings: dict[tuple, str | None], test: TestCase) -> str | None:
    """``encoded_test(test)`` (None where it cannot be encoded: such a test is never merged,
    and the executor reports it), remembered by the identity of what it is made of: a
    layout copies each validated test into every program it runs in, sharing its parts, so
    a step's tests encode as the few thousand distinct ones. The runs hold the parts for the
    whole call, so no identity is reused within it (and no one mutates a test's parts)."""
    same = (test.kind, id(test.args), id(test.kwargs), id(test.wrap), test.call, test.op, test.script,
            test.framework, test.judged, test.expected_source)
    if same not in encodings:
        try:
            encodings[same] = encoded_test(test)
        except ValueError:
            encodings[same] = None
    return encodings[same]


def _code_job(job_id: str, code: str, problem: Problem, tests: list[TestCase], limits: list[float], budget: float,
              memory_mb: int) -> ExecJob:
    return ExecJob(job_id=job_id, code=code, tests=tests, entry_point=problem.entry_point, prelude=problem.prelude,
                   time_limits=limits, batch_timeout=_batch_timeout(budget, limits), memory_mb=memory_mb,
                   fail_fast=False, stop_on_timeout=True, large_output="value")


def _batch_timeout(budget: float, limits: list[float]) -> float:
    """A job's whole-job limit: what is left of its program's budget, at most its tests'
    limits, and the time to start and load."""
    return min(budget, sum(limits)) + LOAD_ALLOWANCE


def _run_with_continuations(executor, jobs: Sequence[_DistinctJob], uses: Mapping[Hashable, _Use]
                            ) -> dict[Hashable, CodeRun]:
    """Each run's CodeRun: one executor batch per round, the first with every job, each
    later one with the continuations of the jobs that timed out in the round before (the
    distinct tests after the timeout whose parts have not ended). A program that has passed
    a test when it first times out gets one job per part still to run, side by side, so
    that a step takes 1 + TIMEOUTS_PER_PART rounds however many parts hang (a round or two
    more only where one call serves several parts); one
    that has passed none (it hangs or fails wherever it ran: R_C 0 whatever runs next) gets
    one continuation of its remaining tests, ending at its next timeout, which bounds what a
    program that hangs everywhere costs a step to two limits. Each round's outcomes are
    judged run by run, against the run's own tests."""
    out = {key: CodeRun(loads=True, statuses=["not_run"] * len(use.tests)) for key, use in uses.items()}
    used = dict.fromkeys(range(len(jobs)), 0.0)  # seconds of each program's budget spent, all its jobs
    timeouts: dict[int, dict[int, int]] = {n: {} for n in range(len(jobs))}  # per program: timeouts per part
    # (program, its distinct tests this job runs, the job, whether it is the program's last)
    pending = [(n, list(range(len(d.first.tests))), d.first, False) for n, d in enumerate(jobs)]
    while pending:
        raws = run_jobs(executor, [job for _, _, job, _ in pending])
        following = []
        for n, ran, job, last in pending:
            raw, distinct = raws[job.job_id], jobs[n]
            if len(raw.outcomes) < len(job.tests):  # an executor's failure may come without outcomes
                raw = dataclasses.replace(raw, outcomes=raw.outcomes + [NOT_RUN] * (len(job.tests) - len(raw.outcomes)))
            live = [key for key in distinct.users if out[key].sandbox_error is None]
            for key in live:  # a run with a sandbox error has no verdict to complete
                _judge_part(out[key], uses[key], ran, job, raw, distinct.first)
            if raw.sandbox_error or raw.load_error or raw.exit.startswith("protocol:") or \
                    all(out[key].sandbox_error is not None for key in live):
                continue
            used[n] += raw.own_time
            timed_out = next((i for i, o in enumerate(raw.outcomes) if o.status == "timeout"), None)
            if timed_out is None or last:
                continue
            for part in distinct.serves[ran[timed_out]]:
                timeouts[n][part] = timeouts[n].get(part, 0) + 1
            ended = {part for part, count in timeouts[n].items() if count >= TIMEOUTS_PER_PART}
            rest = [d for d in ran[timed_out + 1:] if not set(distinct.serves[d]) <= ended]
            working = any("pass" in out[key].statuses for key in live)
            groups: dict[int, list[int]] = {}
            for d in rest:  # a working program's first continuation: a job per part (a shared test: its first live part)
                key = min(set(distinct.serves[d]) - ended) if job is distinct.first and working else 0
                groups.setdefault(key, []).append(d)
            for group in groups.values():
                left = distinct.budget - used[n]
                if left >= MIN_CONTINUATION:
                    following.append((n, group, _continuation(distinct.first, group, left), not working))
        pending = following
    return out


def _continuation(first: ExecJob, tests: list[int], left: float) -> ExecJob:
    """The job that runs the program's distinct tests ``tests`` with ``left`` seconds of its
    budget."""
    limits = [first.time_limits[d] for d in tests]
    return dataclasses.replace(first, job_id=f"{first.job_id}+{tests[0]}", tests=[first.tests[d] for d in tests],
                               time_limits=limits, batch_timeout=_batch_timeout(left, limits))


def _judge_part(run: CodeRun, use: _Use, ran: list[int], job: ExecJob, raw: RawResult, first: ExecJob) -> None:
    """Judge, into ``run``, the tests of ``use`` whose distinct test ``job`` ran (``ran``:
    the distinct tests of the job, in its order; ``first``: the program's first job), each
    against its own expected answer."""
    at = {d: k for k, d in enumerate(ran)}
    positions = [i for i, d in enumerate(use.index) if d in at]
    part = dataclasses.replace(job, tests=[use.tests[i] for i in positions],
                               time_limits=[job.time_limits[at[use.index[i]]] for i in positions])
    outcomes = [raw.outcomes[at[use.index[i]]] for i in positions]
    verdict = judge(use.problem.task_id, 0, part, dataclasses.replace(raw, outcomes=outcomes), use.checker())
    if verdict.status == SANDBOX_ERROR:
        run.sandbox_error = verdict.message
    elif verdict.status == ERROR:
        if job is first:  # a program that does not load fails every test
            run.loads, run.statuses = False, ["fail"] * len(run.statuses)
        # a continuation that does not load: the rest stays not run
    else:
        for i, tv in zip(positions, verdict.tests):
            run.statuses[i] = tv.status


def limits_for(tests: Sequence[TestCase], times: Mapping[str, float], floor: float = 1.0, factor: float = 4.0
               ) -> list[float]:
    """Per test, max(floor, factor x the reference's time) where it is known, else floor."""
    return [max(floor, factor * times.get(t.id, 0.0)) for t in tests]


def mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def replace_id(test: TestCase, new_id: str) -> TestCase:
    return dataclasses.replace(test, id=new_id)


def update_stats(prefix: str, stats: Mapping[str, Any]) -> dict[str, Any]:
    return {f"{prefix}_{k}": (round(v, 6) if isinstance(v, float) else v) for k, v in stats.items()}


# Answers a constant program might return, besides the golden tests' own expected values.
PROBE_CONSTANTS = (0, 0.0, 1, -1, None, True, False, "", [], (), {})


def constant_passing(make_checker: Callable[[], Checker], tests: Sequence[TestCase]) -> tuple[bool, Any]:
    """(True, c) when one constant answer c (PROBE_CONSTANTS, then each test's expected
    value) passes every call test of ``tests`` under the checker ``make_checker`` makes;
    (False, None) otherwise, or when there is no call test with an expected value."""
    calls = [t for t in tests if t.kind == "call" and t.has_expected]
    if not calls:
        return False, None
    for constant in [*PROBE_CONSTANTS, *[t.expected for t in calls]]:
        checker = make_checker()  # fresh: a checker may keep state across a sample's tests
        try:
            if all(checker.check(t, constant, t.expected)[0] for t in calls):
                return True, constant
        except Exception:  # noqa: BLE001 - a comparison that raises is a failure, as when judging
            continue
    return False, None


class GoldenTests:
    """Each question's golden tests, prepared once: time limits by evalplus' rule on the
    reference's own times; where tests carry no expected values (HumanEval+ and MBPP+
    inputs) the reference's outputs become them, and inputs it cannot answer are left out.

    Tests judged in-process (script tests a runner inside the program decides: the program
    could steer them) are left out too unless ``allow_in_process``; ``left_out`` counts them.

    ``checker(question)`` makes what judges the golden tests when they are a reward: the
    benchmark's checker, unless one constant answer passes all its call tests there and not
    under the benchmark's plain comparison (``Benchmark.plain_checker``): such a special
    oracle (MBPP+'s sum_div accepts any 0, are_equivalent anything) would pay a program that
    ignores its input, and the plain comparison on the reference's answers judges instead.
    ``plain`` holds the questions where that happened."""

    def __init__(self, context, allow_in_process: bool = False):
        self.context = context
        self.allow_in_process = allow_in_process
        self.left_out: dict[str, int] = {}
        self.prepared: dict[str, tuple[list[TestCase], list[float]]] = {}
        self.checkers: dict[str, Callable[[], Checker]] = {}
        self.plain: set[str] = set()

    def checker(self, question: Problem) -> Callable[[], Checker]:
        """What makes the checker of ``question``'s golden tests as a reward (after ``of``)."""
        if question.task_id not in self.checkers:
            bench, tests = self.context.run.bench, self.prepared[question.task_id][0]
            oracle = lambda: bench.checker(question)  # noqa: E731
            plain = lambda: bench.plain_checker(question)  # noqa: E731
            if constant_passing(oracle, tests)[0] and not constant_passing(plain, tests)[0]:
                self.plain.add(question.task_id)
                self.checkers[question.task_id] = plain
            else:
                self.checkers[question.task_id] = oracle
        return self.checkers[question.task_id]

    def of(self, questions: Sequence[Problem]) -> dict[str, tuple[list[TestCase], list[float]]]:
        todo = [q for q in questions if q.task_id not in self.prepared]
        bench = self.context.run.bench
        # Expected sides that are expressions: computed in jobs of their own (harness.verdicts.expected).
        todo = settle_expected_sources(self.context.run.executor, todo, memory_mb=bench.memory_mb)
        refs = run_references(todo, self.context.run.executor, checks_tests=lambda p: not bench.reference_expected(p),
                              memory_mb=bench.memory_mb)
        for q in todo:
            ref = refs[q.task_id]
            keep = [i for i in range(len(q.tests)) if i not in ref.failed]
            trusted = [i for i in keep if self.allow_in_process or q.tests[i].judged != "in-process"]
            self.left_out[q.task_id] = len(keep) - len(trusted)
            keep = trusted
            tests = [q.tests[i] for i in keep]
            if bench.reference_expected(q):
                tests = [dataclasses.replace(t, expected=bench.expected_from_reference(q, ref.value(i)), has_expected=True)
                         for t, i in zip(tests, keep)]
            self.prepared[q.task_id] = (tests, bench.time_limits(dataclasses.replace(q, tests=tests),
                                                                 [ref.times[i] for i in keep]))
        return {q.task_id: self.prepared[q.task_id] for q in questions}
