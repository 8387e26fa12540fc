"""`codea1 report` over run directories the project's own commands wrote: golden files for
each text format, ranks and deltas, run statuses (in progress, interrupted), data digests,
evalplus results files, figures, errors, a third-party reporter, and runs left untouched."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import re
import shutil
import signal
import struct
import subprocess
import time
from pathlib import Path

import pytest
from conftest import ROOT, codea1_command, shared_file

from codea1.harness.cli import main

pytest.importorskip("pandas", reason="pandas is not installed (pip install 'codea1[report]')")
pytest.importorskip("matplotlib", reason="matplotlib is not installed (pip install 'codea1[report]')")
pytestmark = pytest.mark.xdist_group("reports")

GOLDEN = Path(__file__).parent / "golden"
UPDATE = os.environ.get("CODEA1_UPDATE_GOLDEN") == "1"  # rewrite the golden files from this run


def report(runs, out: Path, *flags: str) -> Path:
    assert main(["report", *map(str, runs), "--out", str(out), *flags]) == 0
    return out


def normalised(text: str, root: Path) -> str:
    """Paths of this session's temporary directories (as the HTML writes them too, a line
    break allowed after each "/") and embedded images out of the way."""
    text = text.replace(str(root), "<runs>").replace(str(root).replace("/", "/<wbr>"), "<runs>")
    text = text.replace(str(root).replace("/", "/\\allowbreak{}"), "<runs>")  # LaTeX: a path breaks after "/"
    return re.sub(r"data:image/png;base64,[A-Za-z0-9+/=]+", "data:image/png;base64,<png>", text)


def tree_digest(path: Path) -> dict[str, str]:
    return {str(p.relative_to(path)): hashlib.sha256(p.read_bytes()).hexdigest() + str(p.stat().st_mtime_ns)
            for p in sorted(path.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def evaluation_report(report_runs, tmp_path_factory) -> Path:
    r = report_runs
    return report([r["demo-samples"], r["model-b"], r["golden-tests"], r["generated-tests"], r["best-of-n"]],
                  tmp_path_factory.mktemp("report") / "out", "--baseline", str(r["demo-samples"]),
                  "--name", f"{r['demo-samples']}=demo samples")


@pytest.mark.parametrize("name", ["report.md", "code.csv", "tests.csv", "best_of_n.csv", "tasks-demo.csv",
                                  "lost-demo-model-b.csv", "report.tex", "report.html"])
def test_text_formats_equal_their_golden_files(evaluation_report, report_runs, name):
    root = report_runs["demo-samples"].parent
    text = normalised((evaluation_report / name).read_text(), root)
    golden = GOLDEN / name
    if UPDATE:
        golden.parent.mkdir(exist_ok=True)
        golden.write_text(text)
    assert text == golden.read_text(), f"{name} differs from {golden} (CODEA1_UPDATE_GOLDEN=1 rewrites it)"


def test_tables_rank_compute_deltas_and_show_the_paper_figures(evaluation_report):
    md = (evaluation_report / "report.md").read_text()
    # demo samples: pass@1 70.83 (unbiased over its 19 samples; 1 or 2 a task, so no avg@n);
    # model b: one sample per task, all but demo/3 right: 11 / 12 (its avg@1 is pass@1: one column)
    assert "|  | demo pass@1 (%) |" in md
    # each with its 95 % interval over the 12 tasks; the paired difference's interval holds 0
    # (demo/3 lost, demo/1, 2, 4, 6, 8, 9, 11 won on half the samples), so neither is ranked
    assert "| model-b | 91.67 [75.0, 100.0] (+20.83 [-4.2, +41.7]) |" in md
    assert "| demo samples | 70.83 [58.3, 83.3] |" in md
    assert "1 task model-b fails that demo samples passes" in md  # demo/3, on demand in the page
    import pandas as pd

    tests = pd.read_csv(evaluation_report / "tests.csv", index_col="label")
    assert tests.at["golden-tests", "demo test-pass@1"] == 1.0  # the demo's own tests are right
    # valid: demo/0 1 of 2 (digit_sum(10) is 1), demo/1 2 of 2, demo/2 1 of 2 (a print): 4 of 3 tasks x 2
    assert tests.at["generated-tests", "demo test-pass@2"] == pytest.approx(4 / 6)
    mul = tests.at["golden-tests", "demo Mul@2"]
    assert mul == pytest.approx(tests.at["golden-tests", "demo test-pass@2"] * tests.at["golden-tests", "demo mut@2"])
    tts = pd.read_csv(evaluation_report / "best_of_n.csv", index_col="label")
    assert tts.at["best-of-n", "demo best_of_n"] == 1.0 and tts.at["best-of-n", "demo oracle"] == 1.0
    figures = sorted(p.name for p in (evaluation_report / "figures").iterdir())
    assert figures == ["benchmarks.png", "best_of_n.png"]


def test_a_report_never_changes_the_runs_it_reads(report_runs, tmp_path):
    before = {name: tree_digest(path) for name, path in report_runs.items()}
    report(report_runs.values(), tmp_path / "r", "--format", "md,csv,tex,html")
    assert {name: tree_digest(path) for name, path in report_runs.items()} == before
    assert main(["report", str(report_runs["model-b"]), "--out", str(report_runs["model-b"] / "report")]) == 2
    assert not (report_runs["model-b"] / "report").exists()


def test_runs_in_progress_and_interrupted_are_marked_never_ranked(report_runs, tmp_path):
    """A real run, stopped (SIGSTOP) after it started: "in progress"; killed: "interrupted".
    Neither shows a figure or takes a rank; the complete runs are ranked without them."""
    slow = tmp_path / "slow.jsonl"
    slow.write_text("".join(json.dumps({"task_id": f"demo/{i}", "solution": "import time\ntime.sleep(30)\n"}) + "\n"
                            for i in range(12)))
    out = tmp_path / "stopped"
    proc = subprocess.Popen([*codea1_command(), "evaluate", "--benchmark", "demo", "--samples", str(slow),
                             "--out", str(out), "--no-progress"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        while proc.poll() is None and not (out / "running.json").exists():
            time.sleep(0.05)
        os.killpg(proc.pid, signal.SIGSTOP)
        runs = [report_runs["demo-samples"], report_runs["model-b"], out]
        md = (report(runs, tmp_path / "r1") / "report.md").read_text()
        assert "| stopped (in progress) |  |" in md
        assert f"{out}: in progress; shown with its status, never ranked" in md
        os.killpg(proc.pid, signal.SIGKILL)
        os.killpg(proc.pid, signal.SIGCONT)
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()
    md = (report(runs, tmp_path / "r2") / "report.md").read_text()
    assert "| stopped (interrupted) |  |" in md
    assert "| demo-samples | 70.83 [58.3, 83.3] |" in md  # alone among the complete runs: not ranked


def test_other_data_in_one_column_is_flagged_or_refused(tmp_path, capsys):
    data = shared_file("kodcode", "KodCode_prefill_200_1741214325.json")
    changed = tmp_path / "KodCode_changed.json"
    changed.write_bytes(data.read_bytes() + b"\n")  # the same tasks, another file
    samples = tmp_path / "s.jsonl"
    samples.write_text(json.dumps({"task_id": "Prefill_00000020_I", "solution": "def f():\n    pass\n"}) + "\n")
    for name, path in (("a", data), ("b", changed)):
        assert main(["evaluate", "--benchmark", "kodcode", "--data", str(path), "--samples", str(samples),
                     "--tasks", "Prefill_00000020_I", "--out", str(tmp_path / name), "--no-progress"]) == 0
    md = (report([tmp_path / "a", tmp_path / "b"], tmp_path / "r") / "report.md").read_text()
    # both cover one task of 200 (--tasks): partial, marked as such, and too few tasks to rank
    # (no interval over one task); b read other data besides
    assert "| b | 0.00†‡§ |" in md and "| a | 0.00‡§ |" in md
    assert f"{tmp_path / 'b'} read other data than {tmp_path / 'a'}" in md
    capsys.readouterr()
    assert main(["report", str(tmp_path / "a"), str(tmp_path / "b"), "--strict", "--out", str(tmp_path / "s")]) == 2
    assert "read other data than" in capsys.readouterr().err and not (tmp_path / "s").exists()


def test_evalplus_results_sit_beside_runs_with_the_same_data_hash(tmp_path):
    """An evalplus-style *_eval_results.json (the one evaluate writes for HumanEval+, as
    evalplus does) reads to the run's own figures, and its md5 data hash agrees with the
    run's digest: no dagger."""
    data = shared_file("humanevalplus", "HumanEvalPlus-v0.1.10.jsonl.gz")
    samples = tmp_path / "he.jsonl"
    samples.write_text("".join(json.dumps({"task_id": f"HumanEval/{i}", "completion": "    return None\n"}) + "\n"
                               for i in range(3)))
    assert main(["evaluate", "--benchmark", "humaneval+", "--data", str(data), "--samples", str(samples),
                 "--tasks", "HumanEval/0,HumanEval/1,HumanEval/2", "--out", str(tmp_path / "ours"),
                 "--no-progress"]) == 0
    evalplus_file = next((tmp_path / "ours").glob("*_eval_results.json"), None) or next(tmp_path.glob("*_eval_results.json"))
    doc = json.loads(evalplus_file.read_text())
    assert doc["hash"] == hashlib.md5(data.read_bytes()).hexdigest()  # evalplus' own dataset hash of this file
    theirs = tmp_path / "evalplus_eval_results.json"
    theirs.write_text(json.dumps(doc))
    out = report([tmp_path / "ours", theirs], tmp_path / "r", "--format", "csv")
    import pandas as pd

    code = pd.read_csv(out / "code.csv", index_col="label")
    assert code.at["evalplus", "humaneval+ pass@1"] == code.at["ours", "humaneval+ pass@1"] == 0.0
    # the same data: no dagger; ours is 3 of 164 tasks: partial; both rest on 3 tasks: not ranked
    assert code.at["evalplus", "marks"] == "humaneval+ pass@1:§"
    assert code.at["ours", "marks"] == "humaneval+ pass@1:‡§"
    assert json.loads((tmp_path / "ours" / "config.json").read_text())["data_digest"]["md5"] == doc["hash"]


