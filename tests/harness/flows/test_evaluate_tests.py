"""`evaluate-tests` end to end on the demo benchmark (real sandbox, real cosmic-ray mutants,
real coverage.py), the tests-file reader and the assert extraction."""

from __future__ import annotations

import json
import subprocess

import pytest
from conftest import ROOT, codea1_command

from codea1.harness.flows.evaluate_tests import (
    EvaluateTestsConfig,
    TestsFileError,
    asserts_from_completion,
    evaluate_tests,
    read_tests_file,
)

pytest.importorskip("cosmic_ray", reason="cosmic-ray is not installed (pip install 'codea1[mutation]')")


def test_asserts_are_extracted_in_order_from_the_first_block():
    text = ("Here are tests:\n```python\nfrom x import y\nassert f(1) == 2\n\nassert f(2) != 5  # comment\n"
            "print('no')\nassert f(3) in (1, 2)\n```\nand more:\n```python\nassert f(9) == 9\n```")
    assert asserts_from_completion(text) == ["assert f(1) == 2", "assert f(2) != 5", "assert f(3) in (1, 2)"]
    assert asserts_from_completion("assert f(1) == 1\nassert f(2) == 2") == ["assert f(1) == 1", "assert f(2) == 2"]
    broken = "```python\nassert f(1) == 1\nassert f(2) == (\nassert f(3) == 3\n```"
    assert asserts_from_completion(broken) == ["assert f(1) == 1", "assert f(2) == (", "assert f(3) == 3"]


def test_tests_file_errors_name_file_line_and_field(plugins, tmp_path):
    problems = {p.task_id: p for p in plugins.benchmarks.create("demo").load()}
    bad = tmp_path / "tests.jsonl"
    bad.write_text('{"task_id": "demo/0", "tests": ["assert digit_sum(1) == 1"]}\n{"task_id": "demo/0", "tests": []}\n')
    with pytest.raises(TestsFileError, match=r"tests.jsonl:2: field 'task_id': task 'demo/0' appears twice"):
        read_tests_file(str(bad), problems)
    bad.write_text('{"task_id": "demo/1", "tests": "assert x"}\n')
    with pytest.raises(TestsFileError, match=r"tests.jsonl:1: field 'tests' must be a list"):
        read_tests_file(str(bad), problems)
    bad.write_text('{"task_id": "nope", "completion": ""}\n')
    with pytest.raises(TestsFileError, match=r"tests.jsonl:1: field 'task_id': unknown task 'nope'"):
        read_tests_file(str(bad), problems)


def run(plugins, tmp_path, tests, ks=(1, 2), **kw):
    cfg = EvaluateTestsConfig(benchmark="demo", out=str(tmp_path / "run"), tests=tests, k=list(ks), workers=2,
                              progress=False, **{"allow_partial": True, **kw})
    return evaluate_tests(plugins, cfg)


def test_generated_tests_are_scored(plugins, tmp_path):
    tests = tmp_path / "tests.jsonl"
    rows = [
        # demo/2 fizzbuzz: valid, valid, wrong answer, unparseable, valid
        {"task_id": "demo/2", "tests": ["assert fizzbuzz(3) == ['1', '2', 'Fizz']", "assert fizzbuzz(0) == []",
                                        "assert fizzbuzz(1) == ['2']", "print(1)", "assert fizzbuzz(5)[-1] == 'Buzz'"]},
        # demo/1 is_palindrome, from a raw completion: first test invalid
        {"task_id": "demo/1", "completion": "```python\nassert is_palindrome('ab') == True\n"
                                            "assert is_palindrome('aba') == True\n```"},
    ]
    tests.write_text("".join(json.dumps(r) + "\n" for r in rows))
    results = run(plugins, tmp_path, str(tests), ks=(1, 2, 5))
    m = results["metrics"]
    # test-pass: k=1: (1 + 0) / 2; k=2: (2 + 1) / 4; k=5: (3 + 1) / 10
    assert m["test-pass@1"] == pytest.approx(0.5)
    assert m["test-pass@2"] == pytest.approx(0.75)
    assert m["test-pass@5"] == pytest.approx(0.4)
    zero = results["tasks"]["demo/2"]
    assert zero["valid"] == [True, True, False, False, True]
    assert "fails on the reference" in zero["invalid_reasons"]["2"] and "usable assert" in zero["invalid_reasons"]["3"]
    # Only demo/2 is eligible at k=1 and 2; its mutants ran against its 2 leading valid tests.
    assert zero["mutants"]["ran_against_tests"] == 2 and zero["mutants"]["unique"] > 0
    assert results["tasks"]["demo/1"]["mutants"]["unique"] == 0
    assert 0 < m["mut@1"] <= m["mut@2"] <= 1
    assert m["Mul@2"] == pytest.approx(m["test-pass@2"] * m["mut@2"])
    assert "mut@5" not in m or m["mut@5"] is None
    assert 0 < m["coverage@1"] <= m["coverage@2"] <= 1
    for survivor in zero["mutants"]["survived"]:
        assert survivor["diff"].startswith("--- a/solution.py")
    # Resumed: every task is taken from tasks.jsonl, nothing runs again.
    again = run(plugins, tmp_path, str(tests), ks=(1, 2, 5))
    assert again["metrics"] == m and again["timing"]["mutants_executed"] == 0
    rows = (tmp_path / "run" / "tasks.jsonl").read_text().splitlines()
    assert len(rows) == 2
    # An interrupted run (the last task never written) recomputes that task only.
    (tmp_path / "run" / "tasks.jsonl").write_text(rows[0] + "\n")
    lost = json.loads(rows[1])
    third = run(plugins, tmp_path, str(tests), ks=(1, 2, 5))
    assert third["metrics"] == m and third["timing"]["mutants_executed"] == len(lost["mutants"])


