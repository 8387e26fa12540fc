"""The run setup every flow shares: from one config record, the benchmark and its problems,
the executor, the run directory and the lifecycle hooks.

A flow opens its run in two steps, so that nothing is written before every input checked
out::

    with open_run(plugins, cfg) as run:      # benchmark, problems, executor: nothing written
        ...read and check the flow's own inputs...
        run.start(samples=path)             # config.json, environment.json, run_started
        ...stages...
        return run.finish(results)          # results.json, run_finished

Closing the run closes the executor it created.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Sequence

from codea1.harness.benchmark import BenchmarkError
from codea1.harness.config_fields import check_fields
from codea1.harness.errors import ConfigError
from codea1.harness.longlived import long_lived
from codea1.harness.records import Problem
from codea1.harness.registry import did_you_mean
from codea1.harness.runstore import RunStore, RunStoreError


@dataclass(kw_only=True)
class RunConfig:
    """The fields every flow's config has. Subclasses set ``COMMAND`` (the flow's name in
    config.json), ``ROWS`` (the rows file appended as work lands) and ``IDENTITY`` (the
    fields that must match for a rerun to resume)."""

    benchmark: str
    out: str
    data: str | None = None
    benchmark_options: dict[str, str] = field(default_factory=dict)
    tasks: list[str] | None = None  # these tasks only
    limit: int | None = None  # the first N tasks (of the selection) only
    overwrite: bool = False
    progress: bool = True

    COMMAND = ""
    ROWS = "rows.jsonl"
    DATA_FLAG: ClassVar[str] = "--data"  # how an error names the data path
    IDENTITY: ClassVar[tuple[str, ...]] = ("benchmark", "data", "benchmark_options")

    def __post_init__(self):
        check_fields(self)  # the API refuses what the command line would, naming the field

    def record(self) -> dict[str, Any]:
        return {**asdict(self), "command": self.COMMAND}

    def rows_file(self) -> str:
        return self.ROWS


@dataclass(kw_only=True)
class ExecutingRunConfig(RunConfig):
    """A flow that runs programs: which executor, with what options, on how many workers."""

    executor: str = "subprocess"
    executor_options: dict[str, str] = field(default_factory=dict)
    workers: int | None = None


@dataclass(kw_only=True)
class LimitedRunConfig(ExecutingRunConfig):
    """A flow that judges programs under evalplus' limits, with evalplus' knobs: per test
    max(``min_time_limit``, ``gt_time_limit_factor`` x the reference's time) seconds, and
    ``memory_mb`` of address space for the child (evalplus reads EVALPLUS_MAX_MEMORY_BYTES).
    None keeps the benchmark's own value; config.json records the values used."""

    min_time_limit: float | None = None
    gt_time_limit_factor: float | None = None
    memory_mb: int | None = None

    def apply_limits(self, bench) -> dict[str, float | int]:
        """Set the knobs given on ``bench``; return the limits the run uses."""
        for flag, value in (("--min-time-limit", self.min_time_limit),
                            ("--gt-time-limit-factor", self.gt_time_limit_factor), ("--memory-mb", self.memory_mb)):
            if value is not None and not value > 0:
                raise ConfigError(f"{flag} {value}: expected a positive number")
        if self.min_time_limit is not None:
            bench.min_time_limit = float(self.min_time_limit)
        if self.gt_time_limit_factor is not None:
            bench.time_factor = float(self.gt_time_limit_factor)
        if self.memory_mb is not None:
            bench.memory_mb = int(self.memory_mb)
        return {"min_time_limit": bench.min_time_limit, "gt_time_limit_factor": bench.time_factor,
                "memory_mb": bench.memory_mb}


def create_benchmark(plugins, name: str, data: str | None, options: dict[str, str]):
    """The benchmark plugin ``name`` with its options; ``--data`` is the ``data`` option."""
    return plugins.benchmarks.create(name, {**options, **({"data": data} if data else {})})


def variant_name(benchmark: str, options: dict | None) -> str:
    """The benchmark as what it measures: its options are part of it (mini=true,
    base_only=true, split=instruct, subset=hard score other things than the defaults), so
    they are in the name every summary, ``show`` and report column uses:
    "humaneval+[mini=true]"."""
    shown = {k: v for k, v in (options or {}).items() if k != "data"}
    return benchmark + ("[" + ",".join(f"{k}={v}" for k, v in sorted(shown.items())) + "]" if shown else "")


def data_digest(bench, problems: dict[str, Problem]) -> dict[str, str]:
    """What data a run read, so that runs on different data are not compared as equals:
    sha256 and md5 of the data file it actually read (``Benchmark.data_read``: the Mini
    file under --mini) (md5 of the file is what evalplus records as the "hash"
    of its results), or of every file under a data directory; without a data path (the
    benchmark's own or embedded data), sha256 of the loaded tasks' ids, prompts and
    references."""
    data = bench.data_read()
    sha, md5 = hashlib.sha256(), hashlib.md5()
    if data and Path(data).exists():
        root = Path(data)
        files = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file())
        for path in files:
            if root.is_dir():
                sha.update(str(path.relative_to(root)).encode() + b"\0")
            with open(path, "rb") as fh:
                for chunk in iter(lambda: fh.read(1 << 20), b""):
                    sha.update(chunk)
                    md5.update(chunk)
        return {"sha256": sha.hexdigest(), "md5": md5.hexdigest()} if root.is_file() else {"sha256": sha.hexdigest()}
    for p in problems.values():
        sha.update(json.dumps([p.task_id, p.prompt, p.reference], default=str).encode() + b"\0")
    return {"tasks_sha256": sha.hexdigest()}