def test_training_runs_give_the_training_table_and_figures(report_runs, train_runs, sft_runs, tmp_path):
    out = report([*train_runs.values(), *sft_runs.values(), report_runs["demo-samples"], report_runs["best-of-n"]],
                 tmp_path / "r")
    import pandas as pd

    training = pd.read_csv(out / "training.csv", index_col="label")
    assert list(training.index) == ["code-a1-alpha0.5", "code-a1-alpha1.0", "sft-code", "sft-tests"]
    assert list(training["steps"]) == [2, 2, 3, 3]
    # the ablation axes, per trainer and only for its runs: code-a1's alpha, sft's role; k
    # differs only across trainers (2 and 3), so it is no axis
    assert training["alpha"].tolist()[:2] == [0.5, 1.0] and training["alpha"][2:].isna().all()
    assert training["role"][:2].isna().all() and training["role"].tolist()[2:] == ["code", "tests"]
    assert "k" not in training.columns
    md = (out / "report.md").read_text()
    assert "differ between runs of one trainer (shown for that trainer's runs only): code-a1: alpha; sft: role." in md
    for run in train_runs.values():
        last = json.loads((run / "steps.jsonl").read_text().splitlines()[-1])
        assert training.at[run.name, "reward_code"] == pytest.approx(last["reward_code"])
        assert pd.isna(training.at[run.name, "loss_last"])
    for run in sft_runs.values():  # an sft row shows its loss at step 1 and at its last step
        log = [json.loads(line) for line in (run / "steps.jsonl").read_text().splitlines()]
        key = f"{run.name.removeprefix('sft-')}_loss"
        assert training.at[run.name, "loss_first"] == pytest.approx(log[0][key])
        assert training.at[run.name, "loss_last"] == pytest.approx(log[-1][key]) and log[-1][key] < log[0][key]
        assert pd.isna(training.at[run.name, "reward_code"])
    assert "| sft-code | sft |  | code | 3 |" in md  # trainer, alpha, role, steps
    evaluation = pd.read_csv(out / "training_evaluation.csv", index_col="label")
    assert list(evaluation.index) == ["code-a1-alpha0.5", "code-a1-alpha1.0"]
    for run in train_runs.values():
        last = json.loads((run / "steps.jsonl").read_text().splitlines()[-1])
        assert evaluation.at[run.name, "step"] == last["step"] == 2  # evaluated after step 2 of 2
        assert evaluation.at[run.name, "code/demo pass@1"] == pytest.approx(last["evaluation"]["code/demo"]["pass@1"])
    figures = {p.stem: p.read_bytes() for p in (out / "figures").iterdir()}
    assert set(figures) == {"rewards", "pass_rates", "mistake_book", "sft_loss", "evaluation", "benchmarks",
                            "best_of_n", "alpha_sweep"}
    for name, png in figures.items():
        assert png[:8] == b"\x89PNG\r\n\x1a\n", name
        width, height = struct.unpack(">II", png[16:24])
        assert width > 300 and height > 200, name


