"""Shared fixtures. Tests run real sandboxes (forked zygote children), real subprocesses of
the `codea1` command and real entry points; no mock stands in for the thing under test."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

pytest_plugins = ["codea1_leftovers"]  # fails the session if any process outlives it

ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("CODEA1_SHARED_DATA", ROOT.parent / "shared" / "data"))


def pytest_configure(config):
    """--dist loadgroup must really group (the Ray tests share one worker: two local Ray
    instances on one machine break each other). pytest 9.2 derives node ids from a
    structured id, and pytest-xdist 3.8's grouping (renaming ids to "<id>@<group>") then
    silently does nothing: refuse to run the groups apart."""
    xdist = config.pluginmanager.getplugin("xdist")
    if getattr(config.option, "dist", "no") == "loadgroup" and xdist and pytest.version_tuple[:2] >= (9, 2):
        import xdist as xdist_module

        if tuple(int(x) for x in xdist_module.__version__.split(".")[:2]) <= (3, 8):
            raise pytest.UsageError(f"--dist loadgroup does not group with pytest {pytest.__version__} and "
                                    f"pytest-xdist {xdist_module.__version__}: install the test extra's versions "
                                    "(pip install -e '.[test]' -c constraints.txt)")


@pytest.fixture(autouse=True, scope="session")
def _private_cache(tmp_path_factory):
    """Reference outputs cache per test session, so tests never depend on an earlier run."""
    os.environ["CODEA1_CACHE_DIR"] = str(tmp_path_factory.mktemp("codea1-cache"))
    os.environ["CODEA1_DISABLE_PLUGIN_AUTOLOAD"] = "1"  # tests that need entry points turn it on


@pytest.fixture(scope="session")
def plugins():
    from codea1.harness.plugin_manager import load_plugins

    return load_plugins(autoload=False)


@pytest.fixture(scope="session")
def executor(plugins):
    ex = plugins.executors.create("subprocess", workers=2)
    yield ex
    ex.close()


def shared_file(*parts: str) -> Path:
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"benchmark data not found at {path} (set CODEA1_SHARED_DATA)")
    return path


def codea1_command() -> list[str]:
    return [sys.executable, "-m", "codea1"]



@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory) -> Path:
    """A random-init Qwen2 model and a tokenizer trained here, saved as an HF directory."""
    pytest.importorskip("torch", reason="torch is not installed (pip install 'codea1[hf]')")
    pytest.importorskip("transformers", reason="transformers is not installed (pip install 'codea1[hf]')")
    from codea1.harness.testing.tiny_model import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("tiny-model"))
