"""The zygote protocol's record parser (harness.verdicts.execution.RecordParser)."""

from __future__ import annotations

import dataclasses
import json

import pytest

from codea1.harness.records import FAIL, NOT_RUN, ExecJob, RawOutcome, TestCase
from codea1.harness.verdicts.execution import PayloadEncoder, RecordParser, parse_records
from codea1.harness.verdicts.judge import judge


def make_job(n: int = 3) -> ExecJob:
    tests = [TestCase(id=f"t{i}", args=[i], has_expected=False) for i in range(n)]
    return ExecJob(job_id="j", code="", tests=tests, entry_point="f", time_limits=[1.0] * n)


def one_line_at_a_time(lines: list[bytes]):
    """The reference reading: json.loads of each line on its own."""
    parser = RecordParser(make_job())
    for line in lines:
        parser.record(line)
    return parser.finish("finished")


GOOD = [b'{"load":"ok"}', b'{"i":0,"s":"ok","t":0.1,"v":[1,{"t":[2,3]}]}', b'{"i":1,"s":"exception","e":"boom","t":0.2}',
        b'{"i":2,"s":"ok","t":0.3,"v":"x"}', b'{"done":true}']


@pytest.mark.parametrize("lines", [
    GOOD,
    [b'  {"load":"ok"}  ', *GOOD[1:]],  # whitespace around a record: json.loads accepts it
    [GOOD[0], b"", *GOOD[1:]],  # a blank line: tampering (newlines would restart the zygote's test clock)
    [GOOD[0], b"   ", *GOOD[1:]],
    [GOOD[0], GOOD[1][:-1] + b',"i":1}', *GOOD[2:]],  # a duplicate key: the last one wins, as in json.loads
    [GOOD[0], GOOD[1] + b" " + GOOD[2], *GOOD[3:]],  # two records on one line
    [GOOD[0], b'{"i":0,"s":"ok","t":0.1,"v":[1', b'2]}', *GOOD[2:]],  # one record over two lines
    [GOOD[0], b'{"i":0,"s":"ok","t":0.1,"v":"a\tb"}', *GOOD[2:]],  # a raw control character in a string
    [GOOD[0], '{"i":0,"s":"ok","t":0.1,"v":"\u00e9"}'.encode("utf-16-le"), *GOOD[2:]],  # not UTF-8
    [GOOD[0], b'{"i":0,"s":"ok","t":0.1,"v":"\xff"}', *GOOD[2:]],  # invalid UTF-8
    [GOOD[0], b"\xef\xbb\xbf" + GOOD[1], *GOOD[2:]],  # a byte-order mark
    [GOOD[0], b"[1,2]", *GOOD[1:]],  # not an object
    [*GOOD, b'{"i":3,"s":"ok","v":1}'],  # after done
])
@pytest.mark.parametrize("chunk", [1, 7, 1 << 20])
def test_streamed_chunks_read_as_json_loads_of_each_line(lines, chunk):
    """feed() reads lines with json's C scanner when it can, and hands any line it cannot
    read as exactly one value to json.loads: the outcome, violation included, is the same
    as reading each line with json.loads, however the bytes are cut into chunks."""
    data = b"\n".join(lines) + b"\n"
    parser = RecordParser(make_job())
    for k in range(0, len(data), chunk):
        parser.feed(data[k:k + chunk])
    got, want = parser.finish("finished"), one_line_at_a_time(lines)
    assert got.exit == want.exit
    assert [o.to_json() for o in got.outcomes] == [o.to_json() for o in want.outcomes]


def test_the_shared_not_run_outcome_is_read_only():
    parser = RecordParser(make_job())
    raw = parser.finish("finished")
    assert all(o is NOT_RUN for o in raw.outcomes)
    assert NOT_RUN == RawOutcome("not_run") and RawOutcome("not_run") == NOT_RUN
    with pytest.raises(AttributeError, match="shared"):
        NOT_RUN.value = 1


@pytest.mark.parametrize("first", [b'{"x":0,"v":2}', b'{"x":0,"e":"boom"}'])
def test_an_expected_value_record_from_a_child_is_tampering(first):
    """No child computes expected values (harness.verdicts.expected does, beforehand, in a job of its
    own): the former phase-1 record ``{"x": i, ...}`` is the program writing into the
    channel, before or after its load record, and fails the sample."""
    tests = [TestCase(id=f"t{i}", call="f()", expected=2) for i in range(2)]
    job = ExecJob(job_id="j", code="", tests=tests, entry_point="f", time_limits=[1.0, 1.0])
    for lines in ([first, b'{"load":"ok"}'], [b'{"load":"ok"}', first]):
        rest = [b'{"i":0,"s":"ok","t":0.1,"v":2}', b'{"i":1,"s":"ok","t":0.1,"v":2}', b'{"done":true}']
        raw = parse_records(job, b"\n".join(lines + rest) + b"\n", "finished")
        assert raw.exit.startswith("protocol: unknown record"), raw.exit
        verdict = judge("task", 0, job, raw)
        assert verdict.status == "fail" and verdict.message.startswith("result channel tampered with")
    assert not hasattr(RawOutcome("ok"), "expected")  # outcomes carry what the program returned, nothing else


