"""Training rewards, advantages and TopVar on hand-worked examples (trainers/method/rewards.py)."""

from __future__ import annotations

import math

import pytest

from codea1.trainers.method.rewards import (
    SuiteResult,
    advantages_by_group,
    candidate_rewards,
    group_advantages,
    nonprintable_ratio,
    topvar,
)


def suite(valid, corrected=0, passed=0, failed=0, book_passed=0, book_total=0, k=8, loads=True, response=""):
    return SuiteResult(requested=k, valid=valid, corrected=corrected, kept_passed=passed, kept_failed=failed,
                       book_passed=book_passed, book_total=book_total, code_loads=loads, response=response)


# -- the authors' variant ---------------------------------------------------------------------

def test_authors_generated_tests_only():
    # K=8: 6 valid, 1 wrong answer corrected (kept), 1 unparseable. The code passes 5 of 7 kept.
    # G = 7, I = 2: valid_ratio = min(7/8, 1 - 2/8) = 0.75; gen_pass = 5/7; gen_fail = 2/8.
    r = candidate_rewards([suite(6, corrected=1, passed=5, failed=2)], alpha=0.5)
    assert r.code == pytest.approx(5 / 7)
    assert r.tests == [pytest.approx(0.5 * 0.75 + 0.5 * 0.25)]
    assert r.parts[0]["valid"] == pytest.approx(0.75) and r.parts[0]["adv"] == pytest.approx(0.25)


def test_authors_with_book_tests():
    # 8 valid, code passes 6 (fails 2); book: 3 of 4 passed.
    # gen_pass = 6/8, att_pass = 3/4: final_pass = (0.75 + 0.75)/2 = 0.75
    # gen_fail = 2/8: final_attack = (0.25 - (1 - 0.75) + 1)/2 = 0.5
    r = candidate_rewards([suite(8, passed=6, failed=2, book_passed=3, book_total=4)], alpha=0.5)
    assert r.code == pytest.approx(0.75)
    assert r.tests == [pytest.approx(0.5 * 1.0 + 0.5 * 0.5)]


def test_authors_book_only_and_neither():
    # No kept test (all 8 invalid: raised or unparseable), 2 of 2 book tests passed.
    r = candidate_rewards([suite(0, book_passed=2, book_total=2)], alpha=0.5)
    assert r.code == 1.0 and r.tests == [0.0]  # valid_ratio 0, final_attack 0
    r = candidate_rewards([suite(0)], alpha=0.5)
    assert r.code == 0.0 and r.tests == [0.0]


def test_authors_mean_over_suites_and_a_candidate_that_does_not_load():
    suites = [suite(8, passed=8), suite(4, passed=2, failed=2), suite(8, passed=0, failed=8)]
    r = candidate_rewards(suites, alpha=0.5)
    assert r.code == pytest.approx((1 + 0.5 + 0) / 3)
    # valid ratios 1, min(4/8, 1 - 4/8) = 0.5, 1; gen_fail 0, 2/8, 1
    assert r.tests == [pytest.approx(0.5), pytest.approx(0.25 + 0.125), pytest.approx(1.0)]
    broken = candidate_rewards([suite(8, passed=0, failed=8, loads=False)], alpha=0.5)
    assert broken.tests == [0.0]  # a test writer gains nothing from a code that does not load


def test_alpha_weights_validity_against_attack():
    s = [suite(6, corrected=1, passed=5, failed=2)]
    assert candidate_rewards(s, alpha=1.0).tests == [pytest.approx(0.75)]
    assert candidate_rewards(s, alpha=0.0).tests == [pytest.approx(0.25)]
    assert candidate_rewards(s, alpha=0.25).tests == [pytest.approx(0.25 * 0.75 + 0.75 * 0.25)]
    with pytest.raises(ValueError, match="alpha"):
        candidate_rewards(s, alpha=1.5)


# -- the paper's variant ----------------------------------------------------------------------

def test_paper_without_historical_tests():
    # Pass_new = 5/7 (kept tests), R_val = 6/8, R_adv = 1 - 5/7
    r = candidate_rewards([suite(6, corrected=1, passed=5, failed=2)], alpha=0.5, variant="paper")
    assert r.code == pytest.approx(5 / 7)
    assert r.tests == [pytest.approx(0.5 * 6 / 8 + 0.5 * (2 / 7))]


def test_paper_with_historical_tests():
    # Two suites: Pass_new 6/8 and 2/4; Pass_hist 3/4.
    # R_C = 1/2 (3/4 + (0.75 + 0.5)/2) = 0.6875
    # suite 1: R_adv = 1/2 (0.75 - 0.75 + 1) = 0.5, R_val = 1   -> 0.75
    # suite 2: R_adv = 1/2 (0.75 - 0.5 + 1) = 0.625, R_val = 4/8 -> 0.5625
    s = [suite(8, passed=6, failed=2, book_passed=3, book_total=4), suite(4, passed=2, failed=2, book_passed=3,
                                                                          book_total=4)]
    r = candidate_rewards(s, alpha=0.5, variant="paper")
    assert r.code == pytest.approx(0.6875)
    assert r.tests == [pytest.approx(0.75), pytest.approx(0.5625)]


