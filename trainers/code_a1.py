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
5. rewards (``method.rewards``: variant "authors" by default, or "paper"; alpha; the
   non-printable penalty): R_C per program, R_T per suite;
6. advantages: the M programs of a question are one group; the N suites of a program are one
   group, and TopVar keeps the ``topvar`` groups (M / N by default, so that l x N = M) with
   the largest reward spread for the test policy; a group touched by a sandbox error gets
   zero advantages and is counted; a program that nothing judged (no kept test in any of its
   suites, no book test) gets advantage 0, outside its group's mean and spread;
7. both policies are updated;
8. the Mistake Book is updated (each loading program: its failed kept tests +1, its passed
   book tests -1; a test that timed out or did not run changes nothing) and saved as
   DIR/mistake_book/step-N.json.

A program runs each distinct call of its suites, book and golden tests once, judged against
each appearance's answer; a timeout fails only the test that timed out (and its repeats):
the tests after it run in a fresh job (``method.rollouts.run_codes``); a part's (suite's,
book's) second timeout leaves the rest of that part unrun, not the parts after it (a
program that has passed no test yet gets one continuation only); the tests the program's
budget does not reach are not run, counted neither passed nor failed.

Options: ``m``, ``n``, ``k``, ``alpha``, ``reward_variant``, ``nonprintable_penalty``,
``topvar`` (0 = M // N), ``mistake_book``, ``book_top``, ``book_size``, ``book_history``, ``referable_code``,
``predicted_answer``, ``validation`` (reference|consensus), ``code_timeout``.
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
from codea1.trainers.method.consensus import validate_by_consensus
from codea1.trainers.method.layout import SuiteLayout, book_tests
from codea1.trainers.method.rewards import advantages_by_group, population_std, topvar
from codea1.trainers.method.rollouts import GoldenTests, mean, program, prompt_messages, update_stats
from codea1.trainers.method.validation import VALID, WRONG


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


class CodeA1Trainer(AdversarialTrainer):
    name = "code-a1"
    description = "Code-A1: a code policy and a white-box test policy trained against each other (GRPO, Mistake Book)"
    Options = CodeA1Options
    roles = ("code", "tests")
    log_columns = (columns.REWARD_CODE, columns.REWARD_TEST, columns.REWARD_VALID, columns.REWARD_ADV, columns.PASS_NEW,
                   columns.PASS_HIST, columns.PASS_GOLDEN, columns.BOOK_SIZE, columns.BOOK_ADDED, columns.BOOK_REMOVED)
    ablation_keys = {**columns.REWARD_ABLATIONS, "referable_code": "", "predicted_answer": "", "validation": "",
                     "topvar": ""}

    def __init__(self, options=None, *, context):
        super().__init__(options, context=context)
        self.golden = GoldenTests(context)
        self.disputed = 0  # Mistake Book tests the consensus no longer backs, this step

    def step(self, step, questions):
        o, ctx = self.options, self.context
        B, M, N = len(questions), o.m, o.n
        pairs = [(qi, mi) for qi in range(B) for mi in range(M)]  # every program, question by question

        with ctx.phase("generate code", "generate_code_s"):  # 1. M programs per question
            codes = self.generate("code", [prompt_messages("code", q) for q in questions], M, step, "code")
            programs = {(qi, mi): program(questions[qi], codes[qi][mi].text) for qi, mi in pairs}
        with ctx.phase("generate tests", "generate_tests_s"):  # 2. N suites per program; white-box: it sees it
            prompt = "test-white-box" if o.referable_code else "test-black-box"
            tests = dict(zip(pairs, self.generate(
                "tests", [prompt_messages(prompt, questions[qi], k=o.k, code=programs[qi, mi]) for qi, mi in pairs],
                N, step, "tests")))
        with ctx.phase("validate", "validate_s"):  # 3. every suite on the reference, one batch
            suites = self.validate({(qi, mi, ni): (questions[qi], tests[qi, mi][ni].text)
                                    for qi, mi in pairs for ni in range(N)},
                                   {qi: [programs[qi, mi] for mi in range(M)] for qi in range(B)})
        with ctx.phase("execute", "execute_s"):  # 4. each program: its suites' kept tests, the book, the golden
            book = self.retrieve_book(questions)
            golden = self.golden.of(questions)
            book_parsed = [book_tests(q, book[qi], self.book.times.get(q.task_id))  # once per question
                           for qi, q in enumerate(questions)]
            layouts = {(qi, mi): SuiteLayout([suites[qi, mi, ni] for ni in range(N)], book_parsed[qi],
                                             golden[questions[qi].task_id]) for qi, mi in pairs}
            results = self.run_programs({key: (questions[key[0]], programs[key], layouts[key]) for key in pairs})
        with ctx.phase("rewards"):  # 5. R_C per program, R_T per suite
            rewards = {key: self.rewards(layouts[key], results[key], [s.text for s in tests[key]]) for key in pairs}
            # 6. advantages: a question's M programs are one group; a program's N suites are one, of which
            # TopVar keeps the groups_kept with the widest spread of rewards per question
            code_groups = advantages_by_group([[rewards[qi, mi].code for mi in range(M)] for qi in range(B)],
                                              [any(results[qi, mi].sandbox_error for mi in range(M)) for qi in range(B)],
                                              [[rewards[qi, mi].evidence for mi in range(M)] for qi in range(B)])
            kept = [(qi, mi) for qi in range(B) for mi in topvar([rewards[qi, m].tests for m in range(M)], o.groups_kept)]
            test_groups = advantages_by_group([rewards[key].tests for key in kept],
                                              [bool(results[key].sandbox_error) for key in kept])
        with ctx.phase("update", "update_s"):  # 7. both policies (at once where their backends can)
            stats = ctx.update({"code": ([codes[qi][mi] for qi, mi in pairs], [rewards[key].code for key in pairs],
                                         code_groups.advantages),
                                "tests": ([s for key in kept for s in tests[key]],
                                          [r for key in kept for r in rewards[key].tests], test_groups.advantages)})
        book_change = self.update_book(step, [(questions[qi], results[qi, mi]) for qi, mi in pairs])  # 8.
        if o.validation == "consensus":
            book_change["disputed"], self.disputed = self.disputed, 0
        return {"questions": [q.task_id for q in questions],
                **reward_figures([rewards[key].code for key in pairs], [r for key in pairs for r in rewards[key].tests],
                                 [rewards[key] for key in pairs]),
                **self.pass_rates(results, pairs), "tests": status_counts(suites),
                "code_loads": sum(r.loads for r in results.values()),
                "mistake_book": {**book_change, "retrieved": sum(len(b) for b in book)},
                "topvar": {"groups": len(kept), "std_kept": mean([population_std(rewards[key].tests) for key in kept]),
                           "std_all": mean([population_std(rewards[key].tests) for key in pairs])},
                **group_figures(code_groups, test_groups),
                "advantage_abs_mean": {"code": mean([abs(a) for a in code_groups.advantages]),
                                       "tests": mean([abs(a) for a in test_groups.advantages])},
                **update_stats("code", stats["code"]), **update_stats("tests", stats["tests"])}

    @classmethod
    def update_sizes(cls, options, batch_size):
        o = options or CodeA1Options()
        return {"code": batch_size * o.m, "tests": batch_size * min(o.groups_kept, o.m) * o.n}

    def check_suites(self, suites, programs):
        """Step 3 by the reference or, with ``validation = "consensus"``, by agreement among
        the question's programs; the Mistake Book's tests are voted on again, and those the
        vote no longer backs leave the book (counted as "disputed")."""
        if self.options.validation == "reference":
            return super().check_suites(suites, programs)
        questions = {int(key.split("/")[0]): problem for key, (problem, _) in suites.items()}
        book = {qi: list(self.book.questions.get(q.task_id, {})) for qi, q in questions.items()}
        validated, disputed = validate_by_consensus(self.context.run.executor, suites, self.options.k, programs,
                                                    self.context.run.bench, book)
        for qi, sources in disputed.items():
            self.disputed += len(self.book.remove(questions[qi].task_id, sources))
        return validated

    def validate(self, responses, programs):
        """Without ``predicted_answer`` every test that ran is valid with the reference's answer."""
        validated = super().validate(responses, programs)
        if not self.options.predicted_answer:  # answers are not the writer's: any test that ran is valid
            for v in validated.values():
                v.status = [VALID if s == WRONG else s for s in v.status]
        return validated

    @staticmethod
    def pass_rates(results, pairs) -> dict[str, float | None]:
        """The programs' pass rate on the Mistake Book's tests that ran (None: none ran) and
        on the golden tests (logged, never rewarded)."""
        hist = [r.book_pass_rate for r in results.values() if r.book_pass_rate is not None]
        return {"pass_rate_hist": mean(hist) if hist else None,
                "pass_rate_golden": mean([results[key].golden_pass_rate for key in pairs])}


@hookimpl
def codea1_register_trainers(registry):
    registry.add(CodeA1Trainer)
