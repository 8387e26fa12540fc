"""How many BigCodeBench canonical solutions pass in this environment, and why the others do not.

    python scripts/bigcodebench_canonical.py [--data FILE] [--workers 2] [--limit N] [--tasks ID,...]
        [--in-process] [--json FILE]

Each task's canonical solution runs through ``codea1 evaluate``'s own stages: the tasks
whose libraries are not importable are skipped (``tasks_missing_libraries``), the rest run
their reference (``reference_stage``: the subprocess sandbox, the benchmark's memory limit,
60 s per test, the reference cache, so a second run only reruns what changed). Prints the
counts: pass; skipped, by missing library; failing, by reason (``REASONS``: a timeout, what
the sandbox refuses, nltk data not downloaded, a check that did not hold, else the
exception's type), with the task ids. ``--in-process`` judges each task's test class
in-process, as bigcodebench does, instead of rewriting its checks to be judged in the parent
(harness.verdicts.script_tests): a task that passes only so fails on the rewrite, not on this
environment. ``--json FILE`` writes the task ids and each failure's first message.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import sys
from pathlib import Path

SHARED_DATA = os.environ.get("CODEA1_SHARED_DATA", Path(__file__).resolve().parents[1].parent / "shared" / "data")
DATA = Path(SHARED_DATA) / "bigcodebench" / "BigCodeBench-v0.1.0.jsonl.gz"
NO_MODULE = re.compile(r"No module named '([\w.]+)'")
# Reasons by what the first failing test's message says, first match wins. The sandbox refuses
# fork/exec (EAGAIN), has no network, shows a program its own /proc entries and the machine's
# cpuinfo, meminfo, stat, uptime and loadavg only, and lets it write only in its own directory
# (docs/sandbox.md).
REASONS = [
    (r"_TestTimeout|^(\S+: )?exceeded [\d.]+s|^timeout", "timeout"),
    (r"BlockingIOError", "starts a process (the sandbox refuses fork/exec)"),
    (r"Network is unreachable|name resolution|Name or service not known|gaierror|URLError|ConnectionError|"
     r"MaxRetryError", "reaches the network (the sandbox has none)"),
    (r"PermissionError.*'/proc/", "reads /proc (the sandbox shows its own entries and cpuinfo, meminfo, stat, uptime, loadavg)"),
    (r"PermissionError", "the sandbox refuses it (PermissionError: a path, a semaphore, a socket)"),
    # nltk's LookupError opens with a row of stars; TextBlob's MissingCorpusError names its issues page
    (r"Resource \w+ not found|\*{20}|sloria/TextBlob", "nltk or TextBlob data not downloaded"),
    (r"^crashed: ", None),  # the message itself (e.g. "crashed: SIGABRT")
    # a check judged in the parent (harness.verdicts.script_tests) that did not hold
    (r"line \d+: (got|raised)|no check was reached|returned before the check", "a check failed"),
]
EXCEPTION = re.compile(r"\b(\w+(?:Error|Exception|Exit|Interrupt|Warning))\b")


def why(message: str) -> str:
    """A failing reference's reason, from the message of its first failing test."""
    if (m := NO_MODULE.search(message)):
        return f"module not importable: {m.group(1).split('.')[0]}"
    for pattern, reason in REASONS:
        if re.search(pattern, message):
            return reason or message.splitlines()[0]
    if (m := EXCEPTION.search(message)):
        return m.group(1)
    return message.splitlines()[0][:60] if message else "no message"


def number(task_id: str) -> int:
    return int(task_id.rsplit("/", 1)[1])


def measure(plugins, data: str, workers: int, tasks: list[str] | None = None, limit: int | None = None,
            progress: bool = True, in_process: bool = False) -> dict:
    """Task ids by outcome: ``pass``, ``skipped`` (library -> tasks), ``fail`` (reason ->
    tasks), with ``messages`` (each failing task's first message)."""
    from codea1.benchmarks import bigcodebench
    from codea1.harness.flows.evaluate import EvaluateConfig, reference_stage, tasks_missing_libraries
    from codea1.harness.records import CodeSample
    from codea1.harness.run import open_run

    cfg = EvaluateConfig(benchmark="bigcodebench", data=data, out="", tasks=tasks, limit=limit, workers=workers,
                         progress=progress)
    saved = bigcodebench.split_test
    if in_process:  # each task's test class as one script, as bigcodebench runs it
        bigcodebench.split_test = lambda test, context="": [test]
    try:
        with open_run(plugins, cfg) as run:  # writes no run directory: only the reference stage runs
            samples = [CodeSample(task_id=p.task_id, index=0, code=p.reference) for p in run.problems.values()]
            skipped = tasks_missing_libraries(run, samples)
            missing = dict(skipped)
            prepared, failures, _ = reference_stage(run, cfg, samples, skipped)
    finally:
        bigcodebench.split_test = saved
    out = {"tasks": len(samples), "pass": sorted(prepared, key=number), "skipped": collections.defaultdict(list),
           "fail": collections.defaultdict(list), "messages": {}}
    for task_id, reason in sorted(missing.items(), key=lambda kv: number(kv[0])):
        for lib in reason.removeprefix("skipped: missing library ").split(", "):
            out["skipped"][lib].append(task_id)
    for task_id in sorted(set(skipped) - set(missing), key=number):
        first = next(iter(failures.get(task_id, {}).values()), skipped[task_id])
        out["fail"][why(first)].append(task_id)
        out["messages"][task_id] = first[:300]
    return out


def summary(out: dict) -> str:
    n_skipped = len({t for ts in out["skipped"].values() for t in ts})
    n_fail = sum(map(len, out["fail"].values()))
    lines = [f"{out['tasks']} tasks: {len(out['pass'])} pass, {n_fail} fail, {n_skipped} skipped (a library missing)"]
    for title, groups in (("skipped, by missing library", out["skipped"]), ("fail, by reason", out["fail"])):
        if groups:
            lines.append(f"{title}:")
            for key, ids in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0])):
                shown = ", ".join(i.removeprefix("BigCodeBench/") for i in ids[:12]) + (" ..." if len(ids) > 12 else "")
                lines.append(f"  {len(ids):4d}  {key}  ({shown})")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(DATA))
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--tasks", help="comma-separated task ids")
    parser.add_argument("--limit", type=int)
    parser.add_argument("--json", help="also write the counts and task ids here")
    parser.add_argument("--in-process", action="store_true",
                        help="judge each test class in-process, as bigcodebench does (no harness.verdicts.script_tests rewrite)")
    parser.add_argument("--no-progress", action="store_true")
    args = parser.parse_args(argv)

    from codea1.harness.errors import Codea1Error
    from codea1.harness.plugin_manager import load_plugins

    try:
        out = measure(load_plugins(autoload=False), args.data, args.workers,
                      args.tasks.split(",") if args.tasks else None, args.limit, not args.no_progress, args.in_process)
    except Codea1Error as exc:  # a wrong --tasks, --data or a missing bigcodebench: one line, as codea1 says it
        print(f"bigcodebench_canonical: error: {exc}", file=sys.stderr)
        return 2
    print(summary(out))
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
