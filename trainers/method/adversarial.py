"""What Code-A1 and Self-Play share, piece by piece: their options, sampling, validating the
suites on the reference, the Mistake Book's retrieval and update, running every program
against its layout, the rewards of one program and the figures of the step log. Each
trainer's ``step`` strings the pieces together in the order of its algorithm.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Hashable, Mapping, Sequence

from codea1.harness.records import Problem
from codea1.harness.training import PolicySample, Trainer
from codea1.harness.verdicts.responses import extract_tests
from codea1.trainers.method.layout import ProgramResult, SuiteLayout
from codea1.trainers.method.log_columns import MISTAKE_BOOK_FILES
from codea1.trainers.method.mistake_book import MistakeBook
from codea1.trainers.method.rewards import VARIANTS, Grouped, Rewards, candidate_rewards
from codea1.trainers.method.rollouts import mean, run_codes
from codea1.trainers.method.validation import ValidatedSuite, validate_for_training


@dataclass
class AdversarialOptions:
    """The options code-a1 and self-play share: M programs and N suites of K asserts per
    question, the reward (alpha, variant, non-printable penalty), the Mistake Book (its top
    retrieved, the tests it holds a question, the step files kept) and the time budget of a
    program."""

    m: int = 8
    n: int = 8
    k: int = 8
    alpha: float = 0.5
    reward_variant: str = "authors"
    nonprintable_penalty: bool = True
    mistake_book: bool = True
    book_top: int = 8
    book_size: int = 256
    book_history: int = 10
    code_timeout: float = 10.0

    def __post_init__(self):
        if min(self.m, self.n, self.k, self.book_top, self.book_size, self.book_history) < 1:
            raise ValueError("m, n, k, book_top, book_size and book_history must be at least 1")
        if not 0.0 <= self.alpha <= 1.0:
            raise ValueError(f"alpha must lie in [0, 1], not {self.alpha}")
        if self.reward_variant not in VARIANTS:
            raise ValueError(f"reward_variant must be one of {', '.join(VARIANTS)}, not {self.reward_variant!r}")
        if self.code_timeout <= 0:
            raise ValueError("code_timeout must be positive")


class AdversarialTrainer(Trainer):
    """A trainer whose programs face generated suites and the Mistake Book (code-a1,
    self-play). Its state is the Mistake Book."""

    Options = AdversarialOptions
    options: AdversarialOptions
    step_files = (MISTAKE_BOOK_FILES,)

    def __init__(self, options=None, *, context):
        super().__init__(options or self.Options(), context=context)
        self.book = MistakeBook(limit=self.options.book_size)

    def generate(self, role: str, prompts: list, n: int, step: int, what: str) -> list[list[PolicySample]]:
        """``n`` samples per prompt from the ``role`` policy, seeded by (step, what)."""
        ctx = self.context
        return ctx.policies[role].generate(prompts, n, ctx.sampling[role], ctx.seed_for(step, what))

    def validate(self, responses: Mapping[tuple, tuple[Problem, str]],
                 programs: Mapping[int, Sequence[str]] | None = None) -> dict[tuple, ValidatedSuite]:
        """Each test writer's response (key: question index first) as a suite of K asserts,
        validated in one batch (``check_suites``)."""
        keyed = {_name(key): (q, extract_tests(text, q.entry_point, self.options.k).tests)
                 for key, (q, text) in responses.items()}
        checked = self.check_suites(keyed, programs)
        return {key: checked[_name(key)] for key in responses}

    def check_suites(self, suites: dict[str, tuple[Problem, list[str]]], programs: Mapping[int, Sequence[str]] | None
                     ) -> dict[str, ValidatedSuite]:
        """The suites (keyed "question/.../suite") on their questions' references."""
        return validate_for_training(self.context.run.executor, suites, self.options.k,
                                     memory_mb=self.context.run.bench.memory_mb)

    def retrieve_book(self, questions: Sequence[Problem]) -> list[list[str]]:
        """Each question's top Mistake Book tests (none with ``mistake_book = false``)."""
        o = self.options
        return [self.book.retrieve(q.task_id, o.book_top) if o.mistake_book else [] for q in questions]

    def run_programs(self, runs: Mapping[Hashable, tuple[Problem, str, SuiteLayout]]) -> dict[Hashable, ProgramResult]:
        """Every (question, program, layout) in one executor batch; a program's budget is
        ``code_timeout`` for its generated and book tests, its golden tests' time on top; each
        kind of test judged by its own rule (``layout.LayoutChecker``); a part's timeouts end
        that part, not the program's run."""
        o, run = self.options, self.context.run
        done = run_codes(run.executor, {key: (q, code, layout.tests, layout.limits)
                                        for key, (q, code, layout) in runs.items()}, run.bench, o.code_timeout,
                         {key: o.code_timeout + layout.golden_seconds for key, (_, _, layout) in runs.items()},
                         {key: layout.checker(run.bench, q) for key, (q, _, layout) in runs.items()},
                         {key: layout.part_starts for key, (_, _, layout) in runs.items()})
        return {key: layout.read(done[key]) for key, (_, _, layout) in runs.items()}

    def rewards(self, layout: SuiteLayout, result: ProgramResult, responses: Sequence[str]) -> Rewards:
        """R_C of one program and R_T of each suite it faced."""
        o = self.options
        return candidate_rewards(layout.suite_results(result, o.k, responses), o.alpha, o.reward_variant,
                                 o.nonprintable_penalty)

    def update_book(self, step: int, results: Sequence[tuple[Problem, ProgramResult]]) -> dict[str, int]:
        """The Mistake Book after the step's programs (each in one ``record``), saved as
        DIR/mistake_book/step-N.json (the last ``book_history`` of them kept); its size,
        additions and removals."""
        added = removed = 0
        if self.options.mistake_book:
            for question, result in results:
                change = self.book.record(question.task_id, result)
                added += len(change.added)
                removed += len(change.removed)
            self.book.save(MISTAKE_BOOK_FILES.path(self.context.out, step + 1))
            kept = set(MISTAKE_BOOK_FILES.after(self.context.out, step + 1 - self.options.book_history))
            for old in set(MISTAKE_BOOK_FILES.after(self.context.out, 0)) - kept:  # the last book_history stay
                old.unlink(missing_ok=True)
        return {"size": self.book.size(), "added": added, "removed": removed}

    def save(self, directory):
        self.book.save(directory / "mistake_book.json")

    def load(self, directory):
        self.book = MistakeBook.load(directory / "mistake_book.json", limit=self.options.book_size)


def _name(key: tuple) -> str:
    return "/".join(map(str, key))


def reward_figures(code_rewards: Sequence[float], test_rewards: Sequence[float], rewards: Sequence[Rewards]
                   ) -> dict[str, float]:
    """The step log's mean rewards, and R_T's parts over every (program, suite)."""
    parts = [p for r in rewards for p in r.parts]
    return {"reward_code": mean(code_rewards), "reward_test": mean(test_rewards),
            "reward_valid": mean([p["valid"] for p in parts]), "reward_adv": mean([p["adv"] for p in parts]),
            "pass_rate_new": mean([p["pass_new"] for p in parts])}


def status_counts(suites: Mapping[tuple, ValidatedSuite]) -> dict[str, int]:
    """How many generated tests got each validation status."""
    statuses = [s for v in suites.values() for s in v.status]
    return {status: statuses.count(status) for status in sorted(set(statuses))}


def group_figures(code: Grouped, tests: Grouped) -> dict[str, dict[str, int]]:
    return {"zero_variance_groups": {"code": code.zero_variance_groups, "tests": tests.zero_variance_groups},
            "sandbox_error_groups": {"code": code.sandbox_error_groups, "tests": tests.sandbox_error_groups}}
