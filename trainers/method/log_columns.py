"""The step-log columns the trainers declare to reports (``Trainer.log_columns``), shared by
those that log the same value: each trainer lists the ones its step log has."""

from __future__ import annotations

from codea1.harness.training import LogColumn, StepFigure, StepFiles

REWARDS = StepFigure("rewards", "Rewards over steps")
PASS_RATES = StepFigure("pass_rates", "Pass rates of the programs over steps")
BOOK = StepFigure("mistake_book", "Mistake Book over steps")
SFT_LOSS = StepFigure("sft_loss", "SFT loss over steps")

REWARD_CODE = LogColumn("reward_code", "R_C", "the code policy's reward", REWARDS, "code policy", sweep=True)
REWARD_TEST = LogColumn("reward_test", "R_T", "the test policy's reward", REWARDS, "test policy", sweep=True)
REWARD_VALID = LogColumn("reward_valid", "R_val", "its validity part", REWARDS, "test policy")
REWARD_ADV = LogColumn("reward_adv", "R_adv", "its adversarial part", REWARDS, "test policy")
PASS_NEW = LogColumn("pass_rate_new", "new", "the programs' pass rate on this step's new tests", PASS_RATES,
                     "new tests")
PASS_HIST = LogColumn("pass_rate_hist", "hist", "on the Mistake Book's tests", PASS_RATES, "historical tests")
PASS_GOLDEN = LogColumn("pass_rate_golden", "golden", "on the golden tests", PASS_RATES, "golden tests", sweep=True)
BOOK_SIZE = LogColumn("mistake_book.size", "book", "the Mistake Book's size (tests)", BOOK, "size", fraction=False)
BOOK_ADDED = LogColumn("mistake_book.added", "added", "tests the step added to the book", BOOK, "added / removed",
                       fraction=False, table=False)
BOOK_REMOVED = LogColumn("mistake_book.removed", "removed", "tests the step removed from it", BOOK,
                         "added / removed", fraction=False, table=False)


def loss(role: str) -> LogColumn:
    """An sft run's loss: the mean token cross-entropy of its targets, logged as ROLE_loss."""
    return LogColumn(f"{role}_loss", "loss", "mean token cross-entropy of the targets", SFT_LOSS,
                     "mean token cross-entropy of the targets", name="loss", fraction=False, higher_is_better=False,
                     first=True)


# The options of the reward that set runs apart (code-a1 and self-play share them).
REWARD_ABLATIONS = {"alpha": "weight of R_val in R_T", "reward_variant": "", "mistake_book": "", "m": "", "n": "",
                    "k": ""}
MISTAKE_BOOK_FILES = StepFiles("mistake_book")