def test_a_step_log_counted_from_0_reads_as_counted_from_1(train_runs, tmp_path):
    """Runs written when steps.jsonl counted from 0 (checkpoints and books from 1) read with
    the numbering every file has now."""
    old = tmp_path / "old-run"
    shutil.copytree(train_runs["code-a1-alpha0.5"], old)
    rows = [json.loads(line) for line in (old / "steps.jsonl").read_text().splitlines()]
    (old / "steps.jsonl").write_text("".join(json.dumps({**r, "step": r["step"] - 1}) + "\n" for r in rows))
    import pandas as pd

    evaluation = pd.read_csv(report([old], tmp_path / "r", "--format", "csv") / "training_evaluation.csv",
                             index_col="label")
    assert evaluation.at["old-run", "step"] == 2


def test_the_brackets_note_only_where_a_bracket_is_shown(report_runs, tmp_path):
    r = report_runs
    md = (report([r["demo-samples"], r["golden-tests"]], tmp_path / "alone", "--baseline", str(r["demo-samples"]),
                 "--format", "md") / "report.md").read_text()
    assert "(+" not in md and "(-" not in md and "In parentheses" not in md  # nothing to compare with
    md = (report([r["demo-samples"], r["model-b"]], tmp_path / "pair", "--baseline", str(r["demo-samples"]),
                 "--format", "md") / "report.md").read_text()
    assert md.count("In parentheses: the difference from demo-samples in points, paired") == 1
    assert "(+20.83 [-4.2, +41.7])" in md


