"""Builds the pluggy plugin manager and the registries.

Built-in plugins are ordinary plugin modules, listed once in ``BUILTIN_PLUGINS`` and loaded
the same way as third-party ones: by module name. Third-party plugins come from the
``codea1`` entry-point group (unless ``CODEA1_DISABLE_PLUGIN_AUTOLOAD`` is set) and from
files given with ``--plugin PATH``.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import pluggy

from codea1.harness import hookspecs
from codea1.harness.benchmark import Benchmark
from codea1.harness.command import Command
from codea1.harness.generation import Generator
from codea1.harness.metrics import CodeMetric, TestMetric
from codea1.harness.registry import (
    PluginLoadError,
    Registry,
    UnknownPluginError,
    did_you_mean,
)
from codea1.harness.reporting import Reporter
from codea1.harness.training import PolicyBackend, Trainer
from codea1.harness.verdicts.execution import Executor

DISABLE_AUTOLOAD_ENV = "CODEA1_DISABLE_PLUGIN_AUTOLOAD"
BUILTIN_DISTRIBUTION = "codea1 (built-in)"

# Each kind: its registry's name (the hook is codea1_register_<kind>) and the base class
# every entry must subclass.
KINDS: dict[str, type | tuple[type, ...]] = {
    "executors": Executor,
    "generators": Generator,
    "metrics": (CodeMetric, TestMetric),
    "benchmarks": Benchmark,
    "trainers": Trainer,
    "backends": PolicyBackend,
    "reporters": Reporter,
    "commands": Command,
}

BUILTIN_PLUGINS = (
    "codea1.harness.commands.plugins",
    "codea1.harness.commands.tasks",
    "codea1.harness.commands.evaluate",
    "codea1.harness.commands.evaluate_tests",
    "codea1.harness.commands.generate",
    "codea1.harness.commands.tts",
    "codea1.harness.commands.train",
    "codea1.harness.commands.show",
    "codea1.harness.commands.report",
    "codea1.harness.commands.dev",
    "codea1.plugins.executors.subprocess",
    "codea1.plugins.executors.firejail",
    "codea1.plugins.executors.bubblewrap",
    "codea1.plugins.executors.sandbox_fusion",
    "codea1.plugins.executors.ray",
    "codea1.plugins.generators.hf",
    "codea1.plugins.generators.vllm",
    "codea1.plugins.generators.openai",
    "codea1.plugins.generators.replay",
    "codea1.plugins.metrics.pass_at_k",
    "codea1.plugins.metrics.avg_at_k",
    "codea1.plugins.metrics.accuracy",
    "codea1.plugins.metrics.mutation_score",
    "codea1.plugins.metrics.coverage_at_k",
    "codea1.plugins.metrics.mul",
    "codea1.benchmarks.demo",
    "codea1.benchmarks.humaneval_plus",
    "codea1.benchmarks.mbpp_plus",
    "codea1.benchmarks.bigcodebench",
    "codea1.benchmarks.ult",
    "codea1.benchmarks.kodcode",
    "codea1.trainers.backends.torch_backend",
    "codea1.trainers.backends.openrlhf_backend",
    "codea1.trainers.sft",
    "codea1.trainers.golden_tests",
    "codea1.trainers.code_a1",
    "codea1.trainers.self_play",
    "codea1.trainers.method.mistake_book_command",
    "codea1.reports.markdown",
    "codea1.reports.csv_report",
    "codea1.reports.latex",
    "codea1.reports.html_report",
)


@dataclass
class Plugins:
    """The loaded plugin manager with one registry per kind."""

    pm: pluggy.PluginManager
    registries: dict[str, Registry] = field(default_factory=dict)

    def __getattr__(self, kind: str) -> Registry:
        registries = self.__dict__.get("registries", {})
        if kind in registries:
            return registries[kind]
        raise AttributeError(kind)

    @property
    def hook(self):
        return self.pm.hook

    def listing(self) -> list[dict[str, str]]:
        rows = []
        for kind in KINDS:
            for name in self.registries[kind].names():
                e = self.registries[kind].get(name)
                rows.append({"kind": kind[:-1], "name": name, "plugin": e.plugin, "distribution": e.distribution,
                             "description": e.description, "options": e.options()})
        return rows


def _load_file_plugin(path: str):
    p = Path(path)
    if not p.is_file():
        raise PluginLoadError(f"--plugin {path}: no such file")
    mod_name = f"codea1_file_plugin_{abs(hash(str(p.resolve())))}"
    spec = importlib.util.spec_from_file_location(mod_name, p)
    module = importlib.util.module_from_spec(spec)
    sys.modules[mod_name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        raise PluginLoadError(f"--plugin {path}: {type(exc).__name__}: {exc}") from exc
    return module


def load_plugins(plugin_paths: Sequence[str] = (), autoload: bool | None = None,
                 extra: Sequence[object] = ()) -> Plugins:
    """Create the plugin manager: built-ins, entry points, ``--plugin`` files, ``extra`` objects."""
    pm = pluggy.PluginManager(hookspecs.PROJECT)
    pm.add_hookspecs(hookspecs)
    origin: dict[str, str] = {}
    for name in BUILTIN_PLUGINS:
        pm.register(importlib.import_module(name), name=name)
        origin[name] = BUILTIN_DISTRIBUTION
    if autoload is None:
        autoload = not os.environ.get(DISABLE_AUTOLOAD_ENV)
    if autoload:
        try:
            pm.load_setuptools_entrypoints(hookspecs.PROJECT)
        except Exception as exc:  # a broken third-party plugin names itself
            raise PluginLoadError(f"loading entry points of group {hookspecs.PROJECT!r} failed: {exc}") from exc
        for plugin, dist in pm.list_plugin_distinfo():
            origin[pm.get_name(plugin)] = f"{dist.metadata['name']} {dist.version}"
    for path in plugin_paths:
        module = _load_file_plugin(path)
        pm.register(module, name=f"file:{path}")
        origin[f"file:{path}"] = f"file {path}"
    for i, obj in enumerate(extra):
        label = getattr(obj, "__name__", None) or type(obj).__name__
        name = pm.register(obj, name=f"{label}#{i}" if pm.has_plugin(label) else label)
        origin[name] = "registered in-process"
    pm.check_pending()

    plugins = Plugins(pm)
    for kind, base in KINDS.items():
        registry = Registry(kind, base)
        hook = getattr(pm.hook, f"codea1_register_{kind}")
        # Called one implementation at a time so each entry records which plugin added it.
        for impl in hook.get_hookimpls():  # in registration order: built-ins, entry points, files, in-process
            registry._current = (impl.plugin_name, origin.get(impl.plugin_name, "unknown"))
            impl.function(registry=registry)
        registry._current = ("", "")
        plugins.registries[kind] = registry
    return plugins


__all__ = ["load_plugins", "Plugins", "PluginLoadError", "UnknownPluginError", "did_you_mean", "BUILTIN_PLUGINS"]
