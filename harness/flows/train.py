"""``codea1 train``: a trainer plugin's steps, with the loop every trainer shares.

The config is a TOML file (examples in trainers/configs/), overridable with
``--set section.key=value``:

    [train]       trainer, steps, batch_size (questions per step), seed, checkpoint_every,
                  eval_every (0: never), log_to (tensorboard, wandb: where the step log is
                  mirrored; harness/mirror.py)
    [benchmark]   name, data, options, tasks, limit: where the questions come from
    [executor]    name, workers, options: what runs the programs
    [trainer]     the trainer plugin's own options (its Options dataclass)
    [policies.ROLE]   backend (default torch), temperature, top_p, max_tokens, and the
                  backend's own options (model, lr, ...), one table per role the trainer
                  trains (code, tests)
    [[evaluation.code]]   benchmark, data, limit, n, k, temperature, top_p, max_tokens
    [[evaluation.tests]]  benchmark, data, limit, k, n_tests (asserts asked), max_tokens

Every key is checked once, against its section (the trainer's and the backends' by their own
Options), by the converter plugin options use; an unknown or mistyped one fails naming the
file, the section, the key and a suggestion. The resolved config (``TrainSettings``) holds the
Options instances the trainer and the backends are handed; DIR/config.json records it.

Stages of a run: open (benchmark, executor, policies, trainer), resume (the last complete
checkpoint: policies, trainer state, step; the step log and the trainer's ``step_files``
cut back to it), then per step: the questions (a seeded permutation of the tasks per epoch,
so a step's questions depend on the step number alone), the trainer's step, a row appended
to DIR/steps.jsonl with the step's phase timing (its "step" counts from 1, as
checkpoints/step-N, evaluation/step-N and the trainer's files, mistake_book/step-N.json, do:
N steps done), a checkpoint every ``checkpoint_every`` steps, evaluation every
``eval_every`` steps; finally the policies exported as Hugging Face directories under
DIR/export/ROLE. One progress bar for the steps, showing the last step's rewards and each
policy's loss, the phase, and the time left (from the first step's first phases on).
``dry_run``: the checks made before a model loads (and that every policy's model is a
directory here or a hub name in the local cache), then the plan and the resolved config,
nothing loaded or written.

A resume continues the same run: it may change how long the run goes (``steps``, never below
the steps its last checkpoint holds), how often it checkpoints or evaluates, where its step
log is mirrored and its [[evaluation]]; any other change is refused naming every key that
differs. config.json then records the new settings and, under "resumes", each resume: the
step it resumed at and what it changed.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import sys
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterator

import tomllib

from codea1.harness.errors import ConfigError
from codea1.harness.generation import SamplingParams
from codea1.harness.mirror import SINKS, StepMirror, check_installed
from codea1.harness.registry import OptionError, build_dataclass, did_you_mean, parse_options
from codea1.harness.run import ExecutingRunConfig, Run, check_workers, create_benchmark, load_selection, open_run
from codea1.harness.runstore import check_same_run, check_writable
from codea1.harness.training import PolicyBackend, TrainContext

SECTIONS = ("train", "benchmark", "executor", "trainer", "policies", "evaluation")
RESUMABLE = ("steps", "checkpoint_every", "eval_every", "log_to")  # the [train] keys a resume may change


@dataclass
class TrainSection:
    """The [train] table."""

    trainer: str = ""
    steps: int = 1
    batch_size: int = 8
    seed: int = 0
    checkpoint_every: int = 1
    eval_every: int = 0
    log_to: list = field(default_factory=list)  # the step log mirrored to: tensorboard, wandb

    def __post_init__(self):
        if not self.trainer:
            raise ValueError("key 'trainer' is required (see `codea1 plugins`)")
        if self.steps < 1 or self.batch_size < 1 or self.checkpoint_every < 1 or self.eval_every < 0:
            raise ValueError("steps, batch_size and checkpoint_every must be at least 1, eval_every at least 0")
        for sink in self.log_to:
            if sink not in SINKS:
                raise ValueError(f"key 'log_to': unknown sink {sink!r}{did_you_mean(str(sink), SINKS)}")


@dataclass
class BenchmarkSection:
    name: str = "kodcode"
    data: str | None = None
    options: dict = field(default_factory=dict)
    tasks: list = field(default_factory=list)
    limit: int | None = None


@dataclass
class ExecutorSection:
    name: str = "subprocess"
    workers: int | None = None
    options: dict = field(default_factory=dict)


@dataclass
class PolicySection:
    """A [policies.ROLE] table: the backend, how the role samples, and the backend's own
    options (its Options instance; None for a backend that takes none)."""

    backend: str = "torch"
    temperature: float = 1.0
    top_p: float = 1.0
    max_tokens: int = 1024
    options: Any = None


POLICY_KEYS = ("backend", "temperature", "top_p", "max_tokens")  # the rest of the table is the backend's


@dataclass
class CodeEvaluation:
    benchmark: str = "humaneval+"
    data: str | None = None
    limit: int | None = None
    n: int = 1
    k: list = field(default_factory=lambda: [1])
    temperature: float = 0.7
    top_p: float = 0.95
    max_tokens: int = 1024


@dataclass
class TestsEvaluation:
    __test__ = False
    benchmark: str = "ult"
    data: str | None = None
    limit: int | None = None
    k: list = field(default_factory=lambda: [1, 2, 5])
    n_tests: int = 5
    temperature: float = 0.7
    top_p: float = 0.95
    max_tokens: int = 1024


@dataclass
class EvaluationSection:
    """[[evaluation.code]] and [[evaluation.tests]]; None where the config has no such key
    (config.json leaves it out, as it always has)."""

    code: list[CodeEvaluation] | None = None
    tests: list[TestsEvaluation] | None = None

    def entries(self) -> list[tuple[str, CodeEvaluation | TestsEvaluation]]:
        return [(kind, e) for kind in ("code", "tests") for e in getattr(self, kind) or []]


@dataclass
class TrainSettings:
    """The resolved config, each table checked once into its type: the trainer's and the
    backends' Options instances are the ones the run hands them."""

    train: TrainSection
    benchmark: BenchmarkSection
    executor: ExecutorSection
    trainer: Any  # the trainer's Options instance; None for a trainer that takes none
    policies: dict[str, PolicySection]
    evaluation: EvaluationSection

    def as_dict(self) -> dict[str, Any]:
        """The tables as config.json records them (the TOML --dry-run prints, what identity
        hashes): the keys and their order are those of every earlier run, so runs resume."""
        def policy(p: PolicySection) -> dict[str, Any]:
            return {**{k: getattr(p, k) for k in POLICY_KEYS}, **(asdict(p.options) if p.options is not None else {})}

        return {"train": asdict(self.train), "benchmark": asdict(self.benchmark), "executor": asdict(self.executor),
                "trainer": asdict(self.trainer) if self.trainer is not None else {},
                "policies": {role: policy(p) for role, p in self.policies.items()},
                "evaluation": {kind: [asdict(e) for e in entries] for kind in ("code", "tests")
                               if (entries := getattr(self.evaluation, kind)) is not None}}