def test_evalplus_results_give_every_metric_their_samples_allow(tmp_path):
    """Two samples a task: the evalplus file's row has pass@1 and pass@2 (avg@2, at n, is
    pass@1: one column), each equal to `codea1 evaluate --k 1,2` on the same samples."""
    data = shared_file("humanevalplus", "HumanEvalPlus-v0.1.10.jsonl.gz")
    tasks = {r["task_id"]: r for r in map(json.loads, gzip.open(data, "rt")) if r["task_id"] in
             ("HumanEval/0", "HumanEval/2", "HumanEval/4")}
    wrong = "    return None\n"
    samples = tmp_path / "he.jsonl"
    samples.write_text("".join(json.dumps({"task_id": t, "completion": c}) + "\n" for t, c in [
        ("HumanEval/0", tasks["HumanEval/0"]["canonical_solution"]), ("HumanEval/0", wrong),
        ("HumanEval/2", wrong), ("HumanEval/2", tasks["HumanEval/2"]["canonical_solution"]),
        ("HumanEval/4", wrong), ("HumanEval/4", wrong)]))
    assert main(["evaluate", "--benchmark", "humaneval+", "--data", str(data), "--samples", str(samples), "--k", "1,2",
                 "--tasks", ",".join(tasks), "--out", str(tmp_path / "ours"), "--no-progress"]) == 0
    found = next((tmp_path / "ours").glob("*_eval_results.json"), None) or next(tmp_path.glob("*_eval_results.json"))
    theirs = tmp_path / "evalplus_eval_results.json"
    theirs.write_text(found.read_text())
    import pandas as pd

    code = pd.read_csv(report([tmp_path / "ours", theirs], tmp_path / "r", "--format", "csv") / "code.csv",
                       index_col="label")
    columns = ["humaneval+ pass@1", "humaneval+ pass@2"]
    assert [c for c in code.columns if c.startswith("humaneval+") and not c.endswith((" low", " high"))] == columns
    assert code.loc["evalplus", columns].tolist() == pytest.approx([1 / 3, 2 / 3])
    assert code.loc["evalplus", columns].tolist() == pytest.approx(code.loc["ours", columns].tolist())


