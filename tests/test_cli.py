"""The `codea1` command as a user runs it: a real subprocess."""

import gzip
import json
import os
import subprocess

import pytest
from conftest import codea1_command, shared_file


def codea1(*args, cwd=None, env=None):
    return subprocess.run(codea1_command() + list(args), capture_output=True, text=True, env={**os.environ, **(env or {})},
                          cwd=cwd, timeout=300)


def test_demo_evaluate_prints_a_table_and_resumes(tmp_path):
    out = tmp_path / "run"
    cache = {"CODEA1_CACHE_DIR": str(tmp_path / "cache")}
    first = codea1("evaluate", "--benchmark", "demo", "--out", str(out), "--k", "1", env=cache)
    assert first.returncode == 0, first.stderr
    assert "pass@1" in first.stdout and "demo/9" in first.stdout and "timeout" in first.stdout
    assert "70.83%" in first.stdout and "unbiased pass@k over all samples" in first.stdout  # what pass@1 counts
    assert "avg@" not in first.stdout  # 1 or 2 samples a task: no avg@n (the first sample alone is not it)
    bars = [line.split(":")[0].strip() for line in first.stderr.replace("\r", "\n").splitlines() if "|" in line]
    assert set(bars) == {"reference", "evaluate"}  # one progress bar per stage
    assert "12/12" in first.stderr  # the reference bar counts the references it runs
    second = codea1("evaluate", "--benchmark", "demo", "--out", str(tmp_path / "run2"), env=cache)
    assert second.returncode == 0 and "reference" not in second.stderr  # all cached: no bar, no "0job"
    again = codea1("evaluate", "--benchmark", "demo", "--out", str(out), "--no-progress")
    assert "(resumed 19)" in again.stdout
    assert json.loads((out / "results.json").read_text())["resumed"] == 19


def test_plugins_listing():
    result = codea1("plugins")
    assert result.returncode == 0
    for name in ("subprocess", "pass@k", "avg@k", "humaneval+", "mbpp+", "bigcodebench", "ult", "kodcode", "demo",
                 "hf", "vllm", "openai", "replay"):
        assert name in result.stdout


def test_bad_input_is_a_clear_error_not_a_traceback(tmp_path):
    bad = codea1("evaluate", "--benchmark", "demo", "--samples", str(tmp_path / "nope.jsonl"), "--out", str(tmp_path / "o"))
    assert bad.returncode == 2 and "nope.jsonl: no such samples file" in bad.stderr
    assert "Traceback" not in bad.stderr
    k = codea1("evaluate", "--benchmark", "demo", "--k", "0", "--out", str(tmp_path / "o"))
    assert k.returncode == 2 and "--k" in k.stderr
    data = codea1("evaluate", "--benchmark", "humaneval+", "--data", str(tmp_path / "x.jsonl"), "--out", str(tmp_path / "o"))
    assert data.returncode == 2 and "x.jsonl: no such file" in data.stderr


def test_version_and_help_list_every_command():
    version = codea1("--version")
    assert version.returncode == 0 and version.stdout.strip() == "codea1 0.1.0"
    helped = codea1("--help")
    for command in ("evaluate", "evaluate-tests", "generate", "tts", "plugins", "tasks", "dev"):
        assert f"    {command}" in helped.stdout


def test_plugins_listing_shows_options():
    listing = codea1("plugins")
    assert "options: preload=" in listing.stdout and "network='isolate'" in listing.stdout
    rows = {(r["kind"], r["name"]): r for r in json.loads(codea1("plugins", "--json").stdout)}
    options = {o["name"]: o for o in rows[("executor", "sandbox-fusion")]["options"]}
    assert options["retries"] == {"name": "retries", "type": "int", "default": "5"}
    assert rows[("command", "evaluate")]["distribution"] == "codea1 (built-in)"


def test_tasks_lists_a_benchmark(tmp_path):
    table = codea1("tasks", "--benchmark", "demo")
    assert table.returncode == 0 and "demo/11" in table.stdout and "12 tasks in demo" in table.stdout
    rows = [json.loads(x) for x in codea1("tasks", "--benchmark", "demo", "--json").stdout.splitlines()]
    assert len(rows) == 12 and rows[0] == {"task_id": "demo/0", "entry_point": "digit_sum", "tests": 5}


