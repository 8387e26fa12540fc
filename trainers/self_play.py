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
``mistake_book``, ``book_top``, ``book_size``, ``book_history``, ``code_timeout``.
"""

from __future__ import annotations

from dataclasses import dataclass

from codea1.harness.hookspecs import hookimpl
from codea1.trainers.method import log_columns as columns
from codea1.trainers.method.adversarial import (
    AdversarialOptions,
    AdversarialTrainer,
    group_figures,
    reward_figures,
    status_counts,
)
from codea1.trainers.method.layout import SuiteLayout, book_tests
from codea1.trainers.method.rewards import advantages_by_group
from codea1.trainers.method.rollouts import mean, program, prompt_messages, update_stats


@dataclass
class SelfPlayOptions(AdversarialOptions):
    """Code-A1's shared options; self-play has no white-box, validation or TopVar choice."""


class SelfPlayTrainer(AdversarialTrainer):
    name = "self-play"
    description = "one model writes code and black-box tests; every code against every suite (CURE's set-up)"
    Options = SelfPlayOptions
    roles = ("code",)
    log_columns = (columns.REWARD_CODE, columns.REWARD_TEST, columns.REWARD_VALID, columns.REWARD_ADV, columns.PASS_NEW,
                   columns.BOOK_SIZE, columns.BOOK_ADDED, columns.BOOK_REMOVED)
    ablation_keys = columns.REWARD_ABLATIONS

    @classmethod
    def update_sizes(cls, options, batch_size):
        o = options or SelfPlayOptions()
        return {"code": batch_size * (o.m + o.n)}  # the programs and the suites, one update

    def step(self, step, questions):
        o, ctx = self.options, self.context
        B, M, N = len(questions), o.m, o.n
        pairs = [(qi, mi) for qi in range(B) for mi in range(M)]  # every program, question by question

        with ctx.phase("generate", "generate_s"):  # M programs and N black-box suites per question, one policy
            codes = self.generate("code", [prompt_messages("code", q) for q in questions], M, step, "code")
            tests = self.generate("code", [prompt_messages("test-black-box", q, k=o.k) for q in questions], N, step,
                                  "tests")
            programs = {(qi, mi): program(questions[qi], codes[qi][mi].text) for qi, mi in pairs}
        with ctx.phase("validate", "validate_s"):  # every suite on the reference, one batch
            suites = self.validate({(qi, ni): (q, tests[qi][ni].text) for qi, q in enumerate(questions)
                                    for ni in range(N)})
        with ctx.phase("execute", "execute_s"):  # every program against its question's suites and book tests
            book = self.retrieve_book(questions)
            layouts = [SuiteLayout([suites[qi, ni] for ni in range(N)],
                                   book_tests(q, book[qi], self.book.times.get(q.task_id)))
                       for qi, q in enumerate(questions)]
            results = self.run_programs({(qi, mi): (questions[qi], programs[qi, mi], layouts[qi]) for qi, mi in pairs})
        with ctx.phase("update", "update_s"):
            rewards = {(qi, mi): self.rewards(layouts[qi], results[qi, mi], [s.text for s in tests[qi]])
                       for qi, mi in pairs}
            # a suite's R_T is the mean over the M programs it attacked; programs and suites: a group each per question
            code_rewards = [[rewards[qi, mi].code for mi in range(M)] for qi in range(B)]
            suite_rewards = [[mean([rewards[qi, mi].tests[ni] for mi in range(M)]) for ni in range(N)]
                             for qi in range(B)]
            errors = [any(results[qi, mi].sandbox_error for mi in range(M)) for qi in range(B)]
            code_groups, test_groups = advantages_by_group(code_rewards, errors), advantages_by_group(suite_rewards, errors)
            stats = ctx.policies["code"].update(
                [s for row in codes for s in row] + [s for row in tests for s in row],
                [r for row in code_rewards for r in row] + [r for row in suite_rewards for r in row],
                code_groups.advantages + test_groups.advantages)
        book_change = self.update_book(step, [(questions[qi], results[qi, mi]) for qi, mi in pairs])
        return {"questions": [q.task_id for q in questions],
                **reward_figures([r for row in code_rewards for r in row], [r for row in suite_rewards for r in row],
                                 [rewards[key] for key in pairs]),
                "tests": status_counts(suites), "mistake_book": book_change, **group_figures(code_groups, test_groups),
                **update_stats("code", stats)}


@hookimpl
def codea1_register_trainers(registry):
    registry.add(SelfPlayTrainer)
