"""The hf generator on a tiny random-init Qwen2 model built by the test session: the real
loading path (from_pretrained on a directory), the chat template, batched sampling, then
`codea1 evaluate` on what it wrote."""

from __future__ import annotations

import json

from codea1.harness.cli import main

DEMO_SAMPLES = "benchmarks/demo/samples.jsonl"


def generate(tmp_path, model, out, *extra):
    args = ["generate", "--benchmark", "demo", "--generator", "hf", "--model", str(model), "--max-tokens", "24",
            "--limit", "3", "--no-progress", "--cache-dir", str(tmp_path / "cache"), "--out", str(out), *extra]
    assert main(args) == 0
    return [json.loads(line) for line in (out / ("tests.jsonl" if "tests" in extra else "samples.jsonl")).open()]


def test_generate_then_evaluate_end_to_end(tiny_model, tmp_path):
    rows = generate(tmp_path, tiny_model, tmp_path / "gen", "--role", "code", "--n", "2", "--limit", "12")
    assert len(rows) == 24 and {r["task_id"] for r in rows} == {f"demo/{i}" for i in range(12)}
    for r in rows:
        assert r["prompt_tokens"] > 50 and 0 < r["completion_tokens"] <= 24
        assert r["finish_reason"] in ("stop", "length") and isinstance(r["solution"], str) and r["raw"]
    env = json.loads((tmp_path / "gen" / "environment.json").read_text())
    assert env["generator"]["chat_template"] == "tokenizer" and env["generator"]["device"] == "cpu"
    results = json.loads((tmp_path / "gen" / "results.json").read_text())
    assert results["this_run"]["completion_tokens"] == sum(r["completion_tokens"] for r in rows)
    assert main(["evaluate", "--benchmark", "demo", "--samples", str(tmp_path / "gen" / "samples.jsonl"),
                 "--out", str(tmp_path / "eval"), "--no-progress"]) == 0
    scored = json.loads((tmp_path / "eval" / "results.json").read_text())
    assert scored["counts"]["samples"] == 24 and scored["counts"]["sandbox_error"] == 0
    assert scored["metrics"]["pass@1"] == 0.0  # random weights write noise; the pipeline still scores it


def test_seeded_runs_repeat_and_the_cache_serves_a_second_run(tiny_model, tmp_path):
    first = generate(tmp_path, tiny_model, tmp_path / "a", "--role", "code", "--n", "2", "--no-cache")
    again = generate(tmp_path, tiny_model, tmp_path / "b", "--role", "code", "--n", "2", "--no-cache")
    assert [r["raw"] for r in first] == [r["raw"] for r in again]
    generate(tmp_path, tiny_model, tmp_path / "c", "--role", "code", "--n", "2")
    cached = generate(tmp_path, tiny_model, tmp_path / "d", "--role", "code", "--n", "2")
    assert json.loads((tmp_path / "d" / "results.json").read_text())["this_run"]["cache_hits"] == 6
    assert sorted(r["raw"] for r in cached) == sorted(r["raw"] for r in first)


def test_greedy_repeats_are_kept_as_separate_samples(tiny_model, tmp_path):
    rows = generate(tmp_path, tiny_model, tmp_path / "g", "--role", "code", "--n", "3", "--temperature", "0")
    by_task = {}
    for r in rows:
        by_task.setdefault(r["task_id"], []).append(r["raw"])
    assert all(len(v) == 3 and len(set(v)) == 1 for v in by_task.values())  # identical, yet 3 samples
    entries = [json.loads(line) for f in (tmp_path / "cache").glob("*.jsonl") for line in f.open()]
    assert len(entries) == 9 and len({(e["prompt"], e["index"]) for e in entries}) == 9


def test_resume_adds_only_the_missing_samples(tiny_model, tmp_path):
    generate(tmp_path, tiny_model, tmp_path / "r", "--role", "code", "--n", "1", "--no-cache")
    rows = generate(tmp_path, tiny_model, tmp_path / "r", "--role", "code", "--n", "2", "--no-cache")
    results = json.loads((tmp_path / "r" / "results.json").read_text())
    assert results["this_run"]["samples"] == 3 and len(rows) == 6
    assert sorted(r["index"] for r in rows if r["task_id"] == "demo/0") == [0, 1]
    # a changed sampling parameter is another run: refused (exit 2), never mixed into the file
    assert main(["generate", "--role", "code", "--benchmark", "demo", "--generator", "hf", "--model",
                 str(tiny_model), "--temperature", "0.3", "--limit", "3", "--no-progress",
                 "--out", str(tmp_path / "r")]) == 2
    assert len((tmp_path / "r" / "samples.jsonl").read_text().splitlines()) == 6


def test_white_box_suites_for_every_candidate_code(tiny_model, tmp_path):
    rows = generate(tmp_path, tiny_model, tmp_path / "t", "--role", "tests", "--n", "1", "--k", "5",
                    "--white-box-from", DEMO_SAMPLES)
    candidates = [json.loads(line)["task_id"] for line in open(DEMO_SAMPLES)]
    expected = sorted((t, j) for t in ("demo/0", "demo/1", "demo/2") for j in range(candidates.count(t)))
    assert sorted((r["task_id"], r["code_index"]) for r in rows) == expected
    for r in rows:
        assert r["parse"]["requested"] == 5 and len(r["tests"]) <= 5
        assert r["parse"]["missing"] == 5 - len(r["tests"])
