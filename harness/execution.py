"""The batch execution API shared by evaluation and training.

An executor plugin turns ``ExecJob``s into ``RawResult``s and nothing more: it never judges.
Judging (``harness.judge``) happens here in the trusted process, on plain data, so a new
executor only has to move jobs and records faithfully.

Executors that run the zygote protocol (harness.sandbox) get the payload encoding and the
record parsing from this module: ``PayloadEncoder`` and ``parse_records``.
"""

from __future__ import annotations

import hashlib
import json
import os
from typing import Callable, Iterable, Iterator, Sequence

from codea1.harness import plaindata
from codea1.harness.errors import Codea1Error
from codea1.harness.records import ExecJob, RawOutcome, RawResult, TestCase

DEFAULT_MIN_TIME_LIMIT = 1.0  # evalplus' defaults
DEFAULT_TIME_FACTOR = 4.0
DEFAULT_MAX_BATCH_SECONDS = 120.0


def time_limits(reference_times: Sequence[float], min_limit: float = DEFAULT_MIN_TIME_LIMIT,
                factor: float = DEFAULT_TIME_FACTOR) -> list[float]:
    """evalplus' rule, per test: max(min_limit, factor x the reference solution's time)."""
    return [max(min_limit, factor * float(t)) for t in reference_times]


def batch_timeout(limits: Sequence[float], cap: float = DEFAULT_MAX_BATCH_SECONDS, load_allowance: float = 5.0) -> float:
    """The whole-job wall limit enforced from outside the child."""
    return min(sum(limits), cap) + load_allowance


class ExecutorUnavailable(Codea1Error):
    """The selected executor cannot run here (a binary, a service or a package is missing).
    Never answered by silently falling back to another executor."""


EarlyStop = Callable[[ExecJob, int, RawOutcome], bool]


class Executor:
    """Base class of executor plugins.

    Subclasses set ``name`` and ``description``, may declare an ``Options`` dataclass (read by
    the registry from ``--executor-opt key=value``), and implement ``run``.
    """

    name = ""
    description = ""
    streams_results = False  # True: honours early_stop by stopping a settled job

    def __init__(self, options=None, workers: int | None = None):
        self.options = options
        self.workers = workers or os.cpu_count() or 1

    def run(self, jobs: Sequence[ExecJob], early_stop: EarlyStop | None = None) -> Iterator[RawResult]:
        """Yield one RawResult per job, in completion order (match them by ``job_id``).

        ``early_stop(job, i, outcome)``, when given, may be asked about each test outcome as
        it arrives; True means the verdict is settled (a test failed) and the executor may
        stop the job, leaving later tests not run. Executors that cannot stream ignore it."""
        raise NotImplementedError

    def info(self) -> dict:
        """What this executor enforces, for the run's environment record."""
        return {}

    def close(self) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _test_tree(test: TestCase) -> dict:
    tree = {"kind": test.kind}
    if test.kind == "call":
        if test.args is not None:
            tree["args"] = plaindata.to_tree(list(test.args))
        else:
            tree["call"] = test.call
        if test.expected_source:
            tree["expected_source"] = test.expected_source
        if test.op in ("contains", "not contains"):
            tree["items"] = True  # a container that is not plain data comes back as its items
    else:
        tree["script"] = test.script
        tree["framework"] = test.framework
    return tree


_ENCODED_TESTS: dict[int, tuple[list, str, str]] = {}


def encoded_tests(tests: list[TestCase]) -> tuple[str, str]:
    """(fingerprint, JSON) of a problem's tests as the sandbox receives them. Encoded once per
    process per tests list: every sample of a problem shares it."""
    cached = _ENCODED_TESTS.get(id(tests))
    if cached is None or cached[0] is not tests:
        text = json.dumps([_test_tree(t) for t in tests], separators=(",", ":"))
        cached = (tests, hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32], text)
        _ENCODED_TESTS[id(tests)] = cached  # holds the list, so its id cannot be reused
    return cached[1], cached[2]


class PayloadEncoder:
    """Encodes jobs for the zygote protocol as (head, tests_key, tests_json). The tests of one
    problem are sent once per zygote (HumanEval+ has up to 1,000 inputs a task), then named
    by ``tests_key``."""

    def __call__(self, job: ExecJob) -> tuple[str, str, str]:
        key, tests_json = encoded_tests(job.tests)
        head = json.dumps({"job_id": job.job_id, "code": job.code, "entry_point": job.entry_point,
                           "prelude": job.prelude, "time_limits": job.time_limits,
                           "batch_timeout": job.batch_timeout, "memory_mb": job.memory_mb,
                           "fail_fast": job.fail_fast, "large_output": job.large_output}, separators=(",", ":"))
        return head, key, tests_json


