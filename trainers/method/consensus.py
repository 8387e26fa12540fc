"""Validation without a reference solution: ``validation = "consensus"`` (beyond the paper:
its Limitations name data without ground truth).

The M candidate programs of a question vote, CodeT-style: every distinct call of the
question's generated tests runs on every candidate (one executor batch); the outputs are
grouped by value (compared as plain data). The consensus answer of a call is the value of
the largest group, when that group holds at least two candidates and more than half of the
candidates that ran the call without error; otherwise the call has no consensus.

A test is then valid when its call has a consensus and its assertion holds on the consensus
answer; a test whose assertion does not hold is corrected to ``== consensus`` and kept
(invalid, as with the reference); a call without consensus, a duplicate call and an
unparseable assert are dropped. Every program runs the calls twice, the second time under
another hash seed and random state (``validity.SECOND_SEED``): a program whose two answers to
a call differ loses its vote on that call, so that no single program can veto a test (a
partial program answering at random where it would be wrong would otherwise remove exactly
the tests it fails); a call only unstable programs answered is "nondeterministic" and dropped.
The returned suites have the shape ``validation.validate_for_training`` returns, so the
trainer does not care which ran.

The Mistake Book's tests of each question are voted on again with the suites: one whose call
now has a consensus its answer does not match leaves the book (a wrong majority that
corrected a test once does not keep it there for good); no consensus is no evidence, and it
stays.

Limits of majority voting itself: three identical wrong programs outvote one right one, and a
test writer that copies the majority's answer is rewarded for it; with references
(``validation = "reference"``) neither happens.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from typing import Mapping, Sequence

from codea1.harness.records import ExecJob, Problem, TestCase
from codea1.harness.verdicts.execution import run_jobs
from codea1.harness.verdicts.judge import Checker
from codea1.harness.verdicts.validity import SECOND_SEED, parse_suite
from codea1.trainers.method.rollouts import LOAD_ALLOWANCE
from codea1.trainers.method.validation import (
    DUPLICATE,
    ERROR,
    MISSING,
    NONDETERMINISTIC,
    UNPARSED,
    VALID,
    WRONG,
    ValidatedSuite,
    call_key,
    corrected,
    normal_form,
    repeats,
)

VOTE_LIMIT = 2.0  # seconds a program has for each call of the vote


def _output(raw, i: int) -> tuple[bool, object, float]:
    """(ran without error, output, seconds) of call ``i`` in one program's result."""
    outcome = raw.outcomes[i] if not raw.load_error and not raw.sandbox_error else None
    ok = outcome is not None and outcome.status == "ok"
    return ok, outcome.value if outcome else None, outcome.time if ok else 0.0


def vote_key(value) -> str | None:
    """What a vote compares: the value's normal form under ``==`` (``validation.normal_form``:
    2 and 2.0 agree, a dict in any order), the equality the checker then judges tests with;
    None for a value that cannot be keyed (nested past the interpreter's recursion limit):
    that vote is void, and nothing else is."""
    try:
        return repr(normal_form(value))
    except (RecursionError, MemoryError, ValueError, TypeError):
        return None


def consensus_answers(outputs: Sequence[tuple]) -> tuple[bool, object]:
    """(found, answer) from the candidates' (ran without error, output, ...) tuples."""
    ran = [(vote_key(value), value) for ok, value, *_ in outputs if ok]
    ran = [(key, value) for key, value in ran if key is not None]
    if not ran:
        return False, None
    (key, count), = Counter(k for k, _ in ran).most_common(1)
    if count < 2 or 2 * count <= len(ran):
        return False, None
    return True, next(value for k, value in ran if k == key)


