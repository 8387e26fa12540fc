"""pytest plugin: fail the session when any process started by the tests outlives it.

The controlling pytest process becomes a subreaper, so every orphan of the test tree (a
daemon, a Ray process whose parent died) is re-parented to it rather than to init; after
the session (xdist workers torn down first) any descendant still alive fails the run.
"""

from __future__ import annotations

import os
import sys
import time

import pytest

from codea1.harness.sandbox.confine import process_table

LEFTOVER_GRACE_SECONDS = float(os.environ.get("CODEA1_LEFTOVER_GRACE", "15"))


def descendants(root: int) -> list[tuple[int, str]]:
    children: dict[int, list[int]] = {}
    names = {}
    for pid, ppid, state, name in process_table():
        if state == "Z":  # a zombie holds no resources; its parent reaps it
            continue
        children.setdefault(ppid, []).append(pid)
        names[pid] = name
    found, stack = [], list(children.get(root, []))
    while stack:
        pid = stack.pop()
        found.append((pid, names.get(pid, "?")))
        stack.extend(children.get(pid, []))
    return found


def pytest_configure(config):
    if not hasattr(config, "workerinput") and sys.platform == "linux":
        import ctypes

        ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session, exitstatus):
    if hasattr(session.config, "workerinput") or sys.platform != "linux":
        return
    deadline = time.monotonic() + LEFTOVER_GRACE_SECONDS
    while (left := descendants(os.getpid())) and time.monotonic() < deadline:
        time.sleep(0.25)
        try:  # reap what was re-parented to us
            while os.waitpid(-1, os.WNOHANG)[0]:
                pass
        except ChildProcessError:
            pass
    if left:
        session.config.get_terminal_writer().line(
            f"PROCESSES LEFT BEHIND by the test session: {left}", red=True, bold=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
