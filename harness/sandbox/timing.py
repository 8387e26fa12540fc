"""The per-test wall-clock alarm in the child: a call timed under SIGALRM, and the exception
that ends it.

``prepare`` (harness.sandbox.child) installs ``on_alarm`` as the SIGALRM handler once, in the
zygote. ``timed`` arms the timer for one call; the timeout is a ``BaseException`` so that a
program's ``except Exception:`` cannot swallow it. The zygote keeps its own clock per test as
well, which a program that cancels its alarms cannot stop.

Only the standard library is imported here: it runs in the sandbox.
"""

from __future__ import annotations

import signal
import time


class TestTimeout(BaseException):
    """BaseException, so that `except Exception:` in the program cannot swallow it."""


_armed = False  # True while a timed call runs: an alarm outside one is a spent timer, ignored


def on_alarm(signum, frame):
    if _armed:
        raise TestTimeout()


def describe(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}"
    return text if len(text) <= 2000 else text[:2000] + "..."


def timed(limit: float, fn, *args):
    """Run fn under a wall-clock alarm; returns (value, seconds). The timer is not disarmed
    afterwards (one system call a test less: HumanEval+ runs 1,000 tests a sample): should
    it fire after fn returned, ``on_alarm`` ignores it, and the next call arms it anew."""
    global _armed
    _SETITIMER(_ITIMER_REAL, limit if limit > 0.001 else 0.001)
    _armed = True
    start = _CLOCK()
    try:
        return fn(*args), _CLOCK() - start
    finally:
        _armed = False


_SETITIMER, _ITIMER_REAL, _CLOCK = signal.setitimer, signal.ITIMER_REAL, time.perf_counter
