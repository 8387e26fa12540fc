"""Judging: raw outcomes + tests -> Verdict, in the trusted process, on plain data only."""

from __future__ import annotations

import reprlib
import threading
from typing import Any, Callable

from codea1.harness.records import (
    ERROR,
    EXPECTED_SANDBOX_ERROR,
    FAIL,
    PASS,
    SANDBOX_ERROR,
    TIMEOUT,
    ExecJob,
    RawResult,
    TestCase,
    TestVerdict,
    Verdict,
)
from codea1.harness.verdicts import plaindata
from codea1.harness.verdicts.script_reports import judge_reports


class _BoundedRepr(reprlib.Repr):
    """reprlib's, with large ints summarised at any depth: their decimal repr costs the square
    of their length (a program's [1 << 4_000_000] took 37 s to print)."""

    def repr_int(self, x, level):
        return f"<int of {x.bit_length()} bits>" if x.bit_length() > 600 else int.__repr__(x)


_REPR = _BoundedRepr()
_REPR.maxlevel, _REPR.maxlist, _REPR.maxtuple, _REPR.maxdict, _REPR.maxset = 4, 12, 12, 8, 8
_REPR.maxstring, _REPR.maxother = 120, 120


def short_repr(value: Any, limit: int = 200) -> str:
    """A bounded repr for messages: outputs can be 100 MB lists or 100,000-digit integers,
    and a full repr of each failing one would dominate the run."""
    if type(value) is int and value.bit_length() > 600:
        return f"<int of {value.bit_length()} bits>"
    text = _REPR.repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


def compare(op: str, value: Any, expected: Any) -> bool:
    """Apply a test's operator to plain data. Any exception (e.g. '<' between str and int)
    means the assertion does not hold."""
    try:
        if op == "==":
            return plaindata.equal(value, expected)
        if op == "!=":
            return not plaindata.equal(value, expected)
        if op == "<":
            return bool(value < expected)
        if op == "<=":
            return bool(value <= expected)
        if op == ">":
            return bool(value > expected)
        if op == ">=":
            return bool(value >= expected)
        if op == "in":
            return bool(value in expected)
        if op == "not in":
            return bool(value not in expected)
        if op == "contains":
            return bool(expected in value)
        if op == "not contains":
            return bool(expected not in value)
        if op == "is":  # only singletons are parsed into 'is' tests
            return value is expected
        if op == "is not":
            return value is not expected
        if op == "truthy":
            return bool(value)
        if op == "falsy":
            return not value
    except Exception:  # noqa: BLE001 - plain data only; a failing comparison is a failing test
        return False
    raise ValueError(f"unknown operator {op!r}")


class Checker:
    """Decides whether one call test's value is right. A fresh checker is made per sample,
    so a checker may keep state across the tests of that sample (evalplus does)."""

    def check(self, test: TestCase, value: Any, expected: Any) -> tuple[bool, str]:
        ok = compare(test.op, value, expected)
        if ok:
            return True, ""
        if test.op in ("truthy", "falsy"):
            return False, f"got {short_repr(value)}, expected a {test.op} value"
        return False, f"got {short_repr(value)}, expected {test.op} {short_repr(expected)}"


class ReplayChecker(Checker):
    """One sample's checks, shared by early stop and the judge: the judge asks again for the
    comparisons early stop already made (every output of a passing sample), and gets them
    back from a log instead of comparing again.

    ``make()`` builds the sample's real checker. ``rewind()`` starts a replay: the k-th call
    after it returns the k-th logged answer when it has the same arguments (the same test,
    value and expected objects). Checkers may keep state across a sample's tests (evalplus'
    float tolerance does), so at the first call that differs the replay ends: a fresh checker
    goes through the matching calls again, then answers this one and the rest."""

    def __init__(self, make: Callable[[], Checker]):
        self.make = make
        self.inner = make()
        self.log: list[tuple[TestCase, Any, Any, tuple[bool, str]]] = []
        self.position: int | None = None  # replaying: index of the next logged call

    def rewind(self) -> "ReplayChecker":
        self.position = 0
        return self

    def check(self, test: TestCase, value: Any, expected: Any) -> tuple[bool, str]:
        k = self.position
        if k is not None:
            if k < len(self.log):
                logged_test, logged_value, logged_expected, answer = self.log[k]
                if logged_test is test and logged_value is value and logged_expected is expected:
                    self.position = k + 1
                    return answer
                self.inner = self.make()
                for past_test, past_value, past_expected, _ in self.log[:k]:
                    self.inner.check(past_test, past_value, past_expected)
                del self.log[k:]
            self.position = None
        answer = self.inner.check(test, value, expected)
        self.log.append((test, value, expected, answer))
        return answer


RECHECK = "recheck"

_GROUP_NAMES: dict[int, tuple[list[TestCase], list[str]]] = {}
_GROUP_NAMES_LOCK = threading.Lock()


def group_names(tests: list[TestCase]) -> list[str]:
    """``[t.group for t in tests]``, made once per tests list: every sample of a problem is
    judged against the same list (HumanEval+: up to 1,000 tests a problem)."""
    cached = _GROUP_NAMES.get(id(tests))
    if cached is None or cached[0] is not tests:
        cached = (tests, [t.group for t in tests])
        with _GROUP_NAMES_LOCK:
            _GROUP_NAMES[id(tests)] = cached  # holds the list, so its id cannot be reused
            if len(_GROUP_NAMES) > 8192:  # a long training run makes new tests lists every step
                del _GROUP_NAMES[next(iter(_GROUP_NAMES))]
    return cached[1]