def select_tasks(problems: Sequence[Problem], tasks: Sequence[str] | None, limit: int | None,
                 benchmark: str) -> list[Problem]:
    """The problems ``--tasks`` names (in benchmark order), then the first ``--limit``."""
    if limit is not None and limit < 1:
        raise ConfigError(f"--limit {limit}: expected a positive number of tasks")
    chosen = list(problems)
    if tasks:
        known = {p.task_id for p in problems}
        for t in tasks:
            if t not in known:
                raise ConfigError(f"--tasks: {t!r} is not a task of {benchmark}{did_you_mean(t, known)}")
        wanted = set(tasks)
        chosen = [p for p in chosen if p.task_id in wanted]
    return chosen[:limit] if limit else chosen


def check_workers(cfg: RunConfig) -> None:
    if isinstance(cfg, ExecutingRunConfig) and cfg.workers is not None and cfg.workers < 1:
        raise ConfigError(f"--workers {cfg.workers}: expected at least 1 (leave it out for one per core)")


def load_selection(bench, cfg: RunConfig) -> tuple[list[Problem], list[Problem]]:
    """The benchmark's problems (kept to the run's end) and the ones ``cfg`` selects, these
    prepared (``Benchmark.prepare``: their tests ready to run)."""
    try:
        with long_lived():
            loaded = bench.load()
    except BenchmarkError as exc:
        # Loaders name the command line's flag; a config file names the data otherwise.
        if cfg.DATA_FLAG != "--data" and str(exc).startswith("--data "):
            raise BenchmarkError(cfg.DATA_FLAG + str(exc)[len("--data"):]) from None
        raise
    selected = select_tasks(loaded, cfg.tasks, cfg.limit, cfg.benchmark)
    with long_lived():
        prepared = {p.task_id: p for p in bench.prepare(selected)}
    return [prepared.get(p.task_id, p) for p in loaded], list(prepared.values())


