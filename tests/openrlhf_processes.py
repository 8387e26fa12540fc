"""Ray's processes on this machine, for the openrlhf backend's tests (``tox -e openrlhf`` runs
them one at a time, so a machine-wide look is this run's)."""

from __future__ import annotations

import os
import subprocess
import time

RAY_PROCESS = ("raylet", "gcs_server", "ray::", "default_worker.py", "EngineCore", "dashboard/agent.py",
               "log_monitor.py", "ray/autoscaler")


def ray_processes() -> list[str]:
    """Live Ray and vLLM processes ("pid args"). A zombie holds nothing: one re-parented to this
    process (the test session is a subreaper, tests/codea1_leftovers.py) is reaped here."""
    try:
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass
    except ChildProcessError:
        pass
    out = subprocess.run(["ps", "-eo", "pid=,stat=,args="], capture_output=True, text=True).stdout
    found = []
    for line in out.splitlines():
        parts = line.split(None, 2)
        if len(parts) == 3 and not parts[1].startswith("Z") and any(p in parts[2] for p in RAY_PROCESS) \
                and "ps -eo" not in parts[2]:
            found.append(f"{parts[0]} {parts[2]}")
    return found


def wait_until_no_ray(timeout: float = 120) -> list[str]:
    """Ray's own processes notice their driver is gone within seconds; what is still there
    after ``timeout`` is left behind."""
    deadline = time.monotonic() + timeout
    while (left := ray_processes()) and time.monotonic() < deadline:
        time.sleep(1)
    return left
