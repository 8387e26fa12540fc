"""Zygotes start wherever the interpreter and codea1 live: a virtual environment or
a checkout made in /tmp or /var/tmp (as CI jobs and first tries do) is shown to firejail's and
bubblewrap's zygotes on top of their private /tmp, while the rest of /tmp stays hidden; a
wrapper that cannot start a zygote ends the run with one line, not a traceback."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import codea1_command

import codea1
from codea1.harness.plugin_manager import BUILTIN_PLUGINS

WRAPPERS = [("firejail", "firejail"), ("bubblewrap", "bwrap")]

# Run by the interpreter under test: each run's job on a fresh executor, judged; prints the
# verdicts and where that interpreter imported codea1's harness from.
DRIVER = """
import json, sys
from codea1.harness.verdicts.asserts import parse_asserts
from codea1.harness.verdicts.execution import run_jobs
from codea1.harness.verdicts.expected import settle_tests
from codea1.harness.verdicts.judge import judge
from codea1.harness.plugin_manager import load_plugins
from codea1.harness.records import ExecJob

spec = json.loads(sys.argv[1])
plugins = load_plugins(autoload=False)
verdicts = []
for run in spec["runs"]:
    with plugins.executors.create(spec["executor"], {"landlock": run["landlock"]}, workers=1) as executor:
        tests, _ = parse_asserts(run["asserts"], "f", allow_other_forms=True)
        job = ExecJob(job_id="t", code=run["code"], tests=settle_tests(executor, tests), entry_point="f",
                      time_limits=[30.0] * len(tests), batch_timeout=60.0, memory_mb=1024)
        verdict = judge("task", 0, job, run_jobs(executor, [job])["t"])
    verdicts.append([verdict.status, verdict.message])
print(json.dumps({"harness": sys.modules["codea1.harness"].__file__, "verdicts": verdicts}))
"""

# What the program sees: the decoys' contents (None where it cannot read them), the
# interpreter's prefix and the file its zygote imported codea1's harness from.
LOOK_AROUND = """def f(x):
    import sys
    seen = []
    for path in DECOYS:
        try:
            seen.append(open(path).read())
        except OSError:
            seen.append(None)
    return [seen, sys.prefix, sys.modules["codea1.harness"].__file__]
"""

PROBE = "codea1_paths_probe"  # a module only the virtual environment's site-packages holds


def copy_codea1(folder: Path) -> Path:
    """codea1 as a wheel lays it out (its subpackages inside its folder) in ``folder``; the
    copy's ``harness/__init__.py``."""
    ignore = shutil.ignore_patterns("__pycache__")
    target = folder / "codea1"
    shutil.copytree(Path(codea1.__file__).parent, target, ignore=ignore)
    for name in sorted({module.split(".")[1] for module in BUILTIN_PLUGINS}):
        if not (target / name).exists():  # an editable checkout keeps them beside codea1/
            shutil.copytree(importlib.util.find_spec(f"codea1.{name}").submodule_search_locations[0],
                            target / name, ignore=ignore)
    return target / "harness" / "__init__.py"


@dataclass
class Layout:
    python: str  # the interpreter that runs the harness
    env: dict
    prefix: str  # its sys.prefix
    harness: str  # the file it imports codea1.harness from
    site_in_tmp: bool  # whether its site-packages (with the probe module) lies in the scratch directory


def venv_with_codea1(base: Path) -> Layout:
    """A virtual environment in ``base`` (no pip: it takes a second) with codea1 copied into
    its site-packages, the probe module beside it, and the dependencies found through a .pth
    file naming this interpreter's site-packages."""
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = venv / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages"
    assert site.is_dir(), site
    init = copy_codea1(site)
    (site / f"{PROBE}.py").write_text("VALUE = 42\n")
    deps = [p for p in sys.path if os.path.basename(p) in ("site-packages", "dist-packages") and os.path.isdir(p)]
    (site / "codea1-test-deps.pth").write_text("".join(p + "\n" for p in deps))
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    return Layout(str(venv / "bin" / "python"), env, str(venv), str(init), site_in_tmp=True)


