"""The shipped demo set: references pass their golden tests, each wrong sample fails the
way its label says, and samples.jsonl is exactly what problems.py describes."""

import json

from codea1.benchmarks.demo import SAMPLES_FILE
from codea1.benchmarks.demo.problems import PROBLEMS, WRONG_SAMPLES
from codea1.harness.flows.evaluate import EvaluateConfig, evaluate
from codea1.harness.verdicts.reference import run_references


def test_at_least_ten_problems_each_with_golden_asserts(plugins):
    problems = plugins.benchmarks.create("demo").load()
    assert len(problems) >= 10
    assert all(len(p.tests) >= 4 for p in problems)


def test_references_pass_their_own_tests(plugins, executor):
    problems = plugins.benchmarks.create("demo").load()
    refs = run_references(problems, executor, checks_tests=lambda p: True, use_cache=False)
    assert {t: r.failed for t, r in refs.items() if r.failed} == {}


def test_samples_file_matches_problems_py():
    rows = [json.loads(line) for line in SAMPLES_FILE.read_text().splitlines()]
    expected = [{"task_id": p["task_id"], "solution": p["solution"], "kind": "reference"} for p in PROBLEMS]
    expected += [{"task_id": w["task_id"], "solution": w["solution"], "kind": w["kind"]} for w in WRONG_SAMPLES]
    assert rows == expected


def test_each_wrong_sample_gets_its_verdict(plugins, tmp_path):
    evaluate(plugins, EvaluateConfig(benchmark="demo", out=str(tmp_path), progress=False))
    by_kind = {}
    rows = [json.loads(line) for line in SAMPLES_FILE.read_text().splitlines()]
    verdicts = [json.loads(line) for line in (tmp_path / "verdicts.jsonl").read_text().splitlines()]
    index = {}
    for row in rows:
        index[row["task_id"]] = index.get(row["task_id"], -1) + 1
        v = next(v for v in verdicts if v["task_id"] == row["task_id"] and v["sample_index"] == index[row["task_id"]])
        by_kind.setdefault(row["kind"], []).append(v["status"])
    assert set(by_kind.pop("reference")) == {"pass"}
    assert by_kind == {"off-by-one": ["fail"], "wrong type": ["fail"], "infinite loop": ["timeout"],
                       "exception": ["fail"], "partial": ["fail"], "syntax error": ["error"], "shallow": ["fail"]}