def test_paper_a_suite_with_no_kept_tests_gets_nothing_as_in_the_authors_variant():
    # All 8 asserts invalid (unparseable or raised on the reference): kept = 0, so R_val = 0/8
    # = 0 and, as the authors' final_attack for G = 0, R_adv = 0: R_T = 0.5 x 0 + 0.5 x 0 = 0.
    # (The bare formula would give Pass_new = 0, R_adv = 1 - 0 = 1, R_T = 0.5.) The code's
    # Pass_new for that suite stays 0: R_C = 0.
    empty = candidate_rewards([suite(0)], alpha=0.5, variant="paper")
    assert empty.tests == [0.0] and empty.code == 0.0
    assert empty.tests == candidate_rewards([suite(0)], alpha=0.5).tests  # the authors' 0
    # A valid suite the code passes: R_val = 8/8 = 1, R_adv = 1 - 8/8 = 0: R_T = 0.5, above it.
    assert candidate_rewards([suite(8, passed=8)], alpha=0.5, variant="paper").tests == [0.5]
    # alpha = 0 (attack only): the bare formula's R_adv = 1 would be the highest R_T there is.
    assert candidate_rewards([suite(0)], alpha=0.0, variant="paper").tests == [0.0]


def test_paper_a_suite_with_no_kept_tests_gains_nothing_from_the_book():
    # Book: 1 of 4 passed, so Pass_hist = 1/4. Suite 1 keeps nothing: R_val = 0, R_adv = 0 ->
    # R_T = 0 (the bare formula: R_adv = 1/2 (1/4 - 0 + 1) = 0.625, R_T = 0.3125).
    # Suite 2: 4 valid, the code passes 2: Pass_new = 2/4, R_val = 4/8 = 0.5,
    # R_adv = 1/2 (1/4 - 1/2 + 1) = 0.375 -> R_T = 0.25 + 0.1875 = 0.4375.
    # R_C: suite 1 says nothing about the code and is left out: 1/2 (1/4 + 1/2) = 0.375.
    s = [suite(0, book_passed=1, book_total=4), suite(4, passed=2, failed=2, book_passed=1, book_total=4)]
    r = candidate_rewards(s, alpha=0.5, variant="paper")
    assert r.tests == [0.0, pytest.approx(0.4375)]
    assert r.parts[0]["adv"] == 0.0 and r.parts[0]["valid"] == 0.0
    assert r.code == pytest.approx(0.375)


@pytest.mark.parametrize("variant", ["authors", "paper"])
def test_an_empty_suite_does_not_lower_a_programs_reward(variant):
    # A right program: one suite of 4 valid tests it passes, one suite with nothing kept.
    # Left out of the mean: R_C = 1 (counted as a zero it would be 1/2).
    right = candidate_rewards([suite(4, passed=4), suite(0)], variant=variant)
    assert right.code == 1.0
    # Every suite empty: no evidence from the suites; the book's part alone, or 0 without one.
    assert candidate_rewards([suite(0), suite(0)], variant=variant).code == 0.0
    booked = candidate_rewards([suite(0, book_passed=3, book_total=4)] * 2, variant=variant)
    assert booked.code == pytest.approx(0.75)
    # A partial program (2 of 4) with an empty suite beside it stays below the right one.
    partial = candidate_rewards([suite(4, passed=2, failed=2), suite(0)], variant=variant)
    assert partial.code == pytest.approx(0.5) and partial.code < right.code


def test_unknown_variant_and_inconsistent_counts_are_refused():
    with pytest.raises(ValueError, match="reward variant 'mine'"):
        candidate_rewards([suite(8, passed=8)], variant="mine")
    with pytest.raises(ValueError, match="kept tests"):
        candidate_rewards([suite(8, passed=3)])


# -- the non-printable penalty ----------------------------------------------------------------

def test_nonprintable_characters_are_subtracted():
    assert nonprintable_ratio("assert f(1) == 2\n\tok ") == 0.0
    assert nonprintable_ratio("ab\x00\x01") == 0.5
    assert nonprintable_ratio("") == 0.0
    text = "assert f(1) == 2" + "\x07" * 4  # 4 of 20 characters
    r = candidate_rewards([suite(8, passed=8, response=text)], alpha=1.0)
    assert r.tests == [pytest.approx(1.0 - 0.2)] and r.parts[0]["penalty"] == pytest.approx(0.2)
    assert candidate_rewards([suite(8, passed=8, response=text)], alpha=1.0, nonprintable_penalty=False).tests == [1.0]