def test_a_test_whose_expected_side_is_still_an_expression_is_never_encoded_for_a_child():
    """The guard of the rule: a job built from a test with ``expected_source`` (a flow that
    forgot harness.verdicts.expected.settle_expected_sources) is refused before anything is sent."""
    tests = [TestCase(id="t0", call="f()", expected_source="sorted(set('cab'))")]
    job = ExecJob(job_id="j", code="", tests=tests, entry_point="f", time_limits=[1.0])
    with pytest.raises(ValueError, match="was not computed before the job was built"):
        PayloadEncoder()(job)
    settled = [dataclasses.replace(tests[0], expected=["a", "b", "c"], expected_source=None)]
    _, _, text, _ = PayloadEncoder()(dataclasses.replace(job, tests=settled))
    assert "expected" not in text and "cab" not in text


@pytest.mark.parametrize("chunk", [1, 7, 1 << 20])
def test_nothing_after_a_settled_failure_is_read(chunk):
    """Once ``stop`` answers True, the records after that one are not parsed (nor judged):
    the later tests count as not run, a forged line after it is not seen, and the result
    says "cancelled" however the child's run ended."""
    asked = []

    def stop(i, outcome):
        asked.append(i)
        return outcome.value == "wrong"

    lines = [b'{"load":"ok"}', b'{"i":0,"s":"ok","t":0.1,"v":1}', b'{"i":1,"s":"ok","t":0.1,"v":"wrong"}',
             b'{"i":2,"s":"ok","t":0.1,"v":3}', b'{"i":2,"s":"ok","t":0.1,"v":3}', b'{"done":true}', b'{"i":']
    data = b"\n".join(lines)
    parser = RecordParser(make_job(), stop=stop)
    for k in range(0, len(data), chunk):
        parser.feed(data[k:k + chunk])
    raw = parser.finish("finished")
    assert asked == [0, 1]
    assert raw.exit == "cancelled"
    assert [o.status for o in raw.outcomes] == ["ok", "ok", "not_run"] and raw.outcomes[2] is NOT_RUN


def test_a_failing_stop_is_an_error_not_a_tampered_channel():
    """An exception in ``stop`` (a checker's bug) propagates: it must not be taken for a
    protocol violation, which would fail the sample as tampering."""
    def stop(i, outcome):
        raise TypeError("a checker bug")

    parser = RecordParser(make_job(), stop=stop)
    with pytest.raises(TypeError, match="checker bug"):
        parser.feed(b'{"load":"ok"}\n{"i":0,"s":"ok","t":0.1,"v":1}\n')
    assert parser.violation is None


class LosingExecutor:
    """Runs nothing and answers for the first job only: a real executor's bug, staged."""

    name = "losing"

    def run(self, jobs, early_stop=None):
        from codea1.harness.records import RawResult

        yield RawResult(job_id=jobs[0].job_id, outcomes=[RawOutcome("ok", value=1)])


def test_stream_jobs_hands_over_every_result_and_names_the_lost_ones():
    from codea1.harness.verdicts.execution import run_jobs, stream_jobs

    jobs = [ExecJob(job_id=str(i), code="", tests=make_job(1).tests, entry_point="f", time_limits=[1.0]) for i in range(3)]
    seen = []
    assert stream_jobs(LosingExecutor(), jobs, seen.append) is None  # nothing is kept
    assert [r.job_id for r in seen] == ["0", "1", "2"]
    assert seen[0].sandbox_error is None
    assert [r.sandbox_error for r in seen[1:]] == ["executor 'losing' returned no result"] * 2
    kept = run_jobs(LosingExecutor(), jobs)
    assert sorted(kept) == ["0", "1", "2"] and kept["2"].exit == "sandbox"


