"""``codea1 generate``: sample code (samples.jsonl) or test suites (tests.jsonl) from a model.

Stages: plan (the benchmark's questions through the prompt; per task, and per candidate code
for white-box suites, only the samples the rows file does not hold yet), generate (the cache
first, then the generator; each sample parsed and appended as it lands, one progress bar),
summarise (tokens, speed, parsing totals). Nothing is written until the generator exists,
so a missing library or a wrong option leaves no run directory behind.
"""

from __future__ import annotations

import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from codea1.harness.errors import ConfigError
from codea1.harness.generation import (
    Generation,
    GenerationCache,
    GenerationError,
    GenerationRequest,
    Generator,
    SamplingParams,
    default_cache_dir,
    request_seed,
    with_cache,
)
from codea1.harness.jsonl import appended_rows
from codea1.harness.progress import stage_bar
from codea1.harness.prompts import DEFAULT_PROMPT, Prompt, get_prompt, question_messages
from codea1.harness.records import Problem
from codea1.harness.registry import parse_options
from codea1.harness.run import Run, RunConfig, open_run
from codea1.harness.samples import load_samples
from codea1.harness.verdicts.responses import extract_code, extract_tests, with_prompt_imports

ROLES = ("code", "tests")


@dataclass(kw_only=True)
class GenerateConfig(RunConfig):
    role: str  # "code" or "tests"
    generator: str
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
    generator_options: dict[str, str] = field(default_factory=dict)
    cache: bool = True
    cache_dir: str | None = None

    COMMAND = "generate"
    # What must match to resume into the same directory. n may grow (more samples are added),
    # and --limit / --tasks only choose which tasks get samples in this call.
    IDENTITY = ("benchmark", "data", "role", "generator", "model", "temperature", "top_p", "max_tokens", "seed", "k",
                "white_box_from", "prompt", "prompt_text", "generator_options")

    def sampling(self) -> SamplingParams:
        return SamplingParams(self.temperature, self.top_p, self.max_tokens, self.seed)

    def rows_file(self) -> str:
        return rows_name(self.role)


def rows_name(role: str) -> str:
    return "samples.jsonl" if role == "code" else "tests.jsonl"


def generate(plugins, cfg: GenerateConfig) -> dict[str, Any]:
    check_config(plugins, cfg)
    with open_run(plugins, cfg) as run:
        prompt = choose_prompt(cfg)
        requests = plan(run, cfg, prompt)
        generator = (plugins.generators.create(cfg.generator, cfg.generator_options, model=cfg.model,
                                               sampling=cfg.sampling()) if requests else None)
        try:
            run.start(environment={"generator": generator.info() if generator else {"name": cfg.generator}},
                      prompt=prompt.name, prompt_text={"system": prompt.system, "user": prompt.user})
            t0 = time.perf_counter()
            stats = generate_rows(run, cfg, generator, requests)
        finally:
            if generator is not None:  # again at the end: the generator's counters (retries, ...)
                if run.store is not None:
                    run.store.write_environment({"generator": generator.info()})
                generator.close()
        return run.finish(summarise(run, cfg, prompt, stats, time.perf_counter() - t0))


# -- stages ----------------------------------------------------------------------------------

def check_config(plugins, cfg: GenerateConfig) -> None:
    if cfg.role not in ROLES:
        raise ConfigError(f"--role {cfg.role!r}: expected one of {', '.join(ROLES)}")
    if cfg.n < 1 or cfg.k < 1:
        raise ConfigError("--n and --k must be at least 1")
    if cfg.white_box_from and cfg.role != "tests":
        raise ConfigError("--white-box-from is for --role tests")
    parse_options(plugins.generators.get(cfg.generator), cfg.generator_options)  # a wrong name or option


def choose_prompt(cfg: GenerateConfig) -> Prompt:
    role_key = "tests-white-box" if cfg.white_box_from else ("code" if cfg.role == "code" else "tests")
    prompt = get_prompt(cfg.prompt or DEFAULT_PROMPT[role_key], cfg.prompt_file)
    if cfg.white_box_from and "code" not in prompt.fields():
        raise ConfigError(f"prompt {prompt.name!r} has no {{code}}: a white-box suite needs the code it attacks")
    return prompt