def parse_records(job: ExecJob, lines: Iterable[str] | bytes, exit_reason: str, stdout: str = "", stderr: str = "",
                  wall: float = 0.0) -> RawResult:
    """Turn the child's record lines into a RawResult, refusing anything out of protocol.

    Records must arrive as the child writes them: expected values first, then one load
    record, then test records in strictly increasing order, then done. A duplicate, a gap or
    anything after done means the program wrote into the channel: ``exit`` then starts with
    "protocol:" and the judge fails the sample.
    """
    if isinstance(lines, (bytes, bytearray)):
        lines = lines.decode("utf-8", "replace").splitlines()
    n = len(job.tests)
    outcomes = [RawOutcome(status="not_run") for _ in range(n)]
    expected: dict[int, tuple[bool, object]] = {}
    loaded: str | None = None
    load_error = None
    next_index = 0
    done = False
    violation = None
    for line in lines:
        if violation:
            break
        try:
            rec = json.loads(line)
            if type(rec) is not dict:
                raise ValueError("record is not an object")
            if done:
                raise ValueError("record after done")
            if "x" in rec:
                i = rec["x"]
                if loaded is not None or type(i) is not int or not 0 <= i < n or i in expected \
                        or not job.tests[i].expected_source:
                    raise ValueError(f"unexpected expected-value record {str(rec)[:80]}")
                expected[i] = (True, plaindata.from_tree(rec["v"])) if "v" in rec else (False, str(rec.get("e")))
            elif "load" in rec:
                if loaded is not None:
                    raise ValueError("second load record")
                loaded = rec["load"]
                if loaded == "error":
                    load_error = str(rec.get("e", "load failed"))
                elif loaded != "ok":
                    raise ValueError("bad load record")
            elif "i" in rec:
                if loaded != "ok" or rec["i"] != next_index or next_index >= n:
                    raise ValueError(f"test record {rec.get('i')!r} out of order (expected {next_index})")
                status = rec.get("s")
                if status == "ok":
                    digest = rec.get("h")
                    if digest is not None and (type(digest) is not str or job.large_output == "value"):
                        raise ValueError("unexpected digest")
                    if digest is None and "v" not in rec:
                        raise ValueError("ok record without value")
                    outcome = RawOutcome("ok", value=plaindata.from_tree(rec["v"]) if "v" in rec else None,
                                         digest=digest)
                elif status in ("exception", "timeout", "passed", "failed"):
                    details = rec.get("d")
                    outcome = RawOutcome(status, message=str(rec.get("e", "")),
                                         details={str(k): str(v) for k, v in details.items()} if type(details) is dict else None)
                else:
                    raise ValueError(f"unknown test status {status!r}")
                outcome.time = float(rec.get("t", 0.0))
                outcomes[next_index] = outcome
                next_index += 1
            elif rec.get("done") is True:
                done = True
            else:
                raise ValueError(f"unknown record {str(rec)[:80]}")
        except (ValueError, KeyError, TypeError, plaindata.PlainDataError) as exc:
            violation = f"protocol: {exc}"
    for i, (ok, value) in expected.items():
        if ok:
            outcomes[i].expected = value
        else:
            outcomes[i].expected_error = value
    if violation:
        exit_reason = violation
    elif exit_reason == "finished" and loaded is None:
        exit_reason = "crashed: the process ended before loading the program"
        load_error = "the process ended while the program was loading"
    elif exit_reason == "finished" and loaded == "ok" and not done:
        # os._exit / sys.exit from a thread / a closed channel: the test then running failed.
        if next_index < n:
            outcomes[next_index] = RawOutcome("exception", message="the process ended during this test")
        exit_reason = "crashed: the process ended before finishing its tests"
    elif exit_reason == "cancelled":
        pass  # stopped on purpose after a settled failure: the rest was not run
    elif exit_reason != "finished" and next_index < n and loaded == "ok":
        status = "timeout" if exit_reason == "timeout" else "exception"
        outcomes[next_index] = RawOutcome(status, message=exit_reason)
    elif exit_reason != "finished" and loaded is None:
        load_error = f"the program did not load: {exit_reason}"
    return RawResult(job_id=job.job_id, outcomes=outcomes, load_error=load_error, exit=exit_reason,
                     stdout=stdout, stderr=stderr, wall_time=wall)


def sandbox_failure(job: ExecJob, message: str) -> RawResult:
    return RawResult(job_id=job.job_id, outcomes=[RawOutcome("not_run") for _ in job.tests],
                     exit="sandbox", sandbox_error=message)


def outcome_from_record(rec: dict) -> RawOutcome | None:
    """The RawOutcome of one test record (streaming use); None for other records."""
    status = rec.get("s")
    if "i" not in rec or status is None:
        return None
    if status == "ok":
        return RawOutcome("ok", value=plaindata.from_tree(rec["v"]) if "v" in rec else None, digest=rec.get("h"))
    return RawOutcome(str(status), message=str(rec.get("e", "")))


class RecordStream:
    """Splits streamed result bytes into records and asks ``early_stop`` about each test
    outcome; returns True (stop the job) once it answers True. Anything unparsable is left
    for ``parse_records`` to judge at the end."""

    def __init__(self, job: ExecJob, early_stop: EarlyStop):
        self.job, self.early_stop, self.partial = job, early_stop, b""

    def __call__(self, data: bytes) -> bool:
        *lines, self.partial = (self.partial + data).split(b"\n")
        for line in lines:
            try:
                rec = json.loads(line)
                outcome = outcome_from_record(rec) if type(rec) is dict else None
                i = rec.get("i") if outcome is not None else None
            except (ValueError, KeyError, TypeError, plaindata.PlainDataError):
                continue
            if type(i) is int and 0 <= i < len(self.job.tests) and self.early_stop(self.job, i, outcome):
                return True
        return False


def run_jobs(executor: Executor, jobs: Sequence[ExecJob], on_result: Callable[[RawResult], None] | None = None,
             early_stop: EarlyStop | None = None) -> dict[str, RawResult]:
    """Run jobs to completion and return results by job id; ``on_result`` sees each as it lands."""
    results: dict[str, RawResult] = {}
    if not jobs:
        return results
    for res in executor.run(jobs, early_stop) if early_stop else executor.run(jobs):
        results[res.job_id] = res
        if on_result:
            on_result(res)
    missing = [j for j in jobs if j.job_id not in results]
    for job in missing:  # an executor that loses a job must not lose the verdict silently
        results[job.job_id] = sandbox_failure(job, f"executor {executor.name!r} returned no result")
        if on_result:
            on_result(results[job.job_id])
    return results
