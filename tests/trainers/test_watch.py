"""Training you can watch, through real `codea1` processes with a tiny local model on KodCode
questions: the step log mirrored to TensorBoard event files (read back with TensorBoard's own
reader) and to an offline W&B run (read back with wandb's own `wandb leet inspect`), a
resumed run that logs no step twice, `codea1 train --dry-run`, and `codea1 show` of train
runs."""

from __future__ import annotations

import importlib.util
import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
import tomllib
from conftest import codea1_command, shared_file

pytest.importorskip("torch", reason="torch is not installed (pip install 'codea1[hf]')")
pytest.importorskip("tensorboard", reason="tensorboard is not installed (pip install 'codea1[watch]')")
pytestmark = [pytest.mark.data, pytest.mark.xdist_group("train")]

HAS_WANDB = importlib.util.find_spec("wandb") is not None
TASKS = ["Prefill_00000020_I", "Prefill_00000049_I", "Prefill_00000058_I", "Prefill_00000084_I"]


def write_config(tmp: Path, model: Path, name: str = "sft.toml") -> Path:
    """A 3-step SFT of the tiny code policy, its last step evaluated on two questions."""
    data = json.dumps(str(shared_file("kodcode", "KodCode_prefill_200_1741214325.json")))
    path = tmp / name
    path.write_text(f"""
[train]
trainer = "sft"
steps = 3
batch_size = 2
eval_every = 3

[benchmark]
name = "kodcode"
data = {data}
tasks = {json.dumps(TASKS)}

[executor]
workers = 2

[trainer]
role = "code"

[policies.code]
model = {json.dumps(str(model))}
lr = 4e-3
max_tokens = 32

[[evaluation.code]]
benchmark = "kodcode"
data = {data}
limit = 2
max_tokens = 32
""")
    return path


def codea1(tmp: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*codea1_command(), *args], cwd=tmp, capture_output=True, text=True, timeout=900)


def rows(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "steps.jsonl").read_text().splitlines()]


def numbers(row: dict, prefix: str = "") -> dict[str, float]:
    """What is mirrored: every number of a row, nested names joined by "/"."""
    out = {}
    for key, value in row.items():
        if isinstance(value, dict):
            out.update(numbers(value, f"{prefix}{key}/"))
        elif isinstance(value, (int, float)) and not isinstance(value, bool) and f"{prefix}{key}" != "step":
            out[f"{prefix}{key}"] = value
    return out


def tensorboard_scalars(out: Path) -> dict[str, list[tuple[int, float]]]:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(out / "tensorboard"), size_guidance={"scalars": 0})  # 0: keep every event
    acc.Reload()
    return {tag: [(e.step, e.value) for e in acc.Scalars(tag)] for tag in acc.Tags()["scalars"]}


def assert_mirrors(log: list[dict], mirrored: dict[str, list[tuple[int, float]]]) -> None:
    """Each number of each row at the row's step, once, with its value (TensorBoard keeps
    float32), and nothing else."""
    expected: dict[str, list[tuple[int, float]]] = {}
    for row in log:
        for name, value in numbers(row).items():
            expected.setdefault(name, []).append((row["step"], value))
    assert set(mirrored) == set(expected)
    for name, points in expected.items():
        got = mirrored[name]
        assert [s for s, _ in got] == [s for s, _ in points], name
        for (_, want), (_, have) in zip(points, got):
            assert have == pytest.approx(want, rel=1e-6, abs=1e-7) or (math.isnan(want) and math.isnan(have)), name


