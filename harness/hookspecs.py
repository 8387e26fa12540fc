"""Every hook of codea1, grouped by lifecycle. This module is the plugin author's guide.

Writing a plugin
================
A plugin is a module (or any object) with functions marked ``@hookimpl``::

    from codea1.harness.hookspecs import hookimpl
    from codea1.harness.execution import Executor

    class MyExecutor(Executor):
        name = "my-executor"
        description = "runs jobs on my cluster"
        def run(self, jobs): ...

    @hookimpl
    def codea1_register_executors(registry):
        registry.add(MyExecutor)

Ship it through the ``codea1`` entry-point group of your distribution::

    [project.entry-points.codea1]
    my_executor = "my_package.my_plugin"

or load a file for one run with ``codea1 --plugin path/to/plugin.py ...``. Set
``CODEA1_DISABLE_PLUGIN_AUTOLOAD=1`` to ignore installed entry points. The marker, the
entry-point group and the hook prefix are all ``codea1``.

Registered classes declare ``name`` and ``description`` and may declare an ``Options``
dataclass; users pass options as ``--<kind>-opt key=value`` and the registry validates them
against the dataclass (unknown keys fail with a suggestion). The core never switches on a
plugin's name.

Contracts
=========
Registration hooks are called once per plugin manager, for every plugin, in registration
order; none is firstresult. Lifecycle hooks are notifications: all implementations run,
return values are ignored, and an exception in one aborts the run (a plugin bug must not be
hidden).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    from codea1.harness.records import Verdict
    from codea1.harness.registry import Registry

PROJECT = "codea1"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


# --- registration: called once when the plugin manager is built ----------------------------

@hookspec
def codea1_register_executors(registry: "Registry") -> None:
    """Add executor classes (subclasses of ``harness.execution.Executor``) to ``registry``.

    An executor turns ``ExecJob``s into ``RawResult``s; it never judges."""


@hookspec
def codea1_register_generators(registry: "Registry") -> None:
    """Add generator classes (subclasses of ``harness.generation.Generator``: hf, vllm,
    openai, replay, ...).

    A generator turns ``GenerationRequest``s (chat messages, how many samples, a seed) into
    ``Generation``s (text, token counts, finish reason); it never parses or judges. Both
    roles (code and tests) use the same generators; only the prompt differs."""


@hookspec
def codea1_register_metrics(registry: "Registry") -> None:
    """Add metric classes (subclasses of ``harness.metrics.Metric``): pure functions of
    per-task outcomes."""


@hookspec
def codea1_register_benchmarks(registry: "Registry") -> None:
    """Add benchmark classes (subclasses of ``harness.benchmark.Benchmark``) that load
    ``Problem`` records."""


@hookspec
def codea1_register_trainers(registry: "Registry") -> None:
    """Add trainer classes (Code-A1, Golden-Test, Self-Play, ...)."""


@hookspec
def codea1_register_reporters(registry: "Registry") -> None:
    """Add reporter classes that turn one or more run directories into tables or pages."""


# --- run lifecycle: notifications from ``codea1 evaluate`` ----------------------------------

@hookspec
def codea1_run_started(config: dict[str, Any], out_dir: str) -> None:
    """A run begins; ``config`` is what config.json holds. Not firstresult."""


@hookspec
def codea1_verdict_recorded(verdict: "Verdict") -> None:
    """A verdict was judged and appended to verdicts.jsonl (resumed verdicts are not
    announced again). Not firstresult."""


@hookspec
def codea1_run_finished(results: dict[str, Any], out_dir: str) -> None:
    """results.json was written; ``results`` is its content. Not firstresult."""
