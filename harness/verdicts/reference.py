"""Running each problem's reference solution once: outputs (expected values for benchmarks
whose tests are inputs only), per-test times (the timeout rule), digests of large outputs,
and which golden tests the reference itself fails.

Results are cached on disk, one file per problem, named by a fingerprint of everything that
determines them. Large outputs (HumanEval+ has single answers of 100+ MB) live in a side
file that is read only when a value is actually needed; another side file holds the tests
as encoded for the sandbox, so that a warm run does not encode them again, and a third the
same tests as the sandbox's zygote holds them (marshal bytes it loads faster than the JSON).
"""

from __future__ import annotations

import functools
import hashlib
import marshal
import os
from pathlib import Path
from typing import Any, Callable, Sequence

from codea1.harness.longlived import long_lived
from codea1.harness.progress import stage_bar
from codea1.harness.records import SANDBOX_ERROR, ExecJob, Problem, RawResult
from codea1.harness.sandbox.protocol import dumps_tree, loads_record
from codea1.harness.verdicts import plaindata
from codea1.harness.verdicts.execution import (
    TESTS_FORMAT,
    Executor,
    adopt_encoded_tests,
    encoded_tests,
    stream_jobs,
    tests_blob_bytes,
)
from codea1.harness.verdicts.judge import Checker, judge

CACHE_VERSION = "8"  # bump when what a reference run records changes (large outputs: 3, their digests: 5; the sandbox reads only its job, script checks report values: 6; arrays, and the test script's imports in the solution's namespace: 7; times as own times, not wall times: 8)
REFERENCE_TEST_LIMIT = 60.0  # seconds per test for the reference (evalplus gives it no limit)


def cache_dir() -> Path:
    base = os.environ.get("CODEA1_CACHE_DIR") or os.path.join(os.environ.get("XDG_CACHE_HOME") or
                                                               os.path.expanduser("~/.cache"), "codea1")
    return Path(base)


class ReferenceRun:
    """Per test: ``value(i)``, ``times[i]``, ``digests.get(i)``; ``failed`` maps a test index to
    why the reference did not pass it; ``error`` is set when it did not even load."""

    def __init__(self, times: list[float], values: dict[int, Any] | None = None, digests: dict[int, str] | None = None,
                 failed: dict[int, str] | None = None, error: str | None = None, large_file: Path | None = None):
        self.times = times
        self.values = values or {}
        self.digests = digests or {}
        self.failed = failed or {}
        self.error = error
        self._large_file = large_file

    def value(self, i: int) -> Any:
        if i not in self.values and i in self.digests and self._large_file is not None:
            large = loads_record(self._large_file.read_text())
            self.values.update({int(k): plaindata.from_tree(v) for k, v in large.items()})
            self._large_file = None
        return self.values.get(i)

    def save(self, path: Path) -> None:
        """Values as plain-data trees (JSON's types only), written with marshal: every run
        reads every sampled problem's file, and HumanEval+'s 164 load in 0.08 s instead of
        json's 0.22 s. Large outputs go to a JSON side file, read only when needed."""
        large = {str(i): plaindata.to_tree(self.values[i]) for i in self.digests if i in self.values}
        small = {i: plaindata.to_tree(v) for i, v in self.values.items() if i not in self.digests}
        try:
            record = marshal.dumps({"times": self.times, "values": small, "digests": dict(self.digests),
                                    "failed": dict(self.failed), "error": self.error})
        except ValueError:  # a value nested deeper than marshal goes: not cached, computed again next run
            return
        if large:
            atomic_write(path.with_suffix(".large.json"), dumps_tree(large))
        atomic_write(path, record)

    @classmethod
    def load(cls, path: Path) -> "ReferenceRun":
        """Raises ValueError (or OSError, EOFError) for a file that is torn or not one of ours."""
        d = marshal.loads(path.read_bytes())
        if type(d) is not dict or type(d.get("times")) is not list or type(d.get("values")) is not dict \
                or type(d.get("digests")) is not dict or type(d.get("failed")) is not dict:
            raise ValueError(f"{path}: not a reference record")
        large = path.with_suffix(".large.json")
        if d["digests"] and not large.exists():
            raise FileNotFoundError(large)
        return cls(d["times"], {int(k): plaindata.from_tree(v) for k, v in d["values"].items()}, d["digests"],
                   d["failed"], d.get("error"), large if d["digests"] else None)


