"""The run directory: config.json, environment.json, a rows file (verdicts.jsonl, tasks.jsonl,
samples.jsonl, ...; one row appended per finished unit), results.json (at the end), and
running.json while a process works on it (its pid and start time: a report tells a run in
progress from one that was interrupted). Rerunning the same command resumes; ``overwrite``
starts over. Nothing ever prompts."""

from __future__ import annotations

import errno
import json
import os
import platform
import sys
from pathlib import Path
from typing import Any

from codea1.harness.errors import Codea1Error
from codea1.harness.jsonl import appended_rows
from codea1.harness.records import RECORD_VERSION, Verdict
from codea1.harness.sandbox.protocol import write_all

PACKAGES = ("codea1", "pluggy", "evalplus", "bigcodebench", "numpy", "pandas", "tqdm", "torch", "transformers",
            "vllm", "ray", "openrlhf", "cosmic-ray", "coverage", "sandbox-fusion")


RUNNING = "running.json"


class RunStoreError(Codea1Error):
    pass


def process_start(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (/proc/PID/stat field 22): with the
    pid, it names one process, even after the pid is reused."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]


def run_status(run_dir: Path) -> str:
    """"complete" (results.json, nobody working on it), "in progress" (its process runs) or
    "interrupted" (no results.json, or its process is gone without finishing)."""
    marker = run_dir / RUNNING
    if marker.exists():
        try:
            owner = json.loads(marker.read_text())
        except (OSError, json.JSONDecodeError):
            return "interrupted"
        alive = owner.get("host") == platform.node() and owner.get("process_start") is not None \
            and process_start(int(owner.get("pid") or 0)) == owner.get("process_start")
        return "in progress" if alive else "interrupted"
    return "complete" if (run_dir / "results.json").exists() else "interrupted"


def environment() -> dict[str, Any]:
    from importlib import (
        metadata,  # slow to import: only when a run writes its environment
    )

    versions = {}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return {"python": sys.version.split()[0], "implementation": platform.python_implementation(),
            "platform": platform.platform(), "machine": platform.machine(), "cpus": os.cpu_count(),
            "packages": versions}


def make_directory(path: Path, flag: str, what: str) -> None:
    """``path`` and its parents, or a one-line error that names ``flag`` and why not."""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:  # a file where a parent should be, no permission, a read-only place
        above = next((p for p in path.parents if p.exists() and not p.is_dir()), None)
        why = f"{above} is a file, not a directory" if above else (exc.strerror or str(exc)).lower()
        raise RunStoreError(f"{flag} {path}: cannot create {what}: {why}") from None


# What the place a run writes to can refuse, which the user fixes (space, permissions, a
# read-only mount): one line, not a traceback. Any other OSError is a bug and shows one.
WRITE_ERRNOS = frozenset((errno.EROFS, errno.ENOSPC, errno.EDQUOT, errno.EACCES, errno.EPERM, errno.EFBIG))


def write_error(path, exc: OSError, flag: str = "") -> RunStoreError:
    """The one-line error for a write the run directory refused."""
    why = (exc.strerror or str(exc)).lower()
    where = f"{flag} {path}" if flag else str(path)
    return RunStoreError(f"{where}: cannot write there: {why}; what the run wrote before is kept (free space or "
                         f"fix the permissions, then rerun the same command to resume, or use another --out)")


def check_not_a_file(path: Path, flag: str = "--out") -> None:
    if path.exists() and not path.is_dir():
        raise RunStoreError(f"{flag} {path}: a file is there; the run directory must be a directory "
                            f"(or not exist yet)")


def check_writable(path: Path, flag: str = "--out") -> None:
    """The run directory ``path`` (or the nearest folder above it that exists, where it will
    be made) can be written, without writing anything (``--dry-run``): ``os.access`` says no
    for a read-only mount even to root."""
    check_not_a_file(path, flag)
    here = path
    while not here.exists():
        here = here.parent
    if not here.is_dir():
        raise RunStoreError(f"{flag} {path}: cannot create the run directory: {here} is a file, not a directory")
    if not os.access(here, os.W_OK | os.X_OK):
        why = "read-only file system" if _read_only(here) else "permission denied"
        raise RunStoreError(f"{flag} {path}: cannot write there: {why} ({here})")


def _read_only(path: Path) -> bool:
    try:
        return bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def check_same_run(config_path: Path, config: dict[str, Any], identity: tuple[str, ...]) -> None:
    """A rerun into a directory whose config.json records another run is refused."""
    if not config_path.exists():
        return
    try:
        old = json.loads(config_path.read_text())
    except json.JSONDecodeError as exc:
        raise RunStoreError(f"{config_path}:{exc.lineno}: unreadable ({exc.msg}); pass --overwrite to start "
                            f"over") from None
    for key in ("command", *identity):
        if old.get(key) != config.get(key):
            raise RunStoreError(f"{config_path}: field {key!r} was {old.get(key)!r}, now {config.get(key)!r}; this "
                                f"directory holds another run: pass --overwrite to replace it, or use another --out")


class RunStore:
    """``identity`` are the config fields that must match for a resume (benchmark, samples,
    ...; the command always); other config fields (workers, progress) may change between
    attempts."""

    def __init__(self, out_dir: str, config: dict[str, Any], identity: tuple[str, ...], overwrite: bool = False,
                 rows_name: str = "verdicts.jsonl"):
        self.dir = Path(out_dir)
        check_not_a_file(self.dir)
        make_directory(self.dir, "--out", "the run directory")
        self.rows_path = self.dir / rows_name  # one JSON row per finished unit, appended
        self._rows: int | None = None  # the rows file's descriptor, open for appending once the first row comes
        self.config_path = self.dir / "config.json"
        if overwrite:
            for name in (rows_name, "results.json", "config.json", "environment.json", RUNNING):
                (self.dir / name).unlink(missing_ok=True)
        else:
            check_same_run(self.config_path, config, identity)
        self.config = {**config, "record_version": RECORD_VERSION}
        self._write_json(self.config_path, self.config, named=(out_dir, "--out"))

    def _write_json(self, path: Path, data: Any, named: tuple = ()) -> None:
        """``data`` as JSON at ``path``, through a file beside it; a write the directory
        refuses is one line naming ``path``, or ``named`` (a path and its flag)."""
        tmp = path.with_suffix(path.suffix + ".tmp")
        try:
            tmp.write_text(json.dumps(data, indent=2, sort_keys=False, default=str) + "\n")
            os.replace(tmp, path)
        except OSError as exc:
            if exc.errno not in WRITE_ERRNOS:
                raise
            try:
                tmp.unlink(missing_ok=True)
            except OSError:
                pass  # a read-only place holds no half-written file
            where, flag = named or (path, "")
            raise write_error(where, exc, flag) from None

    def mark_running(self) -> None:
        """running.json: this process works on the run (removed by ``mark_finished``; left
        behind by a crash or a kill, where its pid no longer runs)."""
        self._write_json(self.dir / RUNNING, {"pid": os.getpid(), "host": platform.node(),
                                              "process_start": process_start(os.getpid())})

    def mark_interrupted(self) -> None:
        """The run stopped on an error in a process that goes on: no owner any more."""
        if (self.dir / RUNNING).exists():
            self._write_json(self.dir / RUNNING, {"pid": None, "host": platform.node(), "process_start": None})

    def mark_finished(self) -> None:
        (self.dir / RUNNING).unlink(missing_ok=True)

    def write_environment(self, extra: dict[str, Any]) -> None:
        self._write_json(self.dir / "environment.json", {**environment(), **extra})

    def load_verdicts(self) -> dict[tuple[str, int], Verdict]:
        """Verdicts of an earlier attempt (see load_rows)."""
        return {(v.task_id, v.sample_index): v for v in self.load_rows(Verdict.from_json)}

    def load_rows(self, convert=lambda row: row) -> list:
        """Rows of an earlier attempt, each through ``convert``. A torn last line (the process
        died mid-write) is dropped and cut from the file; a bad line elsewhere is an error
        naming it."""
        return appended_rows(self.rows_path, convert, RunStoreError, hint="; pass --overwrite")

    def append(self, verdict: Verdict) -> None:
        self.append_row(verdict.to_json())

    def append_row(self, row: dict[str, Any]) -> None:
        """One row, written to the kernel before returning (a kill after it keeps the row).
        The file stays open between rows (opening it per row was a visible cost); unbuffered,
        so a write the disk refuses leaves nothing behind to flush again."""
        data = (json.dumps(row, separators=(",", ":"), default=str) + "\n").encode()
        try:
            if self._rows is None:
                self._rows = os.open(self.rows_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            write_all(self._rows, data)
        except OSError as exc:
            if exc.errno not in WRITE_ERRNOS:
                raise
            self.close()  # a torn last line is cut when the run resumes (load_rows)
            raise write_error(self.rows_path, exc) from None

    def close(self) -> None:
        if self._rows is not None:
            os.close(self._rows)
            self._rows = None

    def write_results(self, results: dict[str, Any]) -> Path:
        path = self.dir / "results.json"
        self._write_json(path, results)
        return path