def test_other_forms_are_invalid_unless_allowed_then_counted_in_process(plugins, tmp_path):
    tests = tmp_path / "tests.jsonl"
    tests.write_text(json.dumps({"task_id": "demo/1", "tests": [
        "assert is_palindrome('aba') is True", "assert is_palindrome('aba') == True",
        "assert is_palindrome(open('solution.py').read()) == False"]}) + "\n"
                     + json.dumps({"task_id": "demo/4", "tests": ["assert count_vowels('banana') == 3"]}) + "\n")
    strict = run(plugins, tmp_path / "strict", str(tests), ks=(1, 3), coverage=False)
    task = strict["tasks"]["demo/1"]
    assert task["valid"] == [False, True, False] and task["in_process"] == []
    assert "the operator is: the paper's form" in task["invalid_reasons"]["0"]
    assert "argument: not data: calls open" in task["invalid_reasons"]["2"]
    assert strict["counts"]["tests_in_process"] == 0
    allowed = run(plugins, tmp_path / "allowed", str(tests), ks=(1, 3), coverage=False, allow_other_forms=True)
    task = allowed["tasks"]["demo/1"]
    assert task["valid"][:2] == [True, True] and task["in_process"] == [0, 2]
    assert allowed["counts"]["tests_in_process"] == 2
    # every figure again over the tasks none of whose tests ran in-process (demo/4 only)
    assert not any(k.startswith("outside:") for k in strict["metrics"])
    assert allowed["counts"]["tasks_wholly_outside"] == 1
    assert allowed["metrics"]["outside:test-pass@1"] == allowed["tasks"]["demo/4"]["figures"]["test-pass@1"] == 1.0
    assert allowed["metric_tasks"]["outside:test-pass@1"] == 1


def test_golden_tests_are_the_ceiling(plugins, tmp_path):
    results = run(plugins, tmp_path, "golden", ks=(1, 5))
    m = results["metrics"]
    tasks = results["tasks"].values()
    assert all(all(t["valid"]) for t in tasks)  # the demo's golden tests all hold on the reference
    assert m["test-pass@1"] == 1.0
    # some tasks have fewer than 5 golden tests: the missing ones count as not passing
    assert m["test-pass@5"] == pytest.approx(sum(min(len(t["valid"]), 5) / 5 for t in tasks) / len(tasks))
    assert 0 < m["mut@1"] < m["mut@5"] <= 1
    assert m["coverage@5"] > 0.9


def test_the_command(tmp_path):
    out = tmp_path / "cli"
    done = subprocess.run([*codea1_command(), "evaluate-tests", "--benchmark", "demo", "--tests", "golden", "--k", "1",
                           "--out", str(out), "--no-progress"], capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert done.returncode == 0, done.stderr
    assert "mut@1" in done.stdout and (out / "results.json").exists() and (out / "tasks.jsonl").exists()
    bad = subprocess.run([*codea1_command(), "evaluate-tests", "--benchmark", "demo", "--tests", str(tmp_path / "none"),
                          "--out", str(tmp_path / "x")], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert bad.returncode == 2 and "--tests" in bad.stderr


@pytest.mark.long
def test_a_slow_valid_test_kills_no_mutant_by_time(plugins, tmp_path):
    """A reference that takes 0.8 s a test (limit 4 x 0.8 = 3.2 s each), three tests, and a
    mutant budget of 1 s asked for (the zygote's deadline, 1 s after it, three such tests
    overrun: every mutant timed out, and counted killed, before). The mutants get the sum of
    their limits plus load time instead, so a mutant about as fast as the reference
    (8 / 10 -> 9 / 10, 8 / 9, 8 // 10) survives; one that sleeps 80 s (8 * 10) times out and
    is neither killed nor completed."""
    data = tmp_path / "ult.jsonl"
    data.write_text(json.dumps({"task_id": "slow/0", "func_name": "f", "test_list": [],
                                "code": "import time\n\ndef f(x):\n    time.sleep(8 / 10)\n    return x + 1\n"}) + "\n")
    tests = tmp_path / "tests.jsonl"
    tests.write_text(json.dumps({"task_id": "slow/0", "tests": ["assert f(1) == 2", "assert f(2) == 3",
                                                                          "assert f(3) == 4"]}) + "\n")
    cfg = EvaluateTestsConfig(benchmark="ult", data=str(data), out=str(tmp_path / "run"), tests=str(tests), k=[3],
                              workers=2, progress=False, coverage=False, mutant_timeout=1.0, allow_partial=True)
    results = evaluate_tests(plugins, cfg)
    task = results["tasks"]["slow/0"]
    assert task["valid"] == [True, True, True]
    survived = {m["id"] for m in task["mutants"]["survived"]}
    assert any(m.startswith("core/NumberReplacer") for m in survived)  # 9 / 10, 8 / 11, ...: as slow as the reference
    assert task["mutants"]["timed_out"] >= 1  # 8 * 10: 80 s
    mutants = task["mutants"]
    assert mutants["killed"] + mutants["timed_out"] + len(survived) == mutants["unique"]
    completed = mutants["unique"] - mutants["timed_out"]
    assert results["metrics"]["mut@3"] == pytest.approx(mutants["killed"] / completed)