def test_tasks_and_limit_select_what_is_evaluated(tmp_path):
    run = codea1("evaluate", "--benchmark", "demo", "--tasks", "demo/9,demo/1", "--out", str(tmp_path / "a"),
                 "--no-progress")
    assert run.returncode == 0, run.stderr
    assert list(json.loads((tmp_path / "a" / "results.json").read_text())["tasks"]) == ["demo/1", "demo/9"]
    run = codea1("evaluate", "--benchmark", "demo", "--limit", "3", "--out", str(tmp_path / "b"), "--no-progress")
    assert list(json.loads((tmp_path / "b" / "results.json").read_text())["tasks"]) == ["demo/0", "demo/1", "demo/2"]
    assert "demo/2 " in run.stdout  # few tasks: the per-task table prints
    bad = codea1("evaluate", "--benchmark", "demo", "--tasks", "demo/90", "--out", str(tmp_path / "c"))
    assert bad.returncode == 2 and "--tasks: 'demo/90' is not a task of demo; did you mean" in bad.stderr
    assert not (tmp_path / "c").exists()


def test_refused_runs_write_nothing_and_name_the_problem(tmp_path):
    unknown = codea1("evaluate", "--benchmark", "demo", "--executor", "subproces", "--out", str(tmp_path / "x"))
    assert unknown.returncode == 2 and "did you mean 'subprocess'" in unknown.stderr
    assert not (tmp_path / "x").exists()  # no config.json left behind
    a_file = tmp_path / "file.txt"
    a_file.write_text("not a directory")
    out_file = codea1("evaluate", "--benchmark", "demo", "--out", str(a_file))
    assert out_file.returncode == 2 and "a file is there" in out_file.stderr and "Traceback" not in out_file.stderr
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"task_id": "demo/0", "solution": ""}\n{"task_id": "demo/0", "solution": "unterminated}')
    bad_json = codea1("evaluate", "--benchmark", "demo", "--samples", str(broken), "--out", str(tmp_path / "y"))
    assert bad_json.returncode == 2, bad_json.stderr
    assert f"{broken}:2: invalid JSON (Unterminated string starting at column 35)" in bad_json.stderr


def test_a_plugins_bug_shows_its_traceback_and_debug_shows_user_errors_too(tmp_path):
    plugin = tmp_path / "buggy.py"
    plugin.write_text("from codea1.api import Command, hookimpl\n"
                      "class Buggy(Command):\n    name = 'buggy'\n"
                      "    def run(self, plugins, args):\n        raise ValueError('a bug, not a user error')\n"
                      "@hookimpl\ndef codea1_register_commands(registry):\n    registry.add(Buggy)\n")
    bug = codea1("--plugin", str(plugin), "buggy")
    assert bug.returncode == 1 and "Traceback" in bug.stderr and "ValueError: a bug, not a user error" in bug.stderr
    user = codea1("--debug", "evaluate", "--benchmark", "demo", "--samples", str(tmp_path / "nope.jsonl"),
                  "--out", str(tmp_path / "o"))
    assert user.returncode == 2 and "Traceback" in user.stderr and "no such samples file" in user.stderr


def test_a_closed_pipe_ends_quietly(tmp_path):
    pipe = subprocess.run(" ".join(codea1_command()) + " plugins | head -1", shell=True, capture_output=True, text=True,
                          timeout=120)
    assert pipe.stdout.startswith("KIND") and "Traceback" not in pipe.stderr and "BrokenPipe" not in pipe.stderr


@pytest.mark.data
@pytest.mark.parametrize("benchmark,parts,says", [
    ("humaneval+", ("mbppplus", "MbppPlus-v0.2.0.jsonl.gz"), "not a humaneval+ file: its first record's field "
                                                              "'task_id' is 'Mbpp/2'"),
    ("mbpp+", ("humanevalplus", "HumanEvalPlus-v0.1.10.jsonl.gz"), "not a mbpp+ file"),
    ("bigcodebench", ("mbppplus", "MbppPlus-v0.2.0.jsonl.gz"), "not a BigCodeBench file"),
    ("ult", ("humanevalplus", "HumanEvalPlus-v0.1.10.jsonl.gz"), ".jsonl.gz:1: task HumanEval/0: missing field 'func_name'"),
])
def test_data_of_another_benchmark_is_named_as_such(tmp_path, benchmark, parts, says):
    data = shared_file(*parts)
    run = codea1("evaluate", "--benchmark", benchmark, "--data", str(data), "--out", str(tmp_path / "o"))
    assert run.returncode == 2 and says in run.stderr and "Traceback" not in run.stderr, run.stderr
    assert not (tmp_path / "o").exists()


def verdict_rows(run):
    rows = [json.loads(line) for line in (run / "verdicts.jsonl").read_text().splitlines()]
    return sorted(rows, key=lambda r: r["sample_index"])


def test_evalplus_time_and_memory_knobs_change_verdicts_and_are_recorded(tmp_path):
    slow_once = ("import time\n_slept = []\n\ndef digit_sum(n: int) -> int:\n    if not _slept:\n"
                 "        _slept.append(1)\n        time.sleep(2.5)\n    return sum(int(c) for c in str(n))\n")
    big = "_block = bytearray(1536 * 2**20)\n\ndef digit_sum(n: int) -> int:\n    return sum(int(c) for c in str(n))\n"
    samples = tmp_path / "samples.jsonl"
    samples.write_text("".join(json.dumps({"task_id": "demo/0", "solution": s}) + "\n" for s in (slow_once, big)))
    base = ["evaluate", "--benchmark", "demo", "--tasks", "demo/0", "--samples", str(samples), "--no-progress"]

    default = codea1(*base, "--out", str(tmp_path / "default"))
    assert default.returncode == 0, default.stderr
    statuses = [r["status"] for r in verdict_rows(tmp_path / "default")]
    assert statuses == ["timeout", "pass"]  # 2.5 s > evalplus' 1 s floor; 1.5 GB < 4 GB
    config = json.loads((tmp_path / "default" / "config.json").read_text())
    assert config["limits"] == {"min_time_limit": 1.0, "gt_time_limit_factor": 4.0, "memory_mb": 4096}

    knobs = ["--min-time-limit", "60", "--gt-time-limit-factor", "8", "--memory-mb", "1024"]
    tuned = codea1(*base, *knobs, "--out", str(tmp_path / "tuned"))
    assert tuned.returncode == 0, tuned.stderr
    rows = verdict_rows(tmp_path / "tuned")
    assert [r["status"] for r in rows] == ["pass", "error"]
    assert "MemoryError" in json.dumps(rows[1])
    config = json.loads((tmp_path / "tuned" / "config.json").read_text())
    assert config["limits"] == {"min_time_limit": 60.0, "gt_time_limit_factor": 8.0, "memory_mb": 1024}
    assert (config["min_time_limit"], config["gt_time_limit_factor"], config["memory_mb"]) == (60.0, 8.0, 1024)

    # verdicts under other limits are not mixed into one run, and a limit must be positive
    mixed = codea1(*base, "--out", str(tmp_path / "tuned"))
    assert mixed.returncode == 2 and "min_time_limit" in mixed.stderr and "60.0" in mixed.stderr, mixed.stderr
    # ... but the benchmark's own values given explicitly are the same run as none given (resumed)
    explicit = codea1(*base, "--min-time-limit", "1", "--gt-time-limit-factor", "4", "--memory-mb", "4096",
                      "--out", str(tmp_path / "default"))
    assert explicit.returncode == 0 and "(resumed 2)" in explicit.stdout, explicit.stderr
    zero = codea1(*base, "--min-time-limit", "0", "--out", str(tmp_path / "zero"))
    assert zero.returncode == 2 and "--min-time-limit 0.0: expected a positive number" in zero.stderr
    assert not (tmp_path / "zero").exists()

    # evaluate-tests takes the same knobs (its mutants' per-test limits) and records them
    tests = codea1("evaluate-tests", "--benchmark", "demo", "--tests", "golden", "--tasks", "demo/0", "--no-coverage",
                   "--no-progress", *knobs, "--out", str(tmp_path / "tests"))
    assert tests.returncode == 0, tests.stderr
    config = json.loads((tmp_path / "tests" / "config.json").read_text())
    assert config["limits"] == {"min_time_limit": 60.0, "gt_time_limit_factor": 8.0, "memory_mb": 1024}


def one_line_error(result, says: str) -> None:
    assert result.returncode == 2, (result.returncode, result.stderr[-2000:])
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("codea1: error: ") and says in lines[0], result.stderr[-2000:]


def test_bad_places_and_numbers_are_one_line_errors(tmp_path):
    """--out below a file or where nothing can be made, a report's --out that is a file,
    --workers 0: exit 2 and one line, and nothing written."""
    (tmp_path / "afile").write_text("x")
    demo = ["evaluate", "--benchmark", "demo", "--tasks", "demo/0", "--no-progress"]
    one_line_error(codea1(*demo, "--out", str(tmp_path / "afile" / "run")),
                   f"--out {tmp_path / 'afile' / 'run'}: cannot create the run directory: {tmp_path / 'afile'} is a file")
    one_line_error(codea1(*demo, "--out", "/proc/no-such/run"), "cannot create the run directory: no such file")
    one_line_error(codea1(*demo, "--workers", "0", "--out", str(tmp_path / "w0")), "--workers 0: expected at least 1")
    assert not (tmp_path / "w0").exists()
    assert codea1(*demo, "--out", str(tmp_path / "run")).returncode == 0
    one_line_error(codea1("report", str(tmp_path / "run"), "--out", str(tmp_path / "afile")),
                   f"--out {tmp_path / 'afile'}: a file is there")
    one_line_error(codea1("report", str(tmp_path / "run"), "--out", str(tmp_path / "afile" / "r")),
                   "cannot create the report directory")


def test_a_model_that_is_not_there_is_a_one_line_error(tmp_path):
    one_line_error(codea1("generate", "--role", "code", "--generator", "hf", "--model", str(tmp_path / "no-ckpt"),
                          "--benchmark", "demo", "--out", str(tmp_path / "g"), "--no-progress"),
                   f"--model {tmp_path / 'no-ckpt'}: no such checkpoint directory")
    one_line_error(codea1("generate", "--role", "code", "--generator", "hf", "--model", "someorg/no-such-model",
                          "--benchmark", "demo", "--out", str(tmp_path / "g"), "--no-progress",
                          env={"HF_HUB_OFFLINE": "1"}),
                   "--model someorg/no-such-model: not a checkpoint directory here, nor a model this machine can download")
    config = tmp_path / "gt.toml"
    config.write_text('[train]\ntrainer = "golden-tests"\nsteps = 1\nbatch_size = 2\n\n[benchmark]\nname = "demo"\n\n'
                      f'[policies.code]\nmodel = "{tmp_path / "no-ckpt"}"\n')
    one_line_error(codea1("train", "--config", str(config), "--out", str(tmp_path / "t"), "--no-progress"),
                   f"[policies] model {tmp_path / 'no-ckpt'}: no such checkpoint directory")
    assert not (tmp_path / "t").exists()


def test_training_config_and_run_directory_mistakes_are_one_line_errors(tmp_path):
    config = tmp_path / "c.toml"
    config.write_text('[train]\ntrainer = "golden-tests"\nsteps = "four"\n')
    one_line_error(codea1("train", "--config", str(config), "--out", str(tmp_path / "t")),
                   f"{config}: [train] key 'steps': expected an integer, got 'four'")
    config.write_text('[train]\ntrainer = "golden-tests"\nsteps = 1\nbatch_size = 2.5\n')
    one_line_error(codea1("train", "--config", str(config), "--out", str(tmp_path / "t")),
                   "[train] key 'batch_size': expected an integer, got 2.5")
    config.write_text('[train]\ntrainer = "golden-tests"\nsteps = 1\n\n[benchmark]\nname = "demo"\n\n'
                      '[policies.code]\nmodel = "x"\n')
    one_line_error(codea1("train", "--config", str(config), "--out", str(tmp_path / "nowhere"), "--resume"),
                   f"--resume: --out {tmp_path / 'nowhere'} holds no training run")
    assert not (tmp_path / "nowhere").exists()
    (tmp_path / "afile").write_text("x")
    one_line_error(codea1("train", "--config", str(config), "--out", str(tmp_path / "afile")),
                   "a file is there")
    config.write_text('[train]\ntrainer = "golden-tests"\nsteps = 1\n\n[benchmark]\nname = "kodcode"\n\n'
                      '[policies.code]\nmodel = "x"\n')
    one_line_error(codea1("train", "--config", str(config), "--out", str(tmp_path / "t"), "--set",
                          f"benchmark.data={tmp_path / 'nope'}"),
                   f"[benchmark] data {tmp_path / 'nope'}: no KodCode")  # not "--data": no such flag was given


def test_the_resume_command_after_an_interrupt(tmp_path):
    """The command printed after Ctrl-C goes on where the run stopped: train needs --resume
    once --out holds a run (the same command without it is refused), and --overwrite would
    discard what was kept."""
    from argparse import Namespace

    from codea1.harness.commands.evaluate import EvaluateCommand
    from codea1.harness.commands.train import TrainCommand

    run = tmp_path / "r"
    argv = ["train", "--config", "c.toml", "--out", str(run), "--overwrite"]
    assert TrainCommand().resume_argv(Namespace(out=str(run)), argv) == argv[:-1]  # nothing started: no --resume
    run.mkdir()
    (run / "config.json").write_text("{}")
    assert TrainCommand().resume_argv(Namespace(out=str(run)), argv) == [*argv[:-1], "--resume"]
    assert TrainCommand().resume_argv(Namespace(out=str(run)), [*argv[:-1], "--resume"]) == [*argv[:-1], "--resume"]
    assert EvaluateCommand().resume_argv(Namespace(out="r"), ["evaluate", "--overwrite", "--out", "r"]) == \
        ["evaluate", "--out", "r"]


def test_each_metric_is_printed_on_one_line(tmp_path):
    """A metric with a value and a note (mut@k: tasks left out) is one line, not a figure
    followed by an n/a line."""
    result = codea1("evaluate-tests", "--benchmark", "demo", "--tests", "golden", "--no-coverage", "--no-progress",
                    "--out", str(tmp_path / "t"))
    assert result.returncode == 0, result.stderr
    names = [line.split()[0] for line in result.stdout.splitlines() if line.startswith("  ") and "@" in line.split()[0]]
    assert names and len(names) == len(set(names)), result.stdout
    mut = next(line for line in result.stdout.splitlines() if line.split()[:1] == ["mut@1"])
    assert "%" in mut and "left out" in mut


def test_a_data_directory_and_an_unknown_task_are_named_as_such(tmp_path):
    data = shared_file("humanevalplus", "HumanEvalPlus-v0.1.10.jsonl.gz")
    one_line_error(codea1("evaluate", "--benchmark", "humaneval+", "--data", str(data.parent), "--out", str(tmp_path / "o")),
                   f"--data {data.parent}: a directory, not a file")
    unknown = codea1("evaluate", "--benchmark", "humaneval+", "--data", str(data), "--tasks", "HumanEval/999",
                     "--out", str(tmp_path / "o"))
    one_line_error(unknown, "did you mean 'HumanEval/99'")
    assert "164 known: `codea1 tasks` lists them" in unknown.stderr and "HumanEval/100," not in unknown.stderr


def test_a_rerun_that_would_describe_fewer_tasks_is_refused_and_a_wider_one_resumes(tmp_path):
    out = tmp_path / "run"
    base = ["evaluate", "--benchmark", "demo", "--no-progress", "--out", str(out)]
    assert codea1(*base, "--limit", "3").returncode == 0
    before = (out / "results.json").read_text()
    one_line_error(codea1(*base, "--limit", "2"), "holds results of 3 tasks, 1 of which this selection leaves out "
                                                  "(e.g. demo/2)")
    assert (out / "results.json").read_text() == before  # nothing rewritten
    wider = codea1(*base, "--limit", "4")
    assert wider.returncode == 0, wider.stderr
    assert list(json.loads((out / "results.json").read_text())["tasks"]) == ["demo/0", "demo/1", "demo/2", "demo/3"]


@pytest.mark.data
def test_bad_bytes_in_data_and_samples_files_name_their_line(tmp_path):
    """A malformed line of an evalplus data file is named by its line in the file (evalplus
    says line 1, its column inside the record); a samples line that is not UTF-8 is named;
    a UTF-8 byte order mark is read past in samples, and named in a data file evalplus
    cannot read with one."""
    real = shared_file("mbppplus", "MbppPlus-v0.2.0.jsonl.gz")
    records = gzip.open(real, "rt").read().splitlines()
    data = tmp_path / "mbpp.jsonl"
    data.write_text("\n".join(records[:5] + ['{"task_id": "Mbpp/x", broken'] + records[5:7]) + "\n")
    solution = json.loads(records[0])["canonical_solution"]
    good = json.dumps({"task_id": "Mbpp/2", "solution": solution}) + "\n"
    samples = tmp_path / "s.jsonl"
    samples.write_bytes(good.encode() * 3 + b'{"task_id": "Mbpp/2", "solution": "x = \xff"}\n')
    base = ["evaluate", "--benchmark", "mbpp+", "--no-progress", "--tasks", "Mbpp/2"]
    one_line_error(codea1(*base, "--data", str(data), "--samples", str(samples), "--out", str(tmp_path / "a")),
                   f"{data}:6: invalid JSON (Expecting property name enclosed in double quotes at column 23)")
    one_line_error(codea1(*base, "--data", str(real), "--samples", str(samples), "--out", str(tmp_path / "b")),
                   f"{samples}:4: not UTF-8 text (byte 0xff at column 40)")
    samples.write_bytes(b"\xef\xbb\xbf" + good.encode())
    ok = codea1(*base, "--data", str(real), "--samples", str(samples), "--out", str(tmp_path / "c"))
    assert ok.returncode == 0, ok.stderr[-2000:]
    assert json.loads((tmp_path / "c" / "results.json").read_text())["counts"]["samples"] == 1
    data.write_bytes(b"\xef\xbb\xbf" + "\n".join(records[:5]).encode() + b"\n")
    one_line_error(codea1(*base, "--data", str(data), "--samples", str(samples), "--out", str(tmp_path / "d")),
                   f"{data}:1: starts with a UTF-8 byte order mark, which evalplus' loader cannot read")


def test_a_partial_samples_file_is_refused_then_scored_as_partial_everywhere(tmp_path):
    """Samples for 2 of the demo's 12 tasks are refused (as evalplus refuses them),
    scored with --allow-partial and labelled so in the summary, results.json and `show`; the
    report marks the partial run beside a whole one, and --strict refuses to rank them."""
    from codea1.benchmarks.demo.problems import PROBLEMS

    samples = tmp_path / "s.jsonl"
    samples.write_text("".join(json.dumps({"task_id": f"demo/{i}", "solution": PROBLEMS[i]["solution"]}) + "\n"
                               for i in (0, 1)))
    partial = tmp_path / "partial"
    refused = codea1("evaluate", "--benchmark", "demo", "--samples", str(samples), "--out", str(partial))
    assert refused.returncode == 2 and not partial.exists()
    assert refused.stderr.strip().splitlines() == [
        f"codea1: error: {samples}: samples for 2 of the 12 tasks of demo (none for demo/2, demo/3, demo/4 and 7 "
        f"more); score them as a partial run with --allow-partial, or choose the tasks with --tasks or --limit"]
    scored = codea1("evaluate", "--benchmark", "demo", "--samples", str(samples), "--out", str(partial),
                    "--allow-partial", "--no-progress")
    assert scored.returncode == 0, scored.stderr
    line = ("tasks: 2 of 12; PARTIAL: the figures are not the whole benchmark's (chosen with --allow-partial)")
    assert line in scored.stdout.splitlines()
    coverage = json.loads((partial / "results.json").read_text())["coverage"]
    assert coverage == {"tasks": 2, "of": 12, "scored": 2, "skipped": 0, "skipped_count_as": "failures",
                        "partial": True, "selected_by": ["--allow-partial"], "dropped": 0,
                        "dropped_what": "sample(s)"}
    shown = codea1("show", str(partial))
    assert line in shown.stdout and "all tasks" not in shown.stdout
    whole = tmp_path / "whole"
    assert codea1("evaluate", "--benchmark", "demo", "--out", str(whole), "--no-progress").returncode == 0
    assert "tasks: 12 of 12" in codea1("show", str(whole)).stdout
    made = codea1("report", str(whole), str(partial), "--out", str(tmp_path / "r"), "--format", "md")
    assert made.returncode == 0, made.stderr
    md = (tmp_path / "r" / "report.md").read_text()
    assert "| whole | 70.83 [58.3, 83.3] |" in md and "| partial | 100.00 [100.0, 100.0]‡§ |" in md  # marked, not ranked
    assert f"{partial}: a partial run (2 of 12 tasks)" in md
    strict = codea1("report", str(whole), str(partial), "--strict", "--out", str(tmp_path / "s"))
    assert strict.returncode == 2 and "their figures are not comparable (--strict)" in strict.stderr
    assert not (tmp_path / "s").exists()


def bigcodebench_slice(path, libs: dict[str, str]) -> list[dict]:
    """BigCodeBench/0 and /1 from the shared file, written to ``path``; ``libs`` replaces a
    task's 'libs' field (a library this environment lacks makes the task skipped)."""
    rows = []
    with gzip.open(shared_file("bigcodebench", "BigCodeBench-v0.1.0.jsonl.gz"), "rt") as fh:
        for line in fh:
            row = json.loads(line)
            if row["task_id"] in ("BigCodeBench/0", "BigCodeBench/1"):
                rows.append({**row, "libs": libs.get(row["task_id"], row["libs"])})
            if len(rows) == 2:
                break
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return rows


@pytest.mark.data
@pytest.mark.long  # three commands that each load bigcodebench and its libraries
def test_a_skipped_bigcodebench_task_is_a_failure_with_its_reason_and_never_a_figure(tmp_path):
    """A task whose library is missing counts as a failure (as bigcodebench counts
    it), with its reason in the summary and results.json; --exclude-skipped keeps the scored-
    only figure, labelled; the report's per-task table says "skipped", never 0.00."""
    data = tmp_path / "BigCodeBench-two.jsonl"
    rows = bigcodebench_slice(data, {"BigCodeBench/1": "['codea1_no_such_library', 'random']"})
    samples = tmp_path / "s.jsonl"
    samples.write_text("".join(json.dumps({"task_id": r["task_id"], "solution": r["complete_prompt"] + "\n" +
                                           r["canonical_solution"]}) + "\n" for r in rows))
    base = ["evaluate", "--benchmark", "bigcodebench", "--data", str(data), "--samples", str(samples), "--no-progress"]
    run = codea1(*base, "--out", str(tmp_path / "run"))
    assert run.returncode == 0, run.stderr[-2000:]
    lines = run.stdout.splitlines()
    assert "tasks: 2 of 2; 1 skipped task(s) counted as failures (--exclude-skipped leaves them out)" in lines
    figure = next(x for x in lines if x.startswith("  pass@1 "))
    assert figure.split()[1:3] == ["50.00%", "[0.0,"] and "over 2 tasks: too few to rank" in figure, figure
    assert "  BigCodeBench/1: skipped: missing library codea1_no_such_library" in lines
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    assert results["tasks"]["BigCodeBench/1"]["skipped"] == "skipped: missing library codea1_no_such_library"
    assert results["metrics"]["pass@1"] == 0.5 and results["coverage"]["skipped_count_as"] == "failures"

    scored = codea1(*base, "--exclude-skipped", "--out", str(tmp_path / "scored"))
    assert scored.returncode == 0, scored.stderr[-2000:]
    line = next(x for x in scored.stdout.splitlines() if x.startswith("tasks: "))
    assert line.startswith("tasks: 1 of 2; PARTIAL: the figures are not the whole benchmark's") and \
        line.endswith("; 1 skipped task(s) left out of the figures (--exclude-skipped)"), line
    figure = next(x for x in scored.stdout.splitlines() if x.startswith("  pass@1 "))
    assert figure.split()[1] == "100.00%" and "over 1 task: too few to rank" in figure, figure

    made = codea1("report", str(tmp_path / "run"), "--out", str(tmp_path / "r"), "--format", "md,csv")
    assert made.returncode == 0, made.stderr
    md = (tmp_path / "r" / "report.md").read_text()
    assert "| BigCodeBench/0 | 100.00 |" in md and "| BigCodeBench/1 | skipped |" in md
    assert (f"{tmp_path / 'run'}: 1 task(s) skipped, counted as failures (BigCodeBench/1: skipped: missing library "
            f"codea1_no_such_library)") in md
    per_task = (tmp_path / "r" / "tasks-bigcodebench.csv").read_text().splitlines()
    assert "BigCodeBench/1,complete,skipped,," in per_task and "BigCodeBench/0,complete,1.0,," in per_task


@pytest.mark.data
def test_bigcodebench_subset_is_checked_against_the_data(tmp_path):
    """subset=hard with the full file is refused (not a "hard" score over 1,140
    tasks); the Hard file is recognised, and refused as the full set."""
    full = shared_file("bigcodebench", "BigCodeBench-v0.1.0.jsonl.gz")
    one_line_error(codea1("tasks", "--benchmark", "bigcodebench", "--data", str(full), "--benchmark-opt", "subset=hard"),
                   f"--data {full}: holds 1140 tasks, not BigCodeBench-Hard (148 tasks, BigCodeBench-Hard-*.jsonl): "
                   f"with subset=hard pass the Hard file, or subset=full for this one")
    hard = tmp_path / "BigCodeBench-Hard-v0.1.4.jsonl"
    bigcodebench_slice(hard, {})
    listed = codea1("tasks", "--benchmark", "bigcodebench", "--data", str(hard), "--benchmark-opt", "subset=hard")
    assert listed.returncode == 0 and "BigCodeBench/1" in listed.stdout, listed.stderr
    one_line_error(codea1("tasks", "--benchmark", "bigcodebench", "--data", str(hard)),
                   f"--data {hard}: the Hard file (2 tasks), read as the full set: pass --benchmark-opt subset=hard")


def test_the_headline_puts_pass_at_1_first_and_avg_at_n_beside_it(tmp_path):
    """pass@k first, in k order; avg@k at k = n (the paper's avg@32), named beside
    pass@1 when it equals it, never the first sample alone; results.json in the same order."""
    from codea1.benchmarks.demo.problems import PROBLEMS

    samples = tmp_path / "s.jsonl"
    wrong = "def digit_sum(n):\n    return 0\n"
    samples.write_text("".join(json.dumps({"task_id": "demo/0", "solution": s}) + "\n"
                               for s in (PROBLEMS[0]["solution"], wrong, wrong)))
    run = codea1("evaluate", "--benchmark", "demo", "--tasks", "demo/0", "--samples", str(samples), "--k", "2,1",
                 "--no-progress", "--out", str(tmp_path / "run"))
    assert run.returncode == 0, run.stderr
    figures = [line for line in run.stdout.splitlines() if "%" in line]
    # one task: no interval (nothing to draw from), and too few to rank
    assert figures == ["  pass@1              33.33%                  (unbiased pass@k over all samples; over 1 task: "
                       "too few to rank; = avg@3)",
                       "  pass@2              66.67%                  (unbiased pass@k over all samples; over 1 task: "
                       "too few to rank)"]
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    assert list(results["metrics"]) == ["pass@1", "pass@2", "avg@3"] and results["metric_same"] == {"avg@3": "pass@1"}
    shown = codea1("show", str(tmp_path / "run"))
    assert "= avg@3" in shown.stdout and "avg@1" not in shown.stdout


def test_evaluate_tests_notes_short_suites_and_eligible_tasks_in_the_papers_order(tmp_path):
    """A task with 3 tests at k = 5 is noted (its 2 missing tests count as
    invalid, the paper's test accuracy); mut@k says over how many tasks; metrics in the
    paper's order (test-pass, mut, Mul, coverage), each over its k."""
    from codea1.benchmarks.demo.problems import PROBLEMS

    tests = tmp_path / "tests.jsonl"
    palindromes = ["assert is_palindrome('') == True", "assert is_palindrome('Racecar') == True",
                   "assert is_palindrome('hello') == False", "assert is_palindrome('ab') == False",
                   "assert is_palindrome('abba') == True"]
    tests.write_text(json.dumps({"task_id": "demo/0", "tests": PROBLEMS[0]["tests"][:3]}) + "\n" +
                     json.dumps({"task_id": "demo/1", "tests": palindromes}) + "\n")
    run = codea1("evaluate-tests", "--benchmark", "demo", "--tasks", "demo/0,demo/1", "--tests", str(tests),
                 "--k", "5,1", "--no-progress", "--out", str(tmp_path / "run"))
    assert run.returncode == 0, run.stderr
    names = [line.split()[0] for line in run.stdout.splitlines() if line.startswith("  ") and "@" in line]
    assert names == ["test-pass@1", "test-pass@5", "mut@1", "mut@5", "Mul@1", "Mul@5", "coverage@1", "coverage@5",
                     "branch-coverage@1", "branch-coverage@5"], run.stdout
    line = next(x for x in run.stdout.splitlines() if x.startswith("  test-pass@5"))
    assert "80.00%" in line and "1 task(s) have fewer than 5 tests, e.g. demo/0: the missing count as invalid" in line
    mut5 = next(x for x in run.stdout.splitlines() if x.startswith("  mut@5"))
    assert "over 1 of 2 tasks" in mut5, mut5  # demo/0 has no 5 valid tests: not eligible at k = 5
