"""The training contract of the core: phases timed into the step's log, declared step-log
columns read from rows, per-step files found past a checkpoint, a run's declarations looked
up from its config.json, and the policies' updates run together where their backends allow."""

from __future__ import annotations

import threading
from pathlib import Path

from codea1.harness.training import LogColumn, PolicyBackend, StepFiles, TrainContext, headline, run_columns


def test_phases_show_on_the_bar_and_add_up_into_the_step_timing():
    shown = []
    ctx = TrainContext(plugins=None, run=None, policies={}, sampling={}, seed=0, out=Path("."),
                       show_phase=shown.append)
    with ctx.phase("generate", "generate_s"):
        pass
    with ctx.phase("rewards"):  # shown, not timed
        pass
    try:
        with ctx.phase("generate", "generate_s"):  # a phase that raises still counts its time
            raise RuntimeError
    except RuntimeError:
        pass
    assert shown == ["generate", "rewards", "generate"]
    timing = ctx.step_timing()
    assert list(timing) == ["generate_s"] and timing["generate_s"] >= 0.0
    assert ctx.step_timing() == {}  # each step starts afresh


def test_a_column_reads_nested_keys_and_headline_keeps_numbers():
    size = LogColumn("mistake_book.size", "book", fraction=False)
    assert size.column == "mistake_book_size" and LogColumn("code_loss", "loss", name="loss").column == "loss"
    row = {"reward_code": 0.25, "mistake_book": {"size": 3}, "flag": True}
    assert size.value(row) == 3 and size.value({"mistake_book": 4}) is None and size.value({}) is None
    columns = [LogColumn("reward_code", "R_C"), size, LogColumn("flag", "f"), LogColumn("gone", "g"),
               LogColumn("mistake_book.added", "added", table=False)]
    assert headline(columns, row) == {"reward_code": 0.25, "mistake_book.size": 3}


def test_step_files_after_a_checkpoint(tmp_path):
    files = StepFiles("mistake_book")
    for n in (1, 2, 3, 10):
        files.path(tmp_path, n).parent.mkdir(exist_ok=True)
        files.path(tmp_path, n).write_text("{}")
    (tmp_path / "mistake_book" / "step-000004.json.123.tmp").write_text("")  # not a step file
    assert files.path(tmp_path, 2).name == "step-000002.json"
    assert sorted(p.name for p in files.after(tmp_path, 2)) == ["step-000003.json", "step-000010.json"]
    assert StepFiles("nowhere").after(tmp_path, 0) == []


def test_a_runs_declarations_come_from_its_trainer(plugins):
    sft = run_columns(plugins, {"train": {"trainer": "sft"}, "trainer": {"role": "code"}})
    assert [c.key for c in sft.columns] == ["code_loss"] and "role" in sft.ablation_keys and not sft.warning
    code_a1 = run_columns(plugins, {"train": {"trainer": "code-a1"}, "trainer": {"alpha": 0.25}})
    assert "reward_code" in [c.key for c in code_a1.columns] and "alpha" in code_a1.ablation_keys
    old = run_columns(plugins, {"train": {"trainer": "code-a1"}, "trainer": {"retired_option": 1}})
    assert old.columns == code_a1.columns  # options of another version: the trainer's default columns
    missing = run_columns(plugins, {"train": {"trainer": "rft"}})
    assert missing.columns == () and "trainer 'rft' is not installed" in missing.warning


class Recorder(PolicyBackend):
    """A policy whose update waits at a barrier: two updates only get past it together."""

    name = "recorder"

    def __init__(self, barrier: threading.Barrier, log: list, concurrent: bool):
        super().__init__()
        self.barrier, self.log, self.concurrent_updates = barrier, log, concurrent

    def update(self, samples, rewards, advantages):
        self.log.append(("start", samples))
        if self.concurrent_updates:
            self.barrier.wait()  # raises BrokenBarrierError when the other update never comes
        self.log.append(("end", samples))
        return {"samples": len(samples)}


def context_with(policies: dict) -> TrainContext:
    return TrainContext(plugins=None, run=None, policies=policies, sampling={}, seed=0, out=Path("."))


def test_updates_run_together_where_every_backend_allows_it():
    log: list = []
    barrier = threading.Barrier(2, timeout=600)
    ctx = context_with({"code": Recorder(barrier, log, True), "tests": Recorder(barrier, log, True)})
    stats = ctx.update({"code": (["c1", "c2"], [1.0, 0.0], [1.0, -1.0]), "tests": (["t"], [0.5], [0.0])})
    assert stats == {"code": {"samples": 2}, "tests": {"samples": 1}}
    assert [event for event, _ in log[:2]] == ["start", "start"]  # both were inside update at once


def test_updates_run_in_order_unless_every_backend_allows_more():
    log: list = []
    barrier = threading.Barrier(2, timeout=600)
    ctx = context_with({"code": Recorder(barrier, log, False), "tests": Recorder(barrier, log, True)})
    ctx.policies["tests"].concurrent_updates = False
    stats = ctx.update({"code": (["c"], [1.0], [0.0]), "tests": (["t"], [0.5], [0.0])})
    assert log == [("start", ["c"]), ("end", ["c"]), ("start", ["t"]), ("end", ["t"])]
    assert list(stats) == ["code", "tests"]


def test_the_backend_base_declares_info_close_and_no_size_limit():
    backend = PolicyBackend()
    assert backend.info() == {"backend": ""} and backend.close() is None
    assert PolicyBackend.update_size_error(None, 7) == "" and not PolicyBackend.concurrent_updates
