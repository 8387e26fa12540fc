"""The child's per-test time limit (harness.sandbox.timing), in this process."""

from __future__ import annotations

import os
import signal
import time

import pytest

from codea1.harness.sandbox import timing


@pytest.fixture
def alarm():
    previous = signal.signal(signal.SIGALRM, timing.on_alarm)
    assert timing.open_clock(), "this kernel shows no run delay in /proc/self/schedstat"
    counts = dict(timing.counts)
    yield timing.counts
    signal.setitimer(signal.ITIMER_REAL, 0)
    signal.signal(signal.SIGALRM, previous)
    os.close(timing._fd)
    timing._fd = -1
    timing.counts.update(counts)


def test_a_spent_alarm_is_ignored_and_a_call_past_its_limit_ends(alarm):
    """A test's timer is left running after its call returns (one system call a test less);
    should it fire between tests, nothing happens. Sleeping counts as the program's own time:
    a call that sleeps past its limit times out."""
    assert timing.timed(60.0, lambda: 7)[0] == 7
    signal.raise_signal(signal.SIGALRM)  # the first call's timer, firing between tests
    with pytest.raises(timing.TestTimeout) as ended:
        timing.timed(0.05, time.sleep, 60)
    assert timing.timeout_message(0.05, ended.value) == "exceeded 0.05s"
    assert timing.timed(60.0, lambda: 8)[0] == 8  # the next call re-arms its own timer


def test_an_alarm_before_the_limit_is_deferred_not_a_timeout(alarm):
    """An alarm that finds the call's own time under its limit (the process was kept waiting
    for a CPU; here, a signal sent early) sets the timer again for what is left, and counts
    the test once as deferred; the call then ends as it would have."""
    before = alarm["deferred"]
    value, took = timing.timed(60.0, lambda: (signal.raise_signal(signal.SIGALRM),
                                              signal.raise_signal(signal.SIGALRM), 9)[-1])
    assert value == 9 and took < 60.0
    assert alarm["deferred"] == before + 1
    assert 0 < signal.getitimer(signal.ITIMER_REAL)[0] <= 60.0  # set again, for the rest of the limit


def test_the_wall_cap_ends_a_call_whose_own_time_is_under_its_limit(alarm, monkeypatch):
    """Whatever the run delay says, a call ends at WALL_CAP times its limit on the wall
    clock; such a timeout is counted apart and says so."""
    # Stands in for a kernel that reports a process kept waiting the whole time: a run delay
    # that grows with the wall clock, so that the call is never charged any own time.
    monkeypatch.setattr(timing, "run_delay", lambda fd: 0.0 if timing._armed is False else time.perf_counter())
    monkeypatch.setattr(timing, "WALL_CAP", 3.0)
    before = alarm["capped"]
    with pytest.raises(timing.TestTimeout) as ended:
        timing.timed(0.05, time.sleep, 60)
    assert alarm["capped"] == before + 1
    assert timing.timeout_message(0.05, ended.value).startswith("exceeded 0.05s (cut at 3x the limit on the wall clock")


def test_a_call_s_own_time_leaves_out_its_waiting_for_a_cpu(alarm):
    """The time a call reports is its wall time less its process's run delay over the call
    (read from the kernel), never more than the wall time."""
    def spin():
        end = time.thread_time() + 0.05
        while time.thread_time() < end:
            pass
    start = time.perf_counter()
    _, took = timing.timed(60.0, spin)
    assert 0.04 < took <= time.perf_counter() - start
