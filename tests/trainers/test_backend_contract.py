"""What the train flow owes every policy backend, through the real ``codea1 train``: the
updates a backend cannot take are refused with the config (before any model loads, and by
--dry-run), ``info`` reaches environment.json, and ``close`` runs once whether the run ends
or fails. The backend is a plugin file written here: it answers every prompt with one fixed
program, so only the flow's side is under test."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from conftest import codea1_command

BACKEND = '''
import json
from dataclasses import dataclass
from pathlib import Path

from codea1.api import PolicyBackend, PolicySample, hookimpl


@dataclass
class ScriptedOptions:
    log: str = ""  # a file each call is appended to
    train_batch: int = 0  # a train batch fixed at start (0: any)
    fail_at_update: int = 0  # raise in this update (0: never)


class ScriptedBackend(PolicyBackend):
    name = "scripted"
    Options = ScriptedOptions

    def __init__(self, options, *, seed=0):
        super().__init__(options, seed=seed)
        self.updates = 0
        self.record("open")

    @classmethod
    def update_size_error(cls, options, size):
        if options.train_batch and size != options.train_batch:
            return f"its train batch is fixed at {options.train_batch} samples, not {size}"
        return ""

    def record(self, event):
        with open(self.options.log, "a") as f:
            f.write(event + "\\n")

    def generate(self, prompts, n, sampling, seed):
        return [[PolicySample("```python\\ndef answer():\\n    return 0\\n```", [1], [0.0]) for _ in range(n)]
                for _ in prompts]

    def update(self, samples, rewards, advantages):
        self.updates += 1
        self.record(f"update {len(samples)}")
        if self.updates == self.options.fail_at_update:
            raise RuntimeError("the engine died")
        return {"loss": 0.0}

    def save(self, directory):
        Path(directory).mkdir(parents=True, exist_ok=True)

    def load(self, directory):
        pass

    def export(self, directory):
        Path(directory).mkdir(parents=True, exist_ok=True)

    def info(self):
        return {"backend": self.name, "engine": "scripted v1"}

    def close(self):
        self.record("close")


@hookimpl
def codea1_register_backends(registry):
    registry.add(ScriptedBackend)
'''


def setup(tmp_path: Path, **backend) -> tuple[Path, Path]:
    (tmp_path / "scripted.py").write_text(BACKEND)
    options = "".join(f"{k} = {json.dumps(v)}\n" for k, v in backend.items())
    (tmp_path / "run.toml").write_text(f"""
[train]
trainer = "golden-tests"
steps = 2
batch_size = 2
[benchmark]
name = "demo"
[executor]
workers = 2
[trainer]
m = 3
[policies.code]
backend = "scripted"
log = "{tmp_path / 'calls.log'}"
{options}""")
    return tmp_path / "scripted.py", tmp_path / "calls.log"


def train(tmp_path: Path, plugin: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([*codea1_command(), "--plugin", str(plugin), "train", "--config", "run.toml", "--out", "run",
                           "--no-progress", *extra], cwd=tmp_path, capture_output=True, text=True, timeout=900)


def test_a_run_reports_info_and_closes_its_policy_once(tmp_path):
    plugin, calls = setup(tmp_path, train_batch=6)  # 2 questions x 3 programs: what golden-tests gives it
    done = train(tmp_path, plugin)
    assert done.returncode == 0, done.stderr[-2000:]
    assert calls.read_text().split("\n")[:-1] == ["open", "update 6", "update 6", "close"]
    environment = json.loads((tmp_path / "run" / "environment.json").read_text())
    assert environment["policies"] == {"code": {"backend": "scripted", "engine": "scripted v1"}}


def test_a_run_that_fails_still_closes_its_policy(tmp_path):
    plugin, calls = setup(tmp_path, fail_at_update=2)
    done = train(tmp_path, plugin)
    assert done.returncode != 0 and "the engine died" in done.stderr
    assert calls.read_text().split("\n")[:-1] == ["open", "update 6", "update 6", "close"]
    assert len((tmp_path / "run" / "steps.jsonl").read_text().splitlines()) == 1  # step 1 kept


@pytest.mark.parametrize("dry_run", [False, True])
def test_an_update_size_the_backend_cannot_take_is_refused_with_the_config(tmp_path, dry_run):
    plugin, calls = setup(tmp_path, train_batch=8)
    done = train(tmp_path, plugin, *(["--dry-run"] if dry_run else []))
    assert done.returncode == 2 and not calls.exists()  # refused before a policy opened
    assert done.stderr.strip().splitlines() == [
        f"codea1: error: run.toml: [policies.code] backend 'scripted': its train batch is fixed at 8 samples, "
        f"not 6 (trainer 'golden-tests' updates the code policy with 6 samples a step: batch_size 2 and its "
        f"[trainer] options)"]


def test_each_trainer_states_its_update_sizes(plugins):
    def sizes(trainer: str, batch_size: int, **options):
        entry = plugins.trainers.get(trainer)
        return entry.cls.update_sizes(entry.cls.Options(**options), batch_size)

    # code-a1: B x M programs; B x l x N suites, TopVar's l = M / N by default (l x N = M)
    assert sizes("code-a1", 4, m=4, n=2) == {"code": 16, "tests": 16}
    assert sizes("code-a1", 256, m=8, n=8) == {"code": 2048, "tests": 2048}  # the paper's step
    assert sizes("code-a1", 2, m=2, n=4, topvar=3) == {"code": 4, "tests": 16}  # at most M groups to keep
    assert sizes("self-play", 4, m=4, n=2) == {"code": 24}  # programs and suites, one policy
    assert sizes("golden-tests", 4, m=8) == {"code": 32}
    assert sizes("sft", 4) == {}  # supervised: the pairs a step has vary
