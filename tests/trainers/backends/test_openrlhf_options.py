"""The openrlhf backend's side that needs no OpenRLHF (the default environment): the shipped
configs load, DeepSpeed's fixed train batch is checked against the trainer's update sizes
when the config loads (and by --dry-run), bad options are refused by name, and where
OpenRLHF is not installed the backend says what to install. The stack itself runs in
``tox -e openrlhf`` (test_openrlhf_backend.py)."""

from __future__ import annotations

import importlib.util
import subprocess
import tomllib
from pathlib import Path

import pytest
from conftest import ROOT, codea1_command

from codea1.harness.flows.train import toml_text
from codea1.harness.training import BackendUnavailable

CONFIGS = ROOT / "trainers" / "configs"


def train(cwd: Path, config: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([*codea1_command(), "train", "--config", str(config), "--out", "run", "--no-progress",
                           *extra], cwd=cwd, capture_output=True, text=True, timeout=300)


def tiny_config(tmp_path: Path, **tests_options) -> Path:
    """The CPU tiny config with options of [policies.tests] changed (None: removed)."""
    settings = tomllib.loads((CONFIGS / "openrlhf-cpu-tiny.toml").read_text())
    for key, value in tests_options.items():
        settings["policies"]["tests"].pop(key, None)
        if value is not None:
            settings["policies"]["tests"][key] = value
    path = tmp_path / "run.toml"
    path.write_text(toml_text(settings))
    return path


def test_the_cpu_config_gives_each_stack_an_update_deepspeed_can_take(tiny_model, tmp_path):
    # (every shipped config, the paper's openrlhf ones too, loads: test_train.test_every_shipped_config_loads)
    settings = tomllib.loads((CONFIGS / "openrlhf-cpu-tiny.toml").read_text())
    for policy in settings["policies"].values():  # its model, runs/tiny-model, is made first: --dry-run checks it
        policy["model"] = str(tiny_model)
    (tmp_path / "run.toml").write_text(toml_text(settings))
    done = train(ROOT, tmp_path / "run.toml", "--dry-run")
    assert done.returncode == 0, done.stderr
    assert done.stdout.count('backend = "openrlhf"') == 2  # both policies, one stack each
    missing = train(ROOT, CONFIGS / "openrlhf-cpu-tiny.toml", "--dry-run", "--set", "policies.code.model=./no-model")
    assert missing.returncode == 2 and missing.stderr.strip().splitlines() == [
        f"codea1: error: {CONFIGS / 'openrlhf-cpu-tiny.toml'}: [policies.code] key 'model': ./no-model: no such "
        f"checkpoint directory"]


def test_an_update_that_is_not_a_multiple_of_the_train_batch_is_refused(tmp_path):
    done = train(ROOT, tiny_config(tmp_path, mini_batch_size=3), "--dry-run")
    assert done.returncode == 2
    assert ("[policies.tests] backend 'openrlhf': each update gets 4 responses, not a multiple of mini_batch_size 3"
            in done.stderr)


def test_an_unset_train_batch_is_refused_with_the_value_to_use(tmp_path):
    done = train(ROOT, tiny_config(tmp_path, mini_batch_size=None), "--dry-run")
    assert done.returncode == 2
    assert "fixes DeepSpeed's train batch when it starts" in done.stderr and "e.g. mini_batch_size = 4" in done.stderr


@pytest.mark.parametrize("option, message", [
    ({"gpu_share": 0.1}, "option 'gpu_share' must be in (0.2, 1]"),
    ({"param_dtype": "fp32"}, "option 'param_dtype' must be bf16 or fp16"),
    ({"device": "tpu"}, "option 'device' must be cuda or cpu"),
    ({"micro_batch_size": 4, "mini_batch_size": 2},
     "mini_batch_size 2 is not a multiple of micro_batch_size x num_gpus"),
])
def test_bad_options_are_refused_by_name(tmp_path, option, message):
    done = train(ROOT, tiny_config(tmp_path, **option), "--dry-run")
    assert done.returncode == 2 and message in done.stderr and "[policies.tests]" in done.stderr


@pytest.mark.skipif(importlib.util.find_spec("openrlhf") is not None, reason="OpenRLHF is installed here")
def test_without_openrlhf_the_backend_says_what_to_install(plugins, tiny_model):
    with pytest.raises(BackendUnavailable, match=r"pip install 'codea1\[openrlhf\]'.*install_openrlhf_cpu\.sh"):
        plugins.backends.create("openrlhf", {"model": str(tiny_model), "device": "cpu"}, seed=0)
