"""Validity's second run on the reference (another hash seed, another random state, the
candidates' time limits): a test whose outcome depends on os.urandom, time, hash or set
order or unseeded random is invalid, "nondeterministic"; a deterministic one stays valid.
Real zygotes on the default executor (subprocess) and its second, seeded pool."""

from __future__ import annotations

from codea1.harness.records import ExecJob, Problem, TestCase
from codea1.harness.verdicts.execution import run_jobs
from codea1.harness.verdicts.validity import candidate_time_limits, check_suites
from codea1.trainers.method.validation import NONDETERMINISTIC, VALID, validate_for_training

REFERENCE = """import os, random, time

def f(kind):
    if kind == "urandom":
        return os.urandom(4).hex()
    if kind == "time":
        return time.time()
    if kind == "hash":
        return hash("codea1") % 1000
    if kind == "set":
        return list({"alpha", "beta", "gamma", "delta", "epsilon", "zeta"})
    if kind == "random":
        return random.random()
    return 42
"""
PROBLEM = Problem(task_id="nd", prompt="", entry_point="f", reference=REFERENCE)


def test_tests_that_depend_on_the_run_are_nondeterministic(executor):
    suite = ['assert f("plain") == 42',                      # deterministic: valid
             'assert f("urandom") == "00000000"',            # wrong answer, and random: never kept
             'assert f("time") == 0',
             'assert f("hash") == 0',
             'assert f("set") == []',
             'assert f("random") == 0',
             'assert len(f("urandom")) == 8',                # random inside, deterministic answer: valid
             'assert sorted(f("set"))[0] == "alpha"']        # set order undone: valid
    check = check_suites(executor, {"s": (PROBLEM, suite)}, recheck_outputs=True)["s"]
    assert check.valid == [True, False, False, False, False, False, True, True]
    assert check.nondeterministic == {1, 2, 3, 4, 5}
    # By default only the tests that passed run again (evaluate-tests corrects nothing).
    assert check_suites(executor, {"s": (PROBLEM, suite)})["s"].nondeterministic == set()
    assert all(check.reasons[i].startswith("nondeterministic: the reference's output differs") for i in range(1, 6))


def test_a_nondeterministic_valid_looking_test_is_invalid(executor):
    """A test that happens to hold on the first run (hash order under seed 0) but not under
    another seed: judged on the reference's verdict, not only its output."""
    first = run_jobs(executor, [ExecJob(job_id="probe", code=REFERENCE, tests=[TestCase(id="t", call='f("hash")')],
                                        entry_point="f", time_limits=[5.0])])["probe"].outcomes[0].value
    check = check_suites(executor, {"s": (PROBLEM, [f'assert f("hash") == {first}', 'assert f("x") == 42'])})["s"]
    assert check.valid == [False, True]
    assert check.reasons[0].startswith("nondeterministic: passes on the reference under one hash and random seed")


def test_training_drops_nondeterministic_tests_instead_of_correcting_them(executor):
    suites = validate_for_training(executor, {"q/0": (PROBLEM, ['assert f("time") == 1.0', 'assert f("plain") == 42',
                                                                'assert f("random") == 0.5'])}, 3)
    v = suites["q/0"]
    assert v.status == [NONDETERMINISTIC, VALID, NONDETERMINISTIC]
    assert [t.args for t in v.kept] == [["plain"]]  # no random answer written into a kept test


def test_the_seeded_pool_has_another_hash_seed_and_random_state(executor):
    code = "import random\ndef g():\n    return [hash('codea1'), random.random()]\n"
    jobs = [ExecJob(job_id=str(seed), code=code, tests=[TestCase(id="t", call="g()")], entry_point="g",
                    time_limits=[5.0], hash_seed=seed, random_seed=seed) for seed in (0, 1, 0)]
    jobs[2].job_id = "0 again"
    out = {k: r.outcomes[0].value for k, r in run_jobs(executor, jobs).items()}
    assert out["0"] == out["0 again"]
    assert out["0"][0] != out["1"][0] and out["0"][1] != out["1"][1]


def test_time_limits_are_the_candidates_rule():
    assert candidate_time_limits([0.0, 0.1, 0.5, 2.0]) == [1.0, 1.0, 2.0, 8.0]
