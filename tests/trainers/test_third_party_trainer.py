"""A trainer defined outside the project (docs/plugins.md's walk-through, run as written there)
trains through the real ``codea1`` command, and its declared step-log columns and figure
reach ``codea1 report`` and ``codea1 show`` without the core knowing its keys."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
from conftest import ROOT, codea1_command


def docs_trainer() -> str:
    """The trainer of docs/plugins.md's "Writing a trainer": the python block after
    "Save it as `rft_trainer.py`"."""
    text = (ROOT / "docs" / "plugins.md").read_text()
    after = text[text.index("Save it as `rft_trainer.py`"):]
    return re.search(r"```python\n(.*?)```", after, re.S).group(1)


def codea1(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    done = subprocess.run([*codea1_command(), *args], cwd=cwd, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    return done


@pytest.fixture(scope="module")
def rft_run(tiny_model, tmp_path_factory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("rft")
    plugin = root / "rft_trainer.py"
    plugin.write_text(docs_trainer())
    (root / "rft.toml").write_text(f"""
[train]
trainer = "rft"
steps = 2
batch_size = 2
[benchmark]
name = "demo"
[executor]
workers = 2
[trainer]
m = 2
[policies.code]
model = "{tiny_model}"
max_tokens = 24
""")
    codea1(root, "--plugin", str(plugin), "train", "--config", "rft.toml", "--out", "run", "--no-progress")
    return plugin, root / "run"


def test_its_columns_legend_and_figure_reach_the_report(rft_run, tmp_path):
    pd = pytest.importorskip("pandas")
    plugin, run = rft_run
    rows = [json.loads(line) for line in (run / "steps.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [1, 2] and all(0.0 <= r["kept_rate"] <= 1.0 for r in rows)
    assert set(rows[0]["timing"]) >= {"generate_s", "execute_s"}  # its phases, timed by ctx.phase
    codea1(tmp_path, "--plugin", str(plugin), "report", str(run), "--out", "report", "--format", "csv,md")
    training = pd.read_csv(tmp_path / "report" / "training.csv", index_col="label")
    assert training.at["run", "trainer"] == "rft" and training.at["run", "steps"] == 2
    assert training.at["run", "kept_rate"] == pytest.approx(rows[-1]["kept_rate"])
    md = (tmp_path / "report" / "report.md").read_text()
    assert "kept: share of sampled programs that pass every golden test" in md
    assert "kept (%)" in md  # a fraction: shown in %, under its short label
    assert (tmp_path / "report" / "figures" / "rejection_sampling.png").read_bytes()[:4] == b"\x89PNG"


def test_show_prints_its_declared_values(rft_run, tmp_path):
    plugin, run = rft_run
    last = json.loads((run / "steps.jsonl").read_text().splitlines()[-1])
    out = codea1(tmp_path, "--plugin", str(plugin), "show", str(run)).stdout
    assert f"last step (2): kept_rate {last['kept_rate']:.4g}" in out


def test_without_its_plugin_the_report_says_so_and_shows_the_steps(rft_run, tmp_path):
    pd = pytest.importorskip("pandas")
    _, run = rft_run
    codea1(tmp_path, "report", str(run), "--out", "report", "--format", "csv,md")
    md = (tmp_path / "report" / "report.md").read_text()
    assert "trainer 'rft' is not installed: its step-log columns are not shown" in md
    training = pd.read_csv(tmp_path / "report" / "training.csv", index_col="label")
    assert training.at["run", "steps"] == 2 and "kept_rate" not in training.columns
    assert not (tmp_path / "report" / "figures" / "rejection_sampling.png").exists()
