"""The session-end check (tests/codea1_leftovers.py) really fails a run that leaves a process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def run_pytest(tmp_path: Path, body: str) -> subprocess.CompletedProcess:
    (tmp_path / "test_case.py").write_text(body)
    env = {**os.environ, "PYTHONPATH": str(TESTS), "CODEA1_LEFTOVER_GRACE": "1"}
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "codea1_leftovers", "-p", "no:cacheprovider",
                           str(tmp_path / "test_case.py")], capture_output=True, text=True, env=env, cwd=tmp_path,
                          timeout=120)


def test_a_detached_daemon_fails_the_session(tmp_path):
    body = ("import subprocess\ndef test_spawn():\n"
            "    subprocess.Popen(['sh', '-c', '(sleep 30 &) ; exit 0'], start_new_session=True).wait()\n")
    proc = run_pytest(tmp_path, body)
    assert proc.returncode == 1, proc.stdout
    assert "PROCESSES LEFT BEHIND" in proc.stdout and "sleep" in proc.stdout
    subprocess.run(["pkill", "-f", "^sleep 30$"], check=False)


def test_a_clean_session_passes(tmp_path):
    proc = run_pytest(tmp_path, "import subprocess\ndef test_ok():\n    subprocess.run(['true'], check=True)\n")
    assert proc.returncode == 0, proc.stdout
