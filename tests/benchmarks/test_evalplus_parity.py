"""HumanEval+ and MBPP+: canonical solutions pass, and per-sample verdicts equal what
`evalplus.evaluate` decides on the same samples file (canonical + deliberately wrong ones).

Known, documented differences, each an evalplus failure of a correct canonical solution:

* HumanEval/32: evalplus 0.3.1 fails *every* sample. Its find_zero oracle `continue`s
  before recording the input as checked, so the details array comes up short and the
  status turns to fail. codea1 applies the same oracle and records it.
* Mbpp/255: evalplus forks each check from a worker that holds every expected output, then
  caps the child's address space at 4 GiB; the canonical solution's 82,160-tuple answer
  to plus input 86 no longer fits and raises MemoryError (alone, it passes). codea1's
  children are forked from a small zygote. (Plus input 85, an answer of over 50 million
  items, exceeds codea1's plain-data cap and is dropped as a test with a reference failure.)
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import shared_file

from codea1.harness.flows.evaluate import EvaluateConfig, evaluate

pytestmark = pytest.mark.data
DATA = Path(__file__).resolve().parents[1] / "data"
EVALPLUS_BUG_TASKS = {"HumanEval/32", "Mbpp/255"}
SUBSET = 40  # tasks of the default run's data subset, besides those of the wrong samples


def subset_file(tmp_path: Path, data: Path, wrong: Path, first: int | None) -> Path:
    """The data file both tools read: all of it, or its first ``first`` tasks plus those the
    wrong samples are for (evalplus wants a sample for every task of its data file)."""
    if first is None:
        return data
    wanted = {json.loads(x)["task_id"] for x in wrong.read_text().splitlines()}
    out = tmp_path / data.name
    with gzip.open(data, "rt") as src, gzip.open(out, "wt") as dst:
        for i, line in enumerate(src):
            if i < first or json.loads(line)["task_id"] in wanted:
                dst.write(line)
    return out


def samples_file(tmp_path: Path, data: Path, wrong: Path) -> Path:
    out = tmp_path / "samples.jsonl"
    with gzip.open(data, "rt") as src, open(out, "w") as dst:
        for line in src:
            task = json.loads(line)
            dst.write(json.dumps({"task_id": task["task_id"], "solution": task["prompt"] + task["canonical_solution"]}) + "\n")
        dst.write(wrong.read_text())
    return out


def evalplus_verdicts(dataset: str, env_var: str, data: Path, samples: Path) -> dict[tuple[str, int], tuple[str, str]]:
    """Run evalplus.evaluate itself (in a child: its watchdog thread idles 20 s at exit)."""
    code = ("import os, sys\nfrom evalplus.evaluate import evaluate\n"
            f"evaluate({dataset!r}, samples={str(samples)!r}, parallel=2, i_just_wanna_run=True)\nos._exit(0)\n")
    env = {**os.environ, env_var: str(data)}
    subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True, timeout=900)
    results = json.loads(Path(str(samples).replace(".jsonl", "_eval_results.json")).read_text())
    out = {}
    for task_id, rows in results["eval"].items():
        for index, row in enumerate(rows):
            out[(task_id, index)] = (row["base_status"], row["plus_status"])
    return out


def evalplus_isolated(dataset: str, env_var: str, data: Path, samples: Path, keys) -> dict:
    """evalplus' own check_correctness on single samples, one at a time, with time limits ten
    times evalplus' defaults (a 10 s floor, 40 x the ground truth's time): evalplus' wall-clock
    limits misjudge slow-but-correct answers on a busy machine (Mbpp/392's canonical solution
    needs 0.3 s of its 1 s per input; under load the suite saw Mbpp/630 fail), so a verdict
    that differs from codea1's is asked again without the anchor's timing in the way. What
    still differs then is a real disagreement."""
    code = f"""
import json, os, sys
from evalplus.data import get_{'human_eval' if dataset == 'humaneval' else 'mbpp'}_plus as get, \
    get_{'human_eval' if dataset == 'humaneval' else 'mbpp'}_plus_hash as get_hash
