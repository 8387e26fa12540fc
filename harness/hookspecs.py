"""Every hook of codea1, grouped by lifecycle. This module is the plugin author's guide.

Writing a plugin
================
A plugin is a module (or any object) with functions marked ``@hookimpl``. Everything a
plugin needs is in ``codea1.api``::

    from codea1.api import Executor, hookimpl

    class MyExecutor(Executor):
        name = "my-executor"
        description = "runs jobs on my cluster"
        def run(self, jobs, early_stop=None): ...

    @hookimpl
    def codea1_register_executors(registry):
        registry.add(MyExecutor)

Ship it through the ``codea1`` entry-point group of your distribution::

    [project.entry-points.codea1]
    my_executor = "my_package.my_plugin"

or load a file for one run with ``codea1 --plugin path/to/plugin.py ...``. Set
``CODEA1_DISABLE_PLUGIN_AUTOLOAD=1`` to ignore installed entry points. The marker, the
entry-point group and the hook prefix are all ``codea1``. Built-in plugins are ordinary
plugin modules, listed in ``codea1.harness.plugin_manager.BUILTIN_PLUGINS`` and loaded the
same way.

Registered classes declare ``name`` and ``description`` and may declare an ``Options``
dataclass; users pass options as ``--<kind>-opt key=value`` and the registry validates them
against the dataclass (unknown keys fail with a suggestion). Each registry accepts only
subclasses of its base class (listed with each hook below) and refuses anything else,
naming the plugin. The core never switches on a plugin's name.

Contracts
=========
Registration hooks are called once per plugin manager, for every plugin, in registration
order; none is firstresult. Run lifecycle hooks are notifications: all implementations
run, return values are ignored, and an exception in one aborts the run (a plugin bug must
not be hidden).
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
    """Add executor classes (subclasses of ``codea1.api.Executor``) to ``registry``.

    An executor turns ``ExecJob``s into ``RawResult``s; it never judges. Not firstresult."""


@hookspec
def codea1_register_generators(registry: "Registry") -> None:
    """Add generator classes (subclasses of ``codea1.api.Generator``: hf, vllm, openai,
    replay, ...).

    A generator turns ``GenerationRequest``s (chat messages, how many samples, a seed) into
    ``Generation``s (text, token counts, finish reason); it never parses or judges. Both
    roles (code and tests) use the same generators; only the prompt differs. Not
    firstresult."""


@hookspec
def codea1_register_metrics(registry: "Registry") -> None:
    """Add metric classes: subclasses of ``codea1.api.CodeMetric`` (pure functions of each
    task's sample verdicts: pass@k, avg@k) or of ``codea1.api.TestMetric`` (pure functions of
    ``TaskRecord``s: test-pass@k, mut@k, coverage@k, Mul). A class's ``order`` places its
    figure among the others of its kind (the built-in headline figures are 0 to 31; the
    default, 100, prints after them); ``at_n = True`` computes it once, at k = the samples
    each task has, instead of at each ``--k``. Not firstresult."""


@hookspec
def codea1_register_benchmarks(registry: "Registry") -> None:
    """Add benchmark classes (subclasses of ``codea1.api.Benchmark``) that load ``Problem``
    records. Not firstresult."""


@hookspec
def codea1_register_trainers(registry: "Registry") -> None:
    """Add trainer classes (subclasses of ``codea1.api.Trainer``: Code-A1, Golden-Test,
    Self-Play, SFT). A trainer finds policy backends by name in the backends registry and
    never imports one. Not firstresult."""


@hookspec
def codea1_register_backends(registry: "Registry") -> None:
    """Add policy backend classes (subclasses of ``codea1.api.PolicyBackend``: a plain
    PyTorch backend, OpenRLHF on Ray): generate rollouts, update from rewards and
    advantages, save, load and export a policy; ``info`` for environment.json, ``close``
    once when the run ends however it ends, ``update_size_error`` for an engine with a fixed
    train batch (checked when the config loads). Not firstresult."""


@hookspec
def codea1_register_reporters(registry: "Registry") -> None:
    """Add reporter classes (subclasses of ``codea1.api.Reporter``) that write a comparison
    of run directories in one format (md, csv, tex, html, ...). Not firstresult."""


@hookspec
def codea1_register_commands(registry: "Registry") -> None:
    """Add ``codea1`` subcommands (subclasses of ``codea1.api.Command``): each declares its
    arguments on its own argparse subparser and runs with the loaded plugins. The built-in
    commands (evaluate, evaluate-tests, generate, tts, plugins, tasks, dev) register through
    this hook too. Not firstresult."""


# --- run lifecycle: notifications from every flow (evaluate, evaluate-tests, generate, tts) -

@hookspec
def codea1_run_started(config: dict[str, Any], out_dir: str) -> None:
    """A run begins: its config.json has just been written (``config`` is its content,
    ``config["command"]`` names the flow) and no job has run yet. Not firstresult."""


@hookspec
def codea1_verdict_recorded(verdict: "Verdict") -> None:
    """A code sample's verdict was judged and appended to verdicts.jsonl (by ``evaluate``,
    and so by the golden stage of ``tts``; resumed verdicts are not announced again). Not
    firstresult."""


@hookspec
def codea1_run_finished(results: dict[str, Any], out_dir: str) -> None:
    """A run ended: results.json was written; ``results`` is its content. Not
    firstresult."""
