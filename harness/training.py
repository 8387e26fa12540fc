"""Training plugin bases: ``Trainer`` and ``PolicyBackend``.

A trainer (Code-A1, Golden-Test, Self-Play, SFT) runs one training step at a time: it asks
policy backends for rollouts on the step's questions, has the executor judge them, turns
verdicts into rewards and advantages (the training method's pieces: ``codea1.trainers.method``),
and asks the backends to update. It looks backends up by name in the ``backends`` registry
and never imports one, so a backend may run in this process (torch) or across a cluster
(OpenRLHF on Ray).

Both register through their hooks (``codea1_register_trainers``,
``codea1_register_backends``); the registries refuse any class that does not subclass these.
The ``codea1 train`` command and its loop are ``codea1.harness.flows.train``.
"""

from __future__ import annotations

import hashlib
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

from codea1.harness.errors import Codea1Error
from codea1.harness.generation import SamplingParams


class BackendUnavailable(Codea1Error):
    """A policy backend's libraries are not installed; the message says what to install."""


@dataclass
class PolicySample:
    """One sampled response: its text, and the token ids and per-token log-probabilities of
    the response under the policy that sampled it. ``handle`` is the backend's own object
    behind it (an OpenRLHF experience, say), passed back to ``update`` untouched."""

    text: str
    token_ids: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    finish_reason: str = ""
    handle: Any = None


class PolicyBackend:
    """A trainable policy. Subclasses set ``name`` and ``description``, may declare an
    ``Options`` dataclass, and implement every method below. The train flow builds one per
    role, calls ``info`` when the run starts and ``close`` once when it ends, fails or is
    interrupted."""

    name = ""
    description = ""
    # True when an update may run beside another policy's (the work happens elsewhere: a
    # Ray cluster); the trainers' updates then run concurrently (TrainContext.update).
    concurrent_updates = False

    @classmethod
    def update_size_error(cls, options: Any, size: int) -> str:
        """Why an ``update`` of ``size`` samples (what the trainer's config gives each step)
        cannot run with these options, or "" when it can. Checked with the config, before any
        model loads: a backend whose engine fixes its train batch at start (DeepSpeed) says
        so here, not at its first update."""
        return ""

    @classmethod
    def model_error(cls, options: Any) -> str:
        """Why the model these options name cannot be loaded on this machine without a
        network (a checkpoint directory that is not there, a hub name not in the local cache),
        or "" when it can. ``codea1 train --dry-run`` checks it, loading nothing."""
        return ""

    def __init__(self, options: Any = None, *, seed: int = 0):
        self.options = options
        self.seed = seed

    def generate(self, prompts: Sequence[list[dict[str, str]]], n: int, sampling: SamplingParams,
                 seed: int) -> list[list[PolicySample]]:
        """``n`` samples for each chat prompt, in prompt order; deterministic for a seed on
        a CPU."""
        raise NotImplementedError

    def update(self, samples: Sequence[PolicySample], rewards: Sequence[float],
               advantages: Sequence[float]) -> dict[str, float]:
        """One policy-gradient update from the samples with their rewards and the trainer's
        advantages (a backend that derives advantages itself must arrive at the same
        numbers); returns statistics (loss, KL, clip ratio, ...)."""
        raise NotImplementedError

    def supervised(self, prompts: Sequence[list[dict[str, str]]], targets: Sequence[str]) -> dict[str, float]:
        """One supervised step: the mean token cross-entropy of each target given its chat
        prompt (the SFT trainer); returns statistics (loss, tokens)."""
        raise NotImplementedError

    def save(self, directory: str) -> None:
        """Everything a resumed run needs: weights, optimiser state, RNG states."""
        raise NotImplementedError

    def load(self, directory: str) -> None:
        """Restore what ``save`` wrote."""
        raise NotImplementedError

    def export(self, directory: str) -> None:
        """The policy as a Hugging Face model directory (loadable by the hf generator)."""
        raise NotImplementedError

    def info(self) -> dict[str, Any]:
        """What the run's environment.json records of this policy (model, device, dtype,
        library versions)."""
        return {"backend": self.name}

    def close(self) -> None:
        """Release what the policy holds (processes, actors, placement groups, memory); called
        once, whether the run ended, failed or was interrupted."""