def _tests_path(path: Path) -> Path:
    """Beside a problem's results: its tests as encoded for the sandbox."""
    return path.with_suffix(f".tests{TESTS_FORMAT}.json")


def _blob_path(path: Path) -> Path:
    """Beside a problem's results: its tests as the zygote holds them (tests_blob_bytes)."""
    return path.with_suffix(f".tests{TESTS_FORMAT}.blob")


def atomic_write(path: Path, data: str | bytes) -> None:
    """``data`` at ``path`` whole or not at all (a reader never sees half a file)."""
    tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
    if isinstance(data, bytes):
        tmp.write_bytes(data)
    else:
        tmp.write_text(data)
    os.replace(tmp, path)


def _write_tests_blob(path: Path, key: str, text: str) -> bool:
    """Write the tests blob of ``text``; False (nothing written) where there is none."""
    data = tests_blob_bytes(key, text)
    if data is not None:
        atomic_write(path, data)
    return data is not None


@functools.lru_cache(maxsize=None)
def sandbox_environment() -> str:
    """A digest of what a program in the sandbox can import: the interpreter's version and
    every installed distribution's name and version (the zygotes run this interpreter). Part
    of every cache key, so a reference that failed for a module missing here ("fails here",
    the task skipped) is run again once the module is installed, or another version is."""
    import sys

    # The names of the .dist-info / .egg-info folders on sys.path carry name and version:
    # listing them takes milliseconds, reading every METADATA file half a second.
    dists = set()
    for entry in sys.path:
        try:
            names = os.listdir(entry or ".")
        except OSError:
            continue
        dists.update(n for n in names if n.endswith((".dist-info", ".egg-info")))
    return hashlib.sha256("\n".join([sys.version, *sorted(dists)]).encode()).hexdigest()[:16]


def problem_key(problem: Problem) -> str:
    """Fingerprint of what a reference run depends on. The tests enter through marshal's
    bytes of their fields (format 2: a function of the value alone, with no back-references
    that depend on which objects are shared; it tells 1 from 1.0 and True, tuples from
    lists), or their repr where marshal cannot write a value. Both are C-speed; marshal is
    four times faster than repr on HumanEval+'s 160,000 inputs (0.17 s of every start)."""
    fields = [(t.kind, t.args, t.call, t.op, t.expected, t.has_expected, t.expected_source, t.script, t.framework)
              + ((t.kwargs, t.wrap) if t.kwargs or t.wrap else ())
              + (("expected_error", t.expected_error) if t.expected_error is not None else ())
              for t in problem.tests]
    try:
        tests = b"marshal2:" + marshal.dumps(fields, 2)
    except ValueError:  # a value marshal cannot write (an Opaque), or nesting too deep for it
        tests = repr(fields).encode("utf-8", "surrogatepass")
    h = hashlib.sha256()
    for part in (CACHE_VERSION, sandbox_environment(), problem.reference, problem.entry_point, problem.prelude):
        h.update(part.encode("utf-8", "surrogatepass") + b"\0")
    h.update(tests)
    return h.hexdigest()[:32]


def _reference_job(problem: Problem, memory_mb: int, limits: list[float] | None = None, seed: int = 0) -> ExecJob:
    n = len(problem.tests)
    limits = limits if limits is not None else [REFERENCE_TEST_LIMIT] * n
    return ExecJob(job_id=f"ref:{problem.task_id}", code=problem.reference, tests=problem.tests,
                   entry_point=problem.entry_point, prelude=problem.prelude, time_limits=limits,
                   batch_timeout=min(sum(limits), 1800.0) + 10, memory_mb=memory_mb, fail_fast=False,
                   large_output="both", hash_seed=seed, random_seed=seed)


