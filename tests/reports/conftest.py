"""Run directories made by the project's own commands, for the report tests: two evaluate
runs of the demo set (its samples file, and a "model" that fails demo/3), two evaluate-tests
runs (the golden tests, and generated tests with mistakes), a tts run with curves; and two
tiny code-a1 training runs that differ in alpha (each evaluated once through the evaluate
and evaluate-tests flows), and two tiny sft runs (role code and role tests)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import ROOT

from codea1.harness.cli import main

DEMO_SAMPLES = ROOT / "benchmarks" / "demo" / "samples.jsonl"
WRONG_DEMO_3 = "def add(a, b):\n    return 0\n"
GENERATED_TESTS = [
    {"task_id": "demo/0", "tests": ["assert digit_sum(123) == 6", "assert digit_sum(10) == 2"]},  # valid, wrong
    {"task_id": "demo/1", "tests": ["assert is_palindrome('Ab') == False", "assert is_palindrome('aba') == True"]},
    {"task_id": "demo/2", "tests": ["assert fizzbuzz(3) == ['1', '2', 'Fizz']", "print(1)"]},
]
SUITES = [
    {"task_id": "demo/1", "index": 0, "tests": ['assert is_palindrome("abba") == True',
                                                 'assert is_palindrome("Ab") == False']},
    {"task_id": "demo/1", "index": 1, "tests": ['assert is_palindrome("No lemon, no melon") == True']},
    {"task_id": "demo/0", "index": 0, "tests": ["assert digit_sum(123) == 6", "assert digit_sum(0) == 0"]},
]


def run(*argv: str) -> None:
    assert main([*argv, "--no-progress"]) == 0, argv


def jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture(scope="session")
def report_runs(tmp_path_factory) -> dict[str, Path]:
    """Evaluation runs: deterministic verdicts, so their report is a golden file."""
    pytest.importorskip("cosmic_ray", reason="cosmic-ray is not installed (pip install 'codea1[mutation]')")
    root = tmp_path_factory.mktemp("runs")
    references = [json.loads(line) for line in DEMO_SAMPLES.read_text().splitlines()
                  if json.loads(line).get("kind") == "reference"]
    model_b = [{"task_id": r["task_id"], "solution": WRONG_DEMO_3 if r["task_id"] == "demo/3" else r["solution"]}
               for r in references]
    runs = {"demo-samples": root / "demo-samples", "model-b": root / "model-b", "golden-tests": root / "golden-tests",
            "generated-tests": root / "generated-tests", "best-of-n": root / "best-of-n"}
    run("evaluate", "--benchmark", "demo", "--out", str(runs["demo-samples"]))
    run("evaluate", "--benchmark", "demo", "--samples", str(jsonl(root / "b.jsonl", model_b)), "--out",
        str(runs["model-b"]))
    run("evaluate-tests", "--benchmark", "demo", "--tests", "golden", "--k", "1,2", "--out", str(runs["golden-tests"]))
    run("evaluate-tests", "--benchmark", "demo", "--tests", str(jsonl(root / "gen.jsonl", GENERATED_TESTS)),
        "--k", "1,2", "--allow-partial", "--out", str(runs["generated-tests"]))
    run("tts", "--benchmark", "demo", "--codes", str(DEMO_SAMPLES), "--tests", str(jsonl(root / "suites.jsonl", SUITES)),
        "--curves", "--out", str(runs["best-of-n"]))
    return runs


def code_a1_config(path: Path, model: Path, alpha: float) -> Path:
    tables = f"""
[train]
trainer = "code-a1"
steps = 2
batch_size = 2
seed = 0
eval_every = 1
[benchmark]
name = "demo"
[executor]
name = "subprocess"
workers = 2
[trainer]
m = 2
n = 1
k = 2
alpha = {alpha}
[policies.code]
model = "{model}"
max_tokens = 24
lr = 1e-4
[policies.tests]
model = "{model}"
max_tokens = 24
lr = 1e-4
[[evaluation.code]]
benchmark = "demo"
limit = 2
max_tokens = 24
[[evaluation.tests]]
benchmark = "demo"
limit = 2
k = [1]
max_tokens = 24
"""
    path.write_text(tables)
    return path


@pytest.fixture(scope="session")
def train_runs(tiny_model, tmp_path_factory) -> dict[str, Path]:
    """Two code-a1 runs of the tiny model on the demo questions, alpha 0.5 and 1.0."""
    root = tmp_path_factory.mktemp("train-runs")
    out = {}
    for alpha in (0.5, 1.0):
        name = f"code-a1-alpha{alpha}"
        out[name] = root / name
        run("train", "--config", str(code_a1_config(root / f"{name}.toml", tiny_model, alpha)), "--out", str(out[name]))
    return out


@pytest.fixture(scope="session")
def sft_runs(tiny_model, tmp_path_factory) -> dict[str, Path]:
    """Two sft runs of the tiny model on the demo questions, one a role, three steps each (k 3:
    not the code-a1 runs' k 2, an option the training table must not compare across trainers)."""
    root = tmp_path_factory.mktemp("sft-runs")
    out = {}
    for role in ("code", "tests"):
        name = f"sft-{role}"
        out[name] = root / name
        (root / f"{name}.toml").write_text(f"""
[train]
trainer = "sft"
steps = 3
batch_size = 4
[benchmark]
name = "demo"
[executor]
workers = 2
[trainer]
role = "{role}"
k = 3
[policies.{role}]
model = "{tiny_model}"
lr = 1e-3
""")
        run("train", "--config", str(root / f"{name}.toml"), "--out", str(out[name]))
    return out