def test_latex_tables_are_well_formed_and_compile_when_tex_is_installed(evaluation_report, tmp_path):
    import pandas as pd

    tex = (evaluation_report / "report.tex").read_text()
    tabulars = re.findall(r"\\begin\{tabular\}\{([lr]+)\}(.*?)\\end\{tabular\}", tex, re.S)
    assert len(tabulars) == 4  # code, tests, best-of-n, runs
    for spec, body in tabulars:
        body = re.sub(r"\\shortstack\[[lr]\]\{[^{}]*\}", "header", body)  # a header stacked word by word
        rows = [r for r in body.split("\\\\") if r.strip() and r.strip() != "\\hline"]
        for row in rows:
            cells = re.split(r"(?<!\\)&", row.replace("\\hline", ""))
            assert len(cells) == len(spec), (spec, row)
        assert body.count("{") == body.count("}")
    ranked = [r for t in ("code", "tests", "best_of_n") for r in
              pd.read_csv(evaluation_report / f"{t}.csv")["rank"].dropna() for r in r.split(";")]
    assert tex.count("\\textbf{") == sum(r.endswith(":1") for r in ranked)
    assert tex.count("\\underline{") == sum(r.endswith(":2") for r in ranked)
    shutil.copy(evaluation_report / "report.tex", tmp_path / "report.tex")
    compile_latex(tmp_path)  # skips without a TeX engine: the tabulars were checked by shape
    assert (tmp_path / "report.pdf").stat().st_size > 1000


def compile_latex(folder: Path) -> str:
    """pdflatex on folder/report.tex; its log."""
    engine = shutil.which("pdflatex")
    if engine is None:
        pytest.skip("no TeX engine installed (apt-get install texlive-latex-base)")
    done = subprocess.run([engine, "-interaction=nonstopmode", "-halt-on-error", "report.tex"], cwd=folder,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-3000:]
    return (folder / "report.log").read_text(errors="replace")


def test_every_latex_table_fits_the_page(report_runs, train_runs, sft_runs, tmp_path):
    """The widest tables (test generation: ten metrics; training: rewards, pass rates, the
    Mistake Book, sft losses and the ablation axes) compile within the text's width: headers
    stacked, a table still too wide scaled to it. Without that they overrun by hundreds of
    points ("Overfull \\hbox")."""
    runs = [*report_runs.values(), *train_runs.values(), *sft_runs.values()]
    out = report(runs, tmp_path / "r", "--format", "tex", "--baseline", str(train_runs["code-a1-alpha0.5"]))
    tex = (out / "report.tex").read_text()
    assert "\\subsection*{Training (the last steps)}" in tex and "\\shortstack[r]{\\strut R\\_C\\\\\\strut (\\%)}" in tex
    log = compile_latex(out)
    assert "Overfull \\hbox" not in log, re.findall(r"Overfull \\hbox.*", log)


