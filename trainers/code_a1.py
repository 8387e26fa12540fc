"""Trainer ``code-a1``: the paper's dual-policy adversarial training of a Code LLM and a Test
LLM (Algorithm 1), step by step as it reads below.

Per step, for each of the B questions:

1. the code policy samples M programs;
2. the test policy samples N suites of K asserts for each program, from the white-box prompt
   (the question and the program as "Buggy Code"; the black-box prompt with
   ``referable_code = false``);
3. every suite is validated on the reference in one executor batch: a test is valid when it
   parses, its call is unique in its suite, it runs and its answer is right; a wrong answer is
   corrected to the reference's and kept; the rest is dropped (``validation = "consensus"``:
   the answer comes from agreement among the M programs instead, for data without
   references; ``predicted_answer = false``: answers are not judged, every test that runs
   is valid with the reference's answer);
4. each program runs, in one executor batch, against the kept tests of its N suites, the
   question's Mistake Book tests (top 8 by frequency) and the golden tests (for the log);
5. rewards (``harness.rewards``: variant "authors" by default, or "paper"; alpha; the
   non-printable penalty): R_C per program, R_T per suite;
6. advantages: the M programs of a question are one group; the N suites of a program are one
   group, and TopVar keeps the ``topvar`` groups (M / N by default, so that l x N = M) with
   the largest reward spread for the test policy; a group touched by a sandbox error gets
   zero advantages and is counted;
7. both policies are updated;
8. the Mistake Book is updated (each loading program: its failed kept tests +1, its passed
   book tests -1; a test that timed out or did not run changes nothing) and saved as
   DIR/mistake_book/step-N.json.

A timeout fails only the test that timed out: the tests after it run again in a fresh job
(``rollouts.run_codes``), and those the program's budget does not reach are not run,
counted neither passed nor failed.

Options: ``m``, ``n``, ``k``, ``alpha``, ``reward_variant``, ``nonprintable_penalty``,
``topvar`` (0 = M // N), ``mistake_book``, ``book_top``, ``referable_code``,
``predicted_answer``, ``validation`` (reference|consensus), ``code_timeout``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from codea1.harness.hookspecs import hookimpl
from codea1.harness.mistake_book import MistakeBook
from codea1.harness.parsing import extract_tests
from codea1.harness.rewards import SuiteResult, candidate_rewards, population_std, topvar
from codea1.harness.training import Trainer
from codea1.harness.validity import VALID, WRONG, validate_for_training
from codea1.trainers.consensus import validate_by_consensus
from codea1.trainers.rollouts import (
    AdversarialOptions,
    GoldenTests,
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
class CodeA1Options(AdversarialOptions):
    topvar: int = 0
    referable_code: bool = True
    predicted_answer: bool = True
    validation: str = "reference"

    def __post_init__(self):
        super().__post_init__()
        if self.topvar < 0:
            raise ValueError("topvar must be at least 0")
        if self.validation not in ("reference", "consensus"):
            raise ValueError(f"validation must be 'reference' or 'consensus', not {self.validation!r}")

    @property
    def groups_kept(self) -> int:
        return self.topvar or max(1, self.m // self.n)


class CodeA1Trainer(Trainer):
    name = "code-a1"
    description = "Code-A1: a code policy and a white-box test policy trained against each other (GRPO, Mistake Book)"
    Options = CodeA1Options
    roles = ("code", "tests")

    def __init__(self, options=None, *, context):
        super().__init__(options or CodeA1Options(), context=context)
        self.book = MistakeBook()
        self.golden = GoldenTests(context)

    def step(self, step, questions):
        o, ctx = self.options, self.context
        bench, executor = ctx.run.bench, ctx.run.executor
        B, M, N, K = len(questions), o.m, o.n, o.k
        timing = {}

        # 1. The code policy: M programs per question.
        t0 = time.perf_counter()
        ctx.phase("generate code")
        codes = ctx.policies["code"].generate([prompt_messages("code", q) for q in questions], M, ctx.sampling["code"],
                                              ctx.seed_for(step, "code"))
        programs = [[program(q, s.text) for s in row] for q, row in zip(questions, codes)]
        timing["generate_code_s"] = time.perf_counter() - t0

        # 2. The test policy: N suites of K asserts per program (white-box: it sees the program).
        t0 = time.perf_counter()
        ctx.phase("generate tests")
        prompt = "test-white-box" if o.referable_code else "test-black-box"
        tests = ctx.policies["tests"].generate(
            [prompt_messages(prompt, q, k=K, code=programs[qi][mi]) for qi, q in enumerate(questions) for mi in range(M)],
            N, ctx.sampling["tests"], ctx.seed_for(step, "tests"))
        suites = {(qi, mi, ni): extract_tests(tests[qi * M + mi][ni].text, q.entry_point, K).tests
                  for qi, q in enumerate(questions) for mi in range(M) for ni in range(N)}
        timing["generate_tests_s"] = time.perf_counter() - t0

        # 3. Validation, all suites in one batch.
        t0 = time.perf_counter()
        ctx.phase("validate")
        keyed = {f"{qi}/{mi}/{ni}": (questions[qi], suite) for (qi, mi, ni), suite in suites.items()}
        if o.validation == "reference":
            checked = validate_for_training(executor, keyed, K, memory_mb=bench.memory_mb)
        else:
            checked = validate_by_consensus(executor, keyed, K, {qi: programs[qi] for qi in range(B)}, bench)
        validated = {key: checked[f"{key[0]}/{key[1]}/{key[2]}"] for key in suites}
        if not o.predicted_answer:  # answers are not the writer's: any test that ran is valid
            for v in validated.values():
                v.status = [VALID if s == WRONG else s for s in v.status]
        timing["validate_s"] = time.perf_counter() - t0

        # 4. Each program against its suites' kept tests, the Mistake Book and the golden tests.
        t0 = time.perf_counter()
        ctx.phase("execute")
        book = {qi: self.book.retrieve(q.task_id, o.book_top) if o.mistake_book else [] for qi, q in enumerate(questions)}
        book_tests = {qi: parsed_book(q, book[qi]) for qi, q in enumerate(questions)}
        golden = self.golden.of(questions)
        runs, layout, budgets = {}, {}, {}
        for qi, q in enumerate(questions):
            golden_tests, golden_limits = golden[q.task_id]
            for mi in range(M):
                run_tests, limits, spans = [], [], []
                for ni in range(N):
                    v = validated[(qi, mi, ni)]
                    spans.append((len(run_tests), len(run_tests) + len(v.kept)))
                    run_tests += [replace_id(t, f"s{ni}/{j}") for j, t in enumerate(v.kept)]
                    limits += [max(1.0, 4 * t) for t in v.kept_times]
                book_span = (len(run_tests), len(run_tests) + len(book_tests[qi]))
                run_tests += book_tests[qi]
                limits += limits_for(book_tests[qi], {}, floor=2.0)
                golden_span = (len(run_tests), len(run_tests) + len(golden_tests))
                run_tests += golden_tests
                limits += golden_limits
                runs[(qi, mi)] = (q, programs[qi][mi], run_tests, limits)
                layout[(qi, mi)] = (spans, book_span, golden_span)
                # The paper's 10 s per program covers its generated and book tests; the golden
                # tests (logged, never rewarded) get their own time on top.
                budgets[(qi, mi)] = o.code_timeout + sum(golden_limits)
        results = run_codes(executor, runs, bench, o.code_timeout, budgets)
        timing["execute_s"] = time.perf_counter() - t0

        # 5. Rewards.
        ctx.phase("rewards")
        code_rewards, test_rewards, parts, golden_pass, hist_pass = [], [], [], [], []
        for qi in range(B):
            row_code, row_tests = [], []
            for mi in range(M):
                r = results[(qi, mi)]
                spans, (b0, b1), (g0, g1) = layout[(qi, mi)]
                suite_results = []
                book_passed, _, book_not_run = r.counts(b0, b1)
                for ni, (s0, s1) in enumerate(spans):
                    v = validated[(qi, mi, ni)]
                    passed, failed, not_run = r.counts(s0, s1)
                    suite_results.append(SuiteResult(
                        requested=K, valid=v.count(VALID), corrected=len(v.kept) - v.count(VALID),
                        kept_passed=passed, kept_failed=failed, kept_not_run=not_run, book_passed=book_passed,
                        book_total=b1 - b0, book_not_run=book_not_run, code_loads=r.loads,
                        response=tests[qi * M + mi][ni].text))
                rewards = candidate_rewards(suite_results, o.alpha, o.reward_variant, o.nonprintable_penalty)
                row_code.append(rewards.code)
                row_tests.append(rewards.tests)
                parts += rewards.parts
                golden_pass.append(mean(r.passes[g0:g1]) if g1 > g0 else 0.0)
                if b1 - b0 - book_not_run > 0:  # book tests that ran
                    hist_pass.append(book_passed / (b1 - b0 - book_not_run))
            code_rewards.append(row_code)
            test_rewards.append(row_tests)

        # 6. Advantages: programs per question; TopVar's suite groups per question.
        code_errors = [any(results[(qi, mi)].sandbox_error for mi in range(M)) for qi in range(B)]
        code_groups = advantages_by_group(code_rewards, code_errors)
        kept_groups = [(qi, mi) for qi in range(B) for mi in topvar(test_rewards[qi], o.groups_kept)]
        test_groups = advantages_by_group([test_rewards[qi][mi] for qi, mi in kept_groups],
                                          [bool(results[(qi, mi)].sandbox_error) for qi, mi in kept_groups])

        # 7. Updates.
        t0 = time.perf_counter()
        ctx.phase("update")
        code_stats = ctx.policies["code"].update([s for row in codes for s in row],
                                                 [r for row in code_rewards for r in row], code_groups.advantages)
        test_stats = ctx.policies["tests"].update([tests[qi * M + mi][ni] for qi, mi in kept_groups for ni in range(N)],
                                                  [r for qi, mi in kept_groups for r in test_rewards[qi][mi]],
                                                  test_groups.advantages)
        timing["update_s"] = time.perf_counter() - t0

        # 8. The Mistake Book.
        added = removed = 0
        if o.mistake_book:
            for qi, q in enumerate(questions):
                for mi in range(M):
                    r = results[(qi, mi)]
                    if not r.loads or r.sandbox_error:
                        continue
                    spans, (b0, b1), _ = layout[(qi, mi)]
                    new = [(src, r.statuses[s0 + j]) for ni, (s0, _) in enumerate(spans)
                           for j, src in enumerate(validated[(qi, mi, ni)].kept_sources)]
                    change = self.book.update_from_statuses(q.task_id, new, zip(book[qi], r.statuses[b0:b1]))
                    added += len(change.added)
                    removed += len(change.removed)
            self.book.save(ctx.out / "mistake_book" / f"step-{step + 1:06d}.json")

        statuses = [s for v in validated.values() for s in v.status]
        flat_tests = [r for row in test_rewards for group in row for r in group]
        return {
            "questions": [q.task_id for q in questions],
            "reward_code": mean([r for row in code_rewards for r in row]), "reward_test": mean(flat_tests),
            "reward_valid": mean([p["valid"] for p in parts]), "reward_adv": mean([p["adv"] for p in parts]),
            "pass_rate_new": mean([p["pass_new"] for p in parts]),
            "pass_rate_hist": mean(hist_pass) if hist_pass else None,
            "pass_rate_golden": mean(golden_pass),
            "tests": {status: statuses.count(status) for status in sorted(set(statuses))},
            "code_loads": sum(r.loads for r in results.values()),
            "mistake_book": {"size": self.book.size(), "added": added, "removed": removed,
                             "retrieved": sum(len(b) for b in book.values())},
            "topvar": {"groups": len(kept_groups), "std_kept": mean([population_std(test_rewards[qi][mi])
                                                                    for qi, mi in kept_groups]),
                       "std_all": mean([population_std(g) for row in test_rewards for g in row])},
            "zero_variance_groups": {"code": code_groups.zero_variance_groups, "tests": test_groups.zero_variance_groups},
            "sandbox_error_groups": {"code": code_groups.sandbox_error_groups, "tests": test_groups.sandbox_error_groups},
            "advantage_abs_mean": {"code": mean([abs(a) for a in code_groups.advantages]),
                                   "tests": mean([abs(a) for a in test_groups.advantages])},
            **update_stats("code", code_stats), **update_stats("tests", test_stats),
            "timing": {k: round(v, 3) for k, v in timing.items()},
        }

    def save(self, directory):
        self.book.save(directory / "mistake_book.json")

    def load(self, directory):
        self.book = MistakeBook.load(directory / "mistake_book.json")


@hookimpl
def codea1_register_trainers(registry):
    registry.add(CodeA1Trainer)