@dataclass(frozen=True)
class StepFigure:
    """A figure of step-log values over steps: ``name`` (its file, figures/NAME.png) and
    ``title``."""

    name: str
    title: str


@dataclass(frozen=True)
class LogColumn:
    """A value of a trainer's step log that reports show (the trainer's ``log_columns``).

    ``key``: where it is in a step-log row, dotted into a nested table ("mistake_book.size");
    ``name``: the report's column (default: the key with "_" for "."); ``label``: a short
    header and legend; ``means``: what it is, one line (the table's legend). ``figure`` and
    ``panel``: where it is plotted over steps (None: no plot). ``fraction``: a rate in
    [0, 1], shown in % and ranked (``higher_is_better`` says which way); otherwise a plain
    number (a size, a loss). ``table``: its last value is a column of the training table;
    ``first``: so is its first value (a loss: did the run learn?). ``sweep``: plotted at the
    last step against an ablation option that varies between runs (an alpha sweep)."""

    key: str
    label: str
    means: str = ""
    figure: StepFigure | None = None
    panel: str = ""
    name: str = ""
    fraction: bool = True
    higher_is_better: bool = True
    table: bool = True
    first: bool = False
    sweep: bool = False

    @property
    def column(self) -> str:
        return self.name or self.key.replace(".", "_")

    def value(self, row: dict) -> Any:
        """The value in a step-log row (None when the row has none)."""
        node: Any = row
        for part in self.key.split("."):
            node = node.get(part) if isinstance(node, dict) else None
        return node


@dataclass(frozen=True)
class StepFiles:
    """Files a trainer writes after each step, DIR/``directory``/step-N``suffix`` (N steps
    done): a resume deletes those past its checkpoint, ``--overwrite`` the directory."""

    directory: str
    suffix: str = ".json"

    def path(self, out: Path, steps_done: int) -> Path:
        return out / self.directory / f"step-{steps_done:06d}{self.suffix}"

    def after(self, out: Path, steps_done: int) -> list[Path]:
        """The files written after ``steps_done`` steps."""
        found = []
        for path in (out / self.directory).glob(f"step-*{self.suffix}"):
            number = path.name.removeprefix("step-").removesuffix(self.suffix)
            if number.isdigit() and int(number) > steps_done:
                found.append(path)
        return found


@dataclass
class TrainContext:
    """What the train flow hands a trainer: the run (benchmark, problems, executor, store),
    the policies by role with their sampling settings, the seed, the run directory, and
    ``phase(name, timing_key)``, the context of one phase of a step: it shows the phase on
    the one progress bar and adds its seconds to the step log's "timing"."""

    plugins: Any
    run: Any
    policies: dict[str, PolicyBackend]
    sampling: dict[str, SamplingParams]
    seed: int
    out: Path
    show_phase: Callable[[str], None] = lambda name: None  # the flow's progress bar
    timing: dict[str, float] = field(default_factory=dict)  # this step's seconds per phase

    @contextmanager
    def phase(self, name: str, timing_key: str | None = None) -> Iterator[None]:
        """``with context.phase("generate code", "generate_code_s"):`` shows the phase and,
        given a key, adds the seconds it took to the step's timing (the flow logs it)."""
        self.show_phase(name)
        t0 = time.perf_counter()
        try:
            yield
        finally:
            if timing_key is not None:
                self.timing[timing_key] = self.timing.get(timing_key, 0.0) + time.perf_counter() - t0

    def update(self, batches: dict[str, tuple[Sequence[PolicySample], Sequence[float], Sequence[float]]]
               ) -> dict[str, dict[str, float]]:
        """Each role's ``update(samples, rewards, advantages)``, in the order given, or all at
        once when every policy's backend allows it (``concurrent_updates``); the statistics
        by role."""
        policies = {role: self.policies[role] for role in batches}
        if len(policies) > 1 and all(p.concurrent_updates for p in policies.values()):
            with ThreadPoolExecutor(len(policies)) as pool:
                running = {role: pool.submit(policies[role].update, *batch) for role, batch in batches.items()}
                return {role: future.result() for role, future in running.items()}
        return {role: policies[role].update(*batch) for role, batch in batches.items()}

    def step_timing(self) -> dict[str, float]:
        """The step's timing, rounded for the log, and a fresh one for the next step."""
        done, self.timing = self.timing, {}
        return {k: round(v, 3) for k, v in done.items()}

    def seed_for(self, step: int, what: str) -> int:
        """A seed of its own for each (step, purpose), stable across resumes."""
        digest = hashlib.sha256(f"{self.seed}\0{step}\0{what}".encode()).digest()
        return int.from_bytes(digest[:4], "little") & 0x7FFFFFFF


