"""The metric of docs/plugins.md's "Writing a metric", cut out of the guide as it is written
there, loaded with `codea1 --plugin` and run by a real `codea1 evaluate`."""

from __future__ import annotations

import json
import subprocess

from conftest import ROOT, codea1_command


def guide_block(section: str) -> str:
    guide = (ROOT / "docs" / "plugins.md").read_text()
    text = guide[guide.index(section):]
    start = text.index("```python\n") + len("```python\n")
    return text[start:text.index("\n```", start)]


def test_the_metric_example_of_the_plugin_guide_works_as_a_plugin_file(tmp_path):
    plugin = tmp_path / "solved_metric.py"
    plugin.write_text(guide_block("## Writing a metric"))
    wrong = {"demo/0": "def digit_sum(n):\n    return 0\n", "demo/1": "def is_palindrome(text):\n    return False\n"}
    right = "def digit_sum(n: int) -> int:\n    return sum(int(c) for c in str(n))\n"
    # demo/0: a wrong sample, then a right one; demo/1: two wrong ones (is_palindrome('') is True fails)
    rows = [("demo/0", wrong["demo/0"]), ("demo/0", right), ("demo/1", wrong["demo/1"]), ("demo/1", wrong["demo/1"])]
    samples = tmp_path / "samples.jsonl"
    samples.write_text("".join(json.dumps({"task_id": t, "solution": s}) + "\n" for t, s in rows))
    out = tmp_path / "run"
    r = subprocess.run(codea1_command() + ["--plugin", str(plugin), "evaluate", "--benchmark", "demo", "--samples",
                                           str(samples), "--tasks", "demo/0,demo/1", "--k", "1,2,3", "--no-progress",
                                           "--out", str(out)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    lines = {line.split()[0]: line for line in r.stdout.splitlines() if line.startswith("  solved@")}
    assert "0.00%" in lines["solved@1"] and "50.00%" in lines["solved@2"]  # neither first sample; demo/0's second
    assert "n/a" in lines["solved@3"] and "2 task(s) have fewer than 3 samples" in lines["solved@3"]
    printed = [line.split()[0] for line in r.stdout.splitlines() if line.startswith("  ") and "@" in line.split()[0]]
    assert printed.index("solved@1") > printed.index("pass@1")  # order = 50: after the built-in figures
    results = json.loads((out / "results.json").read_text())
    assert results["metrics"]["solved@1"] == 0.0 and results["metrics"]["solved@2"] == 0.5
    assert "fewer than 3 samples" in results["metric_notes"]["solved@3"]
    assert results["tasks"]["demo/0"]["solved@2"] == 1.0 and results["tasks"]["demo/1"]["solved@2"] == 0.0
    assert results["metrics"]["pass@1"] == 0.25  # the built-in figures are unchanged beside it
