"""Generation: the generator plugin API and the ``codea1 generate`` flow.

A generator plugin (``codea1_register_generators``) is a class with ``name``,
``description``, an optional ``Options`` dataclass, and::

    def __init__(self, options, *, model: str | None, sampling: SamplingParams): ...
    def identity(self) -> dict | None: ...   # what the cache keys on; None: no cache
    def generate(self, requests) -> Iterator[tuple[GenerationRequest, list[Generation]]]: ...
    def close(self): ...

``generate`` may answer requests in any order and should yield each as soon as it is done:
the flow writes rows as they come, so an interrupted run loses only what was in flight.
Heavy libraries (torch, transformers, vllm, openai) are imported in the plugin, when it is
created.

The flow: problems -> prompts (harness.prompts) -> requests for the samples still missing
per task (resume counts what samples.jsonl / tests.jsonl already hold) -> cache -> generator
-> parsing (harness.parsing) -> one JSON row per sample, appended as it lands.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator

from codea1.harness.parsing import extract_code, extract_tests
from codea1.harness.plugin_manager import Plugins
from codea1.harness.progress import stage_bar
from codea1.harness.prompts import DEFAULT_PROMPT, get_prompt, question_text
from codea1.harness.records import Problem
from codea1.harness.registry import did_you_mean, parse_options
from codea1.harness.runstore import RunStore

ROLES = ("code", "tests")


class GenerationError(RuntimeError):
    """A generator could not produce what was asked (a server that keeps failing, a replay
    file without the sample); rows already written stay, and a rerun resumes."""


class GeneratorUnavailable(RuntimeError):
    """The generator's library is not installed; the message says what to pip install."""


@dataclass(frozen=True)
class SamplingParams:
    temperature: float = 0.7
    top_p: float = 0.95
    max_tokens: int = 1024
    seed: int = 0


@dataclass
class GenerationRequest:
    """``len(indices)`` samples of one prompt: sample numbers ``indices`` of ``unit``."""

    task_id: str
    unit: str  # the task, or the task and the candidate code a white-box suite attacks
    messages: list[dict[str, str]]
    indices: list[int]
    seed: int  # derived from (sampling seed, unit, first index): stable across resumes
    code_index: int | None = None

    @property
    def n(self) -> int:
        return len(self.indices)


@dataclass
class Generation:
    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    finish_reason: str = ""  # "stop", "length", or what the backend says


class Generator:
    name = ""
    description = ""

    def __init__(self, options: Any = None, *, model: str | None = None, sampling: SamplingParams = SamplingParams()):
        self.options = options
        self.model = model
        self.sampling = sampling

    def identity(self) -> dict[str, Any] | None:
        return None

    def generate(self, requests: list[GenerationRequest]) -> Iterator[tuple[GenerationRequest, list[Generation]]]:
        raise NotImplementedError

    def info(self) -> dict[str, Any]:
        return {"name": self.name, "model": self.model}

    def close(self) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def request_seed(seed: int, unit: str, first_index: int) -> int:
    digest = hashlib.sha256(f"{seed}\0{unit}\0{first_index}".encode()).digest()
    return int.from_bytes(digest[:4], "little") & 0x7FFFFFFF


def model_fingerprint(path: str | None) -> dict[str, Any]:
    """What identifies a model for the cache: a local directory by its files' names, sizes
    and modification times (retrained weights at the same path are another model); a hub
    name or an API model by its name."""
    if not path or not os.path.isdir(path):
        return {"model": path}
    files = sorted((f.name, f.stat().st_size, int(f.stat().st_mtime)) for f in Path(path).iterdir() if f.is_file())
    return {"model": str(Path(path).resolve()), "files": files}