def judge(task_id: str, sample_index: int, job: ExecJob, raw: RawResult,
          checker: Checker | None = None, expected_override: Callable[[int], Any] | None = None,
          expected_digest: Callable[[int], str | None] | None = None) -> Verdict:
    """Score one sample. ``expected_override(i)`` supplies expected values computed elsewhere
    (e.g. HumanEval+'s outputs of the reference solution); ``expected_digest(i)`` the digest
    of the reference's encoded output, for large outputs sent as digests.

    A job that asked for digests only (``large_output="digest"``) is judged on them: a digest
    equal to the reference's proves an exact match. A different digest proves nothing (1 == 1.0, float tolerance): such a verdict comes back with status "recheck" and
    the caller reruns the job with ``large_output="value"``.

    A test whose expected side could not be computed (``TestCase.expected_error``, left by
    ``harness.verdicts.expected``) fails once its call ran: "the expected value could not be
    computed: ..."; where the executor, not the expression, failed, the verdict is a
    sandbox error."""
    checker = checker or Checker()
    verdict = Verdict(task_id=task_id, sample_index=sample_index, status=PASS, wall_time=raw.wall_time,
                      n_tests=len(job.tests))
    clock = {"deferred": raw.deferred, "capped": raw.capped, "killed": int(raw.exit.startswith("timeout"))}
    verdict.clock = {k: v for k, v in clock.items() if v} or None
    if raw.sandbox_error:
        verdict.status = SANDBOX_ERROR
        verdict.message = raw.sandbox_error
        verdict.tests = [TestVerdict(t.id, "not_run") for t in job.tests]
        return verdict
    if raw.exit.startswith("protocol:"):
        verdict.status = FAIL
        verdict.message = f"result channel tampered with ({raw.exit})"
        verdict.tests = [TestVerdict(t.id, "not_run") for t in job.tests]
        verdict.first_failure = {"test": "", "message": verdict.message}
        return verdict
    if raw.load_error:
        verdict.status = ERROR
        verdict.message = raw.load_error
        verdict.tests = [TestVerdict(t.id, "not_run") for t in job.tests]
        verdict.first_failure = {"test": "", "message": raw.load_error}
        return verdict

    tests = verdict.tests
    for i, (test, outcome) in enumerate(zip(job.tests, raw.outcomes)):
        status, message = "pass", ""
        if outcome.status == "ok" and outcome.digest is not None and job.large_output == "digest":
            # An exact match on a digest skips the checker, and with it evalplus' sticky
            # float tolerance for later tests; a mismatch is rechecked on full values.
            if not (expected_digest and expected_digest(i) == outcome.digest):
                status, message = RECHECK, "large output differs from the reference's: compare values"
        elif outcome.status == "ok":
            if expected_override is not None:
                ok, message = checker.check(test, outcome.value, expected_override(i))
                status = "pass" if ok else "fail"
            elif test.expected_error is not None:  # its expected side raised or timed out (harness.verdicts.expected)
                if test.expected_error.startswith(EXPECTED_SANDBOX_ERROR):  # the executor's failure: no verdict
                    verdict.status = SANDBOX_ERROR
                    verdict.message = (f"the expected value of test {test.id} could not be computed: "
                                       f"{test.expected_error}")
                    verdict.tests = [TestVerdict(t.id, "not_run") for t in job.tests]
                    return verdict
                status, message = "fail", f"the expected value could not be computed: {test.expected_error}"
            else:
                ok, message = checker.check(test, outcome.value, test.expected)
                status = "pass" if ok else "fail"
        elif outcome.status == "reports":
            ok, message = judge_reports(test.expected, outcome.value)
            status = "pass" if ok else "fail"
        elif outcome.status == "passed":
            status, message = ("pass", "") if test.judged != "parent" else \
                ("fail", "the child sent a verdict for a test judged in the parent")
        elif outcome.status in ("failed", "exception"):
            status, message = "fail", outcome.message
        elif outcome.status == "timeout":
            status, message = "timeout", outcome.message
        else:
            status = "not_run"
        tests.append(TestVerdict(test.id, status, message, outcome.time))
        if test.judged == "in-process" and status != "not_run":
            verdict.judged = "in-process"
        if job.fail_fast and status in ("fail", "timeout"):
            # The tests after it are not part of the verdict, and not judged at all: how
            # many of them ran before early stop cancelled the job depends on timing, and
            # verdicts must not; judging them would only cost time (a wrong program's
            # outputs compared and described one by one).
            tests.extend([TestVerdict(t.id, "not_run", "", 0.0) for t in job.tests[i + 1:len(raw.outcomes)]])
            break

    first_bad, recheck = None, False
    group_bad: dict[str, TestVerdict | None] = {}  # group -> its first test that did not pass
    for group, tv in zip(group_names(job.tests), tests):
        if tv.status == "pass":
            verdict.n_passed += 1
            group_bad.setdefault(group, None)
            continue
        recheck = recheck or tv.status == RECHECK
        if first_bad is None:
            first_bad = tv
        if group_bad.get(group) is None:
            group_bad[group] = tv
    if recheck:
        verdict.status = RECHECK
        return verdict
    if first_bad is not None:
        verdict.status = TIMEOUT if first_bad.status == "timeout" else FAIL
        msg = first_bad.message or ("not run: " + raw.exit if first_bad.status == "not_run" else "")
        verdict.first_failure = {"test": first_bad.id, "message": msg}
        verdict.message = msg
    for name, bad in group_bad.items():
        verdict.groups[name] = PASS if bad is None else ("not_run" if bad.status == "not_run" else
                                                         TIMEOUT if bad.status == "timeout" else FAIL)
    return verdict
