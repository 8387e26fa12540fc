"""`codea1 show RUN` on run directories made by real runs of the demo benchmark (evaluate,
evaluate-tests, generate with saved responses, tts, report), an interrupted one, and
directories that are no run. Train runs: tests/trainers/test_watch.py."""

from __future__ import annotations

import json
import subprocess

import pytest
from conftest import codea1_command

from codea1.harness.cli import main

RIGHT = "def digit_sum(n):\n    return sum(map(int, str(n)))\n"
WRONG = "def digit_sum(n):\n    return len(str(n))\n"


def show(cwd, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*codea1_command(), "show", *args], cwd=cwd, capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("runs")
    responses = tmp / "responses.jsonl"
    responses.write_text("".join(json.dumps({"task_id": "demo/0", "raw": f"```python\n{code}```"}) + "\n"
                                 for code in (WRONG, RIGHT)))
    tests = tmp / "tests.jsonl"
    tests.write_text(json.dumps({"task_id": "demo/0", "tests": ["assert digit_sum(123) == 6"]}) + "\n")
    for argv in (["evaluate", "--benchmark", "demo", "--out", "evaluate"],
                 ["evaluate", "--benchmark", "demo", "--test-details", "--exclude-skipped", "--tasks", "demo/0",
                  "--out", "evaluate-details"],
                 ["evaluate-tests", "--benchmark", "demo", "--tests", "golden", "--tasks", "demo/0,demo/1", "--k", "1",
                  "--no-coverage", "--out", "evaluate-tests"],
                 ["generate", "--role", "code", "--benchmark", "demo", "--generator", "replay", "--generator-opt",
                  f"file={responses}", "--tasks", "demo/0", "--n", "2", "--out", "generate"],
                 ["tts", "--benchmark", "demo", "--codes", str(tmp / "generate" / "samples.jsonl"),
                  "--tests", str(tests), "--out", "tts"]):
        argv[argv.index("--out") + 1] = str(tmp / argv[argv.index("--out") + 1])
        assert main([*argv, "--no-progress"]) == 0, argv
    return tmp


def test_show_an_evaluate_run(runs):
    done = show(runs, "evaluate")
    assert done.returncode == 0, done.stderr
    results = json.loads((runs / "evaluate" / "results.json").read_text())
    lines = done.stdout.splitlines()
    assert lines[0] == "evaluate: evaluate, complete"
    assert "  benchmark    demo" in lines and "tasks: 12 of 12" in lines and "  k            1" in lines
    assert "  limits       a test's time max(1.0 s, 4.0 x the reference's), memory 4096 MB" in lines
    assert "verdicts: pass 12, fail 5, timeout 1, error 1" in lines
    assert any(line.startswith("  pass@1") and f"{100 * results['metrics']['pass@1']:6.2f}%" in line for line in lines)
    assert "  options      defaults" in lines


def test_show_names_every_option_that_changed_what_a_run_measured(runs):
    """Beside the benchmark's options (in its variant name) and the limits: the flow's own
    options that change a figure or how it is counted, where they are not the defaults."""
    assert "  options      test_details=True, exclude_skipped=True" in show(runs, "evaluate-details").stdout.splitlines()
    assert "  options      coverage=False" in show(runs, "evaluate-tests").stdout.splitlines()
    generated = show(runs, "generate").stdout.splitlines()
    assert f"  options      generator_options.file={runs / 'responses.jsonl'}" in generated


def test_show_evaluate_tests_generate_and_tts_runs(runs):
    tests = show(runs, "evaluate-tests").stdout
    assert tests.startswith("evaluate-tests: evaluate-tests, complete\n")
    assert "  benchmark    demo, 2 tasks" in tests and "  tests        golden" in tests and "test-pass@1" in tests
    generated = show(runs, "generate").stdout
    assert generated.startswith("generate: generate, complete\n")
    assert "  generator    replay" in generated and "rows: 2 for 1 tasks" in generated
    assert "parsing: samples 2, fenced 2, syntax_errors 0, defines_entry_point 2" in generated
    tts = show(runs, "tts").stdout
    assert tts.startswith("tts: tts, complete\n")
    assert "tasks 1, codes/task 2, suites/task 1, unique tests 1" in tts
    assert any(line.startswith("  best_of_n") and "100.00%" in line for line in tts.splitlines())


def test_show_says_what_an_interrupted_run_misses(runs, tmp_path):
    """A run killed before its results: results.json not there, running.json naming a
    process that is gone (pid 0 runs nothing)."""
    src = runs / "evaluate"
    for name in ("config.json", "verdicts.jsonl"):
        (tmp_path / name).write_bytes((src / name).read_bytes())
    (tmp_path / "running.json").write_text(json.dumps({"pid": 0, "host": "elsewhere", "process_start": "1"}))
    done = show(tmp_path.parent, tmp_path.name)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == (f"{tmp_path.name}: evaluate, interrupted (no results.json yet, 19 rows in "
                                           f"verdicts.jsonl; rerun the same command to resume)")


def test_show_a_report_directory(runs, tmp_path):
    pytest.importorskip("pandas", reason="pandas is not installed (pip install 'codea1[report]')")
    pytest.importorskip("matplotlib", reason="matplotlib is not installed (pip install 'codea1[report]')")
    assert main(["report", str(runs / "evaluate"), "--format", "md,csv", "--title", "demo", "--out",
                 str(tmp_path / "report")]) == 0
    done = show(tmp_path, "report")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("report: report, complete\n") and "  title        demo" in done.stdout
    assert "  files        report.md, runs.csv" in done.stdout


def test_what_is_no_run_is_a_one_line_error(runs, tmp_path):
    (tmp_path / "empty").mkdir()
    (tmp_path / "odd").mkdir()
    (tmp_path / "odd" / "config.json").write_text(json.dumps({"command": "evaluat"}))
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "config.json").write_text("{not json")
    for target, error in (
            ("empty", "empty: not a run directory (no config.json) nor a report (no report.md, report.html, "
                      "report.tex, runs.csv)"),
            ("missing", "missing: no such directory"),
            ("odd", "odd/config.json: field 'command': unknown kind of run 'evaluat'; did you mean 'evaluate'"),
            ("bad", "bad/config.json:1: not JSON")):
        done = show(tmp_path, target)
        assert done.returncode == 2 and done.stdout == "", (target, done.stdout)
        assert done.stderr.startswith(f"codea1: error: {error}") and len(done.stderr.splitlines()) == 1, done.stderr
