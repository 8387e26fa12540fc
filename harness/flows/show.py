"""``codea1 show RUN``: one run directory at a glance, read and never written.

* kind: the command that made it (config.json's ``command``), or a ``codea1 report`` directory;
* status: complete, in progress (its process still runs) or interrupted (from the run
  store), and for a run that is not complete what is missing and how to go on;
* key config: benchmark and tasks, model(s), executor, limits, k;
* headline figures: the metrics of results.json (evaluate, evaluate-tests, tts), the rows
  and parsing of a generate run, the steps done and the last step's main figures and last
  evaluation of a train run (read from steps.jsonl, so a run still going shows them too).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from codea1.harness.errors import Codea1Error
from codea1.harness.flows.report import read_json
from codea1.harness.registry import did_you_mean
from codea1.harness.run import variant_name
from codea1.harness.runstore import run_status
from codea1.harness.training import headline, run_columns

ROWS = {"evaluate": "verdicts.jsonl", "evaluate-tests": "tasks.jsonl", "tts": "matrix.jsonl", "train": "steps.jsonl"}
REPORT_FILES = ("report.md", "report.html", "report.tex", "runs.csv")


class ShowError(Codea1Error):
    pass


def show(run_dir: str, plugins: Any = None) -> dict[str, Any]:
    """kind, status, state (what is missing), config (label -> text), metrics and
    metric_notes (fractions), lines (other figures)."""
    path = Path(run_dir)
    if not path.is_dir():
        raise ShowError(f"{run_dir}: no such directory")
    if not (path / "config.json").exists():
        if any((path / name).exists() for name in REPORT_FILES):
            return show_report(path)
        raise ShowError(f"{run_dir}: not a run directory (no config.json) nor a report (no {', '.join(REPORT_FILES)})")
    config = read_json(path / "config.json")
    kind = config.get("command")
    if kind not in KINDS:
        raise ShowError(f"{path / 'config.json'}: field 'command': unknown kind of run {kind!r}"
                        f"{did_you_mean(str(kind), KINDS)}")
    status = run_status(path)
    results = read_json(path / "results.json") if status == "complete" else {}
    shown = {"path": str(path), "kind": kind, "status": status, "state": "", "config": {}, "metrics": {},
             "metric_notes": {}, "lines": []}
    if kind == "train":
        show_train(path, config, shown, plugins)
    else:
        KINDS[kind](path, config, results, shown)
    if status != "complete" and not shown["state"]:
        rows = ROWS.get(kind) or ("samples.jsonl" if config.get("role") == "code" else "tests.jsonl")
        shown["state"] = f"no results.json yet, {count_rows(path / rows)} rows in {rows}" + (
            "; rerun the same command to resume" if status == "interrupted" else "")
    return shown


def count_rows(path: Path) -> int:
    try:
        with open(path, "rb") as fh:
            return sum(1 for line in fh if line.endswith(b"\n"))  # a torn last line is not a row
    except OSError:
        return 0


def selection(config: dict) -> str:
    """The benchmark, its data and the tasks a run took."""
    text = config.get("variant") or config.get("benchmark", "")
    read = config.get("data_read") or config.get("data")
    if read:
        digest = (config.get("data_digest") or {}).get("sha256", "")
        text += f" ({read}" + (f", sha256 {digest[:12]}" if digest else "") + ")"
    if config.get("tasks"):
        text += f", {len(config['tasks'])} tasks"
    if config.get("limit"):
        text += f", the first {config['limit']}"
    return text if config.get("tasks") or config.get("limit") else text + ", all tasks"


def executor(config: dict) -> str:
    workers = config.get("workers")
    return f"{config.get('executor')}, " + (f"{workers} workers" if workers else "one worker per core")


def limits(config: dict) -> str:
    lim = config.get("limits") or {}
    if not lim:
        return "-"
    return (f"a test's time max({lim['min_time_limit']} s, {lim['gt_time_limit_factor']} x the reference's), "
            f"memory {lim['memory_mb']} MB")


# The options of each kind of run that change what it measured or how its figures are
# counted (beside the benchmark's own, in its variant name, and the limits): shown where a
# run's config.json gives them a value other than their default.
MEASURING = {
    "evaluate": ("test_details", "exclude_skipped", "allow_partial", "executor_options"),
    "evaluate-tests": ("mut_task_set", "mutant_timeout", "test_timeout", "suite", "allow_other_forms",
                       "allow_partial", "coverage", "executor_options"),
    "generate": ("k", "white_box_from", "prompt_file", "generator_options"),
    "tts": ("curves", "executor_options"),
}


def options(kind: str, config: dict) -> str:
    """``MEASURING``'s options of this kind of run that the run set away from their defaults,
    as KEY=VALUE; "defaults" where none."""
    import dataclasses

    cls = config_class(kind)
    defaults = {f.name: f.default if f.default is not dataclasses.MISSING else f.default_factory()
                for f in dataclasses.fields(cls)
                if f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING}
    changed = []
    for name in MEASURING[kind]:
        if name in config and name in defaults and config[name] != defaults[name]:
            value = config[name]
            if isinstance(value, dict):
                changed += [f"{name}.{k}={v}" for k, v in sorted(value.items())]
            else:
                changed.append(f"{name}={value}")
    return ", ".join(changed) or "defaults"


def config_class(kind: str) -> type:
    if kind == "evaluate":
        from codea1.harness.flows.evaluate import EvaluateConfig as cls
    elif kind == "evaluate-tests":
        from codea1.harness.flows.evaluate_tests import EvaluateTestsConfig as cls
    elif kind == "generate":
        from codea1.harness.flows.generate import GenerateConfig as cls
    else:
        from codea1.harness.flows.tts import TTSConfig as cls
    return cls


def with_metrics(results: dict, shown: dict) -> None:
    shown["metrics"] = results.get("metrics", {})
    shown["metric_notes"] = results.get("metric_notes", {})
    shown["metric_same"] = results.get("metric_same", {})
    shown["intervals"] = results.get("intervals", {})


def show_evaluate(path: Path, config: dict, results: dict, shown: dict) -> None:
    shown["config"] = {"benchmark": selection(config), "samples": config.get("samples") or "the benchmark's own",
                       "executor": executor(config), "k": ", ".join(map(str, config.get("k", []))),
                       "limits": limits(config), "options": options("evaluate", config)}
    with_metrics(results, shown)
    from codea1.harness.flows.evaluate import clock_lines, coverage_line, verdict_lines

    if results.get("coverage"):
        shown["config"]["benchmark"] = selection({**config, "tasks": None, "limit": None}).removesuffix(", all tasks")
        shown["lines"].append(coverage_line(results["coverage"]))
    counts = results.get("counts", {})
    if counts:
        shown["lines"].extend(verdict_lines(counts, results.get("judged")) + clock_lines(results.get("clock")))


def show_evaluate_tests(path: Path, config: dict, results: dict, shown: dict) -> None:
    shown["config"] = {"benchmark": selection(config), "tests": config.get("tests"), "executor": executor(config),
                       "k": ", ".join(map(str, config.get("k", []))), "limits": limits(config),
                       "coverage": "yes" if config.get("coverage") else "no",
                       "options": options("evaluate-tests", config)}
    with_metrics(results, shown)
    if results.get("coverage"):
        from codea1.harness.flows.evaluate import coverage_line

        shown["lines"].append(coverage_line(results["coverage"]))
    if results.get("counts"):
        from codea1.harness.flows.evaluate_tests import count_lines

        shown["lines"].extend(count_lines(results["counts"]))


def show_generate(path: Path, config: dict, results: dict, shown: dict) -> None:
    shown["config"] = {"benchmark": selection(config), "role": config.get("role"),
                       "generator": config.get("generator"), "model": config.get("model") or "-",
                       "prompt": config.get("prompt"),
                       "sampling": ", ".join(f"{k} {config.get(k)}" for k in ("n", "temperature", "top_p", "max_tokens",
                                                                              "seed")),
                       "options": options("generate", config)}
    if results:
        shown["lines"].append(f"rows: {results.get('rows')} for {results.get('tasks')} tasks")
        shown["lines"].append("parsing: " + ", ".join(f"{k} {v}" for k, v in results.get("parsing", {}).items()))


def show_tts(path: Path, config: dict, results: dict, shown: dict) -> None:
    shown["config"] = {"benchmark": selection(config), "codes": config.get("codes"), "tests": config.get("tests"),
                       "executor": executor(config), "test timeout": f"{config.get('test_timeout')} s",
                       "options": options("tts", config)}
    with_metrics(results, shown)
    if results.get("counts"):
        c = results["counts"]
        shown["lines"].append(f"tasks {c['tasks']}, codes/task {c['max_codes']}, suites/task {c['max_suites']}, "
                              f"unique tests {c['unique_tests']}")


def show_train(path: Path, config: dict, shown: dict, plugins: Any) -> None:
    from codea1.harness.flows.train import changes_text, last_checkpoint
    from codea1.harness.jsonl import appended_rows

    t, bench, ex = config.get("train", {}), config.get("benchmark", {}), config.get("executor", {})
    shown["config"] = {"trainer": f"{t.get('trainer')}, batch {t.get('batch_size')}, seed {t.get('seed')}",
                       "benchmark": selection({**bench, "benchmark": variant_name(bench.get("name", ""),
                                                                                  bench.get("options"))}),
                       "executor": executor({"executor": ex.get("name"), "workers": ex.get("workers")})}
    if ex.get("options"):
        shown["config"]["executor"] += " (" + ", ".join(f"{k}={v}" for k, v in sorted(ex["options"].items())) + ")"
    for role, policy in config.get("policies", {}).items():
        shown["config"][f"policy {role}"] = f"{policy.get('backend')}, model {policy.get('model', '-')}"
    if t.get("log_to"):
        shown["config"]["mirrored to"] = ", ".join(t["log_to"])
    rows = appended_rows(path / "steps.jsonl", error=None, repair=False) if (path / "steps.jsonl").exists() else []
    shown["lines"].append(f"steps: {len(rows)} of {t.get('steps')}")
    resumes = config.get("resumes") or []
    if resumes:
        shown["lines"].append(f"resumed {len(resumes)} time{'s' if len(resumes) > 1 else ''}, at step "
                              + ", ".join(str(r.get("at_step")) for r in resumes))
        shown["lines"] += [f"  at step {r.get('at_step')}: {changes_text(r['changed'])}" for r in resumes
                           if r.get("changed")]
    declared = run_columns(plugins, config) if plugins is not None else None
    if rows and declared is not None:
        last = rows[-1]
        shown["lines"].append(f"last step ({last.get('step')}): " + (declared.warning or ", ".join(
            f"{k} {v:.4g}" for k, v in headline(declared.columns, last).items())
            or "none of the values its trainer declares"))
    evaluated = [r for r in rows if r.get("evaluation")]
    if evaluated:
        shown["lines"].append(f"last evaluation at step {evaluated[-1].get('step')}:")
        shown["metrics"] = {f"{where} {metric}": value for where, metrics in evaluated[-1]["evaluation"].items()
                            for metric, value in metrics.items()}
    if shown["status"] != "complete":
        _, done = last_checkpoint(path)
        shown["state"] = f"{len(rows)} of {t.get('steps')} steps logged, the last checkpoint after {done}" + (
            "; rerun the same command with --resume to go on" if shown["status"] == "interrupted" else "")


def show_report(path: Path) -> dict[str, Any]:
    files = [name for name in REPORT_FILES if (path / name).exists()]
    title = ""
    if (path / "report.md").exists():
        title = (path / "report.md").read_text(encoding="utf-8", errors="replace").split("\n", 1)[0].lstrip("# ")
    figures = sorted(p.name for p in (path / "figures").glob("*.png")) if (path / "figures").is_dir() else []
    return {"path": str(path), "kind": "report", "status": "complete", "state": "",
            "config": {"title": title or "-", "files": ", ".join(files)}, "metrics": {}, "metric_notes": {}, "metric_same": {},
            "lines": [f"figures: {len(figures)}"] if figures else []}


KINDS = {"evaluate": show_evaluate, "evaluate-tests": show_evaluate_tests, "generate": show_generate,
         "tts": show_tts, "train": show_train}
