"""`evaluate` through the library API: results, resume, overwrite, dedupe, files."""

from __future__ import annotations

import json

import pytest

from codea1.harness.flows.evaluate import EvaluateConfig, evaluate
from codea1.harness.runstore import RunStoreError


def test_run_files(plugins, tmp_path):
    results = evaluate(plugins, EvaluateConfig(benchmark="demo", out=str(tmp_path), progress=False))
    saved = json.loads((tmp_path / "results.json").read_text())
    assert saved["metrics"] == results["metrics"]
    assert all(0.0 <= v <= 1.0 for v in saved["metrics"].values())
    assert len((tmp_path / "verdicts.jsonl").read_text().splitlines()) == 19
    config = json.loads((tmp_path / "config.json").read_text())
    assert config["benchmark"] == "demo" and config["command"] == "evaluate"
    environment = json.loads((tmp_path / "environment.json").read_text())
    assert "packages" in environment
    # The demo's tests are calls: its zygotes prepare unittest alone (Benchmark.frameworks).
    assert environment["executor"]["frameworks"] == ["unittest"] and environment["executor"]["imports"] == []
    assert not list(tmp_path.glob("*_eval_results.json"))  # only for evalplus' benchmarks


def test_demo_results(plugins, tmp_path):
    results = evaluate(plugins, EvaluateConfig(benchmark="demo", out=str(tmp_path), progress=False, k=[1, 2]))
    assert results["counts"]["pass"] == 12
    assert (results["counts"]["fail"], results["counts"]["timeout"], results["counts"]["error"]) == (5, 1, 1)
    # 5 tasks with only the reference (1.0) and 7 with reference + wrong sample (0.5)
    assert results["metrics"]["pass@1"] == pytest.approx((5 + 7 * 0.5) / 12)
    # 1 or 2 samples a task: no avg@n (avg@1 would be the first samples alone: the references)
    assert not [m for m in results["metrics"] if m.startswith("avg@")]
    assert "pass@2" not in results["metrics"] and "fewer than 2 samples" in results["metric_notes"]["pass@2"]
    statuses = {t: d["statuses"] for t, d in results["tasks"].items()}
    assert statuses["demo/9"] == ["pass", "timeout"] and statuses["demo/4"] == ["pass", "error"]


def test_resume_skips_finished_samples_and_overwrite_starts_over(plugins, tmp_path):
    cfg = EvaluateConfig(benchmark="demo", out=str(tmp_path), progress=False)
    evaluate(plugins, cfg)
    lines = (tmp_path / "verdicts.jsonl").read_text().splitlines()
    # Simulate a run killed mid-way: 7 verdicts kept, the 8th torn in half.
    (tmp_path / "verdicts.jsonl").write_text("\n".join(lines[:7]) + "\n" + lines[7][:25])
    again = evaluate(plugins, cfg)
    assert again["resumed"] == 7
    assert again["counts"]["pass"] == 12
    assert len((tmp_path / "verdicts.jsonl").read_text().splitlines()) == 19
    fresh = evaluate(plugins, EvaluateConfig(benchmark="demo", out=str(tmp_path), progress=False, overwrite=True))
    assert fresh["resumed"] == 0


def test_a_directory_of_another_run_is_refused_without_overwrite(plugins, tmp_path):
    evaluate(plugins, EvaluateConfig(benchmark="demo", out=str(tmp_path), progress=False))
    other = tmp_path / "other.jsonl"
    other.write_text(json.dumps({"task_id": "demo/0", "solution": "def digit_sum(n):\n    return 0\n"}) + "\n")
    with pytest.raises(RunStoreError, match="field 'samples' was"):
        evaluate(plugins, EvaluateConfig(benchmark="demo", samples=str(other), out=str(tmp_path), progress=False,
                                         allow_partial=True))


def test_identical_programs_run_once_and_all_get_verdicts(plugins, tmp_path):
    samples = tmp_path / "s.jsonl"
    good = "def digit_sum(n):\n    return sum(map(int, str(n)))\n"
    samples.write_text("".join(json.dumps({"task_id": "demo/0", "solution": c}) + "\n"
                               for c in [good, good, "def digit_sum(n):\n    return n\n", good]))
    results = evaluate(plugins, EvaluateConfig(benchmark="demo", samples=str(samples), out=str(tmp_path / "r"),
                                               tasks=["demo/0"], progress=False))
    assert results["timing"]["executed_programs"] == 2
    assert results["tasks"]["demo/0"]["statuses"] == ["pass", "pass", "fail", "pass"]
    assert results["metrics"]["pass@1"] == 0.75
