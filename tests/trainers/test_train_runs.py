"""Training runs, through real `codea1` processes with the tiny local
model: `--dry-run` checks every policy's model (a directory that is there, a hub name in the
local cache); a hub name the hub cannot give fails at once, after one request; a resume that
changes what the run is, or asks for fewer steps than are done, is refused naming every key;
one that extends `steps` or changes `log_to` runs, says "resumed at step N", and is recorded
in config.json, so `codea1 show` reads "steps: N of M"; the progress bar shows the step's
reward and loss, and a resumed run's time left from its earlier steps.

The hub is a local socket that keeps each request's first line and answers none (HF_ENDPOINT
points the client there): "no network" on any machine, and the requests it would have had."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import threading
from contextlib import contextmanager
from pathlib import Path

import pytest
from conftest import codea1_command, shared_file

pytest.importorskip("torch", reason="torch is not installed (pip install 'codea1[hf]')")
pytestmark = [pytest.mark.data, pytest.mark.xdist_group("train")]

TASKS = ["Prefill_00000020_I", "Prefill_00000049_I"]
HUB_NAME = "codea1-tests/tiny"


def write_config(tmp: Path, model: str, name: str = "sft.toml", trainer: str = "sft", options: str = 'role = "code"',
                 steps: int = 2) -> Path:
    """A run of the tiny code policy on two KodCode questions (sft: a warm start)."""
    data = json.dumps(str(shared_file("kodcode", "KodCode_prefill_200_1741214325.json")))
    path = tmp / name
    path.write_text(f"""
[train]
trainer = "{trainer}"
steps = {steps}
batch_size = 2

[benchmark]
name = "kodcode"
data = {data}
tasks = {json.dumps(TASKS)}

[executor]
workers = 2

[trainer]
{options}

[policies.code]
model = {json.dumps(model)}
lr = 4e-3
max_tokens = 16
""")
    return path


def codea1(tmp: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    environment = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")}
    return subprocess.run([*codea1_command(), *args], cwd=tmp, capture_output=True, text=True, timeout=600,
                          env={**environment, **(env or {})})


def one_line_error(done: subprocess.CompletedProcess, says: str) -> str:
    assert done.returncode == 2, (done.returncode, done.stderr[-3000:])
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("codea1: error: ") and says in lines[0], done.stderr[-3000:]
    return lines[0]


def hub_cache(tmp: Path, model: Path) -> Path:
    """A Hugging Face cache holding ``model`` as hub name HUB_NAME at its main revision, in
    the layout huggingface_hub writes (refs/main names the snapshot)."""
    root = tmp / "hub-cache"
    repo = root / ("models--" + HUB_NAME.replace("/", "--"))
    commit = "0" * 40
    shutil.copytree(model, repo / "snapshots" / commit)
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(commit)
    return root


@contextmanager
def silent_hub():
    """HF_ENDPOINT for a hub that cannot be reached: a local socket that reads each request's
    first line ("GET /api/models/NAME HTTP/1.1"), keeps it and closes the connection
    unanswered. Yields (endpoint, requests)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    server.settimeout(0.1)
    requests, stop = [], threading.Event()

    def serve():
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            with conn:
                conn.settimeout(5)
                try:
                    requests.append(conn.recv(4096).decode(errors="replace").split("\r\n")[0])
                except OSError:
                    requests.append("")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.getsockname()[1]}", requests
    finally:
        stop.set()
        thread.join()
        server.close()


def rows(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "steps.jsonl").read_text().splitlines()]


def screen_lines(stderr: str) -> list[str]:
    """What a terminal showed of the progress bars, a line per redraw, escapes removed."""
    return [re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "", line) for line in stderr.replace("\r", "\n").splitlines()]


@pytest.fixture(scope="module")
def done_run(tiny_model, tmp_path_factory) -> Path:
    """A complete 2-step sft run (its 2 checkpoints kept)."""
    tmp = tmp_path_factory.mktemp("runs")
    first = codea1(tmp, "train", "--config", str(write_config(tmp, str(tiny_model))), "--out", "run", "--no-progress")
    assert first.returncode == 0, first.stderr[-3000:]
    return tmp / "run"


# -- the model, in --dry-run and in a run ---------------------------------------------------

