"""`codea1 train`'s progress bar: within 80 columns, with the run's time left before any
step has ended (a new run's first step: the steps after it times its seconds so far, "+";
a resumed run: the earlier steps' mean), then tqdm's own estimate from the rate. Through
real runs: tests/trainers/test_train_runs.py."""

from __future__ import annotations

import re

import pytest

from codea1.harness.flows.train import mean_step_seconds, seconds_text, step_bar, time_left


def bar_lines(err: str) -> list[str]:
    lines = [re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "", line) for line in err.replace("\r", "\n").splitlines()]
    return [line.rstrip() for line in lines if line.startswith("train:")]


@pytest.mark.parametrize("steps_after, in_step, earlier, shown", [
    (20, 30.0, None, "10m+"),  # 20 steps after this one, 30 s into it
    (3, 12.4, None, "37s+"),
    (20, 0.4, None, ""),  # nothing measured yet
    (0, 30.0, None, ""),  # a new run's only step: nothing after it to estimate
    (7, 5.0, 45.0, "~6m"),  # resumed: 40 s left of this step, 7 more of 45 s
    (0, 50.0, 45.0, "~0s"),  # past the mean already
    (100, 0.0, 200.0, "~5.6h"),
])
def test_time_left_before_any_step_of_the_process_has_ended(steps_after, in_step, earlier, shown):
    assert time_left(steps_after, in_step, earlier) == shown


def test_seconds_text_and_the_mean_of_the_step_log():
    assert [seconds_text(s) for s in (0.2, 89, 90, 5399, 5400, 36000)] == ["0s", "89s", "2m", "90m", "1.5h", "10.0h"]
    rows = [{"step": 1, "timing": {"generate_s": 20.0, "update_s": 10.0}}, {"step": 2},
            {"step": 3, "timing": {"generate_s": 40.0, "update_s": 20.0}}]
    assert mean_step_seconds(rows) == 45.0
    assert mean_step_seconds([{"step": 1}]) is None and mean_step_seconds([]) is None


def test_a_new_runs_first_step_estimates_then_tqdm_takes_over(capsys):
    with step_bar(21, 0, True, ("code",)) as bar:
        bar.step_start -= 30  # this step began 30 s ago
        bar.show_phase("update")
        bar.show_figures({"step": 1, "reward_code": 0.5, "code_loss": 1.25})
        bar.update(1)
        bar.show_phase("generate code")
    lines = bar_lines(capsys.readouterr().err)
    first = [line for line in lines if "step 1: update" in line]
    assert first and re.search(r"\| 0/21 \[00:\d\d, step 1: update, 30s in, 10m\+ left\]$", first[-1]), first
    second = [line for line in lines if "step 2: generate code" in line]
    # tqdm's own estimate from its rate (its clock, not the step's), no "+" guess
    assert second and re.search(r"1/21 \[00:\d\d<\d\d:\d\d, +[\d.]+(step/s|s/step), step 2: generate code, 0s in\]$",
                                second[-1]), second
    assert max(map(len, lines)) <= 80


def test_a_resumed_run_estimates_from_its_earlier_steps(capsys):
    done = [{"step": s, "timing": {"generate_s": 30.0, "update_s": 15.0}} for s in (1, 2)]
    with step_bar(10, 2, True, ("code",), done) as bar:
        bar.show_phase("generate code")
    lines = [line for line in bar_lines(capsys.readouterr().err) if "step 3" in line]
    # 45 s a step: this one and 7 after it
    assert lines and lines[-1].endswith("| 2/10 [00:00, step 3: generate code, 0s in, ~6m left]"), lines
    assert max(map(len, lines)) <= 80


def test_no_bar_when_progress_is_off(capsys):
    with step_bar(5, 0, False) as bar:
        bar.show_phase("update")
        bar.update(1)
    assert capsys.readouterr().err == ""
