"""Packaging: one installed top-level package (``codea1``), every source package listed, and a
plugin written as docs/plugins.md shows, loaded as a --plugin file and as the entry point of
a throwaway distribution installed in a fresh virtual environment."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import tomllib
from conftest import ROOT

PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def guide_example(heading: str) -> str:
    guide = (ROOT / "docs" / "plugins.md").read_text()
    section = guide[guide.index(heading):]
    start = section.index("```python\n") + len("```python\n")
    return section[start:section.index("\n```", start)] + "\n"


def source_packages() -> set[str]:
    """Every folder with an __init__.py under the mapped top-level folders, as its installed
    name."""
    mapping = PYPROJECT["tool"]["setuptools"]["package-dir"]
    names = set()
    for package, folder in mapping.items():
        for init in (ROOT / folder).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT / folder)
            names.add(".".join([package, *rel.parts]))
    return names


def test_every_source_package_is_listed_for_installation():
    assert set(PYPROJECT["tool"]["setuptools"]["packages"]) == source_packages()


def test_the_wheel_holds_only_codea1(tmp_path):
    """`pip wheel --no-deps .`: codea1/... and the dist-info, nothing else (no top-level
    harness, plugins, benchmarks, ... to collide with other distributions)."""
    src = tmp_path / "src"
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT, capture_output=True, text=True,
                           check=True).stdout.split()
    for f in files:
        if (ROOT / f).is_file():
            (src / f).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / f, src / f)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", ".", "-w",
                    str(tmp_path / "dist")], cwd=src, check=True, capture_output=True, timeout=600)
    wheel, = (tmp_path / "dist").glob("codea1-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/", 1)[0] for n in names}
    assert tops == {"codea1", next(t for t in tops if t.endswith(".dist-info"))}, tops
    for expected in ("codea1/__init__.py", "codea1/api.py", "codea1/harness/flows/evaluate.py",
                     "codea1/harness/command.py", "codea1/harness/commands/evaluate.py",
                     "codea1/harness/sandbox/zygote.py", "codea1/harness/prompts/paper.toml",
                     "codea1/plugins/executors/subprocess.py", "codea1/benchmarks/demo/samples.jsonl"):
        assert expected in names, expected

    # Installed from the wheel (not editable) and run from a checkout's root, whose bare codea1/
    # folder is not the package: the sandbox's zygotes still import the installed one.
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, capture_output=True, timeout=300)
    python = venv / "bin" / "python"
    install = subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)],
                             capture_output=True, text=True, timeout=600)
    assert install.returncode == 0, install.stderr
    assert (venv / "bin" / "codea1").exists(), install.stdout
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    # Then this environment's packages (pluggy, tqdm, ...) on the path, after the new one's own
    # (written after the install, so that pip did not take this environment's codea1 for it); its
    # .pth files are not run, so an editable codea1 of this environment stays out of sight.
    Path(site, "zz_parent.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    run = subprocess.run([str(venv / "bin" / "codea1"), "evaluate", "--benchmark", "demo", "--out",
                          str(tmp_path / "run"), "--no-progress"], capture_output=True, text=True, env=env, cwd=src,
                         timeout=600)
    assert run.returncode == 0, run.stderr
    assert json.loads((tmp_path / "run" / "results.json").read_text())["counts"]["sandbox_error"] == 0


def demo_samples(path: Path) -> Path:
    rows = [{"task_id": "squares/0", "solution": "def square(x):\n    return x ** 2\n"},
            {"task_id": "squares/1", "solution": "def cube(x):\n    return x * x\n"}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_the_guides_benchmark_loads_as_a_plugin_file(tmp_path):
    plugin = tmp_path / "squares.py"
    plugin.write_text(guide_example("## Writing a benchmark"))
    env = {**os.environ, "CODEA1_DISABLE_PLUGIN_AUTOLOAD": "1"}
    run = subprocess.run([sys.executable, "-m", "codea1", "--plugin", str(plugin), "evaluate", "--benchmark", "squares",
                          "--samples", str(demo_samples(tmp_path / "s.jsonl")), "--out", str(tmp_path / "run"),
                          "--no-progress"], capture_output=True, text=True, env=env, timeout=300)
    assert run.returncode == 0, run.stderr
    assert json.loads((tmp_path / "run" / "results.json").read_text())["metrics"]["pass@1"] == 0.5


def test_the_guides_command_loads_as_a_plugin_file(tmp_path):
    plugin = tmp_path / "count.py"
    plugin.write_text(guide_example("## Writing a command"))
    run = subprocess.run([sys.executable, "-m", "codea1", "--plugin", str(plugin), "count-tasks", "--benchmark", "demo"],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "12"


def test_the_guides_benchmark_as_an_installed_entry_point(tmp_path):
    """A throwaway distribution whose module is the guide's example, with a `codea1` entry
    point, pip-installed into a new virtual environment that sees this one's packages."""
    package = tmp_path / "pkg"
    (package / "squares_plugin").mkdir(parents=True)
    (package / "squares_plugin" / "__init__.py").write_text(guide_example("## Writing a benchmark"))
    (package / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools>=68"]\nbuild-backend = "setuptools.build_meta"\n\n'
        '[project]\nname = "squares-plugin"\nversion = "0.3.0"\n\n'
        '[project.entry-points.codea1]\nsquares = "squares_plugin"\n')
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, capture_output=True, timeout=300)
    python = venv / "bin" / "python"
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    # This environment's packages (codea1 among them, editable or not) become visible in the
    # new one through a .pth hook, so nothing is downloaded.
    Path(site, "codea1_parent.pth").write_text(f"import site; site.addsitedir({sysconfig.get_paths()['purelib']!r})\n")
    install = subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
                              "--no-index", str(package)], capture_output=True, text=True, timeout=600)
    assert install.returncode == 0, install.stderr
    env = {k: v for k, v in os.environ.items() if k not in ("CODEA1_DISABLE_PLUGIN_AUTOLOAD", "PYTHONPATH")}
    listing = subprocess.run([str(python), "-m", "codea1", "plugins", "--json"], capture_output=True, text=True,
                             env=env, cwd=tmp_path, timeout=300)
    assert listing.returncode == 0, listing.stderr
    rows = {(r["kind"], r["name"]): r for r in json.loads(listing.stdout)}
    assert rows[("benchmark", "squares")]["distribution"] == "squares-plugin 0.3.0"
    run = subprocess.run([str(python), "-m", "codea1", "evaluate", "--benchmark", "squares", "--samples",
                          str(demo_samples(tmp_path / "s.jsonl")), "--out", str(tmp_path / "run"), "--no-progress"],
                         capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert run.returncode == 0, run.stderr
    assert json.loads((tmp_path / "run" / "results.json").read_text())["metrics"]["pass@1"] == 0.5
