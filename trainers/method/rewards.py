"""The pure math of training: rewards, group advantages and TopVar, no I/O.

Everything here takes counts and pass/fail lists that the trainers compute from executor
verdicts, and returns numbers; tests (tests/trainers/method/test_rewards.py) hit each
function with hand-worked examples.

One test suite (N per candidate code, K asserts each) is summarised by a ``SuiteResult``:
how its K requested asserts fared on the reference (validity) and how the candidate it
attacks fared on the suite's kept tests and on the question's Mistake Book tests.

Two reward variants (``reward.variant``):

* "paper": the formulas of the paper (Section 3.4). Pass_new = passed / kept tests of the
  suite; Pass_hist = passed / Mistake Book tests.
  R_C = 1/2 (Pass_hist + mean_n Pass_new) if the book has tests, else mean_n Pass_new (the
  mean over suites with kept tests, see below);
  R_val = valid / K; R_adv = 1/2 (Pass_hist - Pass_new + 1) if the book has tests, else
  1 - Pass_new; R_T = alpha R_val + (1 - alpha) R_adv. One departure: a suite with no
  kept tests gets R_adv = 0 (so R_T = 0, as R_val is 0 too), the authors' final_attack for
  G = 0. The paper's formula would read Pass_new = 0 there and pay R_adv = 1 (1/2 (Pass_hist
  + 1) with a book): a suite that tests nothing would earn as much as a valid suite the code
  passes (0.5 at alpha = 0.5), and at alpha = 0 the highest reward there is (1): writing
  nothing that runs would be a safe bet for the test policy.
* "authors" (the default): what the authors' released code computes. G = unique tests that
  execute on the reference (valid + corrected), I = invalid ones (unparseable, duplicate,
  raised on the reference, wrong answer; missing asserts count here too);
  valid_ratio = clip(min(G/K, 1 - I/K), 0, 1); gen_pass = passed / G; gen_fail = failed
  kept tests / K; att_pass = passed / book tests. With both sources: final_pass =
  (att_pass + gen_pass) / 2 and final_attack = (gen_fail - (1 - att_pass) + 1) / 2; book
  only: final_pass = att_pass, final_attack = 0; generated only: final_pass = gen_pass,
  final_attack = gen_fail; neither: 0 and 0. R_C = mean_n final_pass;
  R_T = alpha valid_ratio + (1 - alpha) final_attack when the candidate code loads, else 0.

R_C is a mean over the suites that have kept tests: a suite with none (empty, unparseable,
every assert raising on the reference) says nothing about the code and is left out, in both
variants; when no suite has any, R_C is the book's part alone (Pass_hist, att_pass), or 0
without a book: then nothing judged the program (``Rewards.evidence`` is false), and its
advantage is 0, outside its group's mean and spread (``advantages_by_group``).

Tests that did not run on the candidate (``kept_not_run``, ``book_not_run``: its budget
ran out after timeouts) are the code's doing, not the tests': for the test reward (R_adv,
final_attack) they count as neither passed nor failed (the rates are over the tests that
ran, ``kept_ran`` / ``book_ran``, and a source with none that ran is absent: no evidence, no
attack); for the code reward (R_C, final_pass) they count as not passed, so that hanging
or ending early never raises a program's pass rate. A test that timed out ran, and failed.

What follows from the definitions, not from a flaw to fix: in the "paper" variant R_adv = 1 -
Pass_new is a share of the suite's kept tests, so a suite of one test that finds the bug gets
R_adv = 1 and a suite of K valid tests of which one finds it 1/K; below alpha = 1/2 the first
earns the more R_T (at K = 8, alpha 0.25: 0.78 against 0.34). The "authors" variant counts
gen_fail over K, and there the thorough suite earns more at every alpha.

Both variants subtract the share of non-printable characters in the test response from
R_T (the authors' guard against degenerate outputs); ``nonprintable_penalty = false``
turns it off.
"""

from __future__ import annotations

import math
import unicodedata
from dataclasses import dataclass, field
from typing import Sequence

VARIANTS = ("authors", "paper")
ADVANTAGE_EPS = 1e-6