def test_dry_run_refuses_a_model_directory_that_is_not_there(tmp_path):
    missing = tmp_path / "no-checkpoint"
    config = write_config(tmp_path, str(missing))
    done = codea1(tmp_path, "train", "--config", str(config), "--out", "run", "--dry-run")
    assert one_line_error(done, "") == (f"codea1: error: {config}: [policies.code] key 'model': {missing}: "
                                        f"no such checkpoint directory")
    assert not (tmp_path / "run").exists()


def test_dry_run_passes_a_hub_name_only_from_the_local_cache(tiny_model, tmp_path):
    config = write_config(tmp_path, HUB_NAME)
    empty = codea1(tmp_path, "train", "--config", str(config), "--out", "run", "--dry-run",
                   env={"HF_HUB_CACHE": str(tmp_path / "empty-cache")})
    one_line_error(empty, f"{config}: [policies.code] key 'model': {HUB_NAME}: not a checkpoint directory here, "
                          f"nor a hub name in this machine's Hugging Face cache ({tmp_path / 'empty-cache'}): "
                          f"download it first (hf download {HUB_NAME})")
    cached = codea1(tmp_path, "train", "--config", str(config), "--out", "run", "--dry-run",
                    env={"HF_HUB_CACHE": str(hub_cache(tmp_path, tiny_model))})
    assert cached.returncode == 0, cached.stderr
    assert f"#   policy code: backend torch, model {HUB_NAME}, device auto" in cached.stdout
    assert not (tmp_path / "run").exists()


def test_a_hub_name_the_hub_cannot_give_fails_after_one_request(tmp_path):
    """Not cached, the hub silent: the model asked about once, no request repeated, one
    line, nothing written. With HF_HUB_OFFLINE set: no request at all. (huggingface_hub may
    make a request of its own, once: /api/agent-harnesses.)"""
    config = write_config(tmp_path, HUB_NAME)
    cache = str(tmp_path / "empty-cache")
    with silent_hub() as (endpoint, requests):
        done = codea1(tmp_path, "train", "--config", str(config), "--out", "run", "--no-progress",
                      env={"HF_HUB_CACHE": cache, "HF_ENDPOINT": endpoint})
        one_line_error(done, f"[policies] model {HUB_NAME}: not a checkpoint directory here, nor in this machine's "
                             f"Hugging Face cache, nor a model this machine can download (")
        assert len([r for r in requests if HUB_NAME in r]) == 1, requests
        assert len(set(requests)) == len(requests) and "Retry" not in done.stderr, requests
        asked = len(requests)
        offline = codea1(tmp_path, "train", "--config", str(config), "--out", "run", "--no-progress",
                         env={"HF_HUB_CACHE": cache, "HF_ENDPOINT": endpoint, "HF_HUB_OFFLINE": "1"})
        one_line_error(offline, "nor a model this machine can download (HF_HUB_OFFLINE is set)")
        assert len(requests) == asked
    assert not (tmp_path / "run").exists()


def test_a_cached_hub_name_trains_without_the_hub_and_the_bar_shows_reward_and_loss(tiny_model, tmp_path):
    """golden-tests from the cache's copy of a hub name, the hub silent: no request made; the
    progress bar's postfix carries the last step's reward and the code policy's loss."""
    config = write_config(tmp_path, HUB_NAME, "golden.toml", "golden-tests", "m = 2", steps=1)
    with silent_hub() as (endpoint, requests):
        done = codea1(tmp_path, "train", "--config", str(config), "--out", "run",
                      env={"HF_HUB_CACHE": str(hub_cache(tmp_path, tiny_model)), "HF_ENDPOINT": endpoint})
    assert done.returncode == 0, done.stderr[-3000:]
    assert [r for r in requests if HUB_NAME in r] == [], requests
    policy = json.loads((tmp_path / "run" / "environment.json").read_text())["policies"]["code"]
    assert policy["model"] == HUB_NAME and policy["loaded_from"].endswith(f"snapshots/{'0' * 40}")
    row = rows(tmp_path / "run")[-1]
    shown = screen_lines(done.stderr)
    figures = f"  last step (1): reward_code {row['reward_code']:.3g}, code_loss {row['code_loss']:.3g}"
    assert figures in shown, shown[-6:]
    bars = [line for line in shown if line.startswith("train:")]
    assert any(re.search(r"step 1: checkpoint, \d+s in\]$", line) for line in bars), bars[-3:]
    assert max(len(line) for line in bars + [figures]) <= 80  # an 80-column terminal: no line wraps
    assert not [line for line in done.stderr.replace("\r", "\n").splitlines() if "Loading weights" in line]


