"""evalplus' flag names, accepted by the real `codea1` command where they mean the same:
--dataset (the benchmark), --parallel (--workers), --base-only, --mini, --test-details, on
HumanEval/23 of the shared HumanEval+ data."""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest
from conftest import codea1_command, shared_file

pytest.importorskip("evalplus", reason="evalplus is not installed (pip install 'codea1[benchmarks]')")
pytestmark = pytest.mark.data

TASK = "HumanEval/23"
SAMPLES = [
    "def strlen(string):\n    return len(string)\n",  # right
    "def strlen(string):\n    return len(string) - 1\n",  # fails every test
    "def strlen(string):\n    return len(string) if len(string) < 100 else 0\n",  # fails plus' long strings only
]


def codea1(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(codea1_command() + list(args), capture_output=True, text=True, timeout=300)


def full_data():
    return shared_file("humanevalplus", "HumanEvalPlus-v0.1.10.jsonl.gz")


@pytest.fixture
def samples(tmp_path):
    path = tmp_path / "s.jsonl"
    path.write_text("".join(json.dumps({"task_id": TASK, "solution": s}) + "\n" for s in SAMPLES))
    return path


def evaluate(out, samples, *flags: str, data=None) -> dict:
    r = codea1("evaluate", "--dataset", "humaneval", "--data", str(data or full_data()), "--samples", str(samples),
               "--tasks", TASK, "--no-progress", "--out", str(out), *flags)
    assert r.returncode == 0, r.stderr
    return {"results": json.loads((out / "results.json").read_text()),
            "config": json.loads((out / "config.json").read_text()),
            "evalplus": json.loads((out / "s_eval_results.json").read_text())["eval"][TASK],
            "verdicts": [json.loads(line) for line in (out / "verdicts.jsonl").open()], "stdout": r.stdout}


def statuses(run: dict) -> list[tuple]:
    return [(e["base_status"], e["plus_status"], len(e["base_fail_tests"]), len(e["plus_fail_tests"]))
            for e in run["evalplus"]]


def test_dataset_and_parallel_are_the_benchmark_and_workers(tmp_path, samples):
    run = evaluate(tmp_path / "run", samples, "--parallel", "1")
    assert run["config"]["benchmark"] == "humaneval+" and run["config"]["workers"] == 1
    assert run["results"]["tasks"][TASK]["statuses"] == ["pass", "fail", "fail"]
    assert run["results"]["metrics"]["pass@1"] == pytest.approx(1 / 3)
    assert run["results"]["metrics"]["base:pass@1"] == pytest.approx(2 / 3)
    # the default: early stop, one failing input, plus tests not run after a base failure
    assert statuses(run) == [("pass", "pass", 0, 0), ("fail", "fail", 1, 0), ("pass", "fail", 0, 1)]


def test_base_only_runs_and_scores_the_base_tests_only(tmp_path, samples):
    run = evaluate(tmp_path / "run", samples, "--base-only")
    assert run["config"]["benchmark_options"] == {"base_only": "true"}
    assert run["results"]["tasks"][TASK]["statuses"] == ["pass", "fail", "pass"]
    assert run["results"]["metrics"]["pass@1"] == pytest.approx(2 / 3)
    assert not [m for m in run["results"]["metrics"] if ":" in m]  # one group: no base: / plus: figures
    assert all(t["id"].startswith("base/") for v in run["verdicts"] for t in v["tests"])
    assert statuses(run) == [("pass", None, 0, 0), ("fail", None, 1, 0), ("pass", None, 0, 0)]  # as evalplus writes


def test_the_report_keeps_base_only_figures_out_of_the_plus_column(tmp_path, samples):
    """A base-only run (ours, or evalplus' file with plus_status null) is its own column,
    never ranked beside base+plus figures of the same data."""
    evaluate(tmp_path / "base", samples, "--base-only")
    evaluate(tmp_path / "whole", samples)
    theirs = tmp_path / "evalplus_eval_results.json"
    shutil.copy(tmp_path / "base" / "s_eval_results.json", theirs)
    r = codea1("report", str(tmp_path / "base"), str(theirs), str(tmp_path / "whole"), "--format", "csv",
               "--out", str(tmp_path / "r"))
    assert r.returncode == 0, r.stderr
    import pandas as pd

    code = pd.read_csv(tmp_path / "r" / "code.csv", index_col="label")
    column = "humaneval+[base_only=true] pass@1"
    assert code.at["base", column] == pytest.approx(2 / 3) and code.at["evalplus", column] == pytest.approx(2 / 3)
    assert code.at["whole", "humaneval+ pass@1"] == pytest.approx(1 / 3) and pd.isna(code.at["whole", column])
    assert pd.isna(code.at["base", "humaneval+ pass@1"])


def test_test_details_runs_every_test_and_records_every_failing_input(tmp_path, samples):
    plain = evaluate(tmp_path / "plain", samples)
    run = evaluate(tmp_path / "run", samples, "--test-details")
    assert run["config"]["test_details"] is True and "test_details" not in plain["config"]
    assert run["results"]["tasks"] == plain["results"]["tasks"]  # the same verdicts and figures
    assert run["results"]["metrics"] == plain["results"]["metrics"]
    (right, wrong, short) = statuses(run)
    assert right == ("pass", "pass", 0, 0)
    assert wrong[:3] == ("fail", "fail", 3) and wrong[3] > 1  # every base input; plus ran after base failed
    assert short[:3] == ("pass", "fail", 0) and short[3] > 1  # every long string, not only the first
    wrong_verdict = next(v for v in run["verdicts"] if v["sample_index"] == 1)
    assert "not_run" not in {t["status"] for t in wrong_verdict["tests"]}
    again = codea1("evaluate", "--dataset", "humaneval", "--data", str(full_data()), "--samples", str(samples),
                   "--tasks", TASK, "--no-progress", "--out", str(tmp_path / "plain"), "--test-details")
    assert again.returncode == 2 and "field 'test_details' was None, now True" in again.stderr  # another run


def test_mini_reads_the_mini_file_beside_data_or_says_where_it_would_be(tmp_path, samples):
    full = evaluate(tmp_path / "full", samples)
    mini = evaluate(tmp_path / "mini", samples, "--mini")
    assert mini["config"]["benchmark_options"] == {"mini": "true"}
    assert mini["results"]["tasks"][TASK]["statuses"] == ["pass", "fail", "pass"]  # the Mini set has no long string
    assert mini["results"]["tasks"][TASK]["statuses"] != full["results"]["tasks"][TASK]["statuses"]
    # given the Mini file itself, the same run
    named = evaluate(tmp_path / "named", samples, "--mini",
                     data=shared_file("humanevalplus", "HumanEvalPlus-Mini-v0.1.10.jsonl.gz"))
    assert named["results"]["metrics"] == mini["results"]["metrics"]
    alone = tmp_path / "alone"
    alone.mkdir()
    shutil.copy(full_data(), alone / "HumanEvalPlus-v0.1.10.jsonl.gz")
    r = codea1("evaluate", "--dataset", "humaneval", "--data", str(alone / "HumanEvalPlus-v0.1.10.jsonl.gz"),
               "--samples", str(samples), "--mini", "--out", str(tmp_path / "no"))
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr
    assert f"the humaneval+ Mini data is not here: expected {alone / 'HumanEvalPlus-Mini-v0.1.10.jsonl.gz'}" in r.stderr
    mbpp = shared_file("mbppplus", "MbppPlus-v0.2.0.jsonl.gz")
    r = codea1("evaluate", "--dataset", "mbpp", "--data", str(mbpp), "--mini", "--out", str(tmp_path / "no"))
    assert r.returncode == 2 and "MbppPlus-Mini-v0.2.0.jsonl.gz" in r.stderr and "no MBPP+ Mini" in r.stderr
    assert not (tmp_path / "no").exists()


def test_wrong_uses_of_the_evalplus_flags_are_one_line_errors(tmp_path):
    r = codea1("evaluate", "--dataset", "bigcodebench", "--out", str(tmp_path / "o"))
    assert r.returncode == 2 and "evalplus' datasets are humaneval and mbpp" in r.stderr
    r = codea1("evaluate", "--dataset", "humaneval", "--benchmark", "demo", "--out", str(tmp_path / "o"))
    assert r.returncode == 2 and "not allowed with argument" in r.stderr
    r = codea1("evaluate", "--benchmark", "demo", "--base-only", "--out", str(tmp_path / "o"))
    assert r.returncode == 2 and "benchmark 'demo': unknown option 'base_only'" in r.stderr
    assert "Traceback" not in r.stderr and not (tmp_path / "o").exists()


@pytest.mark.parametrize("command, flags", [
    ("evaluate", ["--dataset", "--base-only", "--mini", "--parallel", "--test-details"]),
    ("evaluate-tests", ["--dataset", "--base-only", "--mini", "--parallel"]),
    ("generate", ["--dataset", "--mini"]),
])
def test_help_names_the_evalplus_flags(command, flags):
    r = codea1(command, "--help")
    assert r.returncode == 0
    for flag in flags:
        assert flag in r.stdout
    assert "evalplus'" in r.stdout


def test_evalplus_habits_are_met_or_answered_in_one_line(tmp_path, samples):
    """--i-just-wanna-run is --overwrite; a flag we do not have names the one meant; a bad
    value is one line (no usage block); without --out the run goes beside the samples, where
    evalplus puts its *_eval_results.json; offline without --data, the line says to pass it."""
    data = full_data()
    base = ["evaluate", "--dataset", "humaneval", "--data", str(data), "--samples", str(samples), "--tasks", TASK,
            "--no-progress"]
    first = codea1(*base)
    assert first.returncode == 0, first.stderr
    beside = tmp_path / "s_eval"
    assert first.stdout.splitlines()[0] == (f"out {beside} (no --out: beside the samples, where evalplus writes its "
                                            f"*_eval_results.json)")
    assert json.loads((beside / "results.json").read_text())["metrics"]["pass@1"] == pytest.approx(1 / 3)
    again = codea1(*base, "--i-just-wanna-run")
    assert again.returncode == 0 and "(resumed 0)" in again.stdout, again.stdout  # started over, as --overwrite
    resumed = codea1(*base)
    assert "(resumed 3)" in resumed.stdout, resumed.stdout

    typo = codea1(*base, "--overwirte")
    assert typo.returncode == 2 and typo.stderr.splitlines() == [
        "codea1 evaluate: error: unrecognized arguments: --overwirte; did you mean --overwrite? "
        "(see codea1 evaluate --help)"]
    zero = codea1(*base, "--k", "0")
    assert zero.returncode == 2 and zero.stderr.splitlines() == [
        "codea1 evaluate: error: argument --k: --k '0': expected comma-separated positive integers "
        "(see codea1 evaluate --help)"]
    no_samples = codea1("evaluate", "--benchmark", "demo")
    assert no_samples.returncode == 2 and no_samples.stderr.splitlines() == [
        "codea1: error: --out is required when --samples is not given: the samples are the benchmark's own, "
        "with no folder of yours to put the run beside"]

    # No network: a proxy that refuses every connection, an empty evalplus cache, and no data
    # path left in the environment by a run in this process (evalplus reads it from there).
    env = {**{k: v for k, v in os.environ.items() if not k.endswith("_OVERRIDE_PATH")},
           "HTTPS_PROXY": "http://127.0.0.1:9", "HTTP_PROXY": "http://127.0.0.1:9",
           "XDG_CACHE_HOME": str(tmp_path / "cache"), "HOME": str(tmp_path / "home")}
    offline = subprocess.run([*codea1_command(), "evaluate", "--dataset", "humaneval", "--samples", str(samples),
                              "--tasks", TASK,
                              "--out", str(tmp_path / "offline"), "--no-progress"],
                             capture_output=True, text=True, timeout=300, env=env)
    assert offline.returncode == 2, offline.stderr
    line = offline.stderr.splitlines()[-1]
    assert line.startswith("codea1: error: evalplus could not download humaneval+ (") and line.endswith(
        "): pass --data with a HumanEvalPlus-*.jsonl.gz file (offline: the data is not downloaded)"), line
    assert not (tmp_path / "offline").exists()