def _summarise(problem: Problem, job: ExecJob, raw: RawResult, checks_tests: bool) -> ReferenceRun:
    ref = ReferenceRun(times=[o.time for o in raw.outcomes],
                       values={i: o.value for i, o in enumerate(raw.outcomes) if o.status == "ok"},
                       digests={i: o.digest for i, o in enumerate(raw.outcomes) if o.digest})
    if raw.sandbox_error:
        ref.error = f"sandbox error: {raw.sandbox_error}"
    elif raw.load_error:
        ref.error = raw.load_error
    if ref.error:
        ref.failed = {i: ref.error for i in range(len(problem.tests))}
        return ref
    if checks_tests:
        verdict = judge(problem.task_id, -1, job, raw, Checker())
        if verdict.status == SANDBOX_ERROR:  # an expected value the executor failed to compute (harness.verdicts.expected)
            ref.error = f"sandbox error: {verdict.message}"
            ref.failed = {i: ref.error for i in range(len(problem.tests))}
            return ref
        ref.failed = {i: (tv.message or tv.status) for i, tv in enumerate(verdict.tests) if tv.status != "pass"}
    else:
        ref.failed = {i: o.message or o.status for i, o in enumerate(raw.outcomes) if o.status != "ok"}
    return ref


def run_references(problems: Sequence[Problem], executor: Executor, *, checks_tests: Callable[[Problem], bool],
                   memory_mb: int = 4096, progress: bool = False, stage: str = "reference",
                   use_cache: bool = True, seed: int = 0,
                   limits: Callable[[Problem], list[float]] | None = None) -> dict[str, ReferenceRun]:
    """Reference results by task id. ``checks_tests(problem)`` is False where the tests carry
    no expected values (the reference's outputs *are* the expected values). With
    ``progress``, one bar named ``stage`` counts the references actually run (none when
    every one is cached). ``seed`` (the hash seed and the random seed of the run) and
    ``limits(problem)`` (per-test time limits, else REFERENCE_TEST_LIMIT) serve validity's
    second run; either one turns the cache off."""
    use_cache = use_cache and seed == 0 and limits is None
    folder = cache_dir() / "reference"
    out: dict[str, ReferenceRun] = {}
    jobs: dict[str, tuple[Problem, Path, ExecJob]] = {}
    with long_lived():
        for p in problems:
            path = folder / f"{problem_key(p)}.marshal"
            if use_cache and path.exists():
                try:
                    out[p.task_id] = ReferenceRun.load(path)
                    text, blob = _tests_path(path).read_text(), _blob_path(path)
                    key, _ = adopt_encoded_tests(p.tests, text, blob)
                    if not blob.exists():  # a cache from before the blobs: made once
                        try:
                            _write_tests_blob(blob, key, text)
                        except OSError:  # a read-only cache: the zygotes get the JSON
                            pass
                    continue
                except (OSError, ValueError, EOFError, KeyError, TypeError):
                    pass  # torn or stale cache entry: recomputed below
            jobs[f"ref:{p.task_id}"] = (p, path, _reference_job(p, memory_mb, limits(p) if limits else None, seed))
    if use_cache and jobs:
        folder.mkdir(parents=True, exist_ok=True)

    def landed(raw: RawResult):
        p, path, job = jobs[raw.job_id]
        ref = _summarise(p, job, raw, checks_tests(p))
        out[p.task_id] = ref
        if use_cache and not (ref.error and ref.error.startswith("sandbox error")):
            key, text = encoded_tests(p.tests)
            atomic_write(_tests_path(path), text)  # first: load() needs both
            if _write_tests_blob(_blob_path(path), key, text):
                adopt_encoded_tests(p.tests, text, _blob_path(path))
            ref.save(path)
        bar.update(1)

    with stage_bar(stage, len(jobs), progress) as bar:
        stream_jobs(executor, [j for _, _, j in jobs.values()], on_result=landed)
    return out
