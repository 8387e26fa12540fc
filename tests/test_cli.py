"""The `codea1` command as a user runs it: a real subprocess."""

import json
import os
import subprocess

from conftest import codea1_command


def codea1(*args, cwd=None, env=None):
    return subprocess.run(codea1_command() + list(args), capture_output=True, text=True, env={**os.environ, **(env or {})},
                          cwd=cwd, timeout=300)


def test_demo_evaluate_prints_a_table_and_resumes(tmp_path):
    out = tmp_path / "run"
    cache = {"CODEA1_CACHE_DIR": str(tmp_path / "cache")}
    first = codea1("evaluate", "--benchmark", "demo", "--out", str(out), "--k", "1", env=cache)
    assert first.returncode == 0, first.stderr
    assert "pass@1" in first.stdout and "demo/9" in first.stdout and "timeout" in first.stdout
    assert "70.83%" in first.stdout and "first k samples" in first.stdout  # percentages, and what avg@k counts
    bars = [line.split(":")[0].strip() for line in first.stderr.replace("\r", "\n").splitlines() if "|" in line]
    assert set(bars) == {"reference", "evaluate"}  # one progress bar per stage
    assert "12/12" in first.stderr  # the reference bar counts the references it runs
    second = codea1("evaluate", "--benchmark", "demo", "--out", str(tmp_path / "run2"), env=cache)
    assert second.returncode == 0 and "reference" not in second.stderr  # all cached: no bar, no "0job"
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