def plan(run: Run, cfg: GenerateConfig, prompt: Prompt) -> list[GenerationRequest]:
    """One request per task (per task and candidate code for white-box suites) for the
    samples the rows file does not hold yet."""
    codes: dict[str, list[str]] = defaultdict(list)
    if cfg.white_box_from:
        for s in load_samples(cfg.white_box_from, run.all_problems, run.bench.sample_code):
            codes[s.task_id].append(s.code)
    have: dict[str, int] = defaultdict(int)
    if not cfg.overwrite:  # read only: the rows file may still turn out to be another run's
        for row in appended_rows(Path(cfg.out) / cfg.rows_file(), error=None, repair=False):
            have[unit_of(row["task_id"], row.get("code_index"))] += 1
    requests = []
    for task_id, p in run.problems.items():
        targets = list(enumerate(codes.get(task_id, []))) if cfg.white_box_from else [(None, None)]
        for code_index, code in targets:
            unit = unit_of(task_id, code_index)
            if have[unit] >= cfg.n:
                continue
            messages = question_messages(prompt, p, cfg.k, code)
            indices = list(range(have[unit], cfg.n))
            requests.append(GenerationRequest(task_id, unit, messages, indices,
                                              request_seed(cfg.seed, unit, indices[0]), code_index))
    return requests


def generate_rows(run: Run, cfg: GenerateConfig, generator: Generator | None,
                  requests: list[GenerationRequest]) -> dict[str, Any]:
    """Serve the requests (cache first), parse each sample and append its row as it lands."""
    stats = {"samples": 0, "prompt_tokens": 0, "completion_tokens": 0, "cache_hits": 0, "finish_reasons": {}}
    if generator is None:
        return stats
    identity = generator.identity()
    cache = (GenerationCache(cfg.cache_dir or default_cache_dir(), identity, cfg.sampling())
             if cfg.cache and identity is not None else None)
    with stage_bar("generate", sum(r.n for r in requests), cfg.progress) as bar:
        for req, gens in with_cache(generator, cache, requests):
            if len(gens) != req.n:
                raise GenerationError(f"generator {cfg.generator!r} returned {len(gens)} samples for "
                                      f"{req.unit}, asked for {req.n}")
            for index, g in zip(req.indices, gens):
                run.store.append_row(sample_row(cfg.role, cfg.k, run.problems[req.task_id], req, index, g))
                stats["samples"] += 1
                stats["prompt_tokens"] += g.prompt_tokens
                stats["completion_tokens"] += g.completion_tokens
                stats["finish_reasons"][g.finish_reason] = stats["finish_reasons"].get(g.finish_reason, 0) + 1
            bar.update(len(gens))
    stats["cache_hits"] = cache.hits if cache else 0
    return stats


def summarise(run: Run, cfg: GenerateConfig, prompt: Prompt, stats: dict, elapsed: float) -> dict[str, Any]:
    rows = run.store.load_rows()
    return {"command": "generate", "role": cfg.role, "benchmark": cfg.benchmark, "generator": cfg.generator,
            "model": cfg.model, "prompt": prompt.name, "tasks": len(run.problems), "rows": len(rows),
            "this_run": {**stats, "seconds": round(elapsed, 3),
                         "samples_per_s": round(stats["samples"] / elapsed, 3) if elapsed else None,
                         "completion_tokens_per_s": round(stats["completion_tokens"] / elapsed, 1) if elapsed else None},
            "parsing": parsing_summary(rows, cfg.role)}


def sample_row(role: str, k: int, problem: Problem, req: GenerationRequest, index: int, g: Generation) -> dict:
    """One line of samples.jsonl (evalplus' task_id + solution) or tests.jsonl, with the raw
    response and what parsing made of it."""
    row: dict[str, Any] = {"task_id": req.task_id, "index": index}
    if req.code_index is not None:
        row["code_index"] = req.code_index
    if role == "code":
        ex = extract_code(g.text, problem.entry_point)
        row["solution"] = with_prompt_imports(problem.prompt, ex.code)
        row["extraction"] = {key: v for key, v in ex.to_json().items() if key != "code"}
    else:
        suite = extract_tests(g.text, problem.entry_point, k)
        row["tests"] = suite.tests
        row["parse"] = {key: v for key, v in suite.to_json().items() if key != "tests"}
    row.update({"raw": g.text, "finish_reason": g.finish_reason, "prompt_tokens": g.prompt_tokens,
                "completion_tokens": g.completion_tokens})
    return row


def unit_of(task_id: str, code_index: int | None) -> str:
    return task_id if code_index is None else f"{task_id}#code{code_index}"


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
