"""What the trainers share: prompts for a question, programs from code responses, one
executor batch for any number of (code, tests) pairs, and advantages per group.

A helper module of the trainers folder (no hooks): trainers import it, nothing else does.
"""

from __future__ import annotations

import dataclasses
import hashlib
from dataclasses import dataclass
from typing import Any, Hashable, Mapping, Sequence

from codea1.harness.asserts import AssertParseError, parse_assert
from codea1.harness.execution import batch_timeout, run_jobs
from codea1.harness.judge import judge
from codea1.harness.parsing import program_from_response
from codea1.harness.prompts import get_prompt, question_text
from codea1.harness.records import ERROR, SANDBOX_ERROR, ExecJob, Problem, TestCase
from codea1.harness.reference import run_references
from codea1.harness.rewards import VARIANTS, group_advantages


@dataclass
class AdversarialOptions:
    """The options code-a1 and self-play share: M programs and N suites of K asserts per
    question, the reward (alpha, variant, non-printable penalty), the Mistake Book and the
    time budget of a program."""

    m: int = 8
    n: int = 8
    k: int = 8
    alpha: float = 0.5
    reward_variant: str = "authors"
    nonprintable_penalty: bool = True
    mistake_book: bool = True
    book_top: int = 8
    code_timeout: float = 10.0

    def __post_init__(self):
        if min(self.m, self.n, self.k, self.book_top) < 1:
            raise ValueError("m, n, k and book_top must be at least 1")
        if not 0.0 <= self.alpha <= 1.0:
            raise ValueError(f"alpha must lie in [0, 1], not {self.alpha}")
        if self.reward_variant not in VARIANTS:
            raise ValueError(f"reward_variant must be one of {', '.join(VARIANTS)}, not {self.reward_variant!r}")
        if self.code_timeout <= 0:
            raise ValueError("code_timeout must be positive")


def prompt_messages(name: str, problem: Problem, k: int = 8, code: str = "") -> list[dict[str, str]]:
    """The chat messages of prompt ``name`` (harness/prompts/paper.toml) for one question."""
    prompt = get_prompt(name)
    values = {"question": question_text(problem), "k": k, "entry_point": problem.entry_point,
              "code": code.strip("\n")}
    return prompt.messages(**{f: values[f] for f in prompt.fields()})


def program(problem: Problem, response: str) -> str:
    return program_from_response(problem.prompt, problem.entry_point, response)


@dataclass
class CodeRun:
    """One program against a list of tests: did it load, which tests passed, and the
    executor's failure when it gave no verdict at all."""

    loads: bool
    passes: list[bool]
    sandbox_error: str | None = None


def run_codes(executor, runs: Mapping[Hashable, tuple[Problem, str, list[TestCase], list[float]]], bench,
              code_timeout: float, budgets: Mapping[Hashable, float] | None = None) -> dict[Hashable, CodeRun]:
    """Every (problem, program, tests, per-test limits) in one executor batch, no early stop
    (every test's result counts) but at a program's first timeout (as the authors' sandbox
    template: one process, one deadline; the tests after it count as not passed); a program gets ``code_timeout`` seconds for all its tests
    (``budgets[key]`` where given). Identical (program, tests) pairs run once."""
    jobs: dict[str, ExecJob] = {}
    job_of: dict[Hashable, str] = {}
    for key, (problem, code, tests, limits) in runs.items():
        if not tests:
            continue
        digest = hashlib.sha256(repr((code, [dataclasses.astuple(t) for t in tests])).encode()).hexdigest()[:16]
        job_id = f"{problem.task_id}@{digest}"
        job_of[key] = job_id
        if job_id not in jobs:
            jobs[job_id] = ExecJob(job_id=job_id, code=code, tests=tests, entry_point=problem.entry_point,
                                   prelude=problem.prelude, time_limits=limits,
                                   batch_timeout=min(batch_timeout(limits),
                                                     (budgets or {}).get(key, code_timeout) + 5.0),
                                   memory_mb=bench.memory_mb, fail_fast=False, stop_on_timeout=True,
                                   large_output="value")
    raws = run_jobs(executor, list(jobs.values()))
    out = {}
    for key, (problem, code, tests, _) in runs.items():
        if not tests:
            out[key] = CodeRun(loads=True, passes=[])
            continue
        job = jobs[job_of[key]]
        verdict = judge(problem.task_id, 0, job, raws[job.job_id], bench.checker(problem))
        if verdict.status == SANDBOX_ERROR:
            out[key] = CodeRun(loads=True, passes=[False] * len(tests), sandbox_error=verdict.message)
        else:
            out[key] = CodeRun(loads=verdict.status != ERROR, passes=[t.status == "pass" for t in verdict.tests])
    return out


def limits_for(tests: Sequence[TestCase], times: Mapping[str, float], floor: float = 1.0, factor: float = 4.0
               ) -> list[float]:
    """Per test, max(floor, factor x the reference's time) where it is known, else floor."""
    return [max(floor, factor * times.get(t.id, 0.0)) for t in tests]


@dataclass
class Grouped:
    """Advantages of one policy's samples, group by group, with what the step log counts."""

    advantages: list[float]
    zero_variance_groups: int = 0
    sandbox_error_groups: int = 0
    groups: int = 0


def advantages_by_group(rewards: Sequence[Sequence[float]], sandbox_errors: Sequence[bool] | None = None) -> Grouped:
    """GRPO advantages within each group, flattened in order. A group with a sandbox error
    gets zero advantages (its rewards are not what the policy earned) and is counted."""
    out = Grouped([])
    for i, group in enumerate(rewards):
        out.groups += 1
        if sandbox_errors is not None and sandbox_errors[i]:
            out.sandbox_error_groups += 1
            out.advantages += [0.0] * len(group)
            continue
        adv, flat = group_advantages(group)
        out.zero_variance_groups += flat
        out.advantages += adv
    return out


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


def parsed_book(question, sources: list[str]) -> list:
    """The Mistake Book's tests for a question as call tests (ids book/i); a stored test that
    no longer parses is skipped."""
    out = []
    for i, src in enumerate(sources):
        try:
            out.append(parse_assert(src, question.entry_point, f"book/{i}"))
        except AssertParseError:
            continue
    return out
