"""Policy backend ``torch``: a transformers causal LM trained in this process, on a CPU (tiny
models, tests) or one GPU (real checkpoints).

Loading is the real path: ``AutoTokenizer`` / ``AutoModelForCausalLM.from_pretrained`` of a
checkpoint directory or hub name (a hub name from the local cache first, the hub asked at
most once: ``model_source``). A frozen copy of the starting weights is the reference
policy for the KL term.

Rollouts: prompts through the tokenizer's chat template (``codea1.harness.prompts``),
sampled by a rollout engine (``rollout_engine``, trainers/backends/rollouts/) from
softmax(logits / temperature) with top-p as asked and nothing else (a checkpoint's own
generation defaults, such as top_k or a repetition penalty, are overridden), under a seed
per call:

- ``transformers`` (default): the policy model itself; prompts bucketed by length into
  batches of ``generation_batch`` sequences (0: from the free device memory); ``decode``
  ``eager`` (finished sequences leave the batch; ``auto`` on a CPU), ``graph`` (a static KV
  cache, each step a replayed CUDA graph, no host round trip per token; ``auto`` on CUDA,
  where the eager loop is CPU-bound: docs/performance.md has the figures),
  ``graph-compiled`` (the same, the forward fused by torch.compile) or ``compiled``
  (transformers' generate with its compiled step); in every case each
  distinct prompt of a batch is read into the KV cache once for all its samples. Each
  response then gets its per-token log-probabilities from a forward pass of the policy
  (logits divided by the sampling temperature, the distribution it was drawn from), in
  batches of ``generation_batch`` responses too (not the update's micro-batches): each
  distinct prompt of a batch read once, its cache copied to its responses, the
  response positions scored a chunk of tokens at a time (token_logprobs.py: never the full
  logits).
- ``vllm``: one vLLM engine in this process on the policy's device, given the policy's
  weights after every update and load; the samples carry the engine's log-probabilities.
  ``vllm_gpu_memory_utilization`` (0.3: the device share it takes, after the policy),
  ``vllm_kv_cache_gb`` (instead: the KV cache's size), ``vllm_max_model_len`` (0: the
  model's), ``vllm_sleep`` (on CUDA: the engine sleeps between generate calls, giving its
  memory to the update), ``vllm_enforce_eager``.

Update (GRPO with token-level aggregation, as in the paper): for every response token,
ratio = exp(logp - logp_old); policy loss = -min(ratio A, clip(ratio, 1 - clip_low,
1 + clip_high) A) (clip-higher: 0.2 / 0.28); KL to the reference with the k3 estimator
exp(ref - logp) - (ref - logp) - 1, weighted by ``kl_coef`` (0.001). logp_old is the
log-probability recorded at rollout and stays fixed for the whole update.

PPO mini-batches: the rollout batch is cut into mini-batches of ``mini_batch_size``
responses (0, the default: the whole batch), each one optimiser step, and the batch is
gone through ``ppo_epochs`` times (default 1). From the second optimiser step on, the
policy has moved since the rollout, so the ratio leaves 1 and the clip can act (with one
step the ratio is exactly 1 and nothing is ever clipped). With more than one mini-batch
the responses are shuffled before each pass, by a permutation seeded by (run seed,
update count, epoch): the same on a rerun and after a resume. The paper (verl) uses 2
mini-batches per batch and one epoch.

Each mini-batch's loss is the sum over its tokens divided by their number. Micro-batches
of ``micro_batch_size`` responses accumulate gradients, each scaled by the mini-batch's
total token count, so a partial last micro-batch weighs exactly what it should. Then
gradient clipping and an AdamW step (lr 1e-6, weight decay 0.1 by default). Logged: loss,
policy_loss and kl as token means over all passes; clip_ratio, the share of tokens whose
clipped term was the one taken (the clip stopped their gradient, verl's pg_clipfrac);
grad_norm, the mean over optimiser steps; optimizer_steps.

On a GPU: ``dtype = "bfloat16"`` and ``gradient_checkpointing = true``. In bfloat16 or
float16 the optimiser steps float32 master weights (``master_weights``, default true; a
float32 copy and AdamW's state in float32: 8 more bytes a parameter, gradients summed in
float32) and the model takes them rounded after each step; the checkpoint keeps the masters. Without them an
AdamW step at lr 1e-6 is below half a bfloat16 step of most weights, which then never move.
Options:
``model`` (required), ``device`` (auto|cpu|cuda|cuda:N), ``dtype`` (float32|bfloat16|
float16), ``lr``, ``weight_decay``, ``clip_low``, ``clip_high``, ``kl_coef``,
``micro_batch_size``, ``mini_batch_size``, ``ppo_epochs``, ``max_grad_norm``,
``gradient_checkpointing``, ``trust_remote_code``, ``master_weights``, and the rollout options above.
"""