from evalplus.evaluate import get_groundtruth, check_correctness
from evalplus.eval._special_oracle import MBPP_OUTPUT_NOT_NONE_TASKS
problems = get()
expected = get_groundtruth(problems, get_hash(), MBPP_OUTPUT_NOT_NONE_TASKS if {dataset!r} == "mbpp" else [])
rows = [json.loads(l) for l in open({str(samples)!r})]
index, out = {{}}, {{}}
for row in rows:
    index[row["task_id"]] = index.get(row["task_id"], -1) + 1
    key = f'{{row["task_id"]}}#{{index[row["task_id"]]}}'
    if key in {[f"{t}#{i}" for t, i in keys]!r}:
        r = check_correctness({dataset!r}, 0, problems[row["task_id"]], row["solution"], expected[row["task_id"]],
                              min_time_limit=10.0, gt_time_limit_factor=40.0)
        out[key] = [r["base"][0], r["plus"][0]]
print(json.dumps(out), flush=True)
os._exit(0)
"""
    env = {**os.environ, env_var: str(data)}
    done = subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True, text=True, timeout=600)
    return {tuple(k.rsplit("#", 1)[:1]) + (int(k.rsplit("#", 1)[1]),): tuple(v)
            for k, v in json.loads(done.stdout.strip().splitlines()[-1]).items()}


HUMANEVAL = ("humaneval+", "humaneval", "HUMANEVAL_OVERRIDE_PATH", ("humanevalplus", "HumanEvalPlus-v0.1.10.jsonl.gz"),
             "humaneval_wrong_samples.jsonl")
MBPP = ("mbpp+", "mbpp", "MBPP_OVERRIDE_PATH", ("mbppplus", "MbppPlus-v0.2.0.jsonl.gz"), "mbpp_wrong_samples.jsonl")


@pytest.mark.parametrize("benchmark,dataset,env_var,parts,wrong,first", [
    pytest.param(*HUMANEVAL, SUBSET, marks=pytest.mark.long, id="humaneval+-subset"), (*MBPP, SUBSET),
    # The whole data sets (minutes: evalplus' ground truth of every task, Mbpp/255's huge
    # outputs): `tox -e parity`.
    pytest.param(*HUMANEVAL, None, marks=pytest.mark.slow, id="humaneval+-all"),
    pytest.param(*MBPP, None, marks=pytest.mark.slow, id="mbpp+-all"),
])
def test_canonical_pass_and_verdicts_equal_evalplus(plugins, tmp_path, benchmark, dataset, env_var, parts, wrong,
                                                    first):
    data = subset_file(tmp_path, shared_file(*parts), DATA / wrong, first)
    samples = samples_file(tmp_path, data, DATA / wrong)
    # Ours under the generous limits evalplus_isolated gives evalplus: what is compared is
    # pass and fail, and on a busy machine a correct program can stall past evalplus' 1 s floor
    # (the endless loop among the wrong samples times out under any limit).
    ours = evaluate(plugins, EvaluateConfig(benchmark=benchmark, data=str(data), samples=str(samples),
                                            out=str(tmp_path / "run"), progress=False, workers=2,
                                            min_time_limit=10.0, gt_time_limit_factor=40.0))
    verdicts = {}
    for line in (tmp_path / "run" / "verdicts.jsonl").read_text().splitlines():
        v = json.loads(line)
        verdicts[(v["task_id"], v["sample_index"])] = v
    n_tasks = len(ours["tasks"])
    canonical = [verdicts[(t, 0)] for t in ours["tasks"]]
    assert [v["task_id"] for v in canonical if v["status"] != "pass"] == []  # pass@1 of canonical = 1.0
    wrong_rows = [json.loads(x) for x in (DATA / wrong).read_text().splitlines()]
    assert ours["counts"]["samples"] == n_tasks + len(wrong_rows)

    theirs = evalplus_verdicts(dataset, env_var, data, samples)
    assert set(theirs) == set(verdicts)
    mismatches = []
    for key, v in verdicts.items():
        base, plus = theirs[key]
        evalplus_pass = base == plus == "pass"
        ours_pass = v["status"] == "pass"
        ours_base = v["groups"].get("base") == "pass"
        if key[0] in EVALPLUS_BUG_TASKS and key[1] == 0:
            assert not evalplus_pass and ours_pass, (key, base, plus, v["status"])  # documented above
            continue
        if (ours_pass, ours_base) != (evalplus_pass, base == "pass"):
            mismatches.append((key, v["status"], v["groups"], base, plus))
    if mismatches:  # the anchor's own timing failures, or disagreements? (see evalplus_isolated)
        alone = evalplus_isolated(dataset, env_var, data, samples, [m[0] for m in mismatches])
        still = [m for m in mismatches if (alone[m[0]][0] == alone[m[0]][1] == "pass") != (m[1] == "pass")]
        assert still == [], still  # real disagreements; the rest were evalplus timing out under load
        print(f"evalplus misjudged {len(mismatches)} sample(s) under its default time limits, none with "
              f"generous ones: {[m[0] for m in mismatches]}")
    # The wrong samples are not all wrong in the same way: both tools agree on which pass.
    wrong_passes = {(r["task_id"], r["kind"]) for r in wrong_rows
                    if verdicts[(r["task_id"], 1)]["status"] == "pass"}
    assert len(wrong_passes) < len(wrong_rows)


def test_isolated_evalplus_check_reads_back(tmp_path):
    """The confirmation path used on disagreements works (it runs only when evalplus is flaky)."""
    data = shared_file("humanevalplus", "HumanEvalPlus-v0.1.10.jsonl.gz")
    samples = tmp_path / "s.jsonl"
    rows = [{"task_id": "HumanEval/23", "solution": "def strlen(string):\n    return len(string)\n"},
            {"task_id": "HumanEval/23", "solution": "def strlen(string):\n    return len(string) - 1\n"}]
    samples.write_text("".join(json.dumps(r) + "\n" for r in rows))
    alone = evalplus_isolated("humaneval", "HUMANEVAL_OVERRIDE_PATH", data, samples,
                              [("HumanEval/23", 0), ("HumanEval/23", 1)])
    assert alone == {("HumanEval/23", 0): ("pass", "pass"), ("HumanEval/23", 1): ("fail", "fail")}


def test_an_evalplus_results_file_is_written_beside_results_json(plugins, tmp_path):
    """The evalplus-style `<samples>_eval_results.json`: what evalplus' own scripts read
    (base_status, plus_status, failing inputs per sample, in sample order)."""
    data = shared_file("humanevalplus", "HumanEvalPlus-v0.1.10.jsonl.gz")
    samples = tmp_path / "my_samples.jsonl"
    rows = [{"task_id": "HumanEval/23", "solution": "def strlen(string):\n    return len(string)\n"},
            {"task_id": "HumanEval/23", "solution": "def strlen(string):\n    return len(string) - 1\n"},
            {"task_id": "HumanEval/23", "solution": "def strlen(string):\n    return len(string) if len(string) < 100 "
                                                    "else 0\n"}]
    samples.write_text("".join(json.dumps(r) + "\n" for r in rows))
    ours = evaluate(plugins, EvaluateConfig(benchmark="humaneval+", data=str(data), samples=str(samples),
                                            out=str(tmp_path / "run"), progress=False, tasks=["HumanEval/23"]))
    document = json.loads((tmp_path / "run" / "my_samples_eval_results.json").read_text())
    assert set(document) == {"date", "hash", "eval"} and len(document["hash"]) == 32
    entries = document["eval"]["HumanEval/23"]
    assert [e["solution"] for e in entries] == [r["solution"] for r in rows]
    assert [(e["base_status"], e["plus_status"]) for e in entries] == [("pass", "pass"), ("fail", "fail"),
                                                                      ("pass", "fail")]
    assert entries[1]["base_fail_tests"] and entries[1]["plus_fail_tests"] == []  # plus not run after base failed
    assert len(entries[2]["plus_fail_tests"][0][0]) >= 100  # the failing input, as evalplus records it
    assert ours["tasks"]["HumanEval/23"]["statuses"] == ["pass", "fail", "fail"]


def test_evalplus_data_loads_without_importing_datasets_until_evalplus_needs_it(tmp_path):
    """evalplus.data imports `datasets` (a second of start-up) for one function HumanEval+
    and MBPP+ never call: a fresh interpreter loads both benchmarks without it, and that
    function still reaches the real package when called."""
    code = f"""
import os, sys
from codea1.harness.plugin_manager import load_plugins
plugins = load_plugins()
for name, path in (("humaneval+", {str(shared_file("humanevalplus", "HumanEvalPlus-v0.1.10.jsonl.gz"))!r}),
                   ("mbpp+", {str(shared_file("mbppplus", "MbppPlus-v0.2.0.jsonl.gz"))!r})):
    assert len(plugins.benchmarks.create(name, {{"data": path}}).load()) > 100
assert "datasets" not in sys.modules and "pandas" not in sys.modules
import evalplus.data
try:
    evalplus.data.load_dataset({str(tmp_path / "no-such-dataset")!r})
except Exception:
    pass
print(getattr(sys.modules.get("datasets"), "__file__", None))
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1"})
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().endswith("__init__.py")  # the real datasets package, imported on use