@dataclass(kw_only=True)
class TrainConfig(ExecutingRunConfig):
    config_file: str
    settings: TrainSettings
    sets: list[str] = field(default_factory=list)
    resume: bool = False

    COMMAND = "train"
    ROWS = "steps.jsonl"
    DATA_FLAG = "[benchmark] data"
    IDENTITY = ("identity",)

    def record(self) -> dict[str, Any]:
        return {"command": self.COMMAND, "config_file": self.config_file, "sets": self.sets,
                **self.settings.as_dict(), "identity": identity(self.settings)}


def identity(settings: TrainSettings) -> str:
    """What a resumed run must share with the first: everything but how long it runs, how
    often it checkpoints or evaluates, and where its step log is mirrored."""
    kept = settings.as_dict()
    del kept["evaluation"]
    kept["train"] = {k: v for k, v in kept["train"].items() if k not in RESUMABLE}
    return hashlib.sha256(json.dumps(kept, sort_keys=True).encode()).hexdigest()[:16]


# -- the config ------------------------------------------------------------------------------

def load_config(plugins, path: str, sets: list[str], out: str, overwrite: bool = False, resume: bool = False,
                progress: bool = True) -> TrainConfig:
    """Read, override and check the config; every error names the file, section and key."""
    try:
        raw = tomllib.loads(Path(path).read_text())
    except OSError as exc:
        raise ConfigError(f"--config {path}: {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not TOML: {exc}") from None
    for item in sets:
        apply_set(raw, item, path)
    for name in raw:
        if name not in SECTIONS:
            raise ConfigError(f"{path}: unknown section [{name}]{did_you_mean(name, SECTIONS)}")
    train = section(TrainSection, raw.get("train", {}), path, "train")
    check_installed(train.log_to, f"{path}: [train] log_to")
    bench = section(BenchmarkSection, raw.get("benchmark", {}), path, "benchmark")
    executor = section(ExecutorSection, raw.get("executor", {}), path, "executor")
    trainer_entry = plugins.trainers.get(train.trainer)
    trainer_options = plugin_options(trainer_entry, raw.get("trainer", {}), path, "trainer")
    settings = TrainSettings(train=train, benchmark=bench, executor=executor, trainer=trainer_options,
                             policies=load_policies(plugins, raw.get("policies", {}), path, train.trainer,
                                                    trainer_entry.cls.roles_for(trainer_options)),
                             evaluation=load_evaluation(raw.get("evaluation", {}), path))
    check_update_sizes(plugins, settings, trainer_entry.cls, path)
    return TrainConfig(benchmark=bench.name, data=bench.data, benchmark_options={k: str(v) for k, v in bench.options.items()},
                       tasks=list(bench.tasks) or None, limit=bench.limit, executor=executor.name,
                       executor_options={k: str(v) for k, v in executor.options.items()}, workers=executor.workers,
                       out=out, overwrite=overwrite, progress=progress, config_file=str(path), sets=list(sets),
                       resume=resume, settings=settings)


