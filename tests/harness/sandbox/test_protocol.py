"""The protocol between the parent and its zygotes (harness.sandbox.protocol): frames bound to
their job and nonce, bounded parsing, and what the pool makes of each way a reply can go
wrong. Real processes: a stand-in zygote (a script speaking the protocol, wrongly on
purpose) where a real one cannot be made to misbehave, the real zygote elsewhere."""

from __future__ import annotations

import io
import json
import sys
import textwrap

import pytest

from codea1.harness.records import ExecJob, TestCase
from codea1.harness.sandbox import protocol
from codea1.harness.sandbox.executor import ZygoteExecutor
from codea1.harness.verdicts.execution import run_jobs
from codea1.harness.verdicts.judge import judge

# A zygote that answers every job with the right records for add(1, 2) == 3, or, by its mode,
# wrongly. Each start appends a line to the counter file.
FAKE_ZYGOTE = textwrap.dedent('''
    import json, sys
    mode, counter = sys.argv[1], sys.argv[2]
    with open(counter, "a") as f:
        f.write("start\\n")
    starts = sum(1 for _ in open(counter))
    out = sys.stdout.buffer

    def frame(header, body=b""):
        header["result_bytes"] = len(body)
        out.write(json.dumps(header).encode() + b"\\n" + body)
        out.flush()

    frame({"ready": True, "pid": 0})
    records = b'{"load":"ok"}\\n{"i":0,"s":"ok","t":0.0,"v":3}\\n{"done":true}\\n'
    for line in sys.stdin.buffer:
        job = json.loads(line)
        ids = {"job_id": job["job_id"], "nonce": job["nonce"]}
        reply = {**ids, "exit": "finished", "stdout": "", "stderr": "", "wall": 0.0}
        if mode == "other-job":
            frame({**reply, "job_id": "another-job"}, records)
        elif mode == "other-nonce":
            frame({**reply, "nonce": "0" * 24}, records)
        elif mode == "stale-frame":  # a second, stale reply after the right one
            frame(reply, records)
            frame(reply, records)
        elif mode == "garbage-header":
            out.write(b"not a header\\n")
            out.flush()
        elif mode == "huge-body":
            out.write(json.dumps({**reply, "result_bytes": 1 << 40}).encode() + b"\\n")
            out.flush()
        elif mode == "sandbox-in-first-zygote" and starts == 1:
            frame({**reply, "exit": "sandbox: OSError: no memfd"})
        elif mode == "sandbox-always":
            frame({**reply, "exit": "sandbox: OSError: no memfd"})
        else:
            frame({**{"chunk": True}, **ids}, records[:14])
            frame(reply, records[14:])
''')


class FakeZygoteExecutor(ZygoteExecutor):
    name = "fake-zygote"

    def __init__(self, script, mode, counter):
        self._fake = [sys.executable, str(script), mode, str(counter)]
        super().__init__(workers=1)

    def prefix(self):
        return self._fake


def add_jobs(n):
    tests = [TestCase(id="t0", args=[1, 2], expected=3)]
    return [ExecJob(job_id=f"job-{i}", code="", tests=tests, entry_point="add", time_limits=[1.0], batch_timeout=5.0)
            for i in range(n)]


def run_fake(tmp_path, mode, n=3):
    script, counter = tmp_path / "fake_zygote.py", tmp_path / "starts"
    script.write_text(FAKE_ZYGOTE)
    jobs = add_jobs(n)
    with FakeZygoteExecutor(script, mode, counter) as ex:
        raws = run_jobs(ex, jobs)
        statuses = [judge("t", 0, job, raws[job.job_id]).status for job in jobs]
    return statuses, [raws[j.job_id] for j in jobs], len(counter.read_text().splitlines())


def test_the_stand_in_zygote_speaks_the_protocol(tmp_path):
    statuses, _, starts = run_fake(tmp_path, "honest")
    assert statuses == ["pass"] * 3 and starts == 1


@pytest.mark.parametrize("mode", ["other-job", "other-nonce", "garbage-header", "huge-body"])
def test_a_reply_that_breaks_the_protocol_fails_its_job_and_ends_the_zygote(tmp_path, mode):
    statuses, raws, starts = run_fake(tmp_path, mode)
    assert statuses == ["fail"] * 3, [r.exit for r in raws]
    assert all(r.exit.startswith("protocol:") and not r.sandbox_error for r in raws)
    assert starts == 4  # every job's zygote replaced, never asked again


