"""Comparisons a reviewer can check, through the real ``codea1`` command: a run says what it
measured (the Mini set and its digest), a tests file lacking tasks is refused and then
labelled, a figure over too few tasks is shown and not ranked, a report pairs two runs over
their common tasks (checked against a hand-worked interval) and ranks by significance, and
training runs are compared over a window of steps."""

from __future__ import annotations

import hashlib
import json
import math
import shutil

import pytest
from conftest import shared_file

from codea1.harness.cli import main


def run(capsys, *argv) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_a_mini_run_says_mini_and_the_mini_files_digest_everywhere(tmp_path, capsys):
    pytest.importorskip("evalplus", reason="evalplus is not installed (pip install 'codea1[benchmarks]')")
    full = shared_file("humanevalplus", "HumanEvalPlus-v0.1.10.jsonl.gz")
    mini = shared_file("humanevalplus", "HumanEvalPlus-Mini-v0.1.10.jsonl.gz")
    digest = hashlib.sha256(mini.read_bytes()).hexdigest()
    samples = tmp_path / "he.jsonl"
    samples.write_text("".join(json.dumps({"task_id": f"HumanEval/{i}", "completion": "    return None\n"}) + "\n"
                               for i in range(3)))
    code, out, _ = run(capsys, "evaluate", "--dataset", "humaneval", "--data", full, "--mini", "--samples", samples,
                       "--limit", 3, "--out", tmp_path / "mini", "--no-progress")
    assert code == 0
    assert out.startswith("benchmark humaneval+[mini=true] ")
    assert f"data {mini} (sha256 {digest[:12]})" in out
    config = json.loads((tmp_path / "mini" / "config.json").read_text())
    assert config["variant"] == "humaneval+[mini=true]" and config["data_read"] == str(mini)
    assert config["data_digest"]["sha256"] == digest  # the file read, not the one --data named
    results = json.loads((tmp_path / "mini" / "results.json").read_text())
    assert results["variant"] == "humaneval+[mini=true]" and results["data_digest"]["sha256"] == digest
    _, shown, _ = run(capsys, "show", tmp_path / "mini")
    assert f"humaneval+[mini=true] ({mini}, sha256 {digest[:12]})" in shown
    assert run(capsys, "report", tmp_path / "mini", "--format", "csv", "--out", tmp_path / "r")[0] == 0
    assert "humaneval+[mini=true] pass@1" in (tmp_path / "r" / "code.csv").read_text().splitlines()[0]
    assert f"sha256 {digest[:12]}" in (tmp_path / "r" / "runs.csv").read_text()


def test_a_tests_file_for_12_of_200_tasks_is_refused_then_labelled(tmp_path, capsys):
    data = shared_file("unleakedtestbench", "ULT_Lite.json")
    tasks = [t["task_id"] if isinstance(t, dict) and "task_id" in t else None for t in json.loads(data.read_text())]
    tasks = [t for t in tasks if t][:12]
    assert len(tasks) == 12
    tests = tmp_path / "tests.jsonl"
    tests.write_text("".join(json.dumps({"task_id": t, "tests": ["assert True"]}) + "\n" for t in tasks))
    argv = ["evaluate-tests", "--benchmark", "ult", "--data", data, "--tests", tests, "--k", 1, "--no-coverage",
            "--no-progress"]
    code, _, err = run(capsys, *argv, "--out", tmp_path / "refused")
    assert code == 2 and f"{tests}: tests for 12 of the 200 tasks of ult" in err and "--allow-partial" in err
    assert not (tmp_path / "refused" / "results.json").exists()
    code, out, _ = run(capsys, *argv, "--allow-partial", "--out", tmp_path / "partial")
    assert code == 0 and "tasks: 12 of 200; PARTIAL: the figures are not the whole benchmark's" in out
    results = json.loads((tmp_path / "partial" / "results.json").read_text())
    assert results["coverage"]["partial"] and results["coverage"]["scored"] == 12
    _, shown, _ = run(capsys, "show", tmp_path / "partial")
    assert "tasks: 12 of 200; PARTIAL" in shown
    # A suite index beyond the file, and a row with both fields: one line each, exit 2
    code, _, err = run(capsys, *argv, "--allow-partial", "--suite", 5, "--out", tmp_path / "s5")
    assert code == 2 and "--suite 5: no row has index 5 (the file holds suite 0)" in err
    both = tmp_path / "both.jsonl"
    both.write_text(json.dumps({"task_id": tasks[0], "tests": ["assert True"], "completion": "x"}) + "\n")
    code, _, err = run(capsys, *argv[:6], both, *argv[7:], "--allow-partial", "--out", tmp_path / "both")
    assert code == 2 and f"{both}:1: both fields 'tests' and 'completion'" in err