def load_policies(plugins, tables: dict, path: str, trainer: str, roles: tuple[str, ...]) -> dict[str, PolicySection]:
    """A [policies.ROLE] per role the trainer trains: its own keys, the rest the backend's options."""
    if not isinstance(tables, dict) or not all(isinstance(t, dict) for t in tables.values()):
        raise ConfigError(f"{path}: [policies] must hold a table per role ([policies.{roles[0]}], ...)")
    for role in tables:
        if role not in roles:
            raise ConfigError(f"{path}: [policies.{role}]: trainer {trainer!r} trains {', '.join(roles)}"
                              f"{did_you_mean(role, roles)}")
    policies = {}
    for role in roles:
        table = tables.get(role, {})
        if not table:
            raise ConfigError(f"{path}: [policies.{role}] is missing: trainer {trainer!r} trains {role}")
        own = section(PolicySection, {k: v for k, v in table.items() if k in POLICY_KEYS}, path, f"policies.{role}")
        backend = plugins.backends.get(own.backend)
        own.options = plugin_options(backend, {k: v for k, v in table.items() if k not in POLICY_KEYS}, path,
                                     f"policies.{role}")
        policies[role] = own
    return policies


def check_update_sizes(plugins, settings: TrainSettings, trainer_cls, path: str) -> None:
    """Each policy's backend can take the updates the trainer will give it (a backend with a
    train batch fixed at start needs exactly that many samples per update)."""
    for role, size in trainer_cls.update_sizes(settings.trainer, settings.train.batch_size).items():
        policy = settings.policies[role]
        why = plugins.backends.get(policy.backend).cls.update_size_error(policy.options, size)
        if why:
            raise ConfigError(f"{path}: [policies.{role}] backend {policy.backend!r}: {why} (trainer "
                              f"{settings.train.trainer!r} updates the {role} policy with {size} samples a step: "
                              f"batch_size {settings.train.batch_size} and its [trainer] options)")


def load_evaluation(tables: dict, path: str) -> EvaluationSection:
    if not isinstance(tables, dict):
        raise ConfigError(f"{path}: [evaluation] must be a table")
    for kind, entries in tables.items():
        if kind not in ("code", "tests"):
            raise ConfigError(f"{path}: unknown table [evaluation.{kind}]{did_you_mean(kind, ('code', 'tests'))}")
        if not isinstance(entries, list):
            raise ConfigError(f"{path}: [evaluation] {kind} must be a list of tables ([[evaluation.{kind}]])")
    return EvaluationSection(**{kind: [section(cls, entry, path, f"evaluation.{kind}][{i}")
                                       for i, entry in enumerate(tables[kind])]
                                for kind, cls in (("code", CodeEvaluation), ("tests", TestsEvaluation))
                                if kind in tables})


def section(cls, table: dict, path: str, name: str):
    """Table [name] of the config file as ``cls``; its values are kept as written (an integer
    for a float stays one), as config.json and the run identity have always recorded them."""
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: [{name}] must be a table")
    try:
        return build_dataclass(cls, table, f"[{name}] ", "key", widen=False)
    except OptionError as exc:
        raise ConfigError(f"{path}: {exc}") from None


def plugin_options(entry, table: dict, path: str, name: str):
    try:
        return parse_options(entry, table)
    except OptionError as exc:
        raise ConfigError(f"{path}: [{name}] {exc}") from None


def apply_set(raw: dict, item: str, path: str) -> None:
    """``--set section.key=value`` (value as TOML: 0.25, true, "text", [1, 2]; else a string)."""
    if "=" not in item or "." not in item.split("=", 1)[0]:
        raise ConfigError(f"--set {item!r}: expected SECTION.KEY=VALUE (e.g. trainer.alpha=0.25)")
    dotted, text = item.split("=", 1)
    try:
        value = tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        value = text
    *tables, key = dotted.strip().split(".")
    node = raw
    for name in tables:
        node = node.setdefault(name, {})
        if not isinstance(node, dict):
            raise ConfigError(f"--set {item!r}: {name} is not a table in {path}")
    node[key] = value