class GenerationCache:
    """Generations by (generator identity, sampling parameters, prompt, sample number).

    The sample number is part of the key, so n samples of one prompt are n entries and a
    repeated sample is never collapsed into one (the bug lm-eval PR #3715 fixed). One JSON
    Lines file per identity, appended as generations land."""

    def __init__(self, directory: str | Path, identity: dict[str, Any], sampling: SamplingParams):
        key = json.dumps({"identity": identity, "sampling": asdict(sampling)}, sort_keys=True, default=str)
        self.path = Path(directory) / f"{hashlib.sha256(key.encode()).hexdigest()[:24]}.jsonl"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.entries: dict[tuple[str, int], Generation] = {}
        if self.path.exists():
            for line in self.path.read_text(encoding="utf-8").splitlines():
                try:
                    row = json.loads(line)
                    self.entries[(row["prompt"], row["index"])] = Generation(**row["generation"])
                except (json.JSONDecodeError, KeyError, TypeError):
                    continue  # a torn line from an interrupted run: that entry is regenerated
        self.hits = 0

    @staticmethod
    def prompt_key(messages: list[dict[str, str]]) -> str:
        return hashlib.sha256(json.dumps(messages, sort_keys=True).encode()).hexdigest()

    def get(self, messages, index: int) -> Generation | None:
        return self.entries.get((self.prompt_key(messages), index))

    def put(self, messages, index: int, generation: Generation) -> None:
        key = self.prompt_key(messages)
        self.entries[(key, index)] = generation
        with open(self.path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps({"prompt": key, "index": index, "generation": asdict(generation)}) + "\n")