def checkout_with_codea1(base: Path) -> Layout:
    """codea1's code in a folder of ``base`` that is no site-packages, on PYTHONPATH, run by
    this interpreter (its virtual environment elsewhere): the zygote imports codea1 from
    /tmp, as from a clone made there and installed editable."""
    checkout = base / "checkout"
    init = copy_codea1(checkout)
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    return Layout(sys.executable, env, sys.prefix, str(init), site_in_tmp=False)


LAYOUTS = {"venv in /tmp": ("/tmp", venv_with_codea1), "venv in /var/tmp": ("/var/tmp", venv_with_codea1),
           "checkout in /tmp": ("/tmp", checkout_with_codea1)}


@pytest.fixture(params=list(LAYOUTS))
def scratch(request):
    """A fresh directory in the layout's root (/tmp or /var/tmp), removed afterwards; open
    to all as `mkdir` or `python -m venv` leave it (mkdtemp's 0700 would keep a sandbox's
    other user out)."""
    root = LAYOUTS[request.param][0]
    if not os.access(root, os.W_OK):
        pytest.skip(f"{root} is not writable here")
    path = Path(tempfile.mkdtemp(prefix="codea1-paths-", dir=root))
    path.chmod(0o755)
    yield request.param, path
    shutil.rmtree(path, ignore_errors=True)


@pytest.mark.parametrize("name,binary", WRAPPERS)
def test_a_zygote_starts_from_tmp_and_the_rest_of_tmp_stays_hidden(name, binary, scratch):
    """The interpreter's prefix, its site-packages and codea1's code lie in /tmp or /var/tmp:
    the wrapped zygote starts from them and runs a job; without Landlock, files beside them
    and in /tmp stay out of the program's view; with Landlock, it still imports from a
    site-packages there."""
    if shutil.which(binary) is None:
        pytest.skip(f"{binary} is not installed (apt-get install {name})")
    layout_name, base = scratch
    layout = LAYOUTS[layout_name][1](base)
    decoys = [base / "decoy.txt"]
    decoys[0].write_text("hunter2")
    with tempfile.NamedTemporaryFile("w", prefix="codea1-decoy-", dir="/tmp", delete=False) as fh:
        fh.write("hunter2")
    decoys.append(Path(fh.name))
    try:
        expected = [[None] * len(decoys), layout.prefix, layout.harness]
        runs = [{"landlock": "false", "code": LOOK_AROUND.replace("DECOYS", repr([str(p) for p in decoys])),
                 "asserts": f"assert f(0) == {expected!r}"}]
        if layout.site_in_tmp:
            runs.append({"landlock": "true", "code": f"def f(x):\n    import {PROBE}\n    return {PROBE}.VALUE\n",
                         "asserts": "assert f(0) == 42"})
        done = subprocess.run([layout.python, "-c", DRIVER, json.dumps({"executor": name, "runs": runs})],
                              env=layout.env, cwd=base, capture_output=True, text=True, timeout=300)
    finally:
        decoys[1].unlink()
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.splitlines()[-1])
    assert report["harness"] == layout.harness  # the run really uses the copy in the scratch directory
    assert report["verdicts"] == [["pass", ""]] * len(runs)


@pytest.mark.parametrize("name,binary", WRAPPERS)
def test_a_wrapper_that_cannot_start_ends_the_run_with_one_line(name, binary, tmp_path):
    """A sandbox tool that fails to start the zygote (here: a stand-in that fails as a real
    one does in a container without user namespaces): ``ExecutorUnavailable``, one line
    with the tool's own reason and what to try, exit status 2."""
    reason = f"{binary}: No permissions to create a new namespace"
    tool = tmp_path / "bin" / binary
    tool.parent.mkdir()
    tool.write_text(f"#!/bin/sh\necho 'warming up' >&2\necho '{reason}.' >&2\nexit 1\n")
    tool.chmod(0o755)
    done = subprocess.run([*codea1_command(), "evaluate", "--benchmark", "demo", "--tasks", "demo/0", "--executor",
                           name, "--workers", "1", "--out", str(tmp_path / "run"), "--no-progress"],
                          env={**os.environ, "PATH": f"{tool.parent}{os.pathsep}{os.environ['PATH']}"},
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 2, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert done.stderr.startswith(f"codea1: error: executor {name!r} could not start its zygote: ")
    assert f"{reason}; " in done.stderr and "--executor subprocess" in done.stderr