# -- --dry-run -------------------------------------------------------------------------------

def dry_run(plugins, cfg: TrainConfig) -> dict[str, Any]:
    """What ``train`` would start, after the checks a run makes before it loads a model
    (the run directory, the executor, the benchmark and its tasks), with nothing loaded or
    written: the plan, line by line, and the resolved config as TOML."""
    out = Path(cfg.out)
    action = out_action(cfg, out)
    check_writable(out)
    resumes = check_resume(cfg, out) if action == "resume" else []
    check_workers(cfg)
    parse_options(plugins.executors.get(cfg.executor), cfg.executor_options)
    check_models(plugins, cfg)
    loaded, selected = load_selection(create_benchmark(plugins, cfg.benchmark, cfg.data, cfg.benchmark_options), cfg)
    for _, entry in cfg.settings.evaluation.entries():
        plugins.benchmarks.get(entry.benchmark)  # a run would find out at its first evaluation
    plan = plan_lines(cfg, action, len(loaded), len(selected))
    if resumes and resumes[-1]["changed"]:
        plan.append("resume changes: " + changes_text(resumes[-1]["changed"]))
    return {"plan": plan, "config": toml_text(cfg.settings.as_dict())}


def check_models(plugins, cfg: TrainConfig) -> None:
    """Every policy's model loads here without a network: a checkpoint directory that is
    there, or a hub name in this machine's Hugging Face cache (the backend says)."""
    for role, p in cfg.settings.policies.items():
        why = plugins.backends.get(p.backend).cls.model_error(p.options)
        if why:
            raise ConfigError(f"{cfg.config_file}: [policies.{role}] key 'model': {getattr(p.options, 'model', '')}: "
                              f"{why}")


def plan_lines(cfg: TrainConfig, action: str, loaded: int, selected: int) -> list[str]:
    t, out = cfg.settings.train, Path(cfg.out)
    lines = [f"trainer {t.trainer}: {t.steps} steps of {t.batch_size} questions, seed {t.seed}, "
             f"a checkpoint every {steps(t.checkpoint_every)}, "
             + (f"evaluation every {steps(t.eval_every)}" if t.eval_every else "no evaluation"),
             f"benchmark {cfg.benchmark}: {selected} of {loaded} tasks" + (f" ({cfg.data})" if cfg.data else ""),
             f"executor {cfg.executor}: {cfg.workers or 'one per core'} workers"]
    for role, p in cfg.settings.policies.items():
        shown = ", ".join(f"{k} {getattr(p.options, k)}" for k in ("model", "device", "dtype") if hasattr(p.options, k))
        lines.append(f"policy {role}: backend {p.backend}" + (f", {shown}" if shown else ""))
    lines += [f"evaluation {kind}: {e.benchmark}" + (f", first {e.limit} tasks" if e.limit else "")
              for kind, e in cfg.settings.evaluation.entries()]
    if t.log_to:
        lines.append("step log mirrored to " + ", ".join(f"{sink} ({out / sink})" for sink in t.log_to))
    if action == "resume":
        last, done = last_checkpoint(out)
        where = f"from {last.relative_to(out)}" if last is not None else "no checkpoint: from the start"
        lines.append(f"out {out}: resumes after {done} of {t.steps} steps ({where})")
    else:
        lines.append(f"out {out}: " + ("replaces the training run there" if action == "overwrite" else "a new run"))
    return lines


def steps(n: int) -> str:
    return "step" if n == 1 else f"{n} steps"


def toml_text(settings: dict) -> str:
    """The resolved config (``TrainSettings.as_dict``) as a TOML file; a None (TOML has
    none) is left out, a default of None being what it stands for."""
    lines: list[str] = []

    def table(header: str, values: dict) -> None:
        lines.append(header)
        lines.extend(f"{toml_key(k)} = {toml_value(v)}" for k, v in values.items() if v is not None)
        lines.append("")

    for name, values in settings.items():
        if name == "policies":
            for role, policy in values.items():
                table(f"[policies.{toml_key(role)}]", policy)
        elif name == "evaluation":
            for kind, entries in values.items():
                for entry in entries:
                    table(f"[[evaluation.{kind}]]", entry)
        else:
            table(f"[{name}]", values)
    return "\n".join(lines)


