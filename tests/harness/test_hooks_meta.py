"""Meta-tests (as datasette does): every hook is documented and exercised by a test."""

import ast
import inspect
from pathlib import Path

from codea1.harness import hookspecs

ROOT = Path(__file__).resolve().parents[2]
HOOKS = [name for name, fn in inspect.getmembers(hookspecs, inspect.isfunction) if name.startswith("codea1_")]


def test_every_hook_has_a_contract_docstring():
    for name in HOOKS:
        assert (getattr(hookspecs, name).__doc__ or "").strip(), f"{name} has no docstring"


def test_every_hook_is_documented_in_docs_plugins():
    text = (ROOT / "docs" / "plugins.md").read_text()
    missing = [h for h in HOOKS if f"`{h}`" not in text]
    assert not missing, f"undocumented hooks: {missing}"


def test_every_hook_has_its_test_by_name():
    """datasette's rule: hook X is exercised by a test function named test_hook_X."""
    names = set()
    for path in (ROOT / "tests").rglob("test_*.py"):
        names |= {node.name for node in ast.walk(ast.parse(path.read_text())) if isinstance(node, ast.FunctionDef)}
    missing = [h for h in HOOKS if f"test_hook_{h}" not in names]
    assert not missing, f"hooks without a test_hook_<name> test: {missing}"


def test_every_builtin_executor_runs_the_conformance_suite(plugins):
    suite = (ROOT / "tests" / "plugins" / "executors" / "test_conformance.py").read_text()
    missing = [name for name in plugins.executors.names() if f'make(plugins, "{name}"' not in suite]
    assert not missing, f"executors without a conformance class: {missing}"


def test_every_builtin_generator_has_its_test_module(plugins):
    folder = ROOT / "tests" / "plugins" / "generators"
    missing = [name for name in plugins.generators.names() if not (folder / f"test_{name}.py").exists()]
    assert not missing, f"generators without tests/plugins/generators/test_<name>.py: {missing}"