class Run:
    """An open run: ``bench``, ``all_problems`` (by id), ``problems`` (the selected ones, by
    id), ``executor`` (None for flows that run no program) and, once started, ``store``."""

    def __init__(self, plugins, cfg: RunConfig, executor=None):
        self.plugins = plugins
        self.cfg = cfg
        self.bench = create_benchmark(plugins, cfg.benchmark, cfg.data, cfg.benchmark_options)
        self.limits = cfg.apply_limits(self.bench) if isinstance(cfg, LimitedRunConfig) else {}
        check_workers(cfg)
        self._owns_executor = executor is None and isinstance(cfg, ExecutingRunConfig)
        if self._owns_executor:
            executor = plugins.executors.create(cfg.executor, cfg.executor_options, workers=cfg.workers)
            executor.warm_for(self.bench.frameworks, self.bench.imports)
            executor.start_in_background()  # its workers start while the problems load
        self.executor = executor
        self.store: RunStore | None = None
        try:
            loaded, selected = load_selection(self.bench, cfg)
        except BaseException:
            self.close()
            raise
        self.all_problems: dict[str, Problem] = {p.task_id: p for p in loaded}
        self.problems: dict[str, Problem] = {p.task_id: p for p in selected}

    def start(self, environment: dict[str, Any] | None = None, **config: Any) -> RunStore:
        """Write config.json (the config record, updated with ``config``: resolved paths,
        prompt texts) and environment.json, then announce the run."""
        if isinstance(self.cfg, LimitedRunConfig):
            self._refuse_a_narrower_selection()
        record = {**self.cfg.record(), **({"limits": self.limits} if self.limits else {}),
                  "variant": variant_name(self.cfg.benchmark, self.cfg.benchmark_options),
                  "data_read": self.bench.data_read(), "data_digest": data_digest(self.bench, self.all_problems),
                  **config}
        self.store = RunStore(self.cfg.out, record, self.cfg.IDENTITY, overwrite=self.cfg.overwrite,
                              rows_name=self.cfg.rows_file())
        extra = dict(environment or {})
        if self.executor is not None:
            extra["executor"] = self.executor.info()
        self.store.write_environment(extra)
        self.store.mark_running()
        self.plugins.hook.codea1_run_started(config=self.store.config, out_dir=str(self.store.dir))
        return self.store

    def _refuse_a_narrower_selection(self) -> None:
        """results.json describes the whole run directory: a rerun whose --tasks / --limit
        leaves out tasks the directory already holds rows of is refused (before anything is
        written), not summarised over the smaller selection."""
        rows = Path(self.cfg.out) / self.cfg.rows_file()
        if self.cfg.overwrite or not rows.is_file():
            return
        held = set()
        with open(rows, encoding="utf-8", errors="replace") as fh:
            for line in fh:
                try:
                    held.add(json.loads(line)["task_id"])
                except (ValueError, KeyError, TypeError):
                    continue  # a torn last line: the store deals with it
        left_out = sorted(held - set(self.problems))
        if left_out:
            raise ConfigError(f"--out {self.cfg.out} holds results of {len(held)} tasks, {len(left_out)} of which this "
                              f"selection leaves out (e.g. {left_out[0]}); its results.json describes the whole "
                              f"directory: select them too, pass --overwrite, or use another --out")

    def finish(self, results: dict[str, Any]) -> dict[str, Any]:
        """Write results.json and announce the end of the run."""
        self.store.write_results(results)
        self.store.mark_finished()
        self.plugins.hook.codea1_run_finished(results=results, out_dir=str(self.store.dir))
        return results

    def close(self) -> None:
        if self.store is not None:
            self.store.close()
        if self._owns_executor and self.executor is not None:
            self.executor.close()

    def __enter__(self) -> "Run":
        return self

    def __exit__(self, exc_type, *exc) -> None:
        if exc_type is not None and self.store is not None:
            try:
                self.store.mark_interrupted()  # this process lives on (a library call): not "in progress"
            except RunStoreError:
                pass  # the directory refuses writes: the error on its way says so
        self.close()


def open_run(plugins, cfg: RunConfig, executor=None) -> Run:
    """Create the benchmark (loading its problems) and the executor named by ``cfg``; pass
    ``executor`` to share one the caller holds. Nothing is written yet: a wrong name, option
    or data file fails here and leaves no run directory behind."""
    return Run(plugins, cfg, executor)