def toml_key(key: str) -> str:
    return key if key and all(c.isalnum() or c in "_-" for c in key) else json.dumps(key)


def toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)  # inf and nan are TOML too
    if isinstance(value, str):
        return json.dumps(value)  # JSON's escapes are TOML's
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{toml_key(k)} = {toml_value(v)}" for k, v in value.items() if v is not None) + "}"
    raise TypeError(f"no TOML for {value!r}")


# -- the flow --------------------------------------------------------------------------------

def train(plugins, cfg: TrainConfig) -> dict[str, Any]:
    settings = cfg.settings
    out = Path(cfg.out)
    resumes = check_resume(cfg, out) if out_action(cfg, out) == "resume" else []  # before anything loads
    refuse_or_clear(cfg, out, plugins.trainers.get(settings.train.trainer).cls)
    with open_run(plugins, cfg) as run, open_policies(plugins, cfg) as (policies, sampling):
        context, trainer = open_trainer(plugins, run, cfg, policies, sampling)
        run.start(environment={"policies": {role: p.info() for role, p in context.policies.items()}},
                  **({"resumes": resumes} if resumes else {}))
        first = resume(run, trainer, context, out) if cfg.resume else 0
        t = settings.train
        if resumes:
            changed = resumes[-1]["changed"]
            print(f"resumed at step {first} of {t.steps}" + (f" ({changes_text(changed)})" if changed else ""),
                  file=sys.stderr, flush=True)
        rows = run.store.load_rows()
        t0 = time.perf_counter()
        with step_bar(t.steps, first, cfg.progress, tuple(policies), rows[:first]) as bar, \
                StepMirror(t.log_to, out, settings.as_dict()) as mirror:
            context.show_phase = bar.show_phase
            for step in range(first, t.steps):
                # the trainer gets the 0-based index (its seeds); every file and figure counts from 1
                row = {"step": step + 1, **trainer.step(step, questions_for(run, t, step)),
                       "timing": context.step_timing()}
                if t.eval_every and (step + 1) % t.eval_every == 0:
                    context.show_phase("evaluate")
                    row["evaluation"] = evaluate_policies(plugins, run, context, settings.evaluation, out, step)
                run.store.append_row(row)
                mirror.log(row)
                bar.show_figures(row)
                rows.append(row)
                if (step + 1) % t.checkpoint_every == 0 or step + 1 == t.steps:
                    context.show_phase("checkpoint")
                    checkpoint(context, trainer, out, step + 1)
                bar.update(1)
        context.show_phase("export")
        exported = {role: str(out / "export" / role) for role in context.policies}
        for role, policy in context.policies.items():
            policy.export(exported[role])
        return run.finish({"command": "train", "trainer": t.trainer, "steps": len(rows),
                           "resumed_at": first if cfg.resume else None, "exported": exported,
                           "last": rows[-1] if rows else {},
                           "seconds_this_run": round(time.perf_counter() - t0, 3)})


def refuse_or_clear(cfg: TrainConfig, out: Path, trainer_cls) -> None:
    """A directory holding a run is resumed (--resume) or replaced (--overwrite), never
    mixed with a new one."""
    if out_action(cfg, out) == "overwrite":
        for name in ("checkpoints", "export", "evaluation", "tensorboard", "wandb",
                     *(files.directory for files in trainer_cls.step_files)):
            shutil.rmtree(out / name, ignore_errors=True)


def out_action(cfg: TrainConfig, out: Path) -> str:
    """What a run does with --out: "start", "resume" or "overwrite"; a refusal is an error."""
    if out.exists() and not out.is_dir():
        raise ConfigError(f"--out {out}: a file is there; the run directory must be a directory (or not exist yet)")
    holds_run = (out / "config.json").exists()
    if holds_run and cfg.overwrite:
        return "overwrite"
    if holds_run and not cfg.resume:
        raise ConfigError(f"--out {out} holds a training run: pass --resume to continue it or --overwrite to start "
                          f"over")
    if cfg.resume and not holds_run:
        raise ConfigError(f"--resume: --out {out} holds no training run (no config.json there); "
                          f"leave out --resume to start one")
    return "resume" if holds_run else "start"


# -- resuming --------------------------------------------------------------------------------