def test_a_figure_over_1_of_10_tasks_is_shown_as_such_and_not_ranked(tmp_path, capsys):
    data = shared_file("unleakedtestbench", "ULT_Lite.json")
    code, out, _ = run(capsys, "evaluate-tests", "--benchmark", "ult", "--data", data, "--tests", "golden",
                       "--limit", 10, "--k", "1,5", "--no-coverage", "--out", tmp_path / "a", "--no-progress")
    assert code == 0
    results = json.loads((tmp_path / "a" / "results.json").read_text())
    assert results["metric_tasks"]["mut@5"] == 1 and results["intervals"]["mut@5"] is None
    assert "over 1 of 10 tasks: too few to rank" in next(line for line in out.splitlines() if "mut@5" in line)
    assert "test-pass@5 over 10 tasks x mut@5 over 1 of them" in results["metric_notes"]["Mul@5"]
    shutil.copytree(tmp_path / "a", tmp_path / "b")
    assert run(capsys, "report", tmp_path / "a", tmp_path / "b", "--format", "csv,md", "--out", tmp_path / "r")[0] == 0
    import pandas as pd

    table = pd.read_csv(tmp_path / "r" / "tests.csv", index_col="label")
    for label in ("a", "b"):  # ‡: 10 of ULT's 200 tasks (--limit); §: mut@5 and Mul@5 rest on one
        marks = dict(m.split(":") for m in table.at[label, "marks"].split(";"))
        assert "§" in marks["ult mut@5"] and "§" in marks["ult Mul@5"] and "§" not in marks["ult test-pass@5"]
        assert "mut@5" not in str(table.at[label, "rank"]) and "Mul@5" not in str(table.at[label, "rank"])
    assert "§ a figure over fewer than 10 tasks: shown, not ranked." in (tmp_path / "r" / "report.md").read_text()


def demo_samples(plugins, path, wrong: set[int]):
    """A demo samples file: each task's reference, except the tasks in ``wrong`` (None)."""
    problems = plugins.benchmarks.create("demo").load()
    with open(path, "w") as fh:
        for i, p in enumerate(problems):
            code = p.reference if i not in wrong else f"def {p.entry_point}(*args, **kwargs):\n    return None\n"
            fh.write(json.dumps({"task_id": p.task_id, "solution": code}) + "\n")
    return len(problems)


def test_a_report_pairs_two_runs_and_ranks_by_significance(plugins, tmp_path, capsys):
    """Run a passes the demo's 12 tasks, run b half of them: b - a is -50 points on every
    task b fails, 0 elsewhere. Hand-worked: the differences' standard deviation is 0.5, the
    error 0.5 / sqrt(12) = 14.4 points, the 95 % interval -50 +- 28.3: significant, so a is
    bold and b underlined. A run c that fails one task more than a does not differ from a
    significantly: a and c tie for first."""
    n = demo_samples(plugins, tmp_path / "a.jsonl", set())
    assert n == 12
    demo_samples(plugins, tmp_path / "b.jsonl", set(range(0, 12, 2)))
    demo_samples(plugins, tmp_path / "c.jsonl", {1})
    for name in "abc":
        assert run(capsys, "evaluate", "--benchmark", "demo", "--samples", tmp_path / f"{name}.jsonl",
                   "--out", tmp_path / name, "--no-progress")[0] == 0
    assert run(capsys, "report", *(tmp_path / x for x in "abc"), "--baseline", tmp_path / "a",
               "--format", "csv,md", "--out", tmp_path / "r")[0] == 0
    import pandas as pd

    code = pd.read_csv(tmp_path / "r" / "code.csv", index_col="label")
    assert code.at["b", "demo pass@1 delta"] == pytest.approx(-0.5)
    error = 0.5 / math.sqrt(12)
    low, high = code.at["b", "demo pass@1 delta low"], code.at["b", "demo pass@1 delta high"]
    assert abs(low - (-0.5 - 1.959964 * error)) <= 1 / 12 and abs(high - (-0.5 + 1.959964 * error)) <= 1 / 12
    assert bool(code.at["b", "demo pass@1 delta significant"]) is True
    assert bool(code.at["c", "demo pass@1 delta significant"]) is False
    assert code.at["a", "rank"] == code.at["c", "rank"] == "demo pass@1:1" and code.at["b", "rank"] == "demo pass@1:2"
    md = (tmp_path / "r" / "report.md").read_text()
    b_line = next(line for line in md.splitlines() if line.startswith("| b |"))
    assert "(-50.00* [" in b_line and b_line.startswith("| b | <u>50.00 [")


def train_run(directory, rewards):
    """A train run directory as the report reads it: its config and step log (a golden-tests
    run's), finished."""
    directory.mkdir()
    config = {"command": "train", "train": {"trainer": "golden-tests", "steps": len(rewards)},
              "benchmark": {"name": "kodcode"}, "trainer": {"m": 8}}
    (directory / "config.json").write_text(json.dumps(config))
    (directory / "steps.jsonl").write_text("".join(
        json.dumps({"step": i + 1, "reward_code": r, "pass_rate_golden": r}) + "\n" for i, r in enumerate(rewards)))
    (directory / "results.json").write_text(json.dumps({"steps": len(rewards)}))


def test_training_runs_are_compared_over_a_window_never_one_step(tmp_path, capsys):
    """A 4-step run whose last step jumps to 0.9 and a 10-step run steady near 0.5: by the
    last step alone the first would be bold. Over each run's last steps (3 and 3) the means
    are 0.467 and 0.467 with wide intervals: neither ranks."""
    train_run(tmp_path / "short", [0.1, 0.2, 0.3, 0.9])
    train_run(tmp_path / "long", [0.3, 0.4, 0.4, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.4])
    assert run(capsys, "report", tmp_path / "short", tmp_path / "long", "--format", "csv,md",
               "--out", tmp_path / "r")[0] == 0
    import pandas as pd

    training = pd.read_csv(tmp_path / "r" / "training.csv", index_col="label")
    assert training.at["short", "reward_code"] == pytest.approx((0.2 + 0.3 + 0.9) / 3)
    assert training.at["long", "reward_code"] == pytest.approx((0.5 + 0.5 + 0.4) / 3)
    assert training["rank"].isna().all()
    md = (tmp_path / "r" / "report.md").read_text()
    assert "A rate is the mean over the last quarter of a run's steps (at least 3: short 3, long 3)" in md
