"""Trainer ``self-play``: one model writes both the code and the tests (the paper's Self-Play
baseline, CURE's set-up), trained with the Code-A1 rewards.

Per step, for each of the B questions: the policy samples M programs (the code prompt) and N
suites of K asserts from the black-box prompt (the question only: a model that saw its own
code could write tests that code passes); the suites are validated on the reference like
Code-A1's; every program runs against every suite's kept tests and the Mistake Book's tests
(one executor batch); rewards are Code-A1's (variant, alpha, penalty): R_C of a program over
the N suites, and a suite's R_T is the mean over the M programs of its R_T against each; the
M programs are one group and the N suites another; one update of the one policy with both.
The Mistake Book is updated as in Code-A1.

Options: ``m`` (8), ``n`` (8), ``k``, ``alpha``, ``reward_variant``, ``nonprintable_penalty``,
``mistake_book``, ``book_top``, ``code_timeout``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from codea1.harness.hookspecs import hookimpl
from codea1.harness.mistake_book import MistakeBook
from codea1.harness.parsing import extract_tests
from codea1.harness.rewards import SuiteResult, candidate_rewards
from codea1.harness.training import Trainer
from codea1.harness.validity import VALID, validate_for_training
from codea1.trainers.rollouts import (
    AdversarialOptions,
    advantages_by_group,
    limits_for,
    mean,
    parsed_book,
    program,
    prompt_messages,
    replace_id,
    run_codes,
    update_stats,
)


@dataclass
class SelfPlayOptions(AdversarialOptions):
    """Code-A1's shared options; self-play has no white-box, validation or TopVar choice."""


