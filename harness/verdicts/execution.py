"""The batch execution API shared by evaluation and training.

An executor plugin turns ``ExecJob``s into ``RawResult``s and nothing more: it never judges.
Judging (``harness.verdicts.judge``) happens here in the trusted process, on plain data, so a new
executor only has to move jobs and records faithfully.

Executors that run the zygote protocol (harness.sandbox) get the payload encoding and the
record parsing from this module: ``PayloadEncoder``, ``RecordParser`` (``parse_records``,
``RecordStream``).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import marshal
import os
import threading
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Sequence

from codea1.harness.errors import Codea1Error
from codea1.harness.records import NOT_RUN, ExecJob, RawOutcome, RawResult, TestCase
from codea1.harness.sandbox.protocol import SEAL_KEY_BYTES, loads_record, scan_record, verdict_seal
from codea1.harness.sandbox.timing import WALL_CAP
from codea1.harness.verdicts import plaindata, script_reports

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

    def warm_for(self, frameworks: Sequence[str] | None = None, imports: Sequence[str] = ()) -> None:
        """A hint, before any job: the test frameworks the run's scripts use (None: any) and
        the libraries its programs import (``Benchmark.frameworks``, ``Benchmark.imports``).
        An executor that keeps warm workers may prepare and import just these once; every
        job must run as well without the hint. Optional: the default ignores it."""

    def start_in_background(self) -> None:
        """Begin starting workers (processes, connections) now, without waiting for them:
        a run calls it before loading its data. ``run`` and ``info`` must still work, waiting
        where they need to. Optional: the default does nothing."""

    def close(self) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _test_tree(test: TestCase) -> dict:
    """A test as the sandbox receives it: what to run, never what to expect (expected values
    stay in the parent). A test whose expected side is still an expression is refused: it
    is computed beforehand, in a job of its own (``harness.verdicts.expected``)."""
    if test.expected_source:
        raise ValueError(f"test {test.id}: its expected side {test.expected_source[:80]!r} was not computed "
                         f"before the job was built (harness.verdicts.expected.settle_expected_sources): "
                         f"no expression of an expected value is sent to a program's process")
    tree = {"kind": test.kind}
    if test.kind == "call":
        if test.args is not None:
            tree["args"] = plaindata.to_tree(list(test.args))
            if test.kwargs:
                tree["kwargs"] = plaindata.to_tree(dict(test.kwargs))
            if test.wrap:
                tree["wrap"] = plaindata.to_tree(list(test.wrap))
        else:
            tree["call"] = test.call
        if test.op in ("contains", "not contains"):
            tree["items"] = True  # a container that is not plain data comes back as its items
    else:
        tree["script"] = test.script
        tree["framework"] = test.framework
        if test.judged == "parent":
            tree["report"] = True  # a rewritten script (harness.verdicts.script_tests): it reports values
    return tree


_ENCODED_TESTS: dict[int, tuple[list, str, str, Path | None]] = {}
_ENCODED_LOCK = threading.Lock()


TESTS_FORMAT = "1"  # of encoded_tests' JSON; change it with _test_tree (encodings are saved on disk)
TESTS_BLOB_FORMAT = b"codea1-tests-marshal-1\n"  # first line of a tests blob file: change it with child.decode_tests


def encoded_test(test: TestCase) -> str:
    """One test as the sandbox receives it (JSON): two tests with the same encoding run the
    same way. ``encoded_tests`` of a list is its members' encodings, comma-joined in brackets.
    ValueError for a test whose expected side is still an expression."""
    return json.dumps(_test_tree(test), separators=(",", ":"))


def encoded_tests(tests: list[TestCase]) -> tuple[str, str]:
    """(fingerprint, JSON) of a problem's tests as the sandbox receives them. Encoded once per
    process per tests list: every sample of a problem shares it."""
    cached = _ENCODED_TESTS.get(id(tests))
    if cached is None or cached[0] is not tests:
        return adopt_encoded_tests(tests, json.dumps([_test_tree(t) for t in tests], separators=(",", ":")))
    return cached[1], cached[2]


def adopt_encoded_tests(tests: list[TestCase], text: str, blob_file: Path | None = None) -> tuple[str, str]:
    """Make ``text`` the encoding of ``tests`` in this process: what encoded_tests made of
    equal tests, saved (the reference cache keeps it beside each problem's results: encoding
    HumanEval+'s inputs takes a second). ``blob_file``, where given, holds the same tests as
    ``tests_blob_bytes`` made them, for ``tests_blob``."""
    cached = (tests, hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32], text, blob_file)
    with _ENCODED_LOCK:  # executors encode jobs from several threads
        _ENCODED_TESTS[id(tests)] = cached  # holds the list, so its id cannot be reused
        if len(_ENCODED_TESTS) > 8192:  # a long training run makes new tests lists every step
            del _ENCODED_TESTS[next(iter(_ENCODED_TESTS))]
    return cached[1], cached[2]


def tests_blob_bytes(key: str, text: str) -> bytes | None:
    """The tests of JSON ``text`` (fingerprint ``key``, from encoded_tests) as the zygote holds
    them, for a cache file that ``tests_blob`` reads: marshal (format 2: fresh objects, no
    shared references) of what ``child.decode_tests`` makes of them, after a header naming
    the format, the key and the payload's SHA-256. The zygote loads such bytes 6 times faster
    than it decodes the JSON. None when marshal cannot write a decoded value (an Opaque)."""
    from codea1.harness.sandbox.child import decode_tests

    try:
        payload = marshal.dumps(decode_tests(json.loads(text)), 2)
    except ValueError:
        return None
    return TESTS_BLOB_FORMAT + key.encode() + b"\n" + hashlib.sha256(payload).digest() + payload


def tests_blob(tests: list[TestCase]) -> bytes | None:
    """The marshal payload of ``tests`` where ``adopt_encoded_tests`` was given a file that
    holds them; None where there is none, or it is torn, stale (another key or format) or
    not ours: the zygote then gets the JSON. Read from disk each time it is asked for: the
    pool asks once per zygote and problem, and the parent keeps no second copy."""
    cached = _ENCODED_TESTS.get(id(tests))
    if cached is None or cached[0] is not tests or cached[3] is None:
        return None
    try:
        data = cached[3].read_bytes()
    except OSError:
        return None
    head = TESTS_BLOB_FORMAT + cached[1].encode() + b"\n"
    start = len(head) + 32
    if not data.startswith(head) or hashlib.sha256(memoryview(data)[start:]).digest() != data[len(head):start]:
        return None
    return data[start:]


class PayloadEncoder:
    """Encodes jobs for the zygote protocol as (head, tests_key, tests_json, tests_blob). The
    tests of one problem are sent once per zygote (HumanEval+ has up to 1,000 inputs a task),
    then named by ``tests_key``; ``tests_blob()`` gives them as marshal bytes where a cache
    holds them (``tests_blob``), else None, and the JSON is sent."""

    def __call__(self, job: ExecJob) -> tuple[str, str, str, Callable[[], bytes | None]]:
        key, tests_json = encoded_tests(job.tests)
        head = json.dumps({"job_id": job.job_id, "code": job.code, "entry_point": job.entry_point,
                           "prelude": job.prelude, "time_limits": job.time_limits,
                           "batch_timeout": job.batch_timeout, "memory_mb": job.memory_mb,
                           "fail_fast": job.fail_fast, "stop_on_timeout": job.stop_on_timeout,
                           "large_output": job.large_output,
                           "random_seed": job.random_seed}, separators=(",", ":"))
        return head, key, tests_json, functools.partial(tests_blob, job.tests)


class RecordParser:
    """The zygote protocol's result records for one job, parsed and checked once, as they
    arrive (``feed``), then turned into a RawResult (``finish``).

    Records must arrive as the child writes them: the seal record where the job has tests
    judged in-process (its key seals their passes: harness.sandbox.protocol), one load
    record, then test records in strictly increasing order, then done, one a line. A duplicate, a gap, a blank line, an
    unknown record (the former expected-value records ``{"x": ...}`` included: no child
    computes expected values, ``harness.verdicts.expected`` does it beforehand) or anything after
    done means the program wrote into the channel: the result's ``exit`` then starts with
    "protocol:" and the judge fails the sample; nothing after the violation is read.

    Every record is data to check, never a verdict: values the parent compares, or a
    failure the program owns (an exception, or a timeout: its alarm fired, or the zygote's
    clock killed it); passed/failed only for a test judged in-process. A job that did not
    fail fast and ended before its last test is continued in a fresh process (``stream_jobs``),
    so ending early, by a crash, ``os._exit`` or a timeout, never turns failures into tests
    that did not run.

    ``stop(i, outcome)``, when given, is asked about each test outcome as it is parsed; once
    it answers True (the verdict is settled) nothing after that record is read, and the
    result's ``exit`` is "cancelled": the job's later tests count as not run, however many
    of them the child ran before it was stopped (HumanEval+'s wrong programs run most of
    their quick tests before a cancel can reach them: 86,000 records on the mutant preset).
    """

    def __init__(self, job: ExecJob, stop: Callable[[int, RawOutcome], bool] | None = None):
        self.job = job
        self.stop = stop
        self.stopped = False
        self.outcomes = [NOT_RUN] * len(job.tests)
        self.loaded: str | None = None
        self.load_error: str | None = None
        self.next_index = 0
        self.done = False
        self.clock: dict[str, int] = {}  # the done record's counts (harness.sandbox.timing)
        self.part_failures: dict[int, str] = {}  # in-process script test -> the first part that failed, as it did
        self.seal_key: bytes | None = None  # the child's key for in-process verdicts (its first record)
        self.violation: str | None = None
        self.partial = b""
        self.pending: list[bytes] = []  # chunks of a partial line, after ``partial``

    def feed(self, data: bytes) -> None:
        """Parse the complete lines in ``data`` (a trailing partial line waits for the next
        call)."""
        if self.stopped:
            return
        if self.violation:  # nothing after a violation is read (nor kept)
            self.partial = b""
            return
        if b"\n" not in data:  # a long line on its way: keep its chunks, join them once it ends
            self.pending.append(data)
            return
        if self.pending:  # joining each time would cost the square of a line's length (a program's 64 MB line)
            self.partial += b"".join(self.pending)
            self.pending.clear()
        buffer = self.partial + data
        cut = buffer.rfind(b"\n") + 1
        self.partial = buffer[cut:]
        if not cut or self.violation:
            return
        try:
            text = buffer[:cut].decode()
        except UnicodeDecodeError:
            for line in buffer[:cut - 1].split(b"\n"):
                self.record(line)
            return
        pos, size = 0, len(text)
        while pos < size and not self.violation and not self.stopped:
            newline = text.index("\n", pos)
            # The C scanner on one line: what json.loads does less its per-call set-up. Any
            # line it does not read as exactly one value (whitespace around it, say) goes
            # through loads_record, on its own bytes. Both are bounded (protocol).
            try:
                rec, end = scan_record(text, pos, newline)
            except (StopIteration, ValueError):
                end = -1
            if end == newline:
                self.accept(rec)
            else:
                self.record(text[pos:newline].encode())
            pos = newline + 1

    def record(self, line: bytes | str) -> tuple[int, RawOutcome] | None:
        """One record line; returns (index, outcome) for a test record."""
        if self.violation:
            return None
        try:
            rec = loads_record(line)
        except (ValueError, StopIteration) as exc:
            self.violation = f"protocol: {str(exc)[:200]}"
            return None
        return self.accept(rec)

    def accept(self, rec) -> tuple[int, RawOutcome] | None:
        """One decoded record; returns (index, outcome) for a test record."""
        found = self._check(rec)
        if found is not None and self.stop is not None and self.stop(*found):
            self.stopped = True
            self.partial = b""
            self.pending.clear()
        return found

    def _check(self, rec) -> tuple[int, RawOutcome] | None:
        if self.violation or self.stopped:
            return None
        job, n = self.job, len(self.job.tests)
        try:
            if type(rec) is not dict:
                raise ValueError("record is not an object")
            if self.done:
                raise ValueError("record after done")
            if "seal" in rec:
                # Written before the program loads, so no line of the program's can come first:
                # the key the child then holds where the program's code cannot name it.
                if self.loaded is not None or self.seal_key is not None or type(rec["seal"]) is not str \
                        or len(rec["seal"]) != 2 * SEAL_KEY_BYTES:
                    raise ValueError("seal record out of place")
                self.seal_key = bytes.fromhex(rec["seal"])
            elif "load" in rec:
                if self.loaded is not None:
                    raise ValueError("second load record")
                self.loaded = rec["load"]
                if self.loaded == "error":
                    self.load_error = str(rec.get("e", "load failed"))
                elif self.loaded != "ok":
                    raise ValueError("bad load record")
            elif "ev" in rec:
                # A part of the in-process script test now running ended in an exception, said
                # as it happened: the test fails, whatever its own record says later.
                if self.loaded != "ok" or rec["ev"] != self.next_index or self.next_index >= n \
                        or job.tests[self.next_index].kind != "script" \
                        or job.tests[self.next_index].judged != "in-process" or type(rec.get("f")) is not str:
                    raise ValueError(f"event {str(rec)[:80]} out of place")
                self.part_failures.setdefault(self.next_index, f"{rec['f'][:200]}: {str(rec.get('e', ''))[:500]}")
            elif "i" in rec:
                if self.loaded != "ok" or rec["i"] != self.next_index or self.next_index >= n:
                    raise ValueError(f"test record {rec.get('i')!r} out of order (expected {self.next_index})")
                status = rec.get("s")
                if status == "ok":
                    digest = rec.get("h")
                    if digest is not None and (type(digest) is not str or job.large_output == "value"):
                        raise ValueError("unexpected digest")
                    if digest is None and "v" not in rec:
                        raise ValueError("ok record without value")
                    # A call's value never holds an array (the child encodes without arrays):
                    # an "a" tag here is the program writing into the channel.
                    outcome = RawOutcome("ok", value=plaindata.from_tree(rec["v"], arrays=False) if "v" in rec
                                         else None, digest=digest)
                elif status == "reports" and job.tests[self.next_index].kind == "script" \
                        and job.tests[self.next_index].judged == "parent":
                    outcome = RawOutcome("reports", value=script_reports.parse_reports(rec, job.tests[self.next_index].expected))
                elif status in ("exception", "timeout") or (status in ("passed", "failed") and
                                                             job.tests[self.next_index].judged == "in-process"):
                    # passed/failed is the child's own word: taken only for a test whose verdict
                    # is documented to come from a runner inside the program (judged "in-process");
                    # for any other test such a record is the program speaking for itself.
                    details = rec.get("d")
                    outcome = RawOutcome(status, message=str(rec.get("e", "")),
                                         details={str(k): str(v) for k, v in details.items()} if type(details) is dict else None)
                    if status == "passed" and rec.get("m") != verdict_seal(self.seal_key, self.next_index):
                        raise ValueError(f"an in-process pass the harness did not seal (test {self.next_index})")
                    if status == "passed" and self.next_index in self.part_failures:
                        outcome = RawOutcome("failed", message=f"a part of the test failed as it ran "
                                                               f"({self.part_failures[self.next_index]}); the "
                                                               f"record that followed said it passed")
                else:
                    raise ValueError(f"unknown test status {status!r}")
                outcome.time = float(rec.get("t", 0.0))
                i = self.next_index
                self.outcomes[i] = outcome
                self.next_index += 1
                return i, outcome
            elif rec.get("done") is True:
                # The child ends early only after the failure that stops it (fail_fast, or a
                # timeout with stop_on_timeout): an early end anywhere else is the program's.
                last = self.outcomes[self.next_index - 1].status if self.next_index else None
                if self.next_index < n and self.loaded == "ok" and not (
                        (job.fail_fast and last in ("exception", "timeout"))
                        or (job.stop_on_timeout and last == "timeout")):
                    raise ValueError(f"done after {self.next_index} of {n} tests")
                self.done = True
                # The child's own counts of its clock (harness.sandbox.timing): shown, never a verdict.
                self.clock = {k: rec[k] for k in ("deferred", "capped") if type(rec.get(k)) is int and rec[k] > 0}
            else:
                raise ValueError(f"unknown record {str(rec)[:80]}")
        except (ValueError, KeyError, TypeError) as exc:
            self.violation = f"protocol: {str(exc)[:200]}"
        except Exception as exc:  # noqa: BLE001 - whatever a record makes fail here is the program's doing
            self.violation = f"protocol: {type(exc).__name__}: {str(exc)[:200]}"
        return None

    def finish(self, exit_reason: str, stdout: str = "", stderr: str = "", wall: float = 0.0,
               starved: float = 0.0) -> RawResult:
        if self.pending:
            self.partial += b"".join(self.pending)
            self.pending.clear()
        if self.partial.strip() and exit_reason != "cancelled" and not exit_reason.startswith("timeout"):
            # A cut line is a violation only when the child ended on its own: the zygote may
            # kill a cancelled or late child in the middle of writing a record.
            self.record(self.partial)
        self.partial = b""
        n, outcomes, load_error = len(self.job.tests), self.outcomes, self.load_error
        if self.violation:
            exit_reason = self.violation
        elif self.stopped:
            exit_reason = "cancelled"  # stopped on purpose at a settled failure; what came after was not read
        elif exit_reason == "finished" and self.loaded is None:
            exit_reason = "crashed: the process ended before loading the program"
            load_error = "the process ended while the program was loading"
        elif exit_reason == "finished" and self.loaded == "ok" and not self.done:
            # os._exit / sys.exit from a thread / a closed channel: the test then running failed.
            if self.next_index < n:
                outcomes[self.next_index] = RawOutcome("exception", message="the process ended during this test")
            exit_reason = "crashed: the process ended before finishing its tests"
        elif exit_reason == "cancelled":
            pass  # stopped on purpose after a settled failure: the rest was not run
        elif exit_reason != "finished" and self.next_index < n and self.loaded == "ok":
            status = "timeout" if exit_reason.startswith("timeout") else "exception"
            outcomes[self.next_index] = RawOutcome(status, message=exit_reason)
        elif exit_reason != "finished" and self.loaded is None:
            load_error = f"the program did not load: {exit_reason}"
        clock = self.clock
        return RawResult(job_id=self.job.job_id, outcomes=outcomes, load_error=load_error, exit=exit_reason,
                         stdout=stdout, stderr=stderr, wall_time=wall, starved=starved,
                         deferred=clock.get("deferred", 0), capped=clock.get("capped", 0))


def parse_records(job: ExecJob, data: bytes | Iterable[str], exit_reason: str, stdout: str = "", stderr: str = "",
                  wall: float = 0.0, starved: float = 0.0) -> RawResult:
    """A whole reply's records (bytes, or lines) at once: see ``RecordParser``."""
    parser = RecordParser(job)
    if isinstance(data, (bytes, bytearray)):
        parser.feed(bytes(data))
    else:
        for line in data:
            parser.record(line)
    return parser.finish(exit_reason, stdout, stderr, wall, starved)


def sandbox_failure(job: ExecJob, message: str) -> RawResult:
    return RawResult(job_id=job.job_id, outcomes=[NOT_RUN] * len(job.tests),
                     exit="sandbox", sandbox_error=message)


class RecordStream:
    """Feeds streamed result bytes to the job's ``RecordParser`` and asks ``early_stop``
    about each test outcome as it arrives; returns True (stop the job) once it answers True.
    ``finish`` parses what was not streamed and builds the result: each record is parsed
    once."""

    def __init__(self, job: ExecJob, early_stop: EarlyStop):
        self.job = job
        self.parser = RecordParser(job, stop=lambda i, outcome: early_stop(job, i, outcome))
        self.fed = 0

    def __call__(self, data: bytes) -> bool:
        self.fed += len(data)
        self.parser.feed(data)
        return self.parser.stopped

    def finish(self, result: bytes, exit_reason: str, stdout: str = "", stderr: str = "", wall: float = 0.0,
               starved: float = 0.0) -> RawResult:
        """``result``: every result byte of the job, the streamed ones first."""
        self.parser.feed(result[self.fed:])
        return self.parser.finish(exit_reason, stdout, stderr, wall, starved)


MIN_CONTINUATION_BUDGET = 1.0  # seconds of a job's budget left for its continuation to be worth starting


def unfinished(job: ExecJob, raw: RawResult) -> int | None:
    """Where a job that runs every test (neither ``fail_fast`` nor ``stop_on_timeout``) must
    go on: the first test after the last one with an outcome, when its process ended before
    the last test (a crash, ``os._exit``, the zygote's clock killing a program that cancelled
    its alarm) and part of its budget is left; else None.

    Its later tests then run in a fresh process: ending early never turns a program's
    failures into tests that did not run. (Jobs that stop at a timeout are the trainers':
    ``trainers.method.rollouts.run_codes`` continues them itself, within the program's budget.)"""
    if job.fail_fast or job.stop_on_timeout or raw.sandbox_error or raw.load_error or raw.exit.startswith("protocol:") \
            or raw.exit == "cancelled" or job.batch_timeout - raw.own_time < MIN_CONTINUATION_BUDGET:
        return None
    last = max((i for i, o in enumerate(raw.outcomes) if o.status != "not_run"), default=None)
    if last is None or last + 1 >= len(job.tests):
        return None
    return last + 1


def continuation(job: ExecJob, start: int, raw: RawResult) -> ExecJob:
    """The job for tests ``start``.. of ``job``, within what is left of its budget."""
    return dataclasses.replace(job, job_id=f"{job.job_id}~{start}", tests=job.tests[start:],
                               time_limits=job.time_limits[start:], batch_timeout=job.batch_timeout - raw.own_time)


def joined(job: ExecJob, start: int, first: RawResult, rest: RawResult) -> RawResult:
    """One result for ``job`` from its first process's outcomes before ``start`` and its
    continuation's. A program that loaded once and not again fails every test left."""
    outcomes = first.outcomes[:start] + rest.outcomes
    if rest.load_error:
        outcomes = first.outcomes[:start] + [RawOutcome("exception", message=f"the program did not load again: "
                                                                              f"{rest.load_error}")
                                             for _ in rest.outcomes]
    return RawResult(job_id=job.job_id, outcomes=outcomes, exit=rest.exit if not rest.load_error else first.exit,
                     stdout=(first.stdout + rest.stdout)[-2 * 65536:], stderr=(first.stderr + rest.stderr)[-2 * 65536:],
                     wall_time=first.wall_time + rest.wall_time, sandbox_error=rest.sandbox_error,
                     starved=first.starved + rest.starved, deferred=first.deferred + rest.deferred,
                     capped=first.capped + rest.capped)


CLOCK_RULE = ("each test's time limit is on its own time: its wall-clock time less the time its process waited "
              f"for a CPU (the kernel's run delay), up to {WALL_CAP:g}x the limit on the wall clock")


def clock_counts(executor: Executor) -> dict[str, Any]:
    """What the time limits did in the jobs ``executor`` ran (``stream_jobs`` counts them),
    for results.json: the rule, tests whose wall clock passed their limit while their own
    time had not (load would have timed them out; judged on own time), timeouts the wall cap
    decided (load may have), jobs the zygote's clock ended from outside, and the seconds the
    programs waited for a CPU."""
    counts = getattr(executor, "clock", None) or {}
    return {"rule": CLOCK_RULE, "tests_deferred": counts.get("deferred", 0),
            "timeouts_at_wall_cap": counts.get("capped", 0), "jobs_ended_outside": counts.get("killed", 0),
            "waited_for_cpu_s": round(counts.get("starved", 0.0), 3)}


_CLOCK_LOCK = threading.Lock()  # trainers stream jobs from several threads


def _count_clock(executor: Executor, res: RawResult) -> None:
    with _CLOCK_LOCK:
        counts = executor.__dict__.setdefault("clock", {"deferred": 0, "capped": 0, "killed": 0, "starved": 0.0})
        counts["deferred"] += res.deferred
        counts["capped"] += res.capped
        counts["killed"] += res.exit.startswith("timeout")
        counts["starved"] += res.starved


def stream_jobs(executor: Executor, jobs: Sequence[ExecJob], on_result: Callable[[RawResult], None],
                early_stop: EarlyStop | None = None) -> None:
    """Run jobs to completion, handing each result to ``on_result`` as it lands; none is kept
    here (a HumanEval+ run's results hold 150,000 outputs). A job that does not fail fast and
    ended early is continued in a fresh process (``unfinished``), in a later round; its
    result is handed on once whole."""
    if not jobs:
        return
    landed: set[str] = set()
    round_jobs: Sequence[ExecJob] = jobs
    parts: dict[str, tuple[ExecJob, int, RawResult]] = {}  # continuation id -> (original job, start, result so far)
    while round_jobs:
        waiting: list[ExecJob] = []
        by_id = {j.job_id: j for j in round_jobs}
        # Early stop serves the first round: continued jobs do not fail fast, and nothing stops them early.
        results = executor.run(round_jobs, early_stop) if early_stop and round_jobs is jobs else executor.run(round_jobs)
        for res in results:
            landed.add(res.job_id)
            job = by_id.get(res.job_id)
            start = None
            if res.job_id in parts:
                job, offset, before = parts.pop(res.job_id)
                stuck = res.outcomes and res.outcomes[0].status == "not_run"  # no progress: never loop
                res = joined(job, offset, before, res)
                start = None if stuck else unfinished(job, res)
            elif job is not None:
                start = unfinished(job, res)
            if start is None:
                _count_clock(executor, res)
                on_result(res)
                continue
            nxt = continuation(job, start, res)
            parts[nxt.job_id] = (job, start, res)
            waiting.append(nxt)
        for job in round_jobs:  # an executor that loses a job must not lose the verdict silently
            if job.job_id not in landed:
                original = parts.pop(job.job_id, (job,))[0]
                on_result(sandbox_failure(original, f"executor {executor.name!r} returned no result"))
        round_jobs = waiting


def run_jobs(executor: Executor, jobs: Sequence[ExecJob], on_result: Callable[[RawResult], None] | None = None,
             early_stop: EarlyStop | None = None) -> dict[str, RawResult]:
    """Run jobs to completion and return results by job id; ``on_result`` sees each as it lands."""
    results: dict[str, RawResult] = {}

    def keep(res: RawResult) -> None:
        results[res.job_id] = res
        if on_result:
            on_result(res)

    stream_jobs(executor, jobs, keep, early_stop)
    return results