def check_resume(cfg: TrainConfig, out: Path) -> list[dict[str, Any]]:
    """The resumes of the run in ``out``, this one last (the step it resumes at, what it
    changes), as config.json records them. Refused, naming every key that differs, when
    this config changes what the run is (a key the run identity hashes) or asks for fewer
    steps than its last checkpoint holds."""
    path = out / "config.json"
    record = cfg.record()
    check_same_run(path, record, ())  # another command's run, or an unreadable config.json
    old = json.loads(path.read_text())
    last, done = last_checkpoint(out)
    changed = changed_keys({k: old.get(k) for k in SECTIONS}, {k: record[k] for k in SECTIONS})
    refused = []
    if old.get("identity") != record["identity"]:
        refused = [describe(k, *v) for k, v in changed.items() if not resumable(k)] or [
            describe("identity", old.get("identity"), record["identity"])]  # a record older than its keys
    if cfg.settings.train.steps < done:
        refused.append(f"train.steps {cfg.settings.train.steps} is below the {done} steps done "
                       f"({last.relative_to(out)})")
    if refused:
        raise ConfigError(f"--resume: --out {out} holds a run this config changes: {'; '.join(refused)}. A resume "
                          f"may change train.steps (not below the steps done), train.checkpoint_every, "
                          f"train.eval_every, train.log_to and [[evaluation]]: pass --overwrite to start over, or "
                          f"use another --out")
    return [*old.get("resumes", []),
            {"at_step": done, "changed": {k: {"was": was, "now": now} for k, (was, now) in changed.items()}}]


def resumable(key: str) -> bool:
    return key.split(".")[0] == "evaluation" or key in {f"train.{k}" for k in RESUMABLE}


def changed_keys(old: Any, new: Any, key: str = "") -> dict[str, tuple[Any, Any]]:
    """The dotted keys ("trainer.alpha") whose values differ between two config records,
    with both values (None: not there). Tables are compared key by key, anything else whole
    by its JSON, as the run identity compares them (1 and 1.0 differ)."""
    if isinstance(old, dict) and isinstance(new, dict):
        found = {}
        for name in [*old, *(k for k in new if k not in old)]:
            found.update(changed_keys(old.get(name), new.get(name), f"{key}.{name}" if key else name))
        return found
    same = json.dumps(old, sort_keys=True, default=str) == json.dumps(new, sort_keys=True, default=str)
    return {} if same else {key: (old, new)}


def describe(key: str, was: Any, now: Any) -> str:
    """"trainer.alpha was 0.5, now 0.9", the values as TOML writes them."""
    def text(value: Any) -> str:
        return "not set" if value is None else toml_value(value)

    return f"{key} was {text(was)}, now {text(now)}"


def changes_text(changed: dict[str, dict[str, Any]]) -> str:
    """A resume's recorded changes, one clause each."""
    return "; ".join(describe(k, v["was"], v["now"]) for k, v in changed.items())


@contextmanager
def open_policies(plugins, cfg: TrainConfig) -> Iterator[tuple[dict[str, PolicyBackend], dict[str, SamplingParams]]]:
    """The policies by role, each its backend built from its options, and their sampling;
    every policy that opened is closed when the run ends, fails or is interrupted (a backend
    on a cluster leaves no actor behind)."""
    seed = cfg.settings.train.seed
    policies, sampling = {}, {}
    try:
        for role, p in cfg.settings.policies.items():
            policies[role] = plugins.backends.create(p.backend, p.options, seed=seed)
            sampling[role] = SamplingParams(temperature=p.temperature, top_p=p.top_p, max_tokens=p.max_tokens,
                                            seed=seed)
        yield policies, sampling
    finally:
        failed = []
        for policy in policies.values():
            try:
                policy.close()
            except Exception as exc:  # noqa: BLE001 - close the others; the first failure is raised below
                failed.append(exc)
        if failed and sys.exc_info()[0] is None:  # an error already on its way wins
            raise failed[0]


def open_trainer(plugins, run: Run, cfg: TrainConfig, policies: dict[str, PolicyBackend],
                 sampling: dict[str, SamplingParams]):
    context = TrainContext(plugins=plugins, run=run, policies=policies, sampling=sampling, seed=cfg.settings.train.seed,
                           out=Path(cfg.out))
    trainer = plugins.trainers.create(cfg.settings.train.trainer, cfg.settings.trainer, context=context)
    return context, trainer


def questions_for(run: Run, train: TrainSection, step: int) -> list:
    """The step's questions: epoch e is a permutation of the tasks seeded by (seed, e);
    step s takes the next batch_size of them, wrapping into the next epoch."""
    ids = list(run.problems)
    size = train.batch_size
    out = []
    for position in range(step * size, (step + 1) * size):
        epoch, index = divmod(position, len(ids))
        order = ids[:]
        random.Random(f"{train.seed}/{epoch}").shuffle(order)
        out.append(run.problems[order[index]])
    return out


