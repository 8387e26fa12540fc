"""The import contracts of tests/boundaries.py hold on this tree, and each one catches a
violation planted in a copy of it."""

from __future__ import annotations

import shutil

from boundaries import violations
from conftest import ROOT

FOLDERS = ("codea1", "harness", "plugins", "benchmarks", "trainers", "reports")


def test_the_tree_keeps_its_boundaries():
    assert violations(ROOT) == []


def plant(path, text: str, at_top: bool = True) -> None:
    source = path.read_text()
    if at_top:  # after the module docstring and __future__ import
        anchor = "from __future__ import annotations\n"
        source = source.replace(anchor, anchor + text, 1) if anchor in source else text + source
    else:
        source += text
    path.write_text(source)


def copy_tree(tmp_path) -> None:
    for folder in FOLDERS:
        shutil.copytree(ROOT / folder, tmp_path / folder, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    assert violations(tmp_path) == []


def test_each_planted_violation_is_reported(tmp_path):
    copy_tree(tmp_path)

    plant(tmp_path / "harness" / "records.py", "from codea1.plugins.metrics import pass_at_k\n")
    plant(tmp_path / "plugins" / "executors" / "firejail.py", "from codea1.plugins.executors.subprocess import X\n")
    plant(tmp_path / "plugins" / "metrics" / "mul.py", "import torch\n")
    plant(tmp_path / "plugins" / "metrics" / "avg_at_k.py", "\n\ndef later():\n    import torch\n", at_top=False)
    plant(tmp_path / "harness" / "sandbox" / "child.py", "from codea1.harness import records\n")
    (tmp_path / "plugins" / "generators" / "shared.py").write_text("HELPER = 1\n")
    plant(tmp_path / "benchmarks" / "ult.py", "from codea1.plugins.generators.shared import HELPER\n")
    plant(tmp_path / "benchmarks" / "humaneval_plus.py", "import pandas as pd\n")
    # the openrlhf backend's stack subclasses OpenRLHF's classes: heavy itself, imported lazily only
    plant(tmp_path / "trainers" / "backends" / "torch_backend.py",
          "from codea1.trainers.backends import openrlhf_stack\n")

    found = [v.split(": ", 1) for v in violations(tmp_path)]
    assert sorted((where.rsplit(":", 1)[0], what) for where, what in found) == sorted([
        ("harness/records.py", "the core imports codea1.plugins.metrics.pass_at_k"),
        ("harness/records.py", "imports the plugin module codea1.plugins.metrics.pass_at_k"),
        ("plugins/executors/firejail.py", "imports the plugin module codea1.plugins.executors.subprocess"),
        ("plugins/metrics/mul.py", "imports torch when the module is imported (import it where it is used)"),
        ("harness/sandbox/child.py", "sandbox-side module imports codea1.harness.records (stdlib only)"),
        ("benchmarks/ult.py", "imports codea1.plugins.generators.shared, a helper of another folder"),
        ("benchmarks/humaneval_plus.py", "imports pandas when the module is imported (import it where it is used)"),
        ("trainers/backends/torch_backend.py", "imports codea1.trainers.backends.openrlhf_stack when the module is "
                                               "imported (import it where it is used)"),
    ])


def test_each_planted_import_cycle_is_reported_once(tmp_path):
    """A loop of module-level imports is reported once, from its first module; one closed by
    an import inside a function, or under ``if TYPE_CHECKING:``, is not. Importing a
    submodule runs its package's ``__init__``, which can close a loop too."""
    copy_tree(tmp_path)
    harness = tmp_path / "harness"
    plant(harness / "command.py", "from codea1.harness.cli import main\n")  # cli -> plugin_manager -> command
    plant(harness / "errors.py", "from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n"
                                 "    from codea1.harness.cli import main\n\n\ndef later():\n"
                                 "    from codea1.harness import cli\n", at_top=False)
    plant(harness / "testing" / "__init__.py", "from codea1.harness import jsonl\n")
    plant(harness / "jsonl.py", "from codea1.harness.testing.tiny_model import build_tiny_model\n")

    found = [v.split(": ", 1) for v in violations(tmp_path)]
    assert sorted((where.rsplit(":", 1)[0], what) for where, what in found) == [
        ("harness/cli.py", "import cycle codea1.harness.cli -> codea1.harness.plugin_manager -> "
                           "codea1.harness.command -> codea1.harness.cli"),
        ("harness/jsonl.py", "import cycle codea1.harness.jsonl -> codea1.harness.testing -> codea1.harness.jsonl"),
    ]
