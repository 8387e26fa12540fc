"""The sandbox-fusion executor against a real local HTTP server speaking the documented
/run_code and /v1/ping API (tests/sandbox_fusion_server.py), with its failure modes injected;
and, opt-in, against a real Sandbox Fusion service when SANDBOX_FUSION_ENDPOINT is set."""

from __future__ import annotations

import os
import threading

import pytest
from codea1_testkit import run_code
from sandbox_fusion_server import SandboxFusionServer

from codea1.harness.records import FAIL, PASS, SANDBOX_ERROR
from codea1.harness.verdicts.execution import ExecutorUnavailable

pytest.importorskip("sandbox_fusion", reason="the sandbox-fusion client is not installed")
GOOD = "def f(x):\n    return x + 1\n"


@pytest.fixture
def server():
    with SandboxFusionServer() as srv:
        yield srv


def make(plugins, server, **options):
    opts = {"endpoint": server.endpoint, "backoff": "0.02", "max_backoff": "0.1", **{k: str(v) for k, v in options.items()}}
    return plugins.executors.create("sandbox-fusion", opts, workers=2)


def test_one_request_per_program_carries_all_its_tests(plugins, server):
    with make(plugins, server) as ex:
        verdict, _ = run_code(ex, GOOD, "\n".join(f"assert f({i}) == {i + 1}" for i in range(20)), "f")
        assert verdict.status == PASS and verdict.n_passed == 20
        assert server.requests == 1


@pytest.mark.parametrize("fault", ["500", "drop", "sandbox_error", "slow"])
def test_failed_requests_are_retried_after_a_health_check(plugins, server, fault):
    # A "slow" reply never comes while the test runs: the client's timeout is what ends it,
    # so that timeout is long (a good reply on a machine three times busier still beats it)
    # and spent once (the second fault is a 500); the other faults need no timeout at all.
    server.faults = [fault, "500" if fault == "slow" else fault]
    server.ping_faults = 1  # the service is also down for the first health check
    with make(plugins, server, client_timeout=20.0 if fault == "slow" else 0) as ex:
        pings_before = server.pings
        verdict, _ = run_code(ex, GOOD, "assert f(1) == 2\nassert f(2) == 4", "f")
        assert verdict.status == FAIL and verdict.first_failure["test"] == "assert/1"  # the real verdict
        assert server.requests == 3 and ex.retried == 2
        assert server.pings - pings_before >= 3  # one failed and at least one good ping per retry


def test_a_program_that_stays_unanswered_gets_a_sandbox_error(plugins, server):
    server.faults = ["500"] * 10
    with make(plugins, server, retries=3) as ex:
        verdict, raw = run_code(ex, GOOD, "assert f(1) == 2", "f")
    assert verdict.status == SANDBOX_ERROR
    assert "no answer after 4 attempts" in raw.sandbox_error and "500" in raw.sandbox_error
    assert server.requests == 4


def test_concurrency_is_bounded(plugins, server):
    from codea1.harness.records import ExecJob
    from codea1.harness.verdicts.asserts import parse_asserts
    from codea1.harness.verdicts.execution import run_jobs

    """Six jobs, concurrency 3: the server holds each request until three are in flight
    together (a barrier), so exactly three at a time is what it must see; no clock involved."""
    tests, _ = parse_asserts("assert f(0) == 0", "f")
    jobs = [ExecJob(job_id=str(i), code="def f(x):\n    return x\n", tests=tests, entry_point="f", time_limits=[2.0],
                    batch_timeout=5) for i in range(6)]
    server.gate = threading.Barrier(3)
    try:
        with make(plugins, server, concurrency=3, client_timeout=180) as ex:
            results = run_jobs(ex, jobs)
    finally:
        server.gate = None
    assert sorted(results) == [str(i) for i in range(6)]
    assert all(r.sandbox_error is None for r in results.values())
    assert server.peak_in_flight == 3  # never more than three, and three did run together


