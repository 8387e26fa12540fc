"""The child's per-test alarm (harness.sandbox.timing), in this process."""

from __future__ import annotations

import signal
import time

import pytest

from codea1.harness.sandbox import timing


def test_a_spent_alarm_is_ignored_and_a_live_one_ends_the_call():
    """A test's timer is left running after its call returns (one system call a test less);
    should it fire between tests, nothing happens; inside a timed call it is a timeout."""
    previous = signal.signal(signal.SIGALRM, timing.on_alarm)
    try:
        assert timing.timed(60.0, lambda: 7)[0] == 7
        signal.raise_signal(signal.SIGALRM)  # the first call's timer, firing between tests
        with pytest.raises(timing.TestTimeout):
            timing.timed(60.0, signal.raise_signal, signal.SIGALRM)
        with pytest.raises(timing.TestTimeout):
            timing.timed(0.05, time.sleep, 60)
        assert timing.timed(60.0, lambda: 8)[0] == 8  # the next call re-arms its own timer
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