def test_a_stale_frame_is_never_read_as_the_next_jobs_reply(tmp_path):
    statuses, raws, starts = run_fake(tmp_path, "stale-frame")
    # Job 0 is answered; its stale second reply reaches job 1's reader, which ends that
    # zygote; job 2 runs on a fresh one, which does the same to job 3's... (no job 3).
    assert statuses == ["pass", "fail", "pass"], [r.exit for r in raws]
    assert "job-0" in raws[1].exit and starts == 2


def test_a_zygote_failure_is_retried_once_on_a_fresh_zygote(tmp_path):
    statuses, _, starts = run_fake(tmp_path, "sandbox-in-first-zygote")
    assert statuses == ["pass"] * 3 and starts == 2


def test_a_zygote_that_fails_twice_is_a_sandbox_error(tmp_path):
    statuses, raws, _ = run_fake(tmp_path, "sandbox-always", n=1)
    assert statuses == ["sandbox_error"] and "no memfd" in raws[0].sandbox_error


# -- frames and records, bounded ---------------------------------------------------------------

def frames(*parts: bytes):
    return io.BufferedReader(io.BytesIO(b"".join(parts)))


def test_read_frame_bounds_what_it_reads():
    header, body = protocol.read_frame(frames(b'{"result_bytes":3,"job_id":"a"}\nabc'))
    assert header["job_id"] == "a" and body == b"abc"
    for bad, error in [(b"x" * (protocol.MAX_HEADER_BYTES + 10), protocol.ReplyError),
                       (b'{"result_bytes":-1}\n', protocol.ReplyError),
                       (b'{"result_bytes":99999999999}\n', protocol.ReplyError),
                       (b'{"result_bytes":"3"}\n', protocol.ReplyError),
                       (b'[1]\n', protocol.ReplyError), (b"[" * 100000 + b"\n", protocol.ReplyError),
                       (b'{"result_bytes":5}\nab', protocol.StreamEnded), (b"", protocol.StreamEnded)]:
        with pytest.raises(error):
            protocol.read_frame(frames(bad))


def test_a_reply_for_another_job_or_nonce_is_refused():
    reply = protocol.Reply("job-1", "n1")
    assert reply.check({"job_id": "job-1", "nonce": "n1"})
    for header in ({"job_id": "job-2", "nonce": "n1"}, {"job_id": "job-1", "nonce": "n2"}, {"job_id": "job-1"}):
        with pytest.raises(protocol.ReplyError):
            reply.check(header)


def nested(depth: int, leaf="1") -> str:
    return "[" * depth + leaf + "]" * depth


def test_records_parse_whatever_the_recursion_limit_within_the_bounds():
    limit = sys.getrecursionlimit()
    value = protocol.loads_record(nested(5000))
    for _ in range(4999):
        value = value[0]
    assert value == [1]
    assert protocol.loads_record('{"a": [1, 2.5, null, true, "x]"], "b": {}}') == json.loads(
        '{"a": [1, 2.5, null, true, "x]"], "b": {}}')
    for bad in (nested(protocol.MAX_DEPTH + 1), "[" * 300000, nested(3000)[:-1], nested(3000) + "]", "[1,]",
                nested(2000, '{"a" 1}'), "\xff"):
        with pytest.raises(ValueError):
            protocol.loads_record(bad)
    assert sys.getrecursionlimit() == limit


def test_a_record_may_not_hold_a_decimal_integer_too_long_to_convert_in_linear_time():
    """The parent lets ints of any size through for its data; in a record (the child writes
    large ones in hex) more than MAX_INT_DIGITS digits are refused, nested or not."""
    import codea1.harness.verdicts.plaindata  # noqa: F401 - it lifts the interpreter's own limit

    assert protocol.loads_record("[" + "9" * protocol.MAX_INT_DIGITS + "]") == [int("9" * protocol.MAX_INT_DIGITS)]
    assert protocol.loads_record('["' + "9" * 100000 + '"]') == ["9" * 100000]  # digits in a string are text
    for bad in ("[" + "9" * 5_000_000 + "]", nested(3000, "9" * 5000), '{"v": -' + "1" * 5000 + "}"):
        with pytest.raises(ValueError, match="digits"):
            protocol.loads_record(bad)


def test_dumps_tree_writes_what_json_writes_at_any_depth():
    deep = json.loads(nested(500, '{"k":[1,-2.5,"s\\"]",null,{}],"e":[]}'))
    assert protocol._dumps_iterative(deep) == json.dumps(deep, separators=(",", ":"))
    text = protocol.dumps_tree(protocol.loads_record(nested(6000)))
    assert text == nested(6000)
