"""Rollout engines of the ``torch`` backend: what samples the policy's responses.

The backend owns the policy (weights, optimiser, update); an engine turns prompt token ids
into responses, from the policy's current weights. Two engines, one module each, chosen by
the backend's ``rollout_engine`` option:

- ``transformers`` (transformers_engine.py, the default): the policy model itself, prompts
  bucketed by length; on a CPU an own decode loop that drops finished sequences from the
  batch, on CUDA an own loop over a static KV cache whose steps are replayed CUDA graphs
  (graph_decode.py).
- ``vllm`` (vllm_engine.py): one vLLM engine in this process, on the policy's device, that
  takes the policy's weights after every update and load; its samples carry its log-probs.

An engine module is imported only when chosen (vLLM is heavy and optional).
"""

from __future__ import annotations

import difflib
import hashlib
import importlib
import inspect
import os
from dataclasses import dataclass
from typing import Any, NamedTuple

ENGINES = {"transformers": "transformers_engine", "vllm": "vllm_engine"}
MAX_BATCH = {"cuda": 256, "cpu": 16}  # sequences a batch at most: a CPU gains nothing from wider ones, and pads more


@dataclass
class Response:
    """One sampled response: its token ids (up to and including end-of-sequence when it
    stopped), the engine's per-token log-probabilities (None: the backend computes them with
    the policy), and why it ended ("stop" or "length")."""

    token_ids: list[int]
    logprobs: list[float] | None
    finish: str


class RolloutEngine:
    """The contract of an engine. ``generate`` returns one response per prompt, in the
    prompts' order (a prompt sampled n times is listed n times); the same prompts, sampling
    and seed give the same responses on a CPU. ``sync`` is called whenever the policy's
    weights changed (after an update, a supervised step, a load): the next ``generate``
    samples from the new weights. An engine that holds device memory of its own gives it
    back between calls where it can. ``close`` releases everything."""

    name = ""

    def generate(self, prompts: list[list[int]], sampling, seed: int) -> list[Response]:
        raise NotImplementedError

    def sync(self) -> None:
        """Take the policy's current weights."""

    def info(self) -> dict:
        return {"rollout_engine": self.name}

    def close(self) -> None:
        """Release the engine's memory and processes."""


def request_seed(seed: int, index: int, bits: int = 31) -> int:
    """The seed of a call's ``index``-th response: ``bits`` bits of sha256(seed, index) (31 for
    vLLM's per-request seed, 63 for a torch generator)."""
    digest = hashlib.sha256(f"{seed}\0{index}".encode()).digest()
    return int.from_bytes(digest[:8], "little") & (2**bits - 1)


def distinct_prompts(batch: list[list[int]]) -> tuple[list[list[int]], list[int]]:
    """The batch's distinct prompts in first-seen order, and each row's index among them (a
    prompt sampled n times is listed n times)."""
    index: dict[tuple[int, ...], int] = {}
    owner = [index.setdefault(tuple(prompt), len(index)) for prompt in batch]
    return [list(prompt) for prompt in index], owner


def padded(torch, rows: list[list[int]], width: int, pad_id: int, device, *, left: bool):
    """``rows`` of token ids as one batch of ``width`` columns and its attention mask, on
    ``device``: padded on the left (a row's last token in the last column: prompts to
    continue) or on the right (each row from column 0: sequences to score)."""
    ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for i, row in enumerate(rows):
        span = slice(width - len(row), width) if left else slice(0, len(row))
        ids[i, span] = torch.tensor(row, dtype=torch.long)
        mask[i, span] = 1
    return ids.to(device), mask.to(device)


def cache_argument(module) -> str:
    """The name of ``module``'s KV cache argument: transformers 5.2x says ``cache``, earlier
    versions ``past_key_values``."""
    return "cache" if "cache" in inspect.signature(module.forward).parameters else "past_key_values"


class PromptCache(NamedTuple):
    """A batch of prompts read into a KV cache, each distinct prompt once (``read_prompts``)."""

    output: Any  # the module's output; its rows are the distinct prompts
    cache: Any  # the KV cache; its rows are the batch's prompts
    index: Any  # prompt i's row in ``output`` (a tensor)
    mask: Any  # the batch's attention mask and position ids (left-padded)
    positions: Any
    distinct: int  # how many prompts were read


def read_prompts(torch, module, prompts: list[list[int]], width: int, pad_id: int, device, **kwargs) -> PromptCache:
    """Each distinct prompt of ``prompts`` once through ``module`` (a causal LM or its
    decoder; ``kwargs`` go to it), left-padded to ``width`` columns, into a KV cache whose rows
    are then copied so that row i holds prompt i: a prompt sampled n times is read once, not n
    times."""
    distinct, owner = distinct_prompts(prompts)
    ids, mask = padded(torch, distinct, width, pad_id, device, left=True)
    positions = (mask.cumsum(-1) - 1).clamp(min=0)
    out = module(input_ids=ids, attention_mask=mask, position_ids=positions, use_cache=True, **kwargs)
    cache = getattr(out, "cache", None) or out.past_key_values
    index = torch.tensor(owner, device=ids.device)
    cache.batch_select_indices(index)
    return PromptCache(out, cache, index, mask[index], positions[index], len(distinct))


def sequences_that_fit(torch, model, device, context: int, read: int) -> int:
    """How many sequences half the free memory of ``device`` holds at once (at least 1, at most
    ``MAX_BATCH`` of its type), each with a KV cache of ``context`` tokens while ``read`` of its
    tokens go through the model together (the widest layer's activations) and one row of
    float32 logits is sampled."""
    cfg = model.config
    heads = cfg.num_attention_heads
    head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // heads
    kv_heads = getattr(cfg, "num_key_value_heads", None) or heads
    size = model.dtype.itemsize
    kv = 2 * cfg.num_hidden_layers * kv_heads * head_dim * size * context
    activations = read * (3 * getattr(cfg, "intermediate_size", 4 * cfg.hidden_size) + 4 * cfg.hidden_size) * size
    per_sequence = kv + activations + 2 * cfg.vocab_size * 4
    device = torch.device(device)
    if device.type == "cuda":  # what torch's allocator caches but does not use is free to it too
        free = (torch.cuda.mem_get_info(device)[0] + torch.cuda.memory_reserved(device)
                - torch.cuda.memory_allocated(device))
    else:
        free = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    return max(1, min(MAX_BATCH.get(device.type, 64), int(free * 0.5 // per_sequence)))


def engine_class(name: str) -> type[RolloutEngine]:
    """The engine named ``name``; a wrong name is one line that lists the engines."""
    if name not in ENGINES:
        close = difflib.get_close_matches(name, ENGINES, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ValueError(f"option 'rollout_engine' must be one of {', '.join(ENGINES)}, not {name!r}{hint}")
    module = importlib.import_module(f"{__name__}.{ENGINES[name]}")
    return module.Engine
