"""Trainer ``golden-tests``: GRPO on the code policy with the benchmark's own tests as the
reward (the paper's Golden Tests baseline).

One step: for each of the B questions the code policy samples M programs; every program
runs against the question's golden tests in one executor batch (per-test limits from the
reference's times, no early stop); its reward is the share of golden tests it passes
(KodCode: each plain assert is a test, the rest of the pytest module one more; HumanEval+
and MBPP+: each input); advantages are normalised within each question's M programs; one
policy update.

Options: ``m`` (programs per question, 8), ``code_timeout`` (seconds per program and all
its tests, 10), ``allow_in_process_rewards`` (false: golden tests judged inside the program's
own process are left out of the reward and counted in the step log as
``golden_in_process_left_out``; a question left with none gets zero advantage).

A benchmark's special oracle judges the golden tests unless one constant answer passes all
of a question's call tests under it and not under the plain comparison (MBPP+'s sum_div
accepts any 0): then the plain comparison on the reference's answers does
(``rollouts.GoldenTests.checker``; ``golden_plain_checks`` in the step log counts them).
"""

from __future__ import annotations

from dataclasses import dataclass

from codea1.harness.hookspecs import hookimpl
from codea1.harness.training import Trainer
from codea1.trainers.method import log_columns as columns
from codea1.trainers.method.rewards import advantages_by_group
from codea1.trainers.method.rollouts import GoldenTests, mean, program, prompt_messages, run_codes, update_stats


@dataclass
class GoldenTestsOptions:
    m: int = 8
    code_timeout: float = 10.0
    # Script tests that could not be rewritten to report values are decided inside the
    # program's own process: a policy could learn to steer them. Left out of the reward
    # unless this is set.
    allow_in_process_rewards: bool = False

    def __post_init__(self):
        if self.m < 1 or self.code_timeout <= 0:
            raise ValueError("m must be at least 1 and code_timeout positive")


class GoldenTestsTrainer(Trainer):
    name = "golden-tests"
    description = "GRPO on the code policy, reward = pass rate on the benchmark's golden tests"
    Options = GoldenTestsOptions
    roles = ("code",)
    log_columns = (columns.REWARD_CODE, columns.PASS_GOLDEN)
    ablation_keys = {"m": "", "allow_in_process_rewards": ""}

    def __init__(self, options=None, *, context):
        super().__init__(options or GoldenTestsOptions(), context=context)
        self.golden = GoldenTests(context, allow_in_process=self.options.allow_in_process_rewards)

    @classmethod
    def update_sizes(cls, options, batch_size):
        return {"code": batch_size * (options or GoldenTestsOptions()).m}

    def step(self, step, questions):
        o, ctx = self.options, self.context
        bench, executor, policy = ctx.run.bench, ctx.run.executor, ctx.policies["code"]

        with ctx.phase("generate code", "generate_s"):  # M programs per question
            rollouts = policy.generate([prompt_messages("code", q) for q in questions], o.m, ctx.sampling["code"],
                                       ctx.seed_for(step, "code"))
        with ctx.phase("execute", "execute_s"):  # each against its question's golden tests, one batch
            golden = self.golden.of(questions)
            runs = {(qi, mi): (q, program(q, sample.text), *golden[q.task_id])
                    for qi, (q, samples) in enumerate(zip(questions, rollouts)) for mi, sample in enumerate(samples)}
            checkers = {key: self.golden.checker(q) for key, (q, *_) in runs.items()}
            results = run_codes(executor, runs, bench, o.code_timeout, checkers=checkers)
        with ctx.phase("update", "update_s"):  # reward: the share of golden tests passed; a group per question
            rewards = [[mean(results[(qi, mi)].passes) for mi in range(o.m)] for qi in range(len(questions))]
            errors = [any(results[(qi, mi)].sandbox_error for mi in range(o.m)) for qi in range(len(questions))]
            grouped = advantages_by_group(rewards, errors)
            samples = [s for row in rollouts for s in row]
            flat_rewards = [r for row in rewards for r in row]
            stats = policy.update(samples, flat_rewards, grouped.advantages)
        return {"questions": [q.task_id for q in questions], "reward_code": mean(flat_rewards),
                "pass_rate_golden": mean(flat_rewards),
                "solved": sum(r == 1.0 for r in flat_rewards), "programs": len(flat_rewards),
                "loads": sum(r.loads for r in results.values()),
                "golden_in_process_left_out": sum(self.golden.left_out[q.task_id] for q in questions),
                "golden_plain_checks": sum(q.task_id in self.golden.plain for q in questions),
                "zero_variance_groups": grouped.zero_variance_groups, "sandbox_error_groups": grouped.sandbox_error_groups,
                "advantage_abs_mean": mean([abs(a) for a in grouped.advantages]), **update_stats("code", stats)}


@hookimpl
def codea1_register_trainers(registry):
    registry.add(GoldenTestsTrainer)
