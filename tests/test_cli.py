"""The `codea1` command as a user runs it: a real subprocess."""

import json
import os
import subprocess

from conftest import ROOT, codea1_command


def codea1(*args, cwd=None):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(codea1_command() + list(args), capture_output=True, text=True, env=env, cwd=cwd, timeout=300)


def test_demo_evaluate_prints_a_table_and_resumes(tmp_path):
    out = tmp_path / "run"
    first = codea1("evaluate", "--benchmark", "demo", "--out", str(out), "--k", "1")
    assert first.returncode == 0, first.stderr
    assert "pass@1" in first.stdout and "demo/9" in first.stdout and "timeout" in first.stdout
    assert "reference" in first.stderr and "evaluate" in first.stderr  # one progress bar per stage
    again = codea1("evaluate", "--benchmark", "demo", "--out", str(out), "--no-progress")
    assert "(resumed 19)" in again.stdout
    assert json.loads((out / "results.json").read_text())["resumed"] == 19


def test_plugins_listing():
    result = codea1("plugins")
    assert result.returncode == 0
    for name in ("subprocess", "pass@k", "avg@k", "humaneval+", "mbpp+", "bigcodebench", "ult", "kodcode", "demo",
                 "hf", "vllm", "openai", "replay"):
        assert name in result.stdout


def test_bad_input_is_a_clear_error_not_a_traceback(tmp_path):
    bad = codea1("evaluate", "--benchmark", "demo", "--samples", str(tmp_path / "nope.jsonl"), "--out", str(tmp_path / "o"))
    assert bad.returncode == 2 and "nope.jsonl: no such samples file" in bad.stderr
    assert "Traceback" not in bad.stderr
    k = codea1("evaluate", "--benchmark", "demo", "--k", "0", "--out", str(tmp_path / "o"))
    assert k.returncode == 2 and "--k" in k.stderr
    data = codea1("evaluate", "--benchmark", "humaneval+", "--data", str(tmp_path / "x.jsonl"), "--out", str(tmp_path / "o"))
    assert data.returncode == 2 and "x.jsonl: no such file" in data.stderr