def checkpoint(context: TrainContext, trainer, out: Path, steps_done: int) -> None:
    """DIR/checkpoints/step-N: every policy, the trainer's state, and the step count, written
    to a temporary directory and renamed, so a kill leaves the last one whole."""
    root = out / "checkpoints"
    final = root / f"step-{steps_done:06d}"
    tmp = root / f".step-{steps_done:06d}.{os.getpid()}.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    for role, policy in context.policies.items():
        policy.save(str(tmp / "policies" / role))
    (tmp / "trainer").mkdir(parents=True, exist_ok=True)
    trainer.save(tmp / "trainer")
    (tmp / "state.json").write_text(json.dumps({"steps_done": steps_done}))
    shutil.rmtree(final, ignore_errors=True)
    os.replace(tmp, final)
    for older in sorted(root.glob("step-*"))[:-2]:  # keep the last two
        shutil.rmtree(older, ignore_errors=True)


def last_checkpoint(out: Path) -> tuple[Path | None, int]:
    """The last complete checkpoint under DIR/checkpoints and the steps done at it."""
    done = sorted(p for p in (out / "checkpoints").glob("step-*") if (p / "state.json").exists())
    if not done:
        return None, 0
    return done[-1], json.loads((done[-1] / "state.json").read_text())["steps_done"]


def resume(run: Run, trainer, context: TrainContext, out: Path) -> int:
    """Load the last complete checkpoint and cut the step log and the per-step files back to
    it; the steps after it are run again, as they ran the first time."""
    last, steps_done = last_checkpoint(out)
    if last is not None:
        for role, policy in context.policies.items():
            policy.load(str(last / "policies" / role))
        trainer.load(last / "trainer")
    rows = run.store.load_rows()
    if len(rows) > steps_done:
        kept = rows[:steps_done]  # row i is step i + 1
        run.store.rows_path.write_text("".join(json.dumps(r, separators=(",", ":"), default=str) + "\n" for r in kept))
    for files in trainer.step_files:  # step-N is what N steps left
        for path in files.after(out, steps_done):
            path.unlink()
    return steps_done


class step_bar:
    """The steps on two lines that each fit the terminal, 80 columns at most: the bar, with
    the step now running, its phase and its seconds so far, and the run's time left (tqdm's,
    from the steps' rate; before a step has ended, ``time_left``'s); under it, the last
    step's rewards and each policy's loss (is the run learning?)."""

    # Before a step of this process has ended, tqdm has no rate: the bar shows the elapsed time
    # alone and the postfix carries the estimate (``time_left``).
    NO_RATE_FORMAT = "{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} [{elapsed}{postfix}]"

    def __init__(self, total: int, first: int, enabled: bool, roles: tuple[str, ...] = (), done_rows=()):
        self.total, self.first, self.enabled, self.roles = total, first, enabled, roles
        self.bar = self.status = None
        self.step = first + 1
        self.step_start = time.perf_counter()
        self.earlier_step_s = mean_step_seconds(done_rows)

    def __enter__(self):
        if self.enabled:
            import shutil
            import sys

            from tqdm import tqdm

            width = min(80, shutil.get_terminal_size((80, 24)).columns)
            self.bar = tqdm(total=self.total, initial=self.first, desc="train", unit="step", file=sys.stderr,
                            ncols=width, position=0, bar_format=self.NO_RATE_FORMAT)
            self.status = tqdm(total=0, bar_format="{desc}", file=sys.stderr, ncols=width, position=1,
                               desc="  last step: none yet")
        return self

    def show_phase(self, name: str) -> None:
        if self.bar is not None:
            in_step = time.perf_counter() - self.step_start  # the step's own clock
            text = f"step {self.step}: {name}, {in_step:.0f}s in"
            if self.bar.n == self.first:  # no step of this process has ended: tqdm has no rate yet
                left = time_left(self.total - self.step, in_step, self.earlier_step_s)
                text += f", {left} left" if left else ""
            self.bar.set_postfix_str(text, refresh=True)

    def show_figures(self, row: dict) -> None:
        if self.status is not None:
            self.status.set_description_str(f"  last step ({row.get('step')}): {bar_figures(row, self.roles)}",
                                            refresh=True)

    def update(self, n: int) -> None:
        self.step += n
        self.step_start = time.perf_counter()
        if self.bar is not None:
            if self.bar.n == self.first:
                self.bar.bar_format = None  # tqdm's own: elapsed<remaining, rate
            self.bar.update(n)

    def __exit__(self, *exc):
        for bar in (self.status, self.bar):
            if bar is not None:
                bar.close()
        self.bar = self.status = None  # the phases after the steps (export) show on no bar