@dataclass
class SuiteResult:
    """One generated test suite against the reference and its candidate code.

    ``requested``: K. ``valid``: tests valid on the reference (parsed, unique call, ran,
    right answer). ``corrected``: tests whose answer was wrong, kept with the reference's
    answer (invalid for the reward, run against the code). ``kept_passed`` /
    ``kept_failed`` / ``kept_not_run``: the candidate on the kept tests (valid + corrected).
    ``book_passed`` / ``book_total`` / ``book_not_run``: the candidate on the question's
    Mistake Book tests. ``code_loads``: the candidate defines cleanly. ``response``: the test
    writer's text (for the penalty)."""

    requested: int
    valid: int
    corrected: int = 0
    kept_passed: int = 0
    kept_failed: int = 0
    book_passed: int = 0
    book_total: int = 0
    code_loads: bool = True
    response: str = ""
    kept_not_run: int = 0
    book_not_run: int = 0

    @property
    def kept(self) -> int:
        return self.valid + self.corrected

    @property
    def kept_ran(self) -> int:
        return self.kept - self.kept_not_run

    @property
    def book_ran(self) -> int:
        return self.book_total - self.book_not_run

    @property
    def invalid(self) -> int:
        """Unparseable, duplicate, raised on the reference, wrong answer (corrected or not),
        or missing: everything requested that is not valid."""
        return self.requested - self.valid

    def check(self) -> None:
        if self.requested < 1:
            raise ValueError("a suite requests at least one test (K >= 1)")
        if not 0 <= self.valid + self.corrected <= self.requested:
            raise ValueError(f"valid + corrected must lie in [0, K={self.requested}]")
        if min(self.kept_passed, self.kept_failed, self.kept_not_run) < 0 or \
                self.kept_passed + self.kept_failed + self.kept_not_run != self.kept:
            raise ValueError(f"kept tests: {self.kept_passed} passed + {self.kept_failed} failed + "
                             f"{self.kept_not_run} not run != {self.kept}")
        if not 0 <= self.book_not_run <= self.book_total or not 0 <= self.book_passed <= self.book_ran:
            raise ValueError("book_passed must lie in [0, book_total - book_not_run]")


@dataclass
class Rewards:
    """The rewards of one candidate code and of its N suites, with their parts (logged)."""

    code: float
    tests: list[float]
    parts: list[dict[str, float]] = field(default_factory=list)
    evidence: bool = True  # some suite kept a test, or the book had tests: R_C says something


def nonprintable_ratio(text: str) -> float:
    """Share of characters that are neither printable nor ordinary whitespace."""
    if not text:
        return 0.0
    bad = sum(1 for ch in text if ch not in "\n\r\t" and not ch.isprintable()
              and unicodedata.category(ch) != "Zs")
    return bad / len(text)


def _paper(s: SuiteResult, alpha: float) -> tuple[float, float, dict]:
    """(code pass of this suite, test reward, parts) by the paper's formulas."""
    pass_new = s.kept_passed / s.kept_ran if s.kept_ran else 0.0
    has_book = s.book_ran > 0
    pass_hist = s.book_passed / s.book_ran if has_book else 0.0
    r_val = s.valid / s.requested
    if not s.kept_ran:  # nothing ran against the code: no attack (the authors' G = 0), see the docstring
        r_adv = 0.0
    elif has_book:
        r_adv = 0.5 * (pass_hist - pass_new + 1)
    else:
        r_adv = 1 - pass_new
    code_new = s.kept_passed / s.kept if s.kept else 0.0  # the code's side: a test it did not reach, not passed
    code_hist = s.book_passed / s.book_total if s.book_total else 0.0
    return code_new, alpha * r_val + (1 - alpha) * r_adv, {"pass_new": pass_new, "pass_hist": pass_hist,
                                                           "code_hist": code_hist, "valid": r_val, "adv": r_adv}


def _authors(s: SuiteResult, alpha: float) -> tuple[float, float, dict]:
    """(final_pass, test reward, parts) as the authors' reward code computes them."""
    k = s.requested
    g = s.kept  # unique tests that execute on the reference
    invalid = s.invalid
    valid_ratio = min(max(min(g / k, 1 - invalid / k), 0.0), 1.0)
    ran, book_ran = s.kept_ran, s.book_ran
    gen_pass = s.kept_passed / ran if ran else 0.0
    gen_fail = s.kept_failed / k
    att_pass = s.book_passed / book_ran if book_ran else 0.0
    if ran and book_ran:
        final_attack = (gen_fail - (1 - att_pass) + 1) / 2
    elif ran:
        final_attack = gen_fail
    else:
        final_attack = 0.0
    # The code's side counts the tests it did not reach as not passed (see the docstring).
    code_gen = s.kept_passed / g if g else 0.0
    code_att = s.book_passed / s.book_total if s.book_total else 0.0
    if g and s.book_total:
        final_pass = (code_att + code_gen) / 2
    elif s.book_total:
        final_pass = code_att
    elif g:
        final_pass = code_gen
    else:
        final_pass = 0.0
    test = alpha * valid_ratio + (1 - alpha) * final_attack if s.code_loads else 0.0
    return final_pass, test, {"pass_new": gen_pass, "pass_hist": att_pass, "valid": valid_ratio,
                              "adv": final_attack, "gen_fail": gen_fail}


