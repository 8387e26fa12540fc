"""A run directory that refuses writes (a read-only mount, a full disk, a file in the way) is
one line and exit 2 from the real `codea1` command, never a traceback; the rows written before
a full disk are kept and a rerun resumes from them to the same figures; `train --dry-run`
says a read-only folder cannot be written instead of calling it a new run.

The read-only and full folders are tmpfs mounts made in a mount namespace of the test's own
(``unshare -m``, or ``-rm`` where user namespaces allow it unprivileged)."""

from __future__ import annotations

import json
import shlex
import subprocess

import pytest
from conftest import ROOT, codea1_command


def in_mount_namespace(tmp_path, script: str) -> str:
    """``script`` (sh) run in a mount namespace of its own, from ``tmp_path``; its stdout."""
    for prefix in (["unshare", "-m"], ["unshare", "-rm"]):
        try:
            probe = subprocess.run([*prefix, "true"], capture_output=True, timeout=60)
        except FileNotFoundError:
            break
        if probe.returncode == 0:
            done = subprocess.run([*prefix, "sh", "-c", script], capture_output=True, text=True, timeout=900,
                                  cwd=tmp_path)
            assert done.returncode == 0, done.stderr[-2000:]
            return done.stdout
    pytest.skip("no mount namespace here (unshare -m and -rm refused): no read-only or full folder can be made")


CODEA1 = shlex.join(codea1_command())


def command(name: str, *args: str) -> str:
    """A codea1 command whose stdout, stderr and exit status land in NAME.out/.err/.rc."""
    return f"{CODEA1} {shlex.join(args)} > {name}.out 2> {name}.err; echo $? > {name}.rc\n"


def outcome(tmp_path, name: str) -> tuple[int, list[str]]:
    return int((tmp_path / f"{name}.rc").read_text()), (tmp_path / f"{name}.err").read_text().splitlines()


WRITE_FIX = ("(free space or fix the permissions, then rerun the same command to resume, or use another --out)")


def test_a_read_only_folder_is_one_line_and_exit_2(tmp_path):
    config = ROOT / "trainers" / "configs" / "demo-sft-code.toml"
    in_mount_namespace(tmp_path, "mkdir ro && mount -t tmpfs -o ro,size=1m tmpfs ro\n"
                       + command("inside", "evaluate", "--benchmark", "demo", "--out", "ro", "--no-progress")
                       + command("below", "evaluate", "--benchmark", "demo", "--out", "ro/run", "--no-progress")
                       + command("dry", "train", "--config", str(config), "--out", "ro/train", "--dry-run"))
    assert outcome(tmp_path, "inside") == (2, [
        f"codea1: error: --out ro: cannot write there: read-only file system; what the run wrote before is kept "
        f"{WRITE_FIX}"])
    assert outcome(tmp_path, "below") == (2, [
        "codea1: error: --out ro/run: cannot create the run directory: read-only file system"])
    assert outcome(tmp_path, "dry") == (2, [
        "codea1: error: --out ro/train: cannot write there: read-only file system (ro)"])


def test_a_full_disk_keeps_the_rows_written_and_a_rerun_resumes_to_the_same_figures(tmp_path):
    """20 KB: config.json and environment.json fit, then a page of verdicts; the row the disk
    refused (torn) is cut on resume."""
    printed = in_mount_namespace(
        tmp_path, "mkdir full && mount -t tmpfs -o size=20k tmpfs full\n"
        + command("full", "evaluate", "--benchmark", "demo", "--out", "full/run", "--no-progress")
        + "grep -c . full/run/verdicts.jsonl || true\n"
        + "mount -o remount,size=4m full\n"
        + command("resumed", "evaluate", "--benchmark", "demo", "--out", "full/run", "--no-progress")
        + "cp full/run/results.json resumed-results.json\n"
        + command("fresh", "evaluate", "--benchmark", "demo", "--out", "fresh", "--no-progress"))
    assert outcome(tmp_path, "full") == (2, [
        f"codea1: error: full/run/verdicts.jsonl: cannot write there: no space left on device; what the run wrote "
        f"before is kept {WRITE_FIX}"])
    kept = int(printed.split()[0])
    assert kept >= 2  # rows landed before the disk was full (the last one may be torn)
    assert outcome(tmp_path, "resumed")[0] == 0, outcome(tmp_path, "resumed")
    assert f"(resumed {kept - 1})" in (tmp_path / "resumed.out").read_text() or \
        f"(resumed {kept})" in (tmp_path / "resumed.out").read_text()
    resumed = json.loads((tmp_path / "resumed-results.json").read_text())
    fresh = json.loads((tmp_path / "fresh" / "results.json").read_text())
    assert resumed["metrics"] == fresh["metrics"] and resumed["tasks"] == fresh["tasks"]
