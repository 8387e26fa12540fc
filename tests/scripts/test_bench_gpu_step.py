"""The benchmark scripts of the rollout path, run as a user runs them, on CPU with the tiny
shape and the shipped demo problems (no ../shared/data needed): scripts/bench_gpu_step.py
(one warm-up and one timed Code-A1 step through `codea1 train`),
scripts/bench_generation.py (the torch backend's generate alone) and
scripts/bench_logprob_memory.py (an update's peak memory with and without the full logits)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from conftest import ROOT

pytest.importorskip("torch", reason="torch is not installed (pip install 'codea1[hf]')")
pytest.importorskip("transformers", reason="transformers is not installed (pip install 'codea1[hf]')")


@pytest.mark.long
def test_bench_gpu_step_times_step_two_of_a_real_train_run_on_cpu(tmp_path):
    out = tmp_path / "bench"
    run = subprocess.run([sys.executable, str(ROOT / "scripts" / "bench_gpu_step.py"), "--shape", "tiny",
                          "--device", "cpu", "--engines", "transformers", "--data", "demo", "--max-tokens", "16",
                          "--workers", "2", "--out", str(out), "--option", "decode=eager", "--option", "no_such=1"],
                         capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    bench = json.loads((out / "bench.json").read_text())
    assert bench["model"]["shape"] == "tiny" and bench["model"]["vocab"] == 1024
    (row,) = bench["rows"]
    assert "error" not in row, row
    assert set(row["timing"]) >= {"generate_code_s", "generate_tests_s", "validate_s", "execute_s", "update_s"}
    # step 2's two generate calls, as recorded in the training process: 4 x 8 programs, 32 x 8 suites
    assert [(c["role"], c["step"], c["sequences"]) for c in row["generate_calls"]] == [("code", 1, 32),
                                                                                      ("tests", 1, 256)]
    assert row["tokens_from"] == "recorded" and 0 < row["generated_tokens"] <= 288 * 16
    assert row["tokens_per_s"] > 0 and row["step_s"] >= row["generate_code_s"] + row["generate_tests_s"]
    assert row["gpu_util_generate"] is None and row["peak_gpu_gb"] is None  # CPU: n/a
    config = (out / "transformers" / "config.toml").read_text()
    assert "generation_batch" not in config  # unset unless asked: the backend's default
    assert 'decode = "eager"' in config and "no_such" not in config  # --option: only the backend's own fields
    assert "left out (not options of this code's torch backend): no_such" in run.stdout
    lines = run.stdout.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("engine"))
    assert lines[header + 2].split()[:2] == ["transformers", "tiny"]
    assert "n/a" in lines[header + 2]


@pytest.mark.long
def test_bench_generation_counts_tokens_and_finish_reasons_per_configuration(tmp_path):
    model = tmp_path / "model"
    command = [sys.executable, str(ROOT / "scripts" / "bench_generation.py"), "--shape", "tiny", "--data", "demo",
               "--prompts", "3", "-n", "2", "--max-tokens", "24", "--repeat", "1", "--model-dir", str(model),
               "--generation-batch", "2", "4", "--option", "no_such_option=1", "--attention", "eager", "--json"]
    run = subprocess.run(command, capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout)
    assert out["model"]["eos_bias"] == 4.5 and not out["model"]["tied"]
    assert len(set(out["prompt_tokens"])) == 3  # prompts of different lengths
    assert out["left_out"] == ["no_such_option"]
    assert [r["config"] for r in out["rows"]] == ["generation_batch=2", "generation_batch=4"]
    for row in out["rows"]:
        assert row["sequences"] == 6 and row["stop"] + row["length"] == 6
        assert 0 < row["generated_tokens"] <= 6 * 24 and row["tokens_per_s"] > 0
        assert row["backend_info"]["attention"] == "eager"  # --attention: the model's, for every row
    # the weights are reused, not rebuilt: a second run reads the same directory
    stamp = (model / "model.safetensors").stat().st_mtime_ns
    again = subprocess.run(command[:-8] + ["--json"], capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert (model / "model.safetensors").stat().st_mtime_ns == stamp


@pytest.mark.long
def test_bench_logprob_memory_runs_both_ways_and_reports_their_peaks(tmp_path):
    run = subprocess.run([sys.executable, str(ROOT / "scripts" / "bench_logprob_memory.py"), "--vocab", "4096",
                          "--responses", "2", "--prompt", "16", "--response", "32"],
                         capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert lines[0].startswith("update of 2 responses of 16 + 32 tokens, vocabulary 4,096")
    assert [line.split()[0] for line in lines[1:3]] == ["chunked", "full"]
    assert "memory above the model" in lines[3]


def test_bench_decode_times_each_decode_path_against_its_bound_on_cpu(tmp_path):
    out = tmp_path / "bench"
    run = subprocess.run([sys.executable, str(ROOT / "scripts" / "bench_decode.py"), "--shape", "tiny",
                          "--device", "cpu", "--decode", "eager", "graph", "nonsense", "--max-tokens", "24",
                          "--prompts", "3", "-n", "2", "--out", str(out)],
                         capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    rows = json.loads((out / "decode.json").read_text())["rows"]
    assert [(r["decode"], r["max_tokens"]) for r in rows] == [("eager", 24), ("graph", 24), ("nonsense", 24)]
    for row in rows[:2]:
        assert "error" not in row, row
        assert row["sequences"] == 6 and 0 < row["generated"] <= 6 * 24 and row["info"]["decode"] == row["decode"]
        assert row["bound_ms"] > 0
        if row["step_ms"] is None:  # a busy machine can time the long call no longer than the short one
            assert row["x_bound"] is None and "noise" in row["note"]
        else:
            assert row["step_ms"] > 0 and row["x_bound"] == pytest.approx(row["step_ms"] / row["bound_ms"], rel=0.01)
        assert row.get("gpu_busy") is None and "peak_gb" not in row  # CPU: n/a
    assert "option 'decode' must be one of" in rows[2]["error"]  # a failing row is said, the others run
    assert "nonsense" in run.stdout and "error" in run.stdout