def test_report_errors_name_what_is_wrong(report_runs, tmp_path, capsys):
    a, b = str(report_runs["demo-samples"]), str(report_runs["model-b"])
    cases = [
        (["report", a, "--format", "md,htm", "--out", str(tmp_path / "o")], "unknown reporter 'htm'; did you mean 'html'"),
        (["report", a, "--name", "nope=x", "--out", str(tmp_path / "o")], "--name nope=x: 'nope' is not one of the runs"),
        (["report", a, "--baseline", "nobody", "--out", str(tmp_path / "o")], "--baseline nobody: neither a run given"),
        (["report", a, b, "--name", f"{a}=same", "--name", f"{b}=same", "--out", str(tmp_path / "o")],
         "both fill row 'same', column 'demo pass@1'"),
        (["report", str(tmp_path / "empty"), "--out", str(tmp_path / "o")], "not a run directory (no config.json)"),
    ]
    (tmp_path / "empty").mkdir()
    for argv, message in cases:
        capsys.readouterr()
        assert main(argv) == 2, argv
        assert message in capsys.readouterr().err, argv
        assert not (tmp_path / "o").exists()
    report([a], tmp_path / "o", "--format", "md")
    assert main(["report", a, "--out", str(tmp_path / "o")]) == 2
    assert "is not empty: pass --overwrite" in capsys.readouterr().err
    report([a], tmp_path / "o", "--format", "md", "--overwrite")


def test_a_third_party_reporter_plugs_in_by_name(report_runs, tmp_path):
    plugin = tmp_path / "json_reporter.py"
    plugin.write_text(
        "import json\n"
        "from codea1.api import Reporter, hookimpl\n\n"
        "class JsonReporter(Reporter):\n"
        "    name = 'json'\n"
        "    description = 'tables as JSON'\n\n"
        "    def write(self, report, out_dir):\n"
        "        path = out_dir / 'report.json'\n"
        "        path.write_text(json.dumps({t.name: {r: {c: t.cell(r, c) for c in t.frame.columns}\n"
        "                                               for r in t.frame.index} for t in report.tables}))\n"
        "        return [path]\n\n"
        "@hookimpl\n"
        "def codea1_register_reporters(registry):\n"
        "    registry.add(JsonReporter)\n")
    assert main(["--plugin", str(plugin), "report", str(report_runs["demo-samples"]), "--format", "json,md",
                 "--out", str(tmp_path / "r")]) == 0
    tables = json.loads((tmp_path / "r" / "report.json").read_text())
    assert tables["code"]["demo-samples"]["demo pass@1"] == "70.83 [58.3, 83.3]"
    assert (tmp_path / "r" / "report.md").exists()


def test_builtin_reporters_are_listed(plugins):
    assert {"md", "csv", "tex", "html"} <= set(plugins.reporters.names())
    assert (ROOT / "reports" / "html_report.py").exists()


def test_a_run_that_failed_in_this_process_is_interrupted_not_in_progress(tmp_path):
    """A run aborted by an exception in a process that lives on (a library call, a notebook)
    is not "in progress": its marker loses its owner."""
    from codea1.harness.runstore import run_status

    plugin = tmp_path / "abort_plugin.py"
    plugin.write_text("from codea1.api import hookimpl\n\n"
                      "@hookimpl\n"
                      "def codea1_run_started(config, out_dir):\n"
                      "    raise RuntimeError('plugin bug')\n")
    with pytest.raises(RuntimeError, match="plugin bug"):
        main(["--plugin", str(plugin), "evaluate", "--benchmark", "demo", "--out", str(tmp_path / "run"),
              "--no-progress"])
    assert (tmp_path / "run" / "running.json").exists() and run_status(tmp_path / "run") == "interrupted"
    assert main(["evaluate", "--benchmark", "demo", "--out", str(tmp_path / "run"), "--no-progress"]) == 0
    assert run_status(tmp_path / "run") == "complete" and not (tmp_path / "run" / "running.json").exists()


def test_a_column_declared_lower_is_better_ranks_its_lowest_first():
    import pandas as pd

    from codea1.harness.flows.report import rank
    from codea1.harness.reporting import Table

    frame = pd.DataFrame({"error": [0.3, 0.1, 0.2], "score": [0.3, 0.1, 0.2]}, index=["a", "b", "c"]).astype(object)
    table = Table("t", "t", frame, metric_columns=["error", "score"], lower_better=["error"])
    rank(table)
    assert (table.ranks[("b", "error")], table.ranks[("c", "error")]) == (1, 2) and ("a", "error") not in table.ranks
    assert (table.ranks[("a", "score")], table.ranks[("c", "score")]) == (1, 2)