def candidate_rewards(suites: Sequence[SuiteResult], alpha: float = 0.5, variant: str = "authors",
                      nonprintable_penalty: bool = True) -> Rewards:
    """R_C of one candidate code and R_T of each of its N suites."""
    if variant not in VARIANTS:
        raise ValueError(f"reward variant {variant!r}: expected one of {', '.join(VARIANTS)}")
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha {alpha}: expected a value in [0, 1]")
    if not suites:
        raise ValueError("a candidate needs at least one suite")
    passes, tests, parts = [], [], []
    for s in suites:
        s.check()
        code_pass, test, part = (_authors if variant == "authors" else _paper)(s, alpha)
        penalty = nonprintable_ratio(s.response) if nonprintable_penalty else 0.0
        passes.append(code_pass)
        tests.append(test - penalty)
        parts.append({**part, "penalty": penalty})
    # A suite with no kept test says nothing about the code: it is left out of the mean (a
    # right program must not lose half its reward to one empty or all-error suite).
    informative = [p for p, s in zip(passes, suites) if s.kept]
    book = suites[0].book_total > 0
    if variant == "paper":
        code_hist = parts[0]["code_hist"]
        if informative:
            mean_new = sum(informative) / len(informative)
            code = 0.5 * (code_hist + mean_new) if book else mean_new
        else:
            code = code_hist if book else 0.0
    else:  # each suite's final_pass already holds the book's part; with no kept test, the book's alone
        code = sum(informative) / len(informative) if informative else passes[0]
    return Rewards(code, tests, parts, evidence=bool(informative) or book)


def group_advantages(rewards: Sequence[float], eps: float = ADVANTAGE_EPS) -> tuple[list[float], bool]:
    """GRPO: (R - mean) / (std + eps) within one group, std the unbiased sample standard
    deviation (verl's and OpenRLHF's group normalisation). Returns the advantages and whether
    the group had zero variance (all advantages exactly 0: no signal, counted by the
    trainers). A group of one has no variance."""
    n = len(rewards)
    if n == 0:
        return [], True
    mean = sum(rewards) / n
    if n == 1 or all(r == rewards[0] for r in rewards):
        return [0.0] * n, True
    std = math.sqrt(sum((r - mean) ** 2 for r in rewards) / (n - 1))
    return [(r - mean) / (std + eps) for r in rewards], False


def topvar(groups: Sequence[Sequence[float]], keep: int) -> list[int]:
    """TopVar: the indices of the ``keep`` groups whose rewards have the largest population
    standard deviation (the paper's sigma_m, 1/N), in index order; ties go to the lower
    index."""
    if keep < 0:
        raise ValueError("TopVar keeps a non-negative number of groups")
    ranked = sorted(range(len(groups)), key=lambda m: (-population_std(groups[m]), m))
    return sorted(ranked[:keep])


def population_std(values: Sequence[float]) -> float:
    """sqrt(1/N sum (v - mean)^2): the paper's sigma_m."""
    if not values:
        return 0.0
    mean = sum(values) / len(values)
    return math.sqrt(sum((v - mean) ** 2 for v in values) / len(values))


@dataclass
class Grouped:
    """Advantages of one policy's samples, group by group, with what the step log counts."""

    advantages: list[float]
    zero_variance_groups: int = 0
    sandbox_error_groups: int = 0
    groups: int = 0


def advantages_by_group(rewards: Sequence[Sequence[float]], sandbox_errors: Sequence[bool] | None = None,
                        evidence: Sequence[Sequence[bool]] | None = None) -> Grouped:
    """GRPO advantages within each group, flattened in order. A group with a sandbox error
    gets zero advantages (its rewards are not what the policy earned) and is counted. A
    sample without evidence (``evidence[i][j]`` false: nothing judged it) gets advantage 0 and
    is left out of its group's mean and spread."""
    out = Grouped([])
    for i, group in enumerate(rewards):
        out.groups += 1
        if sandbox_errors is not None and sandbox_errors[i]:
            out.sandbox_error_groups += 1
            out.advantages += [0.0] * len(group)
            continue
        judged = evidence[i] if evidence is not None else [True] * len(group)
        adv, flat = group_advantages([r for r, e in zip(group, judged) if e])
        out.zero_variance_groups += flat
        scored = iter(adv)
        out.advantages += [next(scored) if e else 0.0 for e in judged]
    return out