def time_left(steps_after: int, in_step: float, earlier_step_s: float | None) -> str:
    """The run's time left, as the bar shows it before any step of this process has ended:
    from the steps done before a resume (their mean phase seconds, ``earlier_step_s``) as
    "~4m"; else, in a new run's first step, the steps after this one times this step's
    seconds so far, as "9m+": the step is at least that long, and the figure grows until it
    ends (the first step also loads and warms up, so later steps may be quicker). "" where
    there is nothing to go on yet: a new run's first second, or its only step."""
    if earlier_step_s is not None:
        return "~" + seconds_text(max(earlier_step_s - in_step, 0.0) + steps_after * earlier_step_s)
    if steps_after < 1 or in_step < 1:
        return ""
    return seconds_text(steps_after * in_step) + "+"


def seconds_text(seconds: float) -> str:
    """45s, 12m, 3.4h: short enough for the bar's 80 columns."""
    if seconds < 90:
        return f"{seconds:.0f}s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f}m"
    return f"{seconds / 3600:.1f}h"


def mean_step_seconds(rows) -> float | None:
    """A step's mean seconds over the step log's rows that carry phase timing (the sum of
    their phases' seconds; evaluation and checkpoints aside); None when none does."""
    totals = [sum(v for v in row["timing"].values() if isinstance(v, (int, float)))
              for row in rows if isinstance(row.get("timing"), dict) and row["timing"]]
    return sum(totals) / len(totals) if totals else None


def bar_figures(row: dict, roles: tuple[str, ...]) -> str:
    """A step row's rewards (its "reward..." numbers) and each policy's loss ("code_loss"),
    as the bar shows them."""
    keys = [k for k in row if k.startswith("reward")] + [f"{role}_loss" for role in roles]
    return ", ".join(f"{k} {row[k]:.3g}" for k in keys
                     if isinstance(row.get(k), (int, float)) and not isinstance(row.get(k), bool))


def evaluate_policies(plugins, run: Run, context: TrainContext, evaluation: EvaluationSection, out: Path,
                      step: int) -> dict:
    """The current policies through the evaluate and evaluate-tests flows: the code policy's
    samples scored (avg@k), the test policy's suites scored (test-pass@k, mut@k, Mul)."""
    from codea1.harness.flows.evaluate import EvaluateConfig, evaluate
    from codea1.harness.flows.evaluate_tests import EvaluateTestsConfig, evaluate_tests
    from codea1.harness.prompts import DEFAULT_PROMPT, question_messages
    from codea1.harness.run import select_tasks
    from codea1.harness.verdicts.responses import extract_tests, program_from_response

    results: dict[str, Any] = {}
    root = out / "evaluation" / f"step-{step + 1:06d}"
    for kind, e in evaluation.entries():
        role = kind if kind in context.policies else "code"
        bench = create_benchmark(plugins, e.benchmark, e.data, {})
        problems = bench.prepare(select_tasks(bench.load(), None, e.limit, e.benchmark))
        messages = [question_messages(DEFAULT_PROMPT[kind], p, k=getattr(e, "n_tests", 8)) for p in problems]
        sampling = SamplingParams(e.temperature, e.top_p, e.max_tokens, context.seed_for(step, f"eval/{kind}"))
        samples = context.policies[role].generate(messages, e.n if kind == "code" else 1, sampling,
                                                  context.seed_for(step, f"eval/{kind}/{e.benchmark}"))
        folder = root / f"{kind}-{e.benchmark}"
        folder.mkdir(parents=True, exist_ok=True)
        if kind == "code":
            rows = [{"task_id": p.task_id, "solution": program_from_response(p.prompt, p.entry_point, s.text)}
                    for p, row in zip(problems, samples) for s in row]
            (folder / "samples.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
            r = evaluate(plugins, EvaluateConfig(benchmark=e.benchmark, data=e.data, samples=str(folder / "samples.jsonl"),
                                                 k=e.k, tasks=[p.task_id for p in problems], out=str(folder / "run"),
                                                 overwrite=True, progress=False), executor=run.executor)
        else:
            rows = [{"task_id": p.task_id, "tests": extract_tests(row[0].text, p.entry_point, max(e.k)).tests}
                    for p, row in zip(problems, samples)]
            (folder / "tests.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
            r = evaluate_tests(plugins, EvaluateTestsConfig(
                benchmark=e.benchmark, data=e.data, tests=str(folder / "tests.jsonl"), k=e.k, coverage=False,
                tasks=[p.task_id for p in problems], out=str(folder / "run"), overwrite=True, progress=False,
                executor=run.cfg.executor, executor_options=run.cfg.executor_options, workers=run.cfg.workers))
        results[f"{kind}/{e.benchmark}"] = r["metrics"]
    return results