@pytest.mark.parametrize("status", ["passed", "failed"])
def test_only_an_in_process_test_may_be_reported_passed_or_failed(status):
    """passed/failed is a runner's verdict from inside the program's process. For a test the
    parent judges (a call test, or a script rewritten to report values) such a record is the
    program speaking for itself: tampering. For an in-process script test it is taken, and
    the verdict says where it was decided."""
    from codea1.harness.verdicts.judge import judge

    script = TestCase(id="s", kind="script", script="def test_x():\n    assert True\n", framework="pytest")
    for test, taken in [(script, True), (TestCase(id="c", args=[1], expected=2), False),
                        (TestCase(id="r", kind="script", script="x", framework="pytest", judged="parent"), False)]:
        job = ExecJob(job_id="j", code="", tests=[test], entry_point="f", time_limits=[1.0])
        parser = RecordParser(job)
        parser.feed(b'{"load":"ok"}\n{"i":0,"s":"%s","e":"","t":0.1}\n{"done":true}\n' % status.encode())
        raw = parser.finish("finished")
        assert raw.exit.startswith("protocol:") is not taken, (test.id, raw.exit)
        verdict = judge("t", 0, job, raw)
        assert verdict.status == ("pass" if taken and status == "passed" else "fail")
        assert verdict.judged == ("in-process" if taken else "parent")


def test_a_long_line_in_many_chunks_is_joined_once():
    """A record line arriving in thousands of chunks (a large output, or a program writing a
    line that never ends to stall the parent) is kept chunk by chunk and joined when its
    newline comes: the same outcome as one piece."""
    value = list(range(200_000))
    line = json.dumps({"i": 0, "s": "ok", "t": 0.1, "v": value}).encode()
    parser = RecordParser(make_job(1))
    parser.feed(b'{"load":"ok"}\n')
    for k in range(0, len(line), 997):
        parser.feed(line[k:k + 997])
    assert parser.pending  # nothing joined yet
    parser.feed(b'\n{"done":true}\n')
    raw = parser.finish("finished")
    assert raw.exit == "finished" and raw.outcomes[0].value == value
    cut = RecordParser(make_job(1))
    cut.feed(b'{"load":"ok"}\n' + line[:5000])
    cut.feed(line[5000:9000])
    assert cut.finish("finished").exit.startswith("protocol:")  # the child ended inside a record


def in_process_job() -> ExecJob:
    script = "import unittest\n\nclass TestCases(unittest.TestCase):\n    def test_1(self):\n        pass\n"
    tests = [TestCase(id="s0", kind="script", script=script, framework="unittest", judged="in-process"),
             TestCase(id="s1", kind="script", script=script, framework="unittest", judged="in-process")]
    return ExecJob(job_id="k", code="", tests=tests, time_limits=[1.0, 1.0])


def sealed_lines(key: bytes | None, passes: dict) -> list[bytes]:
    head = [b'{"seal":"%s"}' % key.hex().encode()] if key is not None else []
    body = [json.dumps({"i": i, "s": "passed", "e": "", "t": 0.1, **({"m": mark} if mark else {})}).encode()
            for i, mark in passes.items()]
    return [*head, b'{"load":"ok"}', *body, b'{"done":true}']


def test_an_in_process_pass_counts_only_with_the_childs_seal():
    """The child's first record is its key; each in-process pass carries the seal of its own
    index under that key (protocol.verdict_seal). A pass unsealed, sealed for another test or
    under another key, or a key announced after the program loaded, is the program writing
    into the channel."""
    from codea1.harness.sandbox.protocol import verdict_seal

    key, other = bytes(range(32)), bytes(32)

    def read(lines):
        parser = RecordParser(in_process_job())
        parser.feed(b"\n".join(lines) + b"\n")
        return parser.finish("finished")

    good = read(sealed_lines(key, {0: verdict_seal(key, 0), 1: verdict_seal(key, 1)}))
    assert good.exit == "finished" and [o.status for o in good.outcomes] == ["passed", "passed"]
    for lines in (sealed_lines(key, {0: verdict_seal(key, 0), 1: None}),
                  sealed_lines(key, {0: verdict_seal(key, 0), 1: verdict_seal(key, 0)}),
                  sealed_lines(key, {0: verdict_seal(key, 0), 1: verdict_seal(other, 1)}),
                  sealed_lines(None, {0: verdict_seal(key, 0), 1: verdict_seal(key, 1)}),
                  [b'{"load":"ok"}', b'{"seal":"%s"}' % key.hex().encode(),
                   *sealed_lines(None, {0: verdict_seal(key, 0), 1: verdict_seal(key, 1)})[1:]],
                  [b'{"seal":"00"}', *sealed_lines(None, {0: None})]):
        raw = read(lines)
        assert raw.exit.startswith("protocol:"), lines
        assert judge("k", 0, in_process_job(), raw).status == FAIL, lines
    failed = read([b'{"load":"ok"}', b'{"i":0,"s":"failed","e":"x","t":0.1}', b'{"i":1,"s":"failed","e":"x","t":0.1}',
                   b'{"done":true}'])
    assert failed.exit == "finished"  # a failure needs no seal: the program forging one fails itself
    assert judge("k", 0, in_process_job(), good).status != FAIL