def test_a_forged_reply_is_a_failure_never_a_pass(plugins, server, monkeypatch):
    """A reply whose nonce is not this request's (a program that printed a whole forged
    transcript, or a mixed-up response) is a protocol failure."""
    original = SandboxFusionServer.run_code

    def forged(request):
        reply = original(request)
        reply["run_result"]["stdout"] = reply["run_result"]["stdout"].replace('"nonce":"', '"nonce":"x')
        return reply

    monkeypatch.setattr(SandboxFusionServer, "run_code", staticmethod(forged))
    with make(plugins, server) as ex:
        verdict, raw = run_code(ex, GOOD, "assert f(1) == 2", "f")
    assert verdict.status == FAIL and "tampered" in verdict.message
    assert "does not belong to this request" in raw.exit


def test_a_driver_that_dies_under_the_program_is_the_programs_failure(plugins, server, monkeypatch):
    """The driver printed its ready line and then died (a program that killed it, say):
    asked once more, then the program's failure, never a sandbox error (which would take the
    sample out of the rewards)."""
    original = SandboxFusionServer.run_code

    def dies(request):
        reply = original(request)
        reply["run_result"]["stdout"] = reply["run_result"]["stdout"].split("\n", 1)[0] + "\n"
        reply["run_result"]["return_code"] = 1
        return reply

    monkeypatch.setattr(SandboxFusionServer, "run_code", staticmethod(dies))
    with make(plugins, server) as ex:
        verdict, raw = run_code(ex, GOOD, "assert f(1) == 2", "f")
        assert ex.requests_made == 2
    assert verdict.status not in (PASS, SANDBOX_ERROR) and raw.exit.startswith("crashed"), raw


def test_service_time_limit_is_a_sandbox_error(plugins, server):
    with make(plugins, server, run_timeout_slack=-3.5) as ex:  # the service stops the driver first
        verdict, raw = run_code(ex, "import time\ndef f(x):\n    time.sleep(1)\n    return 2\n", "assert f(1) == 2",
                                "f", limit=2.0, batch=3.0)
    assert verdict.status == SANDBOX_ERROR and "run timeout" in raw.sandbox_error


def test_missing_endpoint_and_client_are_clear_errors(plugins, monkeypatch):
    monkeypatch.delenv("SANDBOX_FUSION_ENDPOINT", raising=False)
    with pytest.raises(ExecutorUnavailable, match="needs an endpoint"):
        plugins.executors.create("sandbox-fusion", {})


@pytest.mark.skipif(not os.environ.get("SANDBOX_FUSION_ENDPOINT"), reason="opt-in: set SANDBOX_FUSION_ENDPOINT")
def test_against_a_real_sandbox_fusion_service(plugins):
    ex = plugins.executors.create("sandbox-fusion", {"backoff": "1"}, workers=2)
    with ex:
        assert ex.ping()
        assert run_code(ex, GOOD, "assert f(1) == 2", "f")[0].status == PASS
        assert run_code(ex, GOOD, "assert f(1) == 3", "f")[0].status == FAIL


def test_a_job_runs_under_the_hash_seed_it_asks_for(plugins, server):
    """The driver runs itself again under the job's PYTHONHASHSEED (validity's second run
    needs another seed than the service's process has): seed 0 twice alike, seed 1 not."""
    from codea1.harness.records import ExecJob, TestCase
    from codea1.harness.verdicts.execution import run_jobs

    code = "def g():\n    return hash('codea1')\n"
    jobs = [ExecJob(job_id=name, code=code, tests=[TestCase(id="t", call="g()")], entry_point="g", time_limits=[5.0],
                    hash_seed=seed) for name, seed in (("a", 0), ("b", 0), ("c", 1))]
    with make(plugins, server) as ex:
        out = {k: r.outcomes[0].value for k, r in run_jobs(ex, jobs).items()}
    assert out["a"] == out["b"] != out["c"]