@pytest.fixture(scope="module")
def mirrored(tiny_model, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("watch")
    sinks = json.dumps(["tensorboard", "wandb"] if HAS_WANDB else ["tensorboard"])
    done = codea1(tmp, "train", "--config", str(write_config(tmp, tiny_model)), "--out", "run", "--no-progress",
                  "--set", f"train.log_to={sinks}")
    assert done.returncode == 0, done.stderr[-3000:]
    return tmp / "run"


def test_tensorboard_event_files_hold_every_step_log_scalar(mirrored):
    log = rows(mirrored)
    assert len(log) == 3 and "evaluation" in log[-1]
    scalars = tensorboard_scalars(mirrored)
    assert_mirrors(log, scalars)
    assert "code_loss" in scalars and "evaluation/code/kodcode/pass@1" in scalars and "timing/update_s" in scalars


@pytest.mark.skipif(not HAS_WANDB, reason="wandb is not installed (pip install 'codea1[watch]')")
def test_the_offline_wandb_run_holds_every_step_log_scalar(mirrored):
    runs = list((mirrored / "wandb").glob("offline-run-*/run-*.wandb"))
    assert len(runs) == 1
    read = subprocess.run([sys.executable, "-m", "wandb", "leet", "inspect", "--json", str(runs[0])],
                          capture_output=True, text=True, timeout=300)
    assert read.returncode == 0, read.stderr[-2000:]
    history = [json.loads(line)["history"] for line in read.stdout.splitlines() if '"type":"history"' in line]
    logged = {}
    for record in history:
        step = record["step"]["num"] if "num" in record.get("step", {}) else 0  # proto JSON drops a 0
        for name, value in record["item"].items():
            if not name.startswith("_"):  # wandb's own: _step, _runtime, _timestamp
                logged.setdefault(name, []).append((step, value))
    assert_mirrors(rows(mirrored), logged)


def test_show_a_train_run(mirrored):
    shown = codea1(mirrored.parent, "show", "run")
    assert shown.returncode == 0, shown.stderr
    out = shown.stdout
    assert out.startswith("run: train, complete\n")
    assert "trainer      sft, batch 2, seed 0" in out and "4 tasks" in out
    assert "executor     subprocess, 2 workers" in out
    assert "policy code  torch, model " in out and "mirrored to  tensorboard" in out
    last = rows(mirrored)[-1]
    assert "steps: 3 of 3" in out and f"last step ({last['step']}): code_loss {last['code_loss']:.4g}" in out
    assert f"last evaluation at step {last['step']}:" in out
    pass_at_1 = f"{100 * last['evaluation']['code/kodcode']['pass@1']:.2f}%"
    assert any(line.startswith("  code/kodcode pass@1 ") and line.endswith(pass_at_1) for line in out.splitlines())
    as_json = json.loads(codea1(mirrored.parent, "show", "run", "--json").stdout)
    assert as_json["kind"] == "train" and as_json["status"] == "complete"


def test_a_resumed_run_logs_no_step_twice(tiny_model, tmp_path):
    """Killed after its third row but before the third checkpoint (its files as such a kill
    leaves them), then resumed: the third step runs again, and TensorBoard's reader shows
    it once, with the values of the step log's row (its timings differ from the first
    attempt's)."""
    config = write_config(tmp_path, tiny_model)
    args = ["train", "--config", str(config), "--out", "run", "--no-progress", "--set", "train.eval_every=0",
            "--set", "train.checkpoint_every=2", "--set", 'train.log_to=["tensorboard"]']
    first = codea1(tmp_path, *args)
    assert first.returncode == 0, first.stderr[-3000:]
    out = tmp_path / "run"
    first_rows = rows(out)
    for leftover in (out / "checkpoints" / "step-000003", out / "results.json"):
        subprocess.run(["rm", "-r", str(leftover)], check=True)
    shown = codea1(tmp_path, "show", "run").stdout
    assert "run: train, interrupted (3 of 3 steps logged, the last checkpoint after 2; rerun the same command " \
           "with --resume to go on)" in shown
    resumed = codea1(tmp_path, *args, "--resume")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    log = rows(out)
    assert len(log) == 3 and log[:2] == first_rows[:2]
    assert len(list((out / "tensorboard").glob("events.out.tfevents.*"))) == 2  # one per attempt
    assert_mirrors(log, tensorboard_scalars(out))


def test_dry_run_prints_the_resolved_config_and_the_plan_and_writes_nothing(plugins, tiny_model, tmp_path):
    from codea1.harness.flows.train import load_config

    config = write_config(tmp_path, tiny_model)
    done = codea1(tmp_path, "train", "--config", str(config), "--out", "run", "--dry-run",
                  "--set", "trainer.k=4", "--set", 'train.log_to=["tensorboard"]')
    assert done.returncode == 0, done.stderr
    assert not (tmp_path / "run").exists()
    printed = done.stdout
    for line in ("#   trainer sft: 3 steps of 2 questions, seed 0, a checkpoint every step, evaluation every 3 steps",
                 "#   benchmark kodcode: 4 of 172 tasks",
                 "#   executor subprocess: 2 workers",
                 f"#   policy code: backend torch, model {tiny_model}, device auto, dtype float32",
                 "#   evaluation code: kodcode, first 2 tasks",
                 "#   step log mirrored to tensorboard (run/tensorboard)",
                 "#   out run: a new run"):
        assert line in printed, printed
    # all of it is TOML, and as a config it resolves to what the run would have used
    pasted = tmp_path / "pasted.toml"
    pasted.write_text(printed)
    assert tomllib.loads(printed)["trainer"]["k"] == 4
    original = load_config(plugins, str(config), ["trainer.k=4", 'train.log_to=["tensorboard"]'], "o")
    assert load_config(plugins, str(pasted), [], "o").settings == original.settings


def test_dry_run_refuses_what_a_run_refuses(mirrored):
    tmp = mirrored.parent
    config = str(tmp / "sft.toml")
    for out, extra, error in (
            ("run", [], "--out run holds a training run: pass --resume to continue it or --overwrite to start over"),
            ("run", ["--resume", "--set", "train.seed=1"], "holds a run this config changes: train.seed was 0, now 1."),
            ("new", ["--set", 'train.log_to=["tensorbord"]'],
             "[train] key 'log_to': unknown sink 'tensorbord'; did you mean 'tensorboard'?"),
            ("new", ["--set", 'benchmark.tasks=["nope"]'], "--tasks: 'nope' is not a task of kodcode"),
            ("new", ["--resume"], "--resume: --out new holds no training run")):
        done = codea1(tmp, "train", "--config", config, "--out", out, "--dry-run", *extra)
        assert done.returncode == 2 and done.stderr.startswith("codea1: error: ") and error in done.stderr, done.stderr
        assert len(done.stderr.strip().splitlines()) == 1
    assert not (tmp / "new").exists()
    resumed = codea1(tmp, "train", "--config", config, "--out", "run", "--dry-run", "--resume",
                     "--set", "train.steps=5")
    assert resumed.returncode == 0, resumed.stderr
    sinks = json.dumps(["tensorboard", "wandb"] if HAS_WANDB else ["tensorboard"])
    assert "#   out run: resumes after 3 of 5 steps (from checkpoints/step-000003)\n#   resume changes: train.steps " \
           f"was 3, now 5; train.log_to was {sinks}, now []\n" in resumed.stdout, resumed.stdout


@pytest.mark.parametrize("sink", ["tensorboard", "wandb"])
def test_a_sink_whose_package_cannot_be_imported_is_a_one_line_error(tiny_model, tmp_path, sink):
    """The real command in a process where the package cannot be imported (its entry in
    sys.modules is None, which makes every import of it fail): one line naming what to
    install, exit 2, before any model loads, nothing written."""
    config = write_config(tmp_path, tiny_model)
    argv = ["train", "--config", str(config), "--out", "run", "--set", f'train.log_to=["{sink}"]']
    script = (f"import sys; sys.modules[{sink!r}] = None\n"
              f"from codea1.harness.cli import main\nsys.exit(main({argv!r}))")
    done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 2, done.stderr[-2000:]
    assert done.stderr.strip().splitlines() == [
        f"codea1: error: {config}: [train] log_to: {sink!r} needs the {sink} package, which is not installed: "
        f"pip install 'codea1[watch]' -c constraints.txt"]
    assert not (tmp_path / "run").exists()