def default_cache_dir() -> Path:
    base = os.environ.get("CODEA1_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "codea1")
    return Path(base) / "generations"


def with_cache(generator: Generator, cache: GenerationCache | None, requests: list[GenerationRequest]
               ) -> Iterator[tuple[GenerationRequest, list[Generation]]]:
    """Serve what the cache holds, ask the generator for the rest (only the missing sample
    numbers), and store what it returns."""
    if cache is None:
        yield from generator.generate(requests)
        return
    to_ask = []
    for req in requests:
        hits = [cache.get(req.messages, i) for i in req.indices]
        if all(h is not None for h in hits):
            cache.hits += len(hits)
            yield req, hits
            continue
        missing = [i for i, h in zip(req.indices, hits) if h is None]
        if len(missing) < len(req.indices):  # partly cached: the cached ones now, the rest asked
            cached = [(i, h) for i, h in zip(req.indices, hits) if h is not None]
            cache.hits += len(cached)
            yield GenerationRequest(req.task_id, req.unit, req.messages, [i for i, _ in cached], req.seed,
                                    req.code_index), [h for _, h in cached]
        to_ask.append(GenerationRequest(req.task_id, req.unit, req.messages, missing,
                                        request_seed(generator.sampling.seed, req.unit, missing[0]), req.code_index))
    for req, gens in generator.generate(to_ask) if to_ask else ():
        for i, g in zip(req.indices, gens):
            cache.put(req.messages, i, g)
        yield req, gens


# -- the flow --------------------------------------------------------------------------------
@dataclass
class GenerateConfig:
    benchmark: str
    role: str  # "code" or "tests"
    generator: str
    out: str
    model: str | None = None
    n: int = 1
    temperature: float = 0.7
    top_p: float = 0.95
    max_tokens: int = 1024
    seed: int = 0
    k: int = 8  # asserts per test suite
    white_box_from: str | None = None  # samples file whose codes the suites attack
    prompt: str | None = None  # prompt name; default by role
    prompt_file: str | None = None
    data: str | None = None
    limit: int | None = None  # the first N tasks only
    tasks: list[str] | None = None  # these tasks only
    benchmark_options: dict[str, str] = field(default_factory=dict)
    generator_options: dict[str, str] = field(default_factory=dict)
    cache: bool = True
    cache_dir: str | None = None
    overwrite: bool = False
    progress: bool = True

    # What must match to resume into the same directory. n may grow (more samples are added),
    # and --limit / --tasks only choose which tasks get samples in this call.
    IDENTITY = ("benchmark", "data", "role", "generator", "model", "temperature", "top_p", "max_tokens", "seed", "k",
                "white_box_from", "prompt", "prompt_text", "generator_options")

    def sampling(self) -> SamplingParams:
        return SamplingParams(self.temperature, self.top_p, self.max_tokens, self.seed)


def rows_name(role: str) -> str:
    return "samples.jsonl" if role == "code" else "tests.jsonl"


def _white_box_codes(path: str, problems, bench) -> dict[str, list[str]]:
    from codea1.harness.samples import load_samples

    codes: dict[str, list[str]] = defaultdict(list)
    for s in load_samples(path, problems, bench.sample_code):
        codes[s.task_id].append(s.code)
    return codes


def generate(plugins: Plugins, cfg: GenerateConfig) -> dict[str, Any]:
    if cfg.role not in ROLES:
        raise ValueError(f"--role {cfg.role!r}: expected one of {', '.join(ROLES)}")
    if cfg.n < 1 or cfg.k < 1:
        raise ValueError("--n and --k must be at least 1")
    if cfg.white_box_from and cfg.role != "tests":
        raise ValueError("--white-box-from is for --role tests")
    # A wrong generator name or option fails before anything is written.
    parse_options(plugins.generators.get(cfg.generator), cfg.generator_options)
    bench = plugins.benchmarks.create(cfg.benchmark, {**cfg.benchmark_options, **({"data": cfg.data} if cfg.data else {})})
    problems = {p.task_id: p for p in bench.load()}
    task_ids = list(problems)
    if cfg.tasks:
        for t in cfg.tasks:
            if t not in problems:
                raise ValueError(f"--tasks: {t!r} is not a task of {cfg.benchmark}{did_you_mean(t, problems)}")
        task_ids = [t for t in task_ids if t in set(cfg.tasks)]
    task_ids = task_ids[: cfg.limit] if cfg.limit else task_ids
    role_key = "tests-white-box" if cfg.white_box_from else ("code" if cfg.role == "code" else "tests")
    prompt = get_prompt(cfg.prompt or DEFAULT_PROMPT[role_key], cfg.prompt_file)
    if cfg.white_box_from and "code" not in prompt.fields():
        raise ValueError(f"prompt {prompt.name!r} has no {{code}}: a white-box suite needs the code it attacks")
    codes = _white_box_codes(cfg.white_box_from, problems, bench) if cfg.white_box_from else {}

    config = {**asdict(cfg), "command": "generate",
              "prompt": prompt.name, "prompt_text": {"system": prompt.system, "user": prompt.user}}
    store = RunStore(cfg.out, config, GenerateConfig.IDENTITY, overwrite=cfg.overwrite, rows_name=rows_name(cfg.role))
    have: dict[str, int] = defaultdict(int)
    for row in store.load_rows():
        have[_unit(row["task_id"], row.get("code_index"))] += 1

    requests: list[GenerationRequest] = []
    for task_id in task_ids:
        p = problems[task_id]
        targets = list(enumerate(codes.get(task_id, []))) if cfg.white_box_from else [(None, None)]
        for code_index, code in targets:
            unit = _unit(task_id, code_index)
            if have[unit] >= cfg.n:
                continue
            values = {"question": question_text(p), "k": cfg.k, "entry_point": p.entry_point,
                      "code": (code or "").strip("\n")}
            messages = prompt.messages(**{f: values[f] for f in prompt.fields()})
            indices = list(range(have[unit], cfg.n))
            requests.append(GenerationRequest(task_id, unit, messages, indices,
                                              request_seed(cfg.seed, unit, indices[0]), code_index))
    wanted = sum(r.n for r in requests)

    stats = {"samples": 0, "prompt_tokens": 0, "completion_tokens": 0, "cache_hits": 0, "finish_reasons": {}}
    t0 = time.perf_counter()
    generator = plugins.generators.create(cfg.generator, cfg.generator_options, model=cfg.model,
                                          sampling=cfg.sampling()) if requests else None
    try:
        identity = generator.identity() if generator else None
        cache = (GenerationCache(cfg.cache_dir or default_cache_dir(), identity, cfg.sampling())
                 if generator and cfg.cache and identity is not None else None)
        store.write_environment({"generator": generator.info() if generator else {"name": cfg.generator}})
        with stage_bar("generate", wanted, cfg.progress) as bar:
            for req, gens in with_cache(generator, cache, requests) if requests else ():
                if len(gens) != req.n:
                    raise GenerationError(f"generator {cfg.generator!r} returned {len(gens)} samples for "
                                          f"{req.unit}, asked for {req.n}")
                for index, g in zip(req.indices, gens):
                    row = sample_row(cfg.role, cfg.k, problems[req.task_id], req, index, g)
                    store.append_row(row)
                    stats["samples"] += 1
                    stats["prompt_tokens"] += g.prompt_tokens
                    stats["completion_tokens"] += g.completion_tokens
                    stats["finish_reasons"][g.finish_reason] = stats["finish_reasons"].get(g.finish_reason, 0) + 1
                bar.update(len(gens))
        stats["cache_hits"] = cache.hits if cache else 0
    finally:
        if generator is not None:  # again at the end: the generator's counters (retries, ...)
            store.write_environment({"generator": generator.info()})
            generator.close()
    elapsed = time.perf_counter() - t0
    rows = store.load_rows()
    results = {"command": "generate", "role": cfg.role, "benchmark": cfg.benchmark, "generator": cfg.generator,
               "model": cfg.model, "prompt": prompt.name, "tasks": len(task_ids), "rows": len(rows),
               "this_run": {**stats, "seconds": round(elapsed, 3),
                            "samples_per_s": round(stats["samples"] / elapsed, 3) if elapsed else None,
                            "completion_tokens_per_s": round(stats["completion_tokens"] / elapsed, 1) if elapsed else None},
               "parsing": parsing_summary(rows, cfg.role)}
    store.write_results(results)
    return results


def sample_row(role: str, k: int, problem: Problem, req: GenerationRequest, index: int, g: Generation) -> dict:
    """One line of samples.jsonl (evalplus' task_id + solution) or tests.jsonl, with the raw
    response and what parsing made of it."""
    row: dict[str, Any] = {"task_id": req.task_id, "index": index}
    if req.code_index is not None:
        row["code_index"] = req.code_index
    if role == "code":
        ex = extract_code(g.text, problem.entry_point)
        row["solution"] = _with_prompt_imports(problem.prompt, ex.code)
        row["extraction"] = {key: v for key, v in ex.to_json().items() if key != "code"}
    else:
        suite = extract_tests(g.text, problem.entry_point, k)
        row["tests"] = suite.tests
        row["parse"] = {key: v for key, v in suite.to_json().items() if key != "tests"}
    row.update({"raw": g.text, "finish_reason": g.finish_reason, "prompt_tokens": g.prompt_tokens,
                "completion_tokens": g.completion_tokens})
    return row


def _unit(task_id: str, code_index: int | None) -> str:
    return task_id if code_index is None else f"{task_id}#code{code_index}"


def _with_prompt_imports(prompt: str, code: str) -> str:
    """Models often answer with the function alone, without the imports the prompt made
    (``from typing import List``): those imports go in front."""
    import ast

    if not code.strip():
        return code
    try:
        tree = ast.parse(prompt)
    except SyntaxError:
        return code
    imports = [ast.get_source_segment(prompt, n) for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
    missing = [line for line in imports if line and line not in code]
    return "\n".join(missing) + "\n\n" + code if missing else code


def parsing_summary(rows: Iterable[dict], role: str) -> dict[str, Any]:
    rows = list(rows)
    if role == "code":
        ex = [r.get("extraction", {}) for r in rows]
        return {"samples": len(rows), "fenced": sum(1 for e in ex if e.get("source", "").startswith("block")),
                "syntax_errors": sum(1 for e in ex if e.get("syntax_error")),
                "defines_entry_point": sum(1 for e in ex if e.get("defines_entry_point"))}
    ps = [r.get("parse", {}) for r in rows]
    return {"suites": len(rows), "requested": sum(p.get("requested", 0) for p in ps),
            "found": sum(p.get("found", 0) for p in ps), "kept": sum(len(r.get("tests", [])) for r in rows),
            "parsed": sum(p.get("parsed", 0) for p in ps), "unique": sum(p.get("unique", 0) for p in ps),
            "missing": sum(p.get("missing", 0) for p in ps)}
