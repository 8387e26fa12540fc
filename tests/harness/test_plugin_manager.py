"""Plugin discovery: built-ins, a real entry point of an installed distribution, --plugin
files, the autoload switch, and "did you mean" for unknown names."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, codea1_command

from codea1.harness.plugin_manager import PluginLoadError, load_plugins
from codea1.harness.registry import OptionError, UnknownPluginError

THIRDPARTY = Path(__file__).resolve().parents[1] / "data" / "thirdparty" / "codea1_thirdparty_demo.py"


@pytest.fixture
def site_with_distribution(tmp_path):
    """A directory holding an installed distribution (dist-info with entry points), exactly
    as pip leaves one in site-packages."""
    site = tmp_path / "site"
    dist = site / "codea1_thirdparty_demo-1.2.3.dist-info"
    dist.mkdir(parents=True)
    shutil.copy(THIRDPARTY, site / THIRDPARTY.name)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: codea1-thirdparty-demo\nVersion: 1.2.3\n")
    (dist / "entry_points.txt").write_text("[codea1]\nthirdparty = codea1_thirdparty_demo\n")
    (dist / "RECORD").write_text("")
    return site


def run_cli(args, site=None, env_extra=None, cwd=None):
    env = {k: v for k, v in os.environ.items() if k != "CODEA1_DISABLE_PLUGIN_AUTOLOAD"}
    env["PYTHONPATH"] = os.pathsep.join([str(p) for p in (site, ROOT) if p] + [env.get("PYTHONPATH", "")])
    env.update(env_extra or {})
    return subprocess.run(codea1_command() + args, capture_output=True, text=True, env=env, cwd=cwd, timeout=300)


def test_builtins_are_listed_by_kind(plugins):
    rows = {(r["kind"], r["name"]): r for r in plugins.listing()}
    for key in [("executor", "subprocess"), ("metric", "pass@k"), ("metric", "avg@k")] + \
               [("benchmark", b) for b in ("humaneval+", "mbpp+", "bigcodebench", "ult", "kodcode", "demo")]:
        assert key in rows, key
        assert rows[key]["distribution"] == "codea1 (built-in)"


def test_entry_point_plugin_is_discovered_and_selected_by_name(site_with_distribution, tmp_path):
    listing = run_cli(["plugins", "--json"], site=site_with_distribution)
    assert listing.returncode == 0, listing.stderr
    rows = {(r["kind"], r["name"]): r for r in json.loads(listing.stdout)}
    assert rows[("executor", "single-worker")]["distribution"] == "codea1-thirdparty-demo 1.2.3"
    assert rows[("benchmark", "tiny")]["distribution"] == "codea1-thirdparty-demo 1.2.3"

    samples = tmp_path / "samples.jsonl"
    samples.write_text(json.dumps({"task_id": "tiny/0", "solution": "def double(x):\n    return x + x\n"}) + "\n" +
                       json.dumps({"task_id": "tiny/1", "solution": "def neg(x):\n    return x\n"}) + "\n")
    run = run_cli(["evaluate", "--benchmark", "tiny", "--executor", "single-worker", "--samples", str(samples),
                   "--out", str(tmp_path / "run"), "--no-progress"], site=site_with_distribution)
    assert run.returncode == 0, run.stderr
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    assert results["executor"] == "single-worker"
    assert results["metrics"]["pass@1"] == 0.5
    env = json.loads((tmp_path / "run" / "environment.json").read_text())
    assert env["executor"]["executor"] == "single-worker" and env["executor"]["workers"] == 1


def test_autoload_can_be_disabled(site_with_distribution):
    off = run_cli(["plugins", "--json"], site=site_with_distribution, env_extra={"CODEA1_DISABLE_PLUGIN_AUTOLOAD": "1"})
    assert off.returncode == 0
    assert "tiny" not in {r["name"] for r in json.loads(off.stdout)}


def test_plugin_from_a_file(tmp_path):
    result = run_cli(["--plugin", str(THIRDPARTY), "plugins", "--json"],
                     env_extra={"CODEA1_DISABLE_PLUGIN_AUTOLOAD": "1"})
    assert result.returncode == 0, result.stderr
    rows = {r["name"]: r for r in json.loads(result.stdout)}
    assert rows["tiny"]["distribution"] == f"file {THIRDPARTY}"
    assert load_plugins([str(THIRDPARTY)], autoload=False).benchmarks.get("tiny").name == "tiny"
    with pytest.raises(PluginLoadError, match="no such file"):
        load_plugins([str(tmp_path / "missing.py")], autoload=False)


def test_unknown_names_suggest_close_ones(plugins):
    with pytest.raises(UnknownPluginError, match=r"unknown executor 'subproces'; did you mean 'subprocess'\?"):
        plugins.executors.get("subproces")
    with pytest.raises(UnknownPluginError, match="did you mean 'humaneval\\+'"):
        plugins.benchmarks.get("humaneval")


def test_cli_unknown_benchmark_fails_clearly():
    result = run_cli(["evaluate", "--benchmark", "mbpp", "--out", "/tmp/unused-codea1"],
                     env_extra={"CODEA1_DISABLE_PLUGIN_AUTOLOAD": "1"})
    assert result.returncode == 2
    assert "did you mean 'mbpp+'" in result.stderr


def test_plugin_options_are_validated_by_each_plugin(plugins):
    with pytest.raises(OptionError, match="executor 'subprocess': unknown option 'netwrk'; did you mean 'network'"):
        plugins.executors.create("subprocess", {"netwrk": "allow"})
    with pytest.raises(OptionError, match="network must be 'isolate' or 'allow'"):
        plugins.executors.create("subprocess", {"network": "open"})
    with pytest.raises(OptionError, match="option 'file_mb': expected an integer, got 'lots'"):
        plugins.executors.create("subprocess", {"file_mb": "lots"})
    with pytest.raises(OptionError, match="split must be"):
        plugins.benchmarks.create("bigcodebench", {"split": "chat"})
    assert plugins.benchmarks.create("bigcodebench", {"split": "instruct"}).options.split == "instruct"


def test_a_plugin_takes_its_options_already_built(plugins):
    """The train flow checks its config once and hands each plugin the Options it built."""
    from codea1.harness.registry import parse_options

    options = parse_options(plugins.benchmarks.get("bigcodebench"), {"split": "instruct"})
    assert plugins.benchmarks.create("bigcodebench", options).options is options
    with pytest.raises(TypeError, match="executor 'subprocess' takes a dict or .*SubprocessOptions, not "
                                       "BigCodeBenchOptions"):
        plugins.executors.create("subprocess", options)


def test_a_name_taken_twice_is_an_error(tmp_path):
    dup = tmp_path / "dup.py"
    dup.write_text("from codea1.api import ZygoteExecutor, hookimpl\n"
                   "class Again(ZygoteExecutor):\n    name = 'subprocess'\n"
                   "@hookimpl\ndef codea1_register_executors(registry):\n    registry.add(Again)\n")
    with pytest.raises(PluginLoadError, match=r"executor 'subprocess' is registered twice: by "
                                              r"codea1.plugins.executors.subprocess \(codea1 \(built-in\)\) and by "
                                              rf"file:{dup} \(file {dup}\)"):
        load_plugins([str(dup)], autoload=False)


def test_import_harness_stays_light():
    code = ("import sys, codea1.api, codea1.harness.cli, codea1.harness.plugin_manager, codea1.harness.flows.evaluate, "
            "codea1.harness.flows.evaluate_tests, codea1.harness.flows.generate, codea1.harness.flows.tts, "
            "codea1.harness.verdicts.responses, codea1.harness.prompts\n"
            "codea1.harness.plugin_manager.load_plugins(autoload=False)  # every built-in plugin module, generators too\n"
            "heavy = [m for m in ('torch', 'vllm', 'ray', 'openrlhf', 'transformers', 'evalplus', 'numpy', 'openai',"
            " 'pandas', 'matplotlib', 'cosmic_ray', 'coverage', 'deepspeed', 'bigcodebench', 'tenacity')"
            " if m in sys.modules]\n"
            "print(heavy)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip() == "[]"