class SelfPlayTrainer(Trainer):
    name = "self-play"
    description = "one model writes code and black-box tests; every code against every suite (CURE's set-up)"
    Options = SelfPlayOptions
    roles = ("code",)

    def __init__(self, options=None, *, context):
        super().__init__(options or SelfPlayOptions(), context=context)
        self.book = MistakeBook()

    def step(self, step, questions):
        o, ctx = self.options, self.context
        bench, executor, policy = ctx.run.bench, ctx.run.executor, ctx.policies["code"]
        B, M, N, K = len(questions), o.m, o.n, o.k
        timing = {}

        t0 = time.perf_counter()
        ctx.phase("generate")
        codes = policy.generate([prompt_messages("code", q) for q in questions], M, ctx.sampling["code"],
                                ctx.seed_for(step, "code"))
        tests = policy.generate([prompt_messages("test-black-box", q, k=K) for q in questions], N, ctx.sampling["code"],
                                ctx.seed_for(step, "tests"))
        programs = [[program(q, s.text) for s in row] for q, row in zip(questions, codes)]
        timing["generate_s"] = time.perf_counter() - t0

        t0 = time.perf_counter()
        ctx.phase("validate")
        validated = validate_for_training(
            executor, {f"{qi}/{ni}": (q, extract_tests(tests[qi][ni].text, q.entry_point, K).tests)
                       for qi, q in enumerate(questions) for ni in range(N)}, K, memory_mb=bench.memory_mb)
        timing["validate_s"] = time.perf_counter() - t0

        t0 = time.perf_counter()
        ctx.phase("execute")
        book = {qi: self.book.retrieve(q.task_id, o.book_top) if o.mistake_book else [] for qi, q in enumerate(questions)}
        runs, spans = {}, {}
        for qi, q in enumerate(questions):
            run_tests, limits, span = [], [], []
            for ni in range(N):
                v = validated[f"{qi}/{ni}"]
                span.append((len(run_tests), len(run_tests) + len(v.kept)))
                run_tests += [replace_id(t, f"s{ni}/{j}") for j, t in enumerate(v.kept)]
                limits += [max(1.0, 4 * t) for t in v.kept_times]
            book_tests = parsed_book(q, book[qi])
            span.append((len(run_tests), len(run_tests) + len(book_tests)))
            run_tests += book_tests
            limits += limits_for(book_tests, {}, floor=2.0)
            spans[qi] = span
            for mi in range(M):
                runs[(qi, mi)] = (q, programs[qi][mi], run_tests, limits)
        results = run_codes(executor, runs, bench, o.code_timeout)
        timing["execute_s"] = time.perf_counter() - t0

        ctx.phase("update")
        t0 = time.perf_counter()
        code_rewards, suite_rewards, parts = [], [], []
        for qi in range(B):
            *suite_spans, (b0, b1) = spans[qi]
            per_code = []
            for mi in range(M):
                r = results[(qi, mi)]
                book_passed, _, book_not_run = r.counts(b0, b1)
                per_code.append(candidate_rewards(
                    [SuiteResult(requested=K, valid=validated[f"{qi}/{ni}"].count(VALID),
                                 corrected=len(validated[f"{qi}/{ni}"].kept) - validated[f"{qi}/{ni}"].count(VALID),
                                 **dict(zip(("kept_passed", "kept_failed", "kept_not_run"), r.counts(s0, s1))),
                                 book_passed=book_passed, book_total=b1 - b0, book_not_run=book_not_run,
                                 code_loads=r.loads, response=tests[qi][ni].text)
                     for ni, (s0, s1) in enumerate(suite_spans)],
                    o.alpha, o.reward_variant, o.nonprintable_penalty))
                parts += per_code[-1].parts
            code_rewards.append([c.code for c in per_code])
            suite_rewards.append([mean([c.tests[ni] for c in per_code]) for ni in range(N)])
        errors = [any(results[(qi, mi)].sandbox_error for mi in range(M)) for qi in range(B)]
        code_groups = advantages_by_group(code_rewards, errors)
        test_groups = advantages_by_group(suite_rewards, errors)
        stats = policy.update([s for row in codes for s in row] + [s for row in tests for s in row],
                              [r for row in code_rewards for r in row] + [r for row in suite_rewards for r in row],
                              code_groups.advantages + test_groups.advantages)
        timing["update_s"] = time.perf_counter() - t0

        added = removed = 0
        if o.mistake_book:
            for qi, q in enumerate(questions):
                *suite_spans, (b0, b1) = spans[qi]
                for mi in range(M):
                    r = results[(qi, mi)]
                    if not r.loads or r.sandbox_error:
                        continue
                    new = [(src, r.statuses[s0 + j]) for ni, (s0, _) in enumerate(suite_spans)
                           for j, src in enumerate(validated[f"{qi}/{ni}"].kept_sources)]
                    change = self.book.update_from_statuses(q.task_id, new, zip(book[qi], r.statuses[b0:b1]))
                    added += len(change.added)
                    removed += len(change.removed)
            self.book.save(ctx.out / "mistake_book" / f"step-{step + 1:06d}.json")
        statuses = [s for v in validated.values() for s in v.status]
        return {"questions": [q.task_id for q in questions],
                "reward_code": mean([r for row in code_rewards for r in row]),
                "reward_test": mean([r for row in suite_rewards for r in row]),
                "reward_valid": mean([p["valid"] for p in parts]), "reward_adv": mean([p["adv"] for p in parts]),
                "pass_rate_new": mean([p["pass_new"] for p in parts]),
                "tests": {s: statuses.count(s) for s in sorted(set(statuses))},
                "mistake_book": {"size": self.book.size(), "added": added, "removed": removed},
                "zero_variance_groups": {"code": code_groups.zero_variance_groups, "tests": test_groups.zero_variance_groups},
                "sandbox_error_groups": {"code": code_groups.sandbox_error_groups, "tests": test_groups.sandbox_error_groups},
                **update_stats("code", stats), "timing": {k: round(v, 3) for k, v in timing.items()}}

    def save(self, directory):
        self.book.save(directory / "mistake_book.json")

    def load(self, directory):
        self.book = MistakeBook.load(directory / "mistake_book.json")


@hookimpl
def codea1_register_trainers(registry):
    registry.add(SelfPlayTrainer)