# -- advantages and TopVar ----------------------------------------------------------------------

def test_group_advantages_normalise_with_the_sample_std():
    adv, flat = group_advantages([1.0, 0.0, 0.0, 1.0])
    std = math.sqrt(4 * 0.25 / 3)  # unbiased: sum of squares 1.0 over n - 1 = 3
    a = 0.5 / (std + 1e-6)  # about 0.866
    assert not flat and adv == pytest.approx([a, -a, -a, a])


def test_a_zero_variance_group_gets_zero_advantage_and_says_so():
    assert group_advantages([0.5, 0.5, 0.5]) == ([0.0, 0.0, 0.0], True)
    assert group_advantages([0.3]) == ([0.0], True)
    assert group_advantages([]) == ([], True)


def test_topvar_keeps_the_most_varied_groups():
    groups = [[1.0, 1.0], [0.0, 1.0], [0.2, 0.4], [1.0, 0.0]]  # sigma: 0, 0.5, 0.1, 0.5
    assert topvar(groups, 1) == [1]  # ties go to the lower index
    assert topvar(groups, 2) == [1, 3]
    assert topvar(groups, 3) == [1, 2, 3]
    assert topvar(groups, 0) == []
    assert topvar(groups, 9) == [0, 1, 2, 3]


def test_a_timeout_in_one_suite_leaves_the_others_and_the_book_alone():
    """K=4. Suite A (4 valid): 2 passed, 1 timed out (a failure), 1 not run after it. Suite B
    (3 valid, 1 invalid): 3 passed. The book: 2 tests, 1 passed, 1 not run.
    Test side (over the tests that ran): authors: A: valid_ratio 1, gen_fail 1/4, att_pass
    1/1, final_attack (1/4 - 0 + 1)/2 = 5/8, R_T 1/2 + 5/16 = 0.8125. B: valid_ratio 3/4,
    final_attack (0 - 0 + 1)/2 = 1/2, R_T 3/8 + 1/4 = 0.625.
    Code side (a test not reached is not passed): A: gen 2/4, att 1/2, final_pass 1/2; B:
    gen 3/3, final_pass (1/2 + 1)/2 = 3/4; R_C 5/8.
    paper: A: pass_new 2/3, pass_hist 1, R_adv (1 - 2/3 + 1)/2 = 2/3, R_T 1/2 + 1/3 = 5/6;
    B: R_T 3/8 + 1/4; R_C (1/2 + (2/4 + 3/3)/2)/2 = 5/8."""
    suites = [SuiteResult(requested=4, valid=4, kept_passed=2, kept_failed=1, kept_not_run=1,
                          book_passed=1, book_total=2, book_not_run=1),
              SuiteResult(requested=4, valid=3, kept_passed=3, book_passed=1, book_total=2, book_not_run=1)]
    authors = candidate_rewards(suites, 0.5, "authors")
    assert authors.code == pytest.approx(5 / 8)
    assert authors.tests == pytest.approx([0.8125, 0.625])
    paper = candidate_rewards(suites, 0.5, "paper")
    assert paper.code == pytest.approx(5 / 8)
    assert paper.tests == pytest.approx([5 / 6, 0.625])


def test_a_suite_none_of_whose_tests_ran_gets_no_pass_and_no_attack():
    s = SuiteResult(requested=2, valid=2, kept_not_run=2)
    r = candidate_rewards([s], 0.5, "authors")
    assert r.code == 0.0 and r.tests == [0.5]  # validity only
    assert candidate_rewards([s], 0.5, "paper").tests == [0.5]  # no test ran: no evidence, no attack
    with pytest.raises(ValueError):
        SuiteResult(requested=2, valid=2, kept_passed=1, kept_failed=1, kept_not_run=1).check()
    with pytest.raises(ValueError):
        SuiteResult(requested=2, valid=2, kept_passed=2, book_passed=2, book_total=2, book_not_run=1).check()


def test_a_program_nothing_judged_gets_no_advantage():
    """No suite kept a test and no book: R_C 0 says nothing; such a program's advantage is 0,
    and the group's mean and spread are the judged programs' alone."""
    unjudged = candidate_rewards([suite(0), suite(0)])
    assert (unjudged.code, unjudged.evidence) == (0.0, False)
    assert candidate_rewards([suite(0, book_passed=1, book_total=2)]).evidence
    judged = [1.0, 0.0, 1.0]
    plain = advantages_by_group([judged]).advantages
    grouped = advantages_by_group([judged[:1] + [unjudged.code] + judged[1:]], evidence=[[True, False, True, True]])
    assert grouped.advantages == [plain[0], 0.0, plain[1], plain[2]]