def validate_by_consensus(executor, suites: Mapping[str, tuple[Problem, Sequence[str]]], requested: int,
                          programs: Mapping[int, Sequence[str]], bench,
                          book: Mapping[int, Sequence[str]] | None = None
                          ) -> tuple[dict[str, ValidatedSuite], dict[int, list[str]]]:
    """``suites`` keyed "question/program/suite" (the question index first); ``programs``:
    each question's candidate programs; ``book``: each question's Mistake Book tests, voted on
    again. Returns the validated suites, and per question the book tests the vote no longer
    backs (their call now has a consensus their answer does not match): the evidence that put
    them there changed, and they leave the book."""
    parsed: dict[str, list[TestCase | None]] = {}
    runs: dict[int, dict[tuple, TestCase]] = {}  # question -> (call, wrapper) -> a test that runs it
    problems = {int(key.split("/")[0]): problem for key, (problem, _) in suites.items()}
    for key, (problem, sources) in suites.items():
        parsed[key] = parse_suite(problem, list(sources)[:requested])[0]
        for test in parsed[key]:
            if test is not None:
                runs.setdefault(int(key.split("/")[0]), {}).setdefault(_run_key(test, problem), test)
    booked: dict[int, list[tuple[str, TestCase | None]]] = {}
    for qi, sources in (book or {}).items():
        if qi in problems:
            booked[qi] = list(zip(sources, parse_suite(problems[qi], list(sources))[0]))
            for _, test in booked[qi]:
                if test is not None:
                    runs.setdefault(qi, {}).setdefault(_run_key(test, problems[qi]), test)
    answers = _votes(executor, runs, problems, programs, bench)
    out = {}
    for key, tests in parsed.items():
        qi = int(key.split("/")[0])
        status, kept, sources, calls, times, seen = [], [], [], [], [], set()
        for test in tests:
            if test is None:
                status.append(UNPARSED)
                continue
            ck, run = call_key(test, problems[qi]), _run_key(test, problems[qi])
            found, answer, unstable, took = answers[qi][run]
            if repeats(seen, ck, run[0], vote_key(answer) if found else None):  # run[0]: the exact key
                status.append(DUPLICATE)
                continue
            if not found:
                status.append(NONDETERMINISTIC if unstable else ERROR)
            elif test.expected_source is None and Checker().check(test, answer, test.expected)[0]:
                status.append(VALID)
                kept.append(test)
                sources.append(test.source or "")
                calls.append(ck)
                times.append(took)
            else:
                status.append(WRONG)
                fixed = corrected(test, answer, problems[qi].entry_point)
                if fixed is not None:
                    kept.append(fixed[0])
                    sources.append(fixed[1])
                    calls.append(ck)
                    times.append(took)
        status += [MISSING] * (requested - len(status))
        out[key] = ValidatedSuite(status, kept, sources, times, calls)
    disputed = {}
    for qi, entries in booked.items():
        gone = []
        for source, test in entries:
            if test is None:
                continue
            found, answer, _, _ = answers[qi][_run_key(test, problems[qi])]
            # Only a consensus that disagrees moves a test out: no consensus is no evidence (two
            # programs that raise, or answer at random, must not make the book forget a test).
            if found and (test.expected_source is not None or not Checker().check(test, answer, test.expected)[0]):
                gone.append(source)
        if gone:
            disputed[qi] = gone
    return out, disputed


def _run_key(test: TestCase, problem: Problem) -> tuple:
    """What one run of the vote answers: the values the function receives, types and all
    (``call_key(exact=True)``: ``f(5)`` and ``f(5.0)`` are two runs, whose answers may
    differ), under the test's wrapper."""
    return call_key(test, problem, exact=True), repr(test.wrap)


def _votes(executor, runs: Mapping[int, Mapping[tuple, TestCase]], problems: Mapping[int, Problem],
           programs: Mapping[int, Sequence[str]], bench) -> dict[int, dict[tuple, tuple[bool, object, bool, float]]]:
    """Per question and run: (a consensus was found, its answer, some program's answer was
    unstable, the slowest agreeing program's seconds: what a kept test's time limit follows).
    Every program runs every call twice, the second time under another hash seed and random
    state; a program whose two answers to a call differ loses its vote on that call (it cannot
    veto the test for the others), and the stable programs vote. A job's whole-job limit is the
    sum of its calls' limits: slow calls of one suite cannot leave another's unanswered."""
    jobs = {}
    for qi, by_run in runs.items():
        tests = [dataclasses.replace(t, id=f"c{i}", op="==", expected=None, expected_source=None)
                 for i, t in enumerate(by_run.values())]
        for mi, code in enumerate(programs[qi]):
            jobs[f"{qi}/{mi}"] = ExecJob(job_id=f"{qi}/{mi}", code=code, tests=tests, entry_point=problems[qi].entry_point,
                                         prelude=problems[qi].prelude, time_limits=[VOTE_LIMIT] * len(tests),
                                         batch_timeout=VOTE_LIMIT * len(tests) + LOAD_ALLOWANCE,
                                         memory_mb=bench.memory_mb, fail_fast=False, large_output="value")
    seconds = [dataclasses.replace(j, job_id=f"{j.job_id}#2", hash_seed=SECOND_SEED, random_seed=SECOND_SEED)
               for j in jobs.values()]
    raws = run_jobs(executor, [*jobs.values(), *seconds])
    answers: dict[int, dict[tuple, tuple[bool, object, bool, float]]] = {}
    for qi, by_run in runs.items():
        answers[qi] = {}
        for i, key in enumerate(by_run):
            stable, unstable = [], False
            for mi in range(len(programs[qi])):
                first, second = (_output(raws[f"{qi}/{mi}{suffix}"], i) for suffix in ("", "#2"))
                if first[0] != second[0] or (first[0] and vote_key(first[1]) != vote_key(second[1])):
                    unstable = True  # this program's vote on this call is void
                    continue
                stable.append(first)
            found, answer = consensus_answers(stable)
            took = max((s for ok, value, s in stable if ok and vote_key(value) == vote_key(answer)), default=0.0) \
                if found else 0.0
            answers[qi][key] = (found, answer, unstable, took)
    return answers
