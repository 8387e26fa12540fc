"""The HTML report in a real headless Chromium (Debian's chromium; .ci/run installs it): a
screenshot, and the rendered DOM checked from inside the page: every table and every image
has a non-zero size, no image is broken, the per-task details open, and the page asks for
nothing outside itself."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from codea1.harness.cli import main

pytest.importorskip("pandas", reason="pandas is not installed (pip install 'codea1[report]')")
pytest.importorskip("matplotlib", reason="matplotlib is not installed (pip install 'codea1[report]')")
pytestmark = pytest.mark.xdist_group("reports")

# Run inside the page once it loaded: open the folded details, then measure what rendered.
PROBE = """
<script>
window.addEventListener("load", () => {
  document.querySelectorAll("details").forEach(d => { d.open = true; });
  const size = e => { const r = e.getBoundingClientRect(); return [Math.round(r.width), Math.round(r.height)]; };
  const out = {
    tables: [...document.querySelectorAll("table")].map(t => ({id: t.id, size: size(t), rows: t.rows.length,
                                                               room: t.parentElement.clientWidth})),
    viewport: document.documentElement.clientWidth,
    images: [...document.querySelectorAll("img")].map(i => ({alt: i.alt, complete: i.complete,
                                                             natural: [i.naturalWidth, i.naturalHeight], size: size(i)})),
    bold: document.querySelectorAll("td.best").length,
    underlined: getComputedStyle(document.querySelector("td.second") || document.body).textDecorationLine,
  };
  const pre = document.createElement("pre");
  pre.id = "probe";
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>
"""


def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if shutil.which(name):
            return shutil.which(name)
    pytest.skip("no Chromium installed (apt-get install chromium): the HTML report is not opened in a browser")


def headless(*args: str) -> subprocess.CompletedProcess:
    # root in a container: Chromium's own sandbox cannot start, so --no-sandbox
    return subprocess.run([chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                           "--allow-file-access-from-files", *args], capture_output=True, text=True, timeout=180)


def test_html_report_renders_in_chromium(report_runs, train_runs, sft_runs, tmp_path):
    out = tmp_path / "report"
    assert main(["report", *map(str, [*report_runs.values(), *train_runs.values(), *sft_runs.values()]),
                 "--format", "html", "--baseline", str(report_runs["demo-samples"]), "--out", str(out)]) == 0
    page = out / "report.html"
    html = page.read_text()
    assert not re.search(r"""(src|href)=["']?(https?:|//)""", html) and "<link" not in html and "<script" not in html
    expected_tables = html.count("<table")
    expected_images = html.count("<img")
    assert expected_tables >= 8 and expected_images == 8

    shot = tmp_path / "report.png"
    done = headless(f"--screenshot={shot}", "--window-size=1280,3000", page.as_uri())
    assert done.returncode == 0 and shot.exists() and shot.stat().st_size > 20_000, done.stderr[-2000:]
    print(f"\nscreenshot of the HTML report: {shot}")

    probe = tmp_path / "probe.html"
    probe.write_text(html.replace("</body>", PROBE + "</body>"))
    done = headless("--dump-dom", "--virtual-time-budget=10000", "--window-size=1280,3000", probe.as_uri())
    assert done.returncode == 0, done.stderr[-2000:]
    found = re.search(r'<pre id="probe">(.*?)</pre>', done.stdout, re.S)
    assert found, done.stdout[-2000:]
    rendered = json.loads(found.group(1).replace("&quot;", '"').replace("&amp;", "&").replace("&lt;", "<")
                          .replace("&gt;", ">"))
    assert len(rendered["tables"]) == expected_tables
    for table in rendered["tables"]:
        assert table["size"][0] > 0 and table["size"][1] > 0 and table["rows"] >= 2, table
        # the page's width holds every table, the training table's columns too: none scrolls
        assert table["size"][0] <= table["room"] <= rendered["viewport"], table
    assert len(rendered["images"]) == expected_images
    for image in rendered["images"]:
        assert image["complete"] and image["natural"][0] > 300 and image["natural"][1] > 200, image
        assert image["size"][0] > 0 and image["size"][1] > 0, image
    # ranks follow significance: as many bold cells as the page ranks first, the second underlined
    assert rendered["bold"] == len(re.findall(r'<td class="[^"]*\bbest\b', html))
    assert rendered["underlined"] == ("underline" if re.search(r'<td class="[^"]*\bsecond\b', html) else "none")
    assert {t["id"] for t in rendered["tables"]} >= {"table-code", "table-tests", "table-best_of_n", "table-training",
                                                     "table-training_evaluation", "table-runs", "table-tasks-demo"}
    Path(tmp_path / "probe.json").write_text(json.dumps(rendered, indent=1))