class Trainer:
    """A training method: one step at a time, flat and readable. Subclasses set ``name``,
    ``description`` and ``roles`` (the policies they train, e.g. ("code", "tests")), may
    declare an ``Options`` dataclass (the [trainer] table of the training config), and
    implement ``step``. The train flow owns the loop around it: the question order, the
    step log, checkpoints, resume, evaluation and export."""

    name = ""
    description = ""
    roles: tuple[str, ...] = ("code",)
    # What reports read (``codea1 report``, ``codea1 show``): the step log's columns, the
    # options that tell the runs of an ablation set apart (name -> what it is), and the files
    # written per step (cut back on resume).
    log_columns: tuple[LogColumn, ...] = ()
    ablation_keys: dict[str, str] = {}
    step_files: tuple[StepFiles, ...] = ()

    def __init__(self, options: Any = None, *, context: TrainContext):
        self.options = options
        self.context = context

    @classmethod
    def roles_for(cls, options: Any) -> tuple[str, ...]:
        """The policy roles a run with these options trains (the [policies.ROLE] tables the
        config needs); ``roles`` unless a trainer's options choose."""
        return cls.roles

    @classmethod
    def update_sizes(cls, options: Any, batch_size: int) -> dict[str, int]:
        """The samples each role's policy gets per ``update`` with these options and
        ``batch_size`` questions a step (a role left out: its count varies); backends with a
        fixed train batch check it when the config loads."""
        return {}

    @classmethod
    def columns_for(cls, options: Any) -> tuple[LogColumn, ...]:
        """The step log's columns of a run with these options (None: the defaults);
        ``log_columns`` unless a trainer's options choose (sft's loss is its role's)."""
        return cls.log_columns

    def step(self, step: int, questions: list[Any]) -> dict[str, Any]:
        """Run training step ``step`` on ``questions`` (benchmark problems): rollouts,
        judging, rewards, updates, each in a ``context.phase``. Returns the step's log row
        (the flow adds "step" and the phases' "timing"). ``step`` is the 0-based index
        (seeds derive from it); the flow records it as step + 1, and a file the trainer
        writes after it is named step-{step + 1} (N steps done), as every file counts."""
        raise NotImplementedError

    def save(self, directory: Path) -> None:
        """The trainer's own state beside the policies' in a checkpoint (the Mistake Book)."""

    def load(self, directory: Path) -> None:
        """Restore what ``save`` wrote."""


@dataclass
class RunColumns:
    """What a train run's trainer declares for reports, read from its config.json: its
    columns (for its options), its ablation keys, and a warning when the trainer is not
    installed (a third party's run read without its plugin: no columns)."""

    trainer: str
    columns: tuple[LogColumn, ...] = ()
    ablation_keys: dict[str, str] = field(default_factory=dict)
    warning: str = ""


def run_columns(plugins: Any, config: dict) -> RunColumns:
    """The trainer's declarations for a run whose config.json is ``config``."""
    from codea1.harness.registry import UnknownPluginError, parse_options

    name = str((config.get("train") or {}).get("trainer", ""))
    try:
        entry = plugins.trainers.get(name)
    except UnknownPluginError:
        return RunColumns(name, warning=f"trainer {name!r} is not installed: its step-log columns are not shown")
    try:
        options = parse_options(entry, config.get("trainer") or {})
    except Codea1Error:
        options = None  # options of another version of the trainer: its default columns
    return RunColumns(name, tuple(entry.cls.columns_for(options)), dict(entry.cls.ablation_keys))


def headline(columns: Sequence[LogColumn], row: dict) -> dict[str, float]:
    """A step row's values of the declared table columns, by key: what a person reads first."""
    values = {c.key: c.value(row) for c in columns if c.table}
    return {k: v for k, v in values.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
