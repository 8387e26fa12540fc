"""The generator plugin API: requests, generations, the base class and the cache.

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

The ``codea1 generate`` flow around it is ``codea1.harness.flows.generate``.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Iterator

from codea1.harness.errors import Codea1Error
from codea1.harness.jsonl import appended_rows


class GenerationError(Codea1Error):
    """A generator could not produce what was asked (a server that keeps failing, a replay
    file without the sample); rows already written stay, and a rerun resumes."""


class GeneratorUnavailable(Codea1Error):
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


def looks_like_path(model: str) -> bool:
    """A name only a directory can have: "./x", "/x", "~/x", "a/b/c", "x/" (a hub name is "org/name")."""
    return model.startswith((".", "/", "~")) or model.count("/") > 1 or model.endswith("/")


def load_tokenizer(transformers, model: str, what: str, trust_remote_code: bool = False):
    """transformers' tokenizer of ``model`` (a checkpoint directory or a hub name), the first
    thing loaded from it: a path that is not there, or a name that cannot be fetched, is a
    one-line error naming ``what`` (the flag or config key), not transformers' traceback."""
    if looks_like_path(model) and not Path(model).expanduser().exists():
        raise GenerationError(f"{what} {model}: no such checkpoint directory")
    try:
        return transformers.AutoTokenizer.from_pretrained(model, trust_remote_code=trust_remote_code)
    except (OSError, ValueError) as exc:  # huggingface_hub's validation errors are ValueErrors
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise GenerationError(f"{what} {model}: not a checkpoint directory here, nor a model this machine "
                              f"can download ({first})") from None


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
        # A bad line (torn by an interrupted run) loses only its entry: it is regenerated.
        rows = appended_rows(self.path, lambda row: ((row["prompt"], row["index"]), Generation(**row["generation"])),
                             error=None)
        self.entries: dict[tuple[str, int], Generation] = dict(rows)
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