from __future__ import annotations

import copy
import difflib
import itertools
import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from codea1.harness.generation import SamplingParams, load_tokenizer
from codea1.harness.hookspecs import hookimpl
from codea1.harness.prompts import chat_prompt
from codea1.harness.training import BackendUnavailable, PolicyBackend, PolicySample
from codea1.trainers.backends import token_logprobs
from codea1.trainers.backends.model_source import local_model, offline_error
from codea1.trainers.backends.policy_update import PolicyUpdateOptions, Rollout
from codea1.trainers.backends.rollouts import ENGINES, engine_class, padded, sequences_that_fit

DECODES = ("auto", "eager", "compiled", "graph", "graph-compiled")  # the transformers engine's decode paths


@dataclass
class TorchBackendOptions(PolicyUpdateOptions):
    device: str = "auto"
    dtype: str = "float32"
    trust_remote_code: bool = False
    rollout_engine: str = "transformers"
    generation_batch: int = 0  # sequences per batch (generation, rollout log-probs); 0: from the free device memory
    decode: str = "auto"
    vllm_gpu_memory_utilization: float = 0.3
    vllm_kv_cache_gb: float = 0.0
    vllm_max_model_len: int = 0
    vllm_sleep: bool = True
    vllm_enforce_eager: bool = False
    master_weights: bool = True  # bfloat16/float16 weights: the optimiser steps float32 copies

    def __post_init__(self):
        super().__post_init__()
        if self.dtype not in ("float32", "bfloat16", "float16"):
            raise ValueError(f"option 'dtype' must be float32, bfloat16 or float16, not {self.dtype!r}")
        if self.rollout_engine not in ENGINES:
            close = difflib.get_close_matches(self.rollout_engine, ENGINES, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise ValueError(f"option 'rollout_engine' must be one of {', '.join(ENGINES)}, not "
                             f"{self.rollout_engine!r}{hint}")
        if self.decode not in DECODES:
            close = difflib.get_close_matches(self.decode, DECODES, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise ValueError(f"option 'decode' must be one of {', '.join(DECODES)}, not {self.decode!r}{hint}")
        if self.generation_batch < 0:
            raise ValueError("option 'generation_batch' must be >= 0 (0: from the free device memory)")
        if not 0 < self.vllm_gpu_memory_utilization <= 1 or self.vllm_kv_cache_gb < 0 or self.vllm_max_model_len < 0:
            raise ValueError("options 'vllm_gpu_memory_utilization' must be in (0, 1], 'vllm_kv_cache_gb' and "
                             "'vllm_max_model_len' >= 0")


def clipped_policy_loss(torch, logp, old, advantage, clip_low: float, clip_high: float):
    """Per token: -min(ratio A, clip(ratio, 1 - clip_low, 1 + clip_high) A) with ratio =
    exp(logp - old), and where the clipped term was the one taken (its gradient stopped)."""
    ratio = torch.exp(logp - old)
    unclipped = ratio * advantage
    clipped = torch.clamp(ratio, 1 - clip_low, 1 + clip_high) * advantage
    return -torch.minimum(unclipped, clipped), clipped < unclipped


def k3_kl(torch, logp, ref):
    """Per token, the k3 estimate of KL(policy || reference): exp(ref - logp) - (ref - logp) - 1."""
    delta = ref - logp
    return torch.exp(delta) - delta - 1


class TorchBackend(PolicyBackend):
    name = "torch"
    description = "transformers model trained in process: GRPO token-level clipped loss, k3 KL, AdamW; CPU or one GPU"
    Options = TorchBackendOptions

    @classmethod
    def model_error(cls, options: TorchBackendOptions) -> str:
        return offline_error(options.model)

    def __init__(self, options: TorchBackendOptions, *, seed: int = 0):
        super().__init__(options, seed=seed)
        try:
            import torch
            import transformers
            from transformers.utils import logging
        except ImportError:
            raise BackendUnavailable("backend 'torch' needs torch and transformers: pip install 'codea1[hf]'") from None
        self.torch = torch
        o = options
        self.device = ("cuda" if torch.cuda.is_available() else "cpu") if o.device == "auto" else o.device
        dtype = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[o.dtype]
        torch.manual_seed(seed)
        self.source = source = local_model(o.model, "[policies] model")
        logging.disable_progress_bar()  # one bar per stage: the train bar, not one per load
        self.tokenizer = load_tokenizer(transformers, source, "[policies] model", o.trust_remote_code)
        self.tokenizer.padding_side = "left"
        if self.tokenizer.pad_token_id is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.model = transformers.AutoModelForCausalLM.from_pretrained(
            source, dtype=dtype, trust_remote_code=o.trust_remote_code).to(self.device)
        self.plain_head = token_logprobs.has_plain_head(self.model)
        if o.gradient_checkpointing:
            self.model.gradient_checkpointing_enable()
        self.reference = None
        if o.kl_coef > 0:
            self.reference = copy.deepcopy(self.model).eval()
            for p in self.reference.parameters():
                p.requires_grad_(False)
        self.params = [p for p in self.model.parameters() if p.requires_grad]
        # Mixed precision: at lr 1e-6 an AdamW step (about lr per weight) is far below half a
        # bfloat16 step of a weight near 0.02 (6e-5): stepped in bfloat16 the weights would not
        # move. The optimiser steps float32 masters; the model takes them rounded after each step.
        self.master = None
        if o.master_weights and dtype != torch.float32:
            self.master = [p.detach().float().clone().requires_grad_(True) for p in self.params]
        self.optimizer = torch.optim.AdamW(self.master or self.params, lr=o.lr, weight_decay=o.weight_decay)
        self.updates = 0
        try:
            self.engine = engine_class(o.rollout_engine)(self)  # after the policy: a vLLM engine takes what it leaves
        except BaseException:
            self.close()  # the policy's memory, not held until the flow lets go
            raise

    # -- rollouts ------------------------------------------------------------------------------
    def generate(self, prompts: Sequence[list[dict[str, str]]], n: int, sampling: SamplingParams,
                 seed: int) -> list[list[PolicySample]]:
        tok = self.tokenizer
        prompt_ids = [tok(chat_prompt(tok, messages), add_special_tokens=False)["input_ids"] for messages in prompts]
        rows = [p for p in range(len(prompts)) for _ in range(n)]
        responses = self.engine.generate([prompt_ids[p] for p in rows], sampling, seed)
        samples = [PolicySample(tok.decode(r.token_ids, skip_special_tokens=True), r.token_ids, r.logprobs or [],
                                r.finish, Rollout(prompt_ids[p], sampling.temperature or 1.0))
                   for p, r in zip(rows, responses)]
        # a prompt's samples side by side (its KV cache is read once for them), prompts by
        # length: a batch of the log-prob pass pads little
        unscored = [samples[i] for i in sorted(range(len(samples)), key=lambda i: (
            len(samples[i].handle.prompt_ids), rows[i], len(samples[i].token_ids))) if responses[i].logprobs is None]
        self.model.eval()
        size = self._rollout_scoring_batch(unscored)
        for start in range(0, len(unscored), size):
            chunk = unscored[start:start + size]
            with self.torch.no_grad():
                logps = self._rollout_logprobs(chunk)
            flat = iter(self.torch.cat(logps).tolist())  # one copy to the host, not one per response
            for sample, lp in zip(chunk, logps):
                sample.logprobs = list(itertools.islice(flat, len(lp)))
        out: list[list[PolicySample]] = [[] for _ in prompts]
        for p, sample in zip(rows, samples):
            out[p].append(sample)
        return out

    def _rollout_scoring_batch(self, samples: Sequence[PolicySample]) -> int:
        """Responses a forward of the rollout log-prob pass: ``generation_batch``, or as many as
        half the free device memory holds, each with its prompt and response in the KV cache.
        Not the update's micro-batch: without gradients far more fit, and a forward of a few
        responses is mostly kernel launches (on an H200, 1.5b shape: 256 responses scored 8 at
        a time took 4.1 s, twice the generation, the GPU mostly idle). A model scored with the
        full logits (no plain output layer) keeps the micro-batch: a vocabulary of floats a token."""
        if not self.plain_head:
            return self.options.micro_batch_size
        if not samples:
            return 1
        width = max(len(s.handle.prompt_ids) + len(s.token_ids) for s in samples)
        return self.options.generation_batch or sequences_that_fit(self.torch, self.model, self.device, width, width)

    def _rollout_logprobs(self, samples: Sequence[PolicySample]) -> list[Any]:
        """The policy's log-probs of fresh samples (no gradient): each distinct prompt of the
        chunk read once where the model allows it (token_logprobs.prompt_shared_logprobs)."""
        if not self.plain_head:
            return self._logprobs(self.model, samples)
        return token_logprobs.prompt_shared_logprobs(
            self.model, [s.handle.prompt_ids for s in samples], [s.token_ids for s in samples],
            [s.handle.temperature for s in samples], self.tokenizer.pad_token_id)

    def _logprobs(self, model, samples: Sequence[PolicySample]) -> list[Any]:
        """Per response token, log p(token | prefix) under ``model`` at each sample's
        temperature; one padded forward pass for the chunk. Where the logits are the output
        layer on the last hidden states (Qwen2, Llama: ``plain_head``), only the responses'
        positions are scored, without the full logits (trainers/backends/token_logprobs.py)."""
        torch = self.torch
        seqs = [s.handle.prompt_ids + s.token_ids for s in samples]
        # right padding: positions stay those of generation
        ids, mask = padded(torch, seqs, max(len(s) for s in seqs), self.tokenizer.pad_token_id, self.device, left=False)
        if self.plain_head:  # the response positions only, a chunk of tokens at a time
            spans = [(len(s.handle.prompt_ids), len(seq)) for s, seq in zip(samples, seqs)]
            return token_logprobs.response_logprobs(model, ids, mask, spans, [s.handle.temperature for s in samples])
        logits = model(input_ids=ids, attention_mask=mask, use_cache=False).logits.float()
        out = []
        for i, s in enumerate(samples):
            start, end = len(s.handle.prompt_ids), len(seqs[i])
            step_logits = logits[i, start - 1:end - 1] / s.handle.temperature
            out.append(torch.log_softmax(step_logits, dim=-1).gather(-1, ids[i, start:end, None]).squeeze(-1))
        return out

    # -- updates -------------------------------------------------------------------------------
    def update(self, samples: Sequence[PolicySample], rewards: Sequence[float],
               advantages: Sequence[float]) -> dict[str, float]:
        o = self.options
        batch = [(s, a) for s, a in zip(samples, advantages) if s.token_ids]
        total = sum(len(s.token_ids) for s, _ in batch)
        stats = {"loss": 0.0, "policy_loss": 0.0, "kl": 0.0, "clip_ratio": 0.0, "tokens": float(total),
                 "responses": float(len(batch)), "optimizer_steps": 0.0}
        if not total:
            return stats
        self.model.train()
        size = o.mini_batch_size or len(batch)
        seen = total * o.ppo_epochs  # the tokens the logged means run over
        grad_norms = []
        for epoch in range(o.ppo_epochs):
            order = list(range(len(batch)))
            if size < len(batch):  # one mini-batch keeps the batch's order (and its float sums)
                random.Random(f"{self.seed}/{self.updates}/{epoch}").shuffle(order)
            for first in range(0, len(order), size):
                mini = [batch[i] for i in order[first:first + size]]
                grad_norms.append(self._optimizer_step(mini, seen, stats))
        stats["grad_norm"] = sum(grad_norms) / len(grad_norms)
        stats["optimizer_steps"] = float(len(grad_norms))
        self.updates += 1
        return stats

    def _optimizer_step(self, mini: list[tuple[PolicySample, float]], seen: int, stats: dict[str, float]) -> float:
        """One optimiser step on a mini-batch: the gradient of its token-mean loss, accumulated
        over micro-batches; adds the step's share to the logged means. Returns the gradient
        norm before clipping."""
        torch, o = self.torch, self.options
        tokens = sum(len(s.token_ids) for s, _ in mini)
        share = tokens / seen  # this mini-batch's weight in the logged loss
        self.optimizer.zero_grad(set_to_none=True)
        for start in range(0, len(mini), o.micro_batch_size):
            chunk = mini[start:start + o.micro_batch_size]
            logps = self._logprobs(self.model, [s for s, _ in chunk])
            refs = None
            if self.reference is not None:
                with torch.no_grad():
                    refs = self._logprobs(self.reference, [s for s, _ in chunk])
            loss = 0.0
            for i, ((sample, advantage), logp) in enumerate(zip(chunk, logps)):
                old = torch.tensor(sample.logprobs, dtype=logp.dtype, device=logp.device)
                policy, clip_taken = clipped_policy_loss(torch, logp, old, advantage, o.clip_low, o.clip_high)
                token_loss = policy
                if refs is not None:
                    kl = k3_kl(torch, logp, refs[i])
                    token_loss = token_loss + o.kl_coef * kl
                    stats["kl"] += kl.detach().sum().item() / seen
                stats["policy_loss"] += policy.detach().sum().item() / seen
                stats["clip_ratio"] += clip_taken.float().sum().item() / seen
                loss = loss + token_loss.sum() / tokens  # the mini-batch's token mean, across micro-batches
            self._backward(loss)
            stats["loss"] += loss.item() * share
        return self._step()

    def _backward(self, loss) -> None:
        """Gradients of ``loss`` added to the step's; with master weights, summed in float32."""
        loss.backward()
        if self.master is not None:
            for master, p in zip(self.master, self.params):
                if p.grad is not None:
                    master.grad = p.grad.float() if master.grad is None else master.grad.add_(p.grad)
                    p.grad = None

    def _step(self) -> float:
        """Clip, one AdamW step, the gradients freed (they would sit through the next
        generation), the model given the masters' new values; returns the norm before clipping."""
        torch = self.torch
        params = self.master or self.params
        grad_norm = float(torch.nn.utils.clip_grad_norm_(params, self.options.max_grad_norm))
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        if self.master is not None:
            with torch.no_grad():
                for master, p in zip(self.master, self.params):
                    p.copy_(master)
        self.engine.sync()
        return grad_norm

    def supervised(self, prompts: Sequence[list[dict[str, str]]], targets: Sequence[str]) -> dict[str, float]:
        """Cross-entropy of each target (ended by end-of-sequence) given its chat prompt; the
        loss is the mean over all target tokens of the batch."""
        tok, o = self.tokenizer, self.options
        samples = []
        for messages, target in zip(prompts, targets):
            prompt_ids = tok(chat_prompt(tok, messages), add_special_tokens=False)["input_ids"]
            target_ids = tok(target, add_special_tokens=False)["input_ids"] + [tok.eos_token_id]
            samples.append(PolicySample(target, target_ids, [], "stop", Rollout(prompt_ids, 1.0)))
        total = sum(len(s.token_ids) for s in samples)
        self.model.train()
        self.optimizer.zero_grad(set_to_none=True)
        loss_sum = 0.0
        for start in range(0, len(samples), o.micro_batch_size):
            chunk = samples[start:start + o.micro_batch_size]
            loss = -sum(lp.sum() for lp in self._logprobs(self.model, chunk)) / total
            self._backward(loss)
            loss_sum += loss.item()
        grad_norm = self._step()
        self.updates += 1
        return {"loss": loss_sum, "tokens": float(total), "grad_norm": grad_norm}

    # -- state ---------------------------------------------------------------------------------
    def save(self, directory: str) -> None:
        torch = self.torch
        path = Path(directory)
        path.mkdir(parents=True, exist_ok=True)
        torch.save(self.model.state_dict(), path / "model.pt")
        torch.save(self.optimizer.state_dict(), path / "optimizer.pt")
        if self.master is not None:  # the float32 weights the model's are rounded from
            torch.save([m.detach() for m in self.master], path / "master.pt")
        state = {"updates": self.updates, "rng": self.torch.get_rng_state().tolist()}
        (path / "backend.json").write_text(json.dumps(state))

    def load(self, directory: str) -> None:
        torch = self.torch
        path = Path(directory)
        self.model.load_state_dict(torch.load(path / "model.pt", map_location=self.device))
        if self.master is not None:
            with torch.no_grad():
                if (path / "master.pt").is_file():
                    for master, saved in zip(self.master, torch.load(path / "master.pt", map_location=self.device),
                                             strict=True):
                        master.copy_(saved)
                else:  # saved without masters (float32 then, or master_weights off): from the weights
                    for master, p in zip(self.master, self.params):
                        master.copy_(p)
        self.optimizer.load_state_dict(torch.load(path / "optimizer.pt", map_location=self.device))
        state = json.loads((path / "backend.json").read_text())
        self.updates = state["updates"]
        torch.set_rng_state(torch.tensor(state["rng"], dtype=torch.uint8))
        self.engine.sync()  # the engine samples from the loaded weights

    def export(self, directory: str) -> None:
        from transformers.utils import logging

        logging.disable_progress_bar()  # one bar per stage: the train bar, not a bar per shard
        self.model.save_pretrained(directory)
        self.tokenizer.save_pretrained(directory)

    def info(self) -> dict:
        loaded = {"loaded_from": self.source} if self.source != self.options.model else {}  # a hub name's snapshot
        return {"backend": self.name, "model": self.options.model, **loaded, "device": self.device,
                "dtype": str(self.model.dtype), "parameters": sum(p.numel() for p in self.model.parameters()),
                "master_weights": self.master is not None,
                **self.engine.info()}

    def close(self) -> None:
        # The weights, the reference copy and the optimiser state: freed now, not when the
        # flow's last reference goes (a GPU's memory matters to whatever runs next).
        if getattr(self, "engine", None) is not None:
            self.engine.close()
        self.model = self.reference = self.optimizer = self.engine = self.master = None
        self.params = []


@hookimpl
def codea1_register_backends(registry):
    registry.add(TorchBackend)