# -- resume ---------------------------------------------------------------------------------

def test_a_resume_that_changes_the_run_is_refused_naming_every_key(done_run):
    tmp, recorded = done_run.parent, (done_run / "config.json").read_text()
    done = codea1(tmp, "train", "--config", "sft.toml", "--out", "run", "--resume", "--no-progress",
                  "--set", "trainer.k=4", "--set", "policies.code.lr=0.1", "--set", "train.steps=3")
    line = one_line_error(done, "--resume: --out run holds a run this config changes: trainer.k was 8, now 4; "
                                "policies.code.lr was 0.004, now 0.1. A resume may change train.steps (not below "
                                "the steps done), train.checkpoint_every, train.eval_every, train.log_to and "
                                "[[evaluation]]: pass --overwrite to start over, or use another --out")
    assert "identity" not in line and "train.steps" not in line.split(". A resume")[0]
    dry = codea1(tmp, "train", "--config", "sft.toml", "--out", "run", "--resume", "--dry-run",
                 "--set", "train.seed=1")
    one_line_error(dry, "holds a run this config changes: train.seed was 0, now 1.")
    assert (done_run / "config.json").read_text() == recorded


def test_a_resume_below_the_steps_done_is_refused(done_run):
    tmp, recorded = done_run.parent, (done_run / "config.json").read_text()
    done = codea1(tmp, "train", "--config", "sft.toml", "--out", "run", "--resume", "--no-progress",
                  "--set", "train.steps=1")
    one_line_error(done, "--resume: --out run holds a run this config changes: train.steps 1 is below the 2 "
                         "steps done (checkpoints/step-000002). A resume may change")
    assert (done_run / "config.json").read_text() == recorded
    shown = codea1(tmp, "show", "run")
    assert "steps: 2 of 2\n" in shown.stdout and "resumed" not in shown.stdout


def test_a_resume_that_extends_steps_and_changes_log_to_runs_and_is_recorded(done_run, tmp_path):
    pytest.importorskip("tensorboard", reason="tensorboard is not installed (pip install 'codea1[watch]')")
    shutil.copytree(done_run, tmp_path / "run")
    shutil.copy(done_run.parent / "sft.toml", tmp_path)
    args = ["train", "--config", "sft.toml", "--out", "run", "--resume", "--set", "train.steps=3",
            "--set", 'train.log_to=["tensorboard"]']
    changes = 'train.steps was 2, now 3; train.log_to was [], now ["tensorboard"]'
    extended = codea1(tmp_path, *args)
    assert extended.returncode == 0, extended.stderr[-3000:]
    assert f"resumed at step 2 of 3 ({changes})" in extended.stderr.splitlines()
    # before its first step ends, the bar's time left comes from the steps done before
    bars = [line.rstrip() for line in screen_lines(extended.stderr) if line.startswith("train:")]
    assert any(re.search(r"2/3 \[00:\d\d, step 3: update, \d+s in, ~\d+s left\]$", line) for line in bars), bars
    assert max(map(len, bars)) <= 80
    assert [r["step"] for r in rows(tmp_path / "run")] == [1, 2, 3]
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    assert config["train"]["steps"] == 3 and config["train"]["log_to"] == ["tensorboard"]
    assert config["resumes"] == [{"at_step": 2, "changed": {"train.steps": {"was": 2, "now": 3},
                                                            "train.log_to": {"was": [], "now": ["tensorboard"]}}}]
    again = codea1(tmp_path, *args[:-2])  # no step left to run; the step log no longer mirrored
    back = 'train.log_to was ["tensorboard"], now []'
    assert again.returncode == 0 and f"resumed at step 3 of 3 ({back})" in again.stderr.splitlines(), again.stderr
    assert [r["at_step"] for r in json.loads((tmp_path / "run" / "config.json").read_text())["resumes"]] == [2, 3]
    shown = codea1(tmp_path, "show", "run").stdout
    assert f"steps: 3 of 3\nresumed 2 times, at step 2, 3\n  at step 2: {changes}\n  at step 3: {back}\n" in shown, \
        shown
