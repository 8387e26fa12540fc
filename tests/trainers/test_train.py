"""`codea1 train` end to end on a CPU with tiny local models and KodCode questions: the SFT
warm starts, Code-A1 (valid tests, reward spread, advantages), Golden-Test and Self-Play
runs, resume after SIGKILL (identical step log and Mistake Books), the exported policies
scored by `codea1 generate` + `evaluate` / `evaluate-tests`, and config errors."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from conftest import codea1_command, shared_file

from codea1.harness.cli import main

pytest.importorskip("torch", reason="torch is not installed (pip install 'codea1[hf]')")
pytestmark = [pytest.mark.data, pytest.mark.xdist_group("train")]

TASKS = ["Prefill_00000020_I", "Prefill_00000049_I", "Prefill_00000058_I", "Prefill_00000084_I"]


def toml_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    raise TypeError(value)


def write_config(path: Path, sections: dict) -> Path:
    """Tables; a list of tables becomes an array of tables ([[name]])."""
    lines = []
    for name, table in sections.items():
        for entry in table if isinstance(table, list) else [table]:
            lines.append(f"[[{name}]]" if isinstance(table, list) else f"[{name}]")
            lines += [f"{key} = {toml_value(value)}" for key, value in entry.items()]
            lines.append("")
    path.write_text("\n".join(lines))
    return path


def base(trainer: str, steps: int, batch: int = 2, **train) -> dict:
    return {"train": {"trainer": trainer, "steps": steps, "batch_size": batch, "seed": 0, **train},
            "benchmark": {"name": "kodcode", "data": str(shared_file("kodcode", "KodCode_prefill_200_1741214325.json")),
                          "tasks": TASKS},
            "executor": {"name": "subprocess", "workers": 2}}


def train(tmp: Path, name: str, sections: dict, *extra: str) -> Path:
    out = tmp / name
    assert main(["train", "--config", str(write_config(tmp / f"{name}.toml", sections)), "--out", str(out),
                 "--no-progress", *extra]) == 0
    return out


def rows(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "steps.jsonl").read_text().splitlines()]


@pytest.fixture(scope="module")
def warm(tiny_model, tmp_path_factory):
    """Both tiny policies warm-started with the sft trainer on the four questions: the code
    policy on their references, the test policy on their golden asserts for a failing
    mutant, on the white-box prompt RL uses."""
    tmp = tmp_path_factory.mktemp("warm")
    code = train(tmp, "sft-code", {**base("sft", 70, batch=4), "trainer": {"role": "code"},
                                   "policies.code": {"model": str(tiny_model), "lr": 4e-3, "micro_batch_size": 8}})
    tests = train(tmp, "sft-tests", {**base("sft", 70, batch=4),
                                     "trainer": {"role": "tests", "k": 4, "prompt": "test-white-box"},
                                     "policies.tests": {"model": str(tiny_model), "lr": 4e-3, "micro_batch_size": 8}})
    return {"code": code, "tests": tests}


def code_a1(warm, steps: int = 3, **trainer) -> dict:
    return {**base("code-a1", steps, checkpoint_every=1),
            "trainer": {"m": 4, "n": 2, "k": 4, **trainer},
            "policies.code": {"model": str(warm["code"] / "export" / "code"), "temperature": 1.0, "max_tokens": 128,
                              "lr": 1e-4},
            "policies.tests": {"model": str(warm["tests"] / "export" / "tests"), "temperature": 1.0,
                               "max_tokens": 80, "lr": 1e-4}}


@pytest.mark.long
def test_sft_warm_starts_both_policies(warm):
    for role, out in warm.items():
        log = rows(out)
        assert len(log) == 70 and all(r["pairs"] > 0 for r in log)
        first, last = log[0][f"{role}_loss"], log[-1][f"{role}_loss"]
        assert last < first / 10, (role, first, last)
        assert (out / "export" / role / "config.json").exists()
        assert [r["step"] for r in log] == list(range(1, 71))  # as the checkpoints count: N steps done
        assert sorted(p.name for p in (out / "checkpoints").iterdir()) == ["step-000069", "step-000070"]


@pytest.mark.long
def test_code_a1_runs_with_real_signal(warm, tmp_path):
    sections = code_a1(warm)
    sections["train"]["eval_every"] = 3
    sections["evaluation.code"] = [{"benchmark": "kodcode", "data": sections["benchmark"]["data"], "limit": 2, "n": 2,
                                    "max_tokens": 128}]
    sections["evaluation.tests"] = [{"benchmark": "ult", "data": str(shared_file("unleakedtestbench", "ULT_Lite.json")),
                                     "limit": 2, "k": [1], "max_tokens": 80}]
    out = train(tmp_path, "code-a1", sections)
    log = rows(out)
    evaluation = log[2]["evaluation"]  # step 3 of 3: the evaluate and evaluate-tests flows on the policies
    assert 0.0 <= evaluation["code/kodcode"]["pass@1"] <= 1.0 and "test-pass@1" in evaluation["tests/ult"]
    assert "evaluation" not in log[0] and (out / "evaluation" / "step-000003" / "code-kodcode" / "run" /
                                           "results.json").exists()
    # one numbering, from 1, in the step log, the Mistake Book files, the checkpoints (the last
    # two) and the evaluation directories
    steps = [r["step"] for r in log]
    assert steps == [1, 2, 3]
    assert sorted(p.name for p in (out / "mistake_book").iterdir()) == [f"step-{s:06d}.json" for s in steps]
    assert sorted(p.name for p in (out / "checkpoints").iterdir()) == [f"step-{s:06d}" for s in steps[-2:]]
    evaluated = [f"step-{r['step']:06d}" for r in log if "evaluation" in r]
    assert [p.name for p in (out / "evaluation").iterdir()] == evaluated == ["step-000003"]
    assert sum(r["tests"].get("valid", 0) for r in log) > 0  # the test policy writes valid tests
    assert any(r["zero_variance_groups"]["code"] < 2 for r in log)  # some question's programs differ in reward
    assert any(r["advantage_abs_mean"]["code"] > 0 for r in log)
    assert any(r["advantage_abs_mean"]["tests"] > 0 for r in log)
    for r in log:
        assert r["topvar"]["groups"] == 2 * 2  # B = 2 questions, M / N = 2 groups each
        assert set(r["timing"]) == {"generate_code_s", "generate_tests_s", "validate_s", "execute_s", "update_s"}
        assert r["code_tokens"] > 0 and r["tests_tokens"] > 0
        # one optimiser step per batch (the default): the ratio is 1, the clip never acts
        assert r["code_optimizer_steps"] == 1 and r["code_clip_ratio"] == 0 and r["tests_clip_ratio"] == 0
    assert log[-1]["mistake_book"]["size"] == sum(len(v) for v in json.loads(
        (out / "mistake_book" / "step-000003.json").read_text())["questions"].values())
    config = json.loads((out / "config.json").read_text())
    assert config["trainer"]["reward_variant"] == "authors" and config["trainer"]["alpha"] == 0.5
    assert config["policies"]["code"]["kl_coef"] == 0.001 and config["policies"]["code"]["clip_high"] == 0.28
    for role in ("code", "tests"):
        assert (out / "export" / role / "model.safetensors").exists()


@pytest.mark.long
def test_code_a1_resumes_after_sigkill_exactly(warm, tmp_path):
    """Killed mid-run (its first checkpoint whole, in the second step), then --resume: the
    step log (timings aside) and every Mistake Book file equal an uninterrupted run's. The
    code policy takes PPO mini-batches of 4 of its 8 programs, shuffled by the seed: their
    order survives the resume too."""
    sections = code_a1(warm, steps=3)
    sections["policies.code"]["mini_batch_size"] = 4
    whole = train(tmp_path, "whole", sections)
    config = write_config(tmp_path / "killed.toml", sections)
    out = tmp_path / "killed"
    cmd = [*codea1_command(), "train", "--config", str(config), "--out", str(out), "--no-progress"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        while proc.poll() is None and not (out / "checkpoints" / "step-000001" / "state.json").exists():
            time.sleep(0.05)
        os.killpg(proc.pid, signal.SIGKILL)  # the run and its sandbox workers, in step 2 (checkpoint 1 whole)
    finally:
        proc.wait()
    assert proc.returncode == -signal.SIGKILL, "the run ended before it could be killed"
    assert [r["step"] for r in rows(out)] in ([1], [1, 2])
    resumed = subprocess.run(cmd + ["--resume"], capture_output=True, text=True, timeout=900)
    assert resumed.returncode == 0, resumed.stderr[-3000:]

    def comparable(run):
        return [{k: v for k, v in r.items() if k != "timing"} for r in rows(run)]

    assert comparable(out) == comparable(whole)
    assert [r["step"] for r in rows(out)] == [1, 2, 3]  # resumed at the checkpoint's number, from 1
    assert all(r["code_optimizer_steps"] == 2 for r in rows(whole))
    names = sorted(p.name for p in (whole / "mistake_book").iterdir())
    assert sorted(p.name for p in (out / "mistake_book").iterdir()) == names
    for name in names:
        assert (out / "mistake_book" / name).read_text() == (whole / "mistake_book" / name).read_text()


@pytest.mark.long
def test_golden_tests_run(warm, tmp_path):
    golden = train(tmp_path, "golden", {**base("golden-tests", 2), "trainer": {"m": 4},
                                         "policies.code": {"model": str(warm["code"] / "export" / "code"),
                                                           "max_tokens": 128, "lr": 1e-4}})
    log = rows(golden)
    assert len(log) == 2 and all(0.0 <= r["pass_rate_golden"] <= 1.0 and r["programs"] == 8 for r in log)
    assert any(r["pass_rate_golden"] > 0 for r in log)  # the warm-started policy solves some questions


@pytest.mark.long
def test_self_play_from_a_warm_start_on_both_roles_has_signal(warm, tmp_path):
    """sft role code with tests_prompt trains the one policy self-play uses on both: the
    references and, from the black-box prompt, the golden asserts (a step's pairs: 4 codes and
    the suites of the questions with a failing mutant). Self-play from it has valid tests and
    programs that pass them: rewards that are not all zero."""
    both = train(tmp_path, "sft-both", {**base("sft", 40, batch=4),
                                         "trainer": {"role": "code", "tests_prompt": "test-black-box", "k": 4},
                                         "policies.code": {"model": str(warm["code"] / "export" / "code"), "lr": 4e-3,
                                                           "micro_batch_size": 8}})
    assert all(r["pairs"] > 4 for r in rows(both)) and rows(both)[-1]["code_loss"] < 0.1
    play = train(tmp_path, "self-play", {**base("self-play", 2), "trainer": {"m": 4, "n": 4, "k": 4},
                                          "policies.code": {"model": str(both / "export" / "code"),
                                                            "max_tokens": 128, "lr": 1e-4}})
    log = rows(play)
    assert len(log) == 2 and all(r["code_responses"] == 2 * 4 + 2 * 4 for r in log)  # codes and suites, one update
    assert (play / "mistake_book" / "step-000002.json").exists()
    assert all(r["tests"].get("valid", 0) > 0 and r["reward_valid"] > 0 for r in log), log
    assert any(r["reward_code"] > 0 and r["pass_rate_new"] > 0 for r in log), log


@pytest.mark.long
def test_consensus_validation_runs_without_the_reference(warm, tmp_path):
    out = train(tmp_path, "consensus", code_a1(warm, steps=1, validation="consensus"))
    log = rows(out)
    assert set(log[0]["tests"]) <= {"valid", "wrong", "error", "unparsed", "duplicate", "missing"}


@pytest.mark.long
def test_exported_policies_score_with_generate_and_evaluate(warm, tmp_path):
    data = str(shared_file("kodcode", "KodCode_prefill_200_1741214325.json"))
    out = train(tmp_path, "code-a1", code_a1(warm, steps=1))
    tasks = ",".join(TASKS)
    assert main(["generate", "--role", "code", "--benchmark", "kodcode", "--data", data, "--tasks", tasks,
                 "--generator", "hf", "--model", str(out / "export" / "code"), "--n", "2", "--max-tokens", "128",
                 "--no-cache", "--no-progress", "--out", str(tmp_path / "gen-code")]) == 0
    assert main(["evaluate", "--benchmark", "kodcode", "--data", data, "--samples",
                 str(tmp_path / "gen-code" / "samples.jsonl"), "--tasks", tasks, "--out", str(tmp_path / "eval-code"),
                 "--no-progress"]) == 0
    code = json.loads((tmp_path / "eval-code" / "results.json").read_text())
    assert code["counts"]["samples"] == 8 and 0.0 <= code["metrics"]["pass@1"] <= 1.0
    assert main(["generate", "--role", "tests", "--benchmark", "kodcode", "--data", data, "--tasks", tasks,
                 "--generator", "hf", "--model", str(out / "export" / "tests"), "--k", "4", "--max-tokens", "80",
                 "--no-cache", "--no-progress", "--out", str(tmp_path / "gen-tests")]) == 0
    assert main(["evaluate-tests", "--benchmark", "kodcode", "--data", data, "--tests",
                 str(tmp_path / "gen-tests" / "tests.jsonl"), "--tasks", tasks, "--k", "1,4", "--no-coverage",
                 "--out", str(tmp_path / "eval-tests"), "--no-progress"]) == 0
    tests = json.loads((tmp_path / "eval-tests" / "results.json").read_text())
    assert tests["counts"]["tasks"] == 4 and 0.0 <= tests["metrics"]["test-pass@1"] <= 1.0


@pytest.mark.long
def test_config_mistakes_name_the_file_section_and_key(warm, tmp_path, capsys):
    sections = code_a1(warm, steps=1)
    bad = write_config(tmp_path / "bad.toml", {**sections, "trainer": {"alpah": 0.5}})
    assert main(["train", "--config", str(bad), "--out", str(tmp_path / "o")]) == 2
    assert f"{bad}: [trainer] trainer 'code-a1': unknown option 'alpah'; did you mean 'alpha'" in capsys.readouterr().err
    bad = write_config(tmp_path / "bad2.toml", {**sections, "train": {**sections["train"], "stpes": 3}})
    assert main(["train", "--config", str(bad), "--out", str(tmp_path / "o")]) == 2
    assert "[train] unknown key 'stpes'; did you mean 'steps'" in capsys.readouterr().err
    missing = {k: v for k, v in sections.items() if k != "policies.tests"}
    assert main(["train", "--config", str(write_config(tmp_path / "m.toml", missing)), "--out", str(tmp_path / "o")]) == 2
    assert "[policies.tests] is missing: trainer 'code-a1' trains tests" in capsys.readouterr().err
    good = write_config(tmp_path / "good.toml", sections)
    assert main(["train", "--config", str(good), "--set", "trainer.alpha=1.5", "--out", str(tmp_path / "o")]) == 2
    assert "alpha must lie in [0, 1]" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()  # refused before anything was written
    assert main(["train", "--config", str(good), "--set", "trainer.alpha=0.25", "--out", str(tmp_path / "o"),
                 "--no-progress"]) == 0
    assert json.loads((tmp_path / "o" / "config.json").read_text())["trainer"]["alpha"] == 0.25
    assert main(["train", "--config", str(good), "--out", str(tmp_path / "o")]) == 2
    assert "holds a training run: pass --resume" in capsys.readouterr().err
    book = tmp_path / "o" / "mistake_book" / "step-000001.json"
    assert main(["mistake-book", "show", str(book)]) == 0
    assert "questions," in capsys.readouterr().out


def test_every_shipped_config_loads(plugins):
    """trainers/configs/*.toml: each one names known plugins and valid keys."""
    from conftest import ROOT

    from codea1.harness.flows.train import load_config

    configs = sorted((ROOT / "trainers" / "configs").glob("*.toml"))
    assert {p.stem for p in configs} >= {"demo-sft-code", "demo-sft-tests", "demo-code-a1", "demo-golden-tests",
                                         "demo-self-play", "paper-1.5b", "paper-7b"}
    for path in configs:
        cfg = load_config(plugins, str(path), [], "/nonexistent/out")
        assert cfg.settings.train.trainer in plugins.trainers.names(), path


def golden_pass_rate(model: Path, tmp: Path, name: str) -> float:
    """pass@1 of 32 samples per question at the paper's evaluation sampling (n 32,
    temperature 0.7, top-p 0.95), through `codea1 generate` + `codea1 evaluate`."""
    data = str(shared_file("kodcode", "KodCode_prefill_200_1741214325.json"))
    assert main(["generate", "--role", "code", "--benchmark", "kodcode", "--data", data, "--tasks", ",".join(TASKS),
                 "--generator", "hf", "--model", str(model), "--n", "32", "--temperature", "0.7", "--top-p", "0.95",
                 "--max-tokens", "128", "--seed", "1", "--no-cache", "--no-progress", "--out", str(tmp / f"gen-{name}")]) == 0
    assert main(["evaluate", "--benchmark", "kodcode", "--data", data, "--samples",
                 str(tmp / f"gen-{name}" / "samples.jsonl"), "--tasks", ",".join(TASKS), "--out", str(tmp / f"eval-{name}"),
                 "--no-progress"]) == 0
    return json.loads((tmp / f"eval-{name}" / "results.json").read_text())["metrics"]["pass@1"]


@pytest.mark.long
@pytest.mark.xdist_group("learning")
def test_golden_tests_training_raises_the_pass_rate(tiny_model, tmp_path):
    """The learning check of the whole loop: a tiny policy warm-started (sft, role code) on
    each question's reference and a near-miss mutant of it writes the right program only
    some of the time; 16 golden-tests GRPO steps later it writes it far more often, measured
    on 128 fresh samples before and after (fixed seeds: the same figures every run of the
    same code on a machine; the margin is several standard errors wide). The step log's
    curve (mean share of golden tests passed, 32 rollouts a step) is printed; it is too
    noisy at this size to assert on step by step."""
    warm = train(tmp_path, "sft-bimodal", {**base("sft", 60, batch=4),
                                           "trainer": {"role": "code", "code_targets": "reference-and-mutant"},
                                           "policies.code": {"model": str(tiny_model), "lr": 4e-3,
                                                             "micro_batch_size": 8}})
    trained = train(tmp_path, "golden", {**base("golden-tests", 16, batch=4, checkpoint_every=16),
                                         "trainer": {"m": 8},
                                         "policies.code": {"model": str(warm / "export" / "code"), "temperature": 1.0,
                                                           "max_tokens": 128, "lr": 2e-4}})
    curve = [round(r["pass_rate_golden"], 3) for r in rows(trained)]
    before = golden_pass_rate(warm / "export" / "code", tmp_path, "before")
    after = golden_pass_rate(trained / "export" / "code", tmp_path, "after")
    print(f"golden pass rate by step: {curve}; pass@1 of 128 samples: before {before:.4f}, after {after:.4f}")
    assert 0.2 < before < 0.85  # the warm start leaves room to learn
    assert after > before + 0.12, (before, after, curve)
