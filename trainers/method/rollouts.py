"""Rollouts and their execution: the chat prompt for a question, programs from code
responses, one executor batch for any number of (program, tests) pairs with the
continuations after a timeout, and the golden tests prepared once per question.
"""

from __future__ import annotations

import dataclasses
import hashlib
from dataclasses import dataclass
from typing import Any, Hashable, Mapping, Sequence

from codea1.harness.execution import DEFAULT_TIME_FACTOR, run_jobs
from codea1.harness.expected import settle_expected_sources
from codea1.harness.judge import judge
from codea1.harness.parsing import program_from_response
from codea1.harness.prompts import question_messages
from codea1.harness.records import ERROR, SANDBOX_ERROR, ExecJob, Problem, TestCase
from codea1.harness.reference import run_references


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
# Continuations per program: one gives the tests after a single slow test their results; a
# program that hangs on every input would otherwise spend its whole budget one limit at a
# time (on the paper-sized step that made execution 11 times slower).
MAX_CONTINUATIONS = 1


def run_codes(executor, runs: Mapping[Hashable, tuple[Problem, str, list[TestCase], list[float]]], bench,
              code_timeout: float, budgets: Mapping[Hashable, float] | None = None) -> dict[Hashable, CodeRun]:
    """Every (problem, program, tests, per-test limits) in one executor batch, no early stop
    (every test's result counts); a program gets ``code_timeout`` seconds for all its tests
    (``budgets[key]`` where given), and at least a quarter of the sum of their limits (a
    limit is at least 4 x the reference's time), so that a program as fast as the reference
    never runs out of budget. Identical (program, tests) pairs run once.

    A timeout is the timed-out test's failure and nothing more: a job stops at its first
    timeout (the process may be wedged), and the tests after it run in a fresh job, a
    continuation with what is left of the program's budget (MAX_CONTINUATIONS of them); the
    tests that no job reaches are "not_run", counted neither passed nor failed (one slow
    test in one suite must not fail its sibling suites and the Mistake Book's tests)."""
    jobs: dict[str, ExecJob] = {}
    job_of: dict[Hashable, str] = {}
    budget_of: dict[str, float] = {}
    problem_of: dict[str, Problem] = {}
    for key, (problem, code, tests, limits) in runs.items():
        if not tests:
            continue
        digest = hashlib.sha256(repr((code, [dataclasses.astuple(t) for t in tests])).encode()).hexdigest()[:16]
        job_id = f"{problem.task_id}@{digest}"
        job_of[key] = job_id
        if job_id not in jobs:
            budget_of[job_id] = max((budgets or {}).get(key, code_timeout), sum(limits) / DEFAULT_TIME_FACTOR)
            problem_of[job_id] = problem
            jobs[job_id] = _code_job(job_id, code, problem, tests, limits, budget_of[job_id], bench.memory_mb)
    statuses = _run_with_continuations(executor, jobs, budget_of, problem_of, bench)
    out = {}
    for key, (problem, code, tests, _) in runs.items():
        if not tests:
            out[key] = CodeRun(loads=True, statuses=[])
        else:
            out[key] = statuses[job_of[key]]
    return out


def _code_job(job_id: str, code: str, problem: Problem, tests: list[TestCase], limits: list[float], budget: float,
              memory_mb: int) -> ExecJob:
    return ExecJob(job_id=job_id, code=code, tests=tests, entry_point=problem.entry_point, prelude=problem.prelude,
                   time_limits=limits, batch_timeout=min(budget, sum(limits)) + LOAD_ALLOWANCE, memory_mb=memory_mb,
                   fail_fast=False, stop_on_timeout=True, large_output="value")


def _run_with_continuations(executor, jobs: Mapping[str, ExecJob], budget_of: Mapping[str, float],
                            problem_of: Mapping[str, Problem], bench) -> dict[str, CodeRun]:
    """Each job's CodeRun: one executor batch per round, the first with every job, each
    later one with the continuations of the jobs that timed out in the round before."""
    out = {job_id: CodeRun(loads=True, statuses=["not_run"] * len(job.tests)) for job_id, job in jobs.items()}
    offset = dict.fromkeys(jobs, 0)  # index of a job's first test in the job now running
    used = dict.fromkeys(jobs, 0.0)  # seconds of its budget spent
    pending = dict(jobs)
    for _ in range(1 + MAX_CONTINUATIONS):
        if not pending:
            break
        raws = run_jobs(executor, list(pending.values()))
        following = {}
        for base, job in pending.items():
            raw, problem, run, start = raws[job.job_id], problem_of[base], out[base], offset[base]
            verdict = judge(problem.task_id, 0, job, raw, bench.checker(problem))
            if verdict.status == SANDBOX_ERROR:
                run.sandbox_error = verdict.message
                continue
            if verdict.status == ERROR:
                if start == 0:  # a program that does not load fails every test
                    run.loads, run.statuses = False, ["fail"] * len(run.statuses)
                continue  # a continuation that does not load: the rest stays not run
            for i, tv in enumerate(verdict.tests):
                run.statuses[start + i] = tv.status
            used[base] += raw.wall_time
            timed_out = next((i for i, tv in enumerate(verdict.tests) if tv.status == "timeout"), None)
            left = budget_of[base] - used[base]
            if timed_out is not None and timed_out + 1 < len(job.tests) and left >= MIN_CONTINUATION:
                offset[base] = start + timed_out + 1
                first = jobs[base]
                following[base] = _code_job(f"{base}+{offset[base]}", first.code, problem,
                                            first.tests[offset[base]:], first.time_limits[offset[base]:], left,
                                            first.memory_mb)
        pending = following
    return out


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


class GoldenTests:
    """Each question's golden tests, prepared once: time limits by evalplus' rule on the
    reference's own times; where tests carry no expected values (HumanEval+ and MBPP+
    inputs) the reference's outputs become them, and inputs it cannot answer are left out.

    Tests judged in-process (script tests a runner inside the program decides: the program
    could steer them) are left out too unless ``allow_in_process``; ``left_out`` counts them."""

    def __init__(self, context, allow_in_process: bool = False):
        self.context = context
        self.allow_in_process = allow_in_process
        self.left_out: dict[str, int] = {}
        self.prepared: dict[str, tuple[list[TestCase], list[float]]] = {}

    def of(self, questions: Sequence[Problem]) -> dict[str, tuple[list[TestCase], list[float]]]:
        todo = [q for q in questions if q.task_id not in self.prepared]
        bench = self.context.run.bench
        # Expected sides that are expressions: computed in jobs of their own (harness.expected).
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
