"""The `watch` extra installs a TensorBoard that starts: docs/training.md's `tensorboard --logdir
DIR` run for real on event files codea1's own TensorBoard writer made, and asked over HTTP
for the runs it found. (TensorBoard up to 2.20 imports pkg_resources, which setuptools 81
removed: pyproject.toml's watch extra pins setuptools below 81.)"""

from __future__ import annotations

import json
import os
import queue
import re
import subprocess
import sys
import threading
import urllib.request
from pathlib import Path

import pytest

pytest.importorskip("tensorboard", reason="tensorboard is not installed (pip install 'codea1[watch]')")

STARTED = re.compile(r"TensorBoard \S+ at (http://\S+/) ")


def write_events(folder: Path) -> None:
    """A step log mirrored as `codea1 train` mirrors it (harness.mirror)."""
    from codea1.harness.mirror import TensorBoardSink

    sink = TensorBoardSink(folder, {})
    for step in (1, 2):
        sink.log(step, {"reward": 0.5 * step})
    sink.close(failed=False)


def test_tensorboard_of_the_watch_extra_starts_and_serves_the_logdir(tmp_path):
    write_events(tmp_path)
    command = Path(sys.executable).with_name("tensorboard")
    command = [str(command)] if command.exists() else [sys.executable, "-m", "tensorboard.main"]
    server = subprocess.Popen(command + ["--logdir", str(tmp_path), "--host", "127.0.0.1", "--port", "0"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                              env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    lines: queue.Queue = queue.Queue()
    reader = threading.Thread(target=lambda: [lines.put(line) for line in server.stderr] + [lines.put(None)],
                              daemon=True)
    reader.start()
    try:
        seen, url = [], None
        while url is None:
            line = lines.get(timeout=120)  # a deadline for a hang, not a wait for anything
            assert line is not None, "tensorboard exited before serving:\n" + "".join(seen)[-3000:]
            seen.append(line)
            found = STARTED.search(line)
            url = found and found.group(1)
        with urllib.request.urlopen(url + "data/runs", timeout=60) as reply:
            runs = json.load(reply)
    finally:
        server.terminate()
        server.wait(timeout=60)
        reader.join(timeout=60)
    assert "No module named" not in "".join(seen)
    assert runs == ["tensorboard"]  # the folder the mirror writes its event files into
