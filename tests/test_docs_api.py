"""docs/api.md, run as written: its Python blocks, in order, as one script in a fresh
directory (evaluate, evaluate-tests and report on the demo set), printing what the page says
they print."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
from conftest import ROOT

for module, extra in (("pandas", "report"), ("matplotlib", "report"), ("cosmic_ray", "mutation"),
                      ("coverage", "mutation")):
    pytest.importorskip(module, reason=f"{module} is not installed (pip install 'codea1[{extra}]')")


def test_the_python_api_page_runs_as_written(tmp_path):
    page = (ROOT / "docs" / "api.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", page, re.S)
    assert len(blocks) >= 4  # plugins, evaluate, evaluate-tests, report
    shown = page[page.index("It prints, all together:"):]
    shown = re.search(r"```text\n(.*?)```", shown, re.S).group(1)
    script = tmp_path / "api_example.py"
    script.write_text("\n".join(blocks))
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout == shown
    for run in ("demo", "demo-tests"):  # the run directories the commands would have written
        assert {"results.json", "config.json"} <= {p.name for p in (tmp_path / "runs" / run).iterdir()}
    assert (tmp_path / "runs" / "report" / "report.md").exists()
