"""The per-test time limit in the child: a call timed under SIGALRM, the exception that ends
it, and the clock that keeps a busy machine out of the verdict.

A test's time is its *own time*: the wall-clock time of the call less the time its process
spent runnable but waiting for a CPU (the kernel's run delay, /proc/self/schedstat). On a
quiet machine the two are the same; with other processes competing for the cores, the wall
clock grows and the own time does not, so a limit judged on own time gives the verdict the
program would have had alone (computing and sleeping both count; waiting for a CPU does not).

The rule, per test (``timed``): the alarm is set at the limit on the wall clock; when it fires
and the own time has reached the limit too, the call times out; when it has not, the process
was kept waiting, and the alarm is set again for what is left (a *deferred* alarm). A test
whose wall clock reaches ``WALL_CAP`` times its limit times out whatever its own time (a
*capped* timeout: load may have decided it; counted apart). The run delay is read when a call
starts, when its alarm fires, and when it ends after more than ``SHORT_CALL`` (one read a test
for the many that end sooner, about 4 microseconds). Where it cannot be read, own time is wall
time (the wall-clock rule of evalplus and bigcodebench).

The timeout is a ``BaseException`` so that a program's ``except Exception:`` cannot swallow
it. The zygote keeps its own clock per test as well, by the same rule, from outside the
process (``harness.sandbox.zygote.TestClock``): a program that cancels its alarms, or rewrites
this module's state, is stopped there.

Only the standard library is imported here: it runs in the sandbox.
"""

from __future__ import annotations

import os
import signal
import time

WALL_CAP = 10.0  # x the limit: on the wall clock, a test ends here whatever its own time
SHORT_CALL = 0.001  # seconds: a call this short has its wall time as its own time (one read less)
SCHEDSTAT = "/proc/self/schedstat"  # "on-CPU ns, run-delay ns, timeslices" of the main thread


class TestTimeout(BaseException):
    """BaseException, so that `except Exception:` in the program cannot swallow it."""


_armed = False  # True while a timed call runs: an alarm outside one is a spent timer, ignored
_limit = 0.0
_start = 0.0  # the call's start on the wall clock
_delay0: float | None = None  # the run delay at the call's start, seconds (None: unreadable)
_fd = -1  # SCHEDSTAT, opened by ``open_clock`` in the child
counts = {"deferred": 0, "capped": 0}  # tests whose alarm was deferred; timeouts the wall cap decided
_deferred_now = False  # this call's alarm has been deferred already


def open_clock() -> bool:
    """Open the run delay's file for this process (in the child, after the fork: the zygote's
    would be the zygote's own), and count from zero (whatever the zygote's warm-up counted is
    not this job's). False where it cannot be read: own time is then wall time."""
    global _fd
    counts.update(deferred=0, capped=0)
    try:
        _fd = os.open(SCHEDSTAT, os.O_RDONLY | os.O_CLOEXEC)
        return run_delay(_fd) is not None
    except OSError:
        _fd = -1
        return False


def run_delay(fd: int) -> float | None:
    """Seconds the task of ``fd`` (a schedstat file) has waited for a CPU; None if unreadable."""
    try:
        return int(os.pread(fd, 128, 0).split()[1]) / 1e9
    except (OSError, ValueError, IndexError):
        return None


def on_alarm(signum, frame):
    global _deferred_now
    if not _armed:
        return
    wall = _CLOCK() - _start
    own = wall - _waited()
    if own < _limit and wall < WALL_CAP * _limit:  # kept waiting: the rest of the limit, on own time
        if not _deferred_now:
            _deferred_now = True
            counts["deferred"] += 1
        _SETITIMER(_ITIMER_REAL, max(min(_limit - own, WALL_CAP * _limit - wall), 0.0001))
        return
    capped = own < _limit
    if capped:  # load may have decided this one: said in its message, counted apart
        counts["capped"] += 1
        raise TestTimeout(f"cut at {WALL_CAP:g}x the limit on the wall clock; own time {own:.3g}s")
    raise TestTimeout()


def _waited() -> float:
    """Seconds the running call has waited for a CPU (0 where the run delay is unreadable)."""
    if _delay0 is None:
        return 0.0
    delay = run_delay(_fd)
    return 0.0 if delay is None else max(delay - _delay0, 0.0)


def timeout_message(limit: float, exc: TestTimeout) -> str:
    """A timeout record's message: the limit, and how the wall cap decided it where it did."""
    reason = exc.args[0] if exc.args and type(exc.args[0]) is str else ""
    return f"exceeded {limit:.3g}s" + (f" ({reason})" if reason else "")


def describe(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}"
    return text if len(text) <= 2000 else text[:2000] + "..."


def timed(limit: float, fn, *args):
    """Run fn under the time limit (the module docstring's rule); returns (value, own seconds).
    The timer is not disarmed afterwards (one system call a test less: HumanEval+ runs 1,000
    tests a sample): should it fire after fn returned, ``on_alarm`` ignores it, and the next
    call arms it anew."""
    global _armed, _limit, _start, _delay0, _deferred_now
    _limit = max(0.001, limit)
    _deferred_now = False
    _delay0 = run_delay(_fd) if _fd >= 0 else None
    _SETITIMER(_ITIMER_REAL, _limit)
    _armed = True
    _start = _CLOCK()
    try:
        value = fn(*args)
        took = _CLOCK() - _start
        _armed = False
        # A call under a millisecond waited less than that: its own time is its wall time.
        return value, (took - _waited() if took > SHORT_CALL else took)
    finally:
        _armed = False


_SETITIMER, _ITIMER_REAL, _CLOCK = signal.setitimer, signal.ITIMER_REAL, time.perf_counter
