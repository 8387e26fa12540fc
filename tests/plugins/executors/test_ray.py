"""The ray executor on a real local Ray instance and on a real cluster started with `ray start`
on loopback: dead workers' batches are retried with nothing lost or counted twice, and the
number of batches in flight stays bounded."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

import pytest
from conftest import codea1_command

from codea1.harness.records import FAIL, PASS, ExecJob
from codea1.harness.verdicts.asserts import parse_asserts
from codea1.harness.verdicts.judge import judge

ray = pytest.importorskip("ray", reason="ray is not installed (pip install 'codea1[ray]')")
pytestmark = pytest.mark.xdist_group("ray")


def slow_jobs(n: int, seconds: float = 0.2) -> list[ExecJob]:
    tests, _ = parse_asserts("assert f(1) == 2", "f")
    return [ExecJob(job_id=f"j{i}", code=f"import time\ndef f(x):\n    time.sleep({seconds})\n    return x + {i % 2}\n",
                    tests=tests, entry_point="f", time_limits=[5.0], batch_timeout=10) for i in range(n)]


@pytest.fixture
def executor(plugins):
    ex = plugins.executors.create("ray", {"batch_size": "2", "object_store_mb": "100", "max_retries": "2"}, workers=2)
    yield ex
    ex.close()


def test_a_killed_worker_loses_nothing_and_counts_nothing_twice(executor):
    jobs = slow_jobs(16)
    deaths = executor.worker_deaths
    victim = executor.actor_pids()[0]
    seen = []
    for result in executor.run(jobs):
        seen.append(result)
        if len(seen) == 2:
            os.kill(victim, signal.SIGKILL)  # a node lost mid-run, with a batch in its hands
    assert executor.worker_deaths == deaths + 1
    assert Counter(r.job_id for r in seen) == Counter(j.job_id for j in jobs)
    by_id = {r.job_id: r for r in seen}
    statuses = [judge("t", 0, j, by_id[j.job_id]).status for j in jobs]
    assert statuses == [FAIL if i % 2 == 0 else PASS for i in range(16)]


def test_a_batch_whose_workers_keep_dying_ends_as_sandbox_errors(plugins):
    ex = plugins.executors.create("ray", {"batch_size": "4", "max_retries": "1", "actors": "1"}, workers=1)
    results = []
    try:
        jobs = slow_jobs(4, seconds=3)
        consumer = threading.Thread(target=lambda: results.extend(ex.run(jobs)))
        consumer.start()
        for _ in range(2):  # kill each worker that takes the batch: the first try and the retry
            time.sleep(1.5)
            os.kill(ex.actor_pids()[0], signal.SIGKILL)
        consumer.join(timeout=60)
    finally:
        ex.close()
    assert sorted(r.job_id for r in results) == sorted(j.job_id for j in jobs)
    assert all(r.sandbox_error and "worker died 2 times" in r.sandbox_error for r in results)
    assert ex.worker_deaths == 2 and ex.batches_retried == 1


def test_an_unplaceable_executor_fails_clearly(plugins):
    from codea1.harness.verdicts.execution import ExecutorUnavailable

    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False)  # a cluster too small for the actor
    try:
        with pytest.raises(ExecutorUnavailable, match="were not placed within"):
            plugins.executors.create("ray", {"num_cpus": "2", "actors": "1", "startup_timeout": "3"}, workers=1)
        assert ray.is_initialized()  # not started by the executor: left running for its owner
    finally:
        ray.shutdown()


def test_in_flight_batches_are_bounded(plugins):
    ex = plugins.executors.create("ray", {"batch_size": "1", "max_in_flight": "1"}, workers=2)
    try:
        results = list(ex.run(slow_jobs(4, seconds=0.3)))
    finally:
        ex.close()
    assert len(results) == 4 and ex.peak_in_flight == 1  # one batch at a time although two actors were idle


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_codea1_evaluate_joins_a_running_cluster_by_address(tmp_path):
    """`ray start --head` on loopback, then the real command with address=...: the driver is
    its own process, as on a cluster (Ray does not support joining a second cluster from a
    process that already ran one)."""
    temp_dir = tempfile.mkdtemp(prefix="ray-", dir="/tmp")  # short: Ray's unix sockets live there
    root = Path(__file__).resolve().parents[3]
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "disabled", "PYTHONPATH": str(root)}
    ray_cli = [sys.executable, "-c", "from ray.scripts.scripts import main; main()"]
    # Free ports, not fixed ones: another test session on this machine may run a cluster too.
    port, client_port = free_port(), free_port()
    subprocess.run([*ray_cli, "start", "--head", f"--port={port}", f"--ray-client-server-port={client_port}",
                    "--num-cpus=2", "--include-dashboard=false",
                    "--node-ip-address=127.0.0.1", f"--temp-dir={temp_dir}"], check=True, env=env,
                   capture_output=True, timeout=120)
    try:
        run = subprocess.run([*codea1_command(), "evaluate", "--benchmark", "demo", "--executor", "ray",
                              "--executor-opt", f"address=127.0.0.1:{port}", "--executor-opt", "batch_size=3",
                              "--out", str(tmp_path / "run"), "--no-progress"],
                             env=env, cwd=root, capture_output=True, text=True, timeout=300)
        assert run.returncode == 0, run.stderr[-3000:]
        environment = json.loads((tmp_path / "run" / "environment.json").read_text())
        assert environment["executor"]["ray_address"] == f"127.0.0.1:{port}"
        results = json.loads((tmp_path / "run" / "results.json").read_text())
        local = subprocess.run([*codea1_command(), "evaluate", "--benchmark", "demo", "--out", str(tmp_path / "local"),
                                "--no-progress"], env=env, cwd=root, capture_output=True, text=True, timeout=300)
        assert local.returncode == 0, local.stderr[-3000:]
        assert results["metrics"] == json.loads((tmp_path / "local" / "results.json").read_text())["metrics"]
    finally:
        subprocess.run([*ray_cli, "stop", "--force"], env=env, capture_output=True, timeout=120)
        shutil.rmtree(temp_dir, ignore_errors=True)
