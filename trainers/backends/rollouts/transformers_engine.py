"""Rollout engine ``transformers``: the policy model samples its own responses.

Prompts are sorted by length and cut into batches of ``generation_batch`` (0: as many as
half the free device memory holds for the batch's KV cache), so a batch pads little. A
prompt sampled n times (the rollout's n samples, listed side by side) is read into the KV
cache once and its cache rows copied to its n samples: Code-A1 samples 8 test suites per
(question, code) prompt, and prompts are longer than responses, so reading each copy would
be most of a prefill's work for nothing. The decode paths, chosen by the backend's
``decode`` option:

- ``eager`` (``auto`` on a CPU): an own loop over a dynamic KV cache. A sequence that
  emits end-of-sequence leaves the batch at once (its rows of the cache are dropped), so the
  batch shrinks as responses end: a model is fed exactly one row per generated token, and a
  random or a trained model ends its responses at very different lengths.
- ``graph`` (``auto`` on CUDA; graph_decode.py): an own loop over a static KV cache whose
  steps are CUDA graphs replayed with no host round trip per token; ``graph-compiled`` the
  same with the forward fused by torch.compile first. Batches are shaped as for ``compiled``.
- ``compiled``: transformers' ``generate`` with a static KV cache, whose
  decode step transformers compiles (torch.compile; CUDA graphs on CUDA). The engine fills
  the cache with every prompt column but the last (each distinct prompt once) and hands it
  to ``generate``, which reads the last column and decodes; the cache object is kept per
  batch size and cache length, so the compiled step sees the same tensors each call. Prompt widths are
  rounded up to a multiple of 128, the cache length is a ceiling that only grows (rounded up
  to 1024, plus max_tokens) and a batch has a power-of-two size (the last one filled with
  copies, dropped; the size chosen from free memory only ever shrinks), so the step compiles
  for a few shapes, not one per call; the first call of each shape compiles (25-35 s for
  the 1.5B shape on an H200 with 16 cores). On one H100 (1.5B shape, max_tokens
  256, the log-prob pass included) the eager path was CPU-bound: the GPU 25 % busy, 1,620
  tokens/s over a Code-A1 step's two generations; compiled, on an H200, 13,140 tokens/s;
  graph, 13,990 with the GPU 84 % busy in generation (64 % compiled).

Grouped-query attention (Qwen2.5's 12 query heads on 2 key/value heads) decodes without
expanding the cache: transformers up to 5.1x repeats every key/value head over its group for
the whole cache at every decode step once a padding mask is present (a batch of prompts of
different lengths), six times the cache's bytes written and read again per layer and step,
the cost that grew with the batch on the GPU (47 ms a step at 64 sequences, 190 ms
at 256; compiled, 2,030 tokens/s expanded, 5,950 packed). The engine gives the model an
attention function of its own, ``packed_gqa_sdpa``:
one query token per sequence is laid out as a group's rows against its key/value head (what
transformers 5.2x does itself, ``pack_gqa``), and everything else goes to transformers' SDPA
unchanged, so training and the log-prob pass compute exactly what they did.

Sampling is softmax(logits / temperature), top-p as asked and nothing else (what the
backend's log-probs describe); greedy at temperature 0. On the eager path every response
draws from a generator of its own, seeded by the call's seed and the response's index, so
a response is the same whatever else shares its batch: the batch size (chosen from free
memory, which differs between machines and runs) and the bucketing do not change the
samples. The graph path draws with numbers hashed from the same per-response seeds (the
same independence, other tokens than eager's for a seed). The compiled path draws for the
whole batch from torch's generator, seeded per batch: there the batch size is part of what
the samples depend on. The log-probs are
computed by the backend with the policy afterwards (``Response.logprobs`` is None).
"""

from __future__ import annotations

from codea1.trainers.backends.rollouts import (
    Response,
    RolloutEngine,
    cache_argument,
    graph_decode,
    padded,
    read_prompts,
    request_seed,
    sequences_that_fit,
)

WIDTH_STEP = 128  # the compiled path's prompt widths: multiples of this
CACHE_STEP = 1024  # its static cache length: the longest prompt rounded up to this, plus max_tokens
AUTO_DECODE = {"cuda": "graph"}  # decode = "auto" by device type (others: eager)
PACKED_ATTENTION = "codea1_packed_gqa_sdpa"  # the name the engine registers its attention function under


def packed_gqa_sdpa(module, query, key, value, attention_mask, **kwargs):
    """transformers' ``sdpa`` attention, except for one decode step of grouped-query attention
    under a mask: query (batch, heads, 1, dim) becomes (batch, kv_heads, group, dim), so each
    key/value head is read once by its group's query rows, never copied per head. The mask
    (batch, 1, 1, length) is the same for every head and broadcasts over the group. The same
    under torch.compile (the compiled path's decode step, where transformers 5.2x expands the
    heads again: over its whole static cache, every step)."""
    import torch
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    groups = getattr(module, "num_key_value_groups", 1)
    if (groups > 1 and query.shape[2] == 1 and attention_mask is not None and attention_mask.shape[1] == 1
            and kwargs.get("position_bias") is None):
        batch, heads, _, dim = query.shape
        out = torch.nn.functional.scaled_dot_product_attention(
            query.reshape(batch, heads // groups, groups, dim), key, value, attn_mask=attention_mask,
            dropout_p=kwargs.get("dropout", 0.0), scale=kwargs.get("scaling"))
        if not torch.compiler.is_compiling():  # a Python side effect would break the compiled graph
            packed_gqa_sdpa.calls += 1
        return out.reshape(batch, heads, 1, dim).transpose(1, 2).contiguous(), None
    return sdpa_attention_forward(module, query, key, value, attention_mask, **kwargs)


packed_gqa_sdpa.calls = 0  # decode steps x layers that took the packed path (tests, benchmarks)


def use_packed_gqa(model) -> bool:
    """Give ``model`` the packed attention where it would run transformers' SDPA on grouped
    heads; the masks stay SDPA's. Returns whether it did."""
    cfg = model.config
    heads, kv_heads = cfg.num_attention_heads, getattr(cfg, "num_key_value_heads", None) or cfg.num_attention_heads
    if cfg._attn_implementation not in ("sdpa", PACKED_ATTENTION) or kv_heads == heads:
        return False
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

    AttentionInterface.register(PACKED_ATTENTION, packed_gqa_sdpa)
    AttentionMaskInterface.register(PACKED_ATTENTION, sdpa_mask)
    model.set_attn_implementation(PACKED_ATTENTION)
    return True


def nucleus(torch, logits, temperature: float, top_p: float):
    """logits / temperature with everything outside the top-p nucleus at -inf (rows x vocab)."""
    logits = logits.float() / temperature
    if top_p < 1.0:
        ordered, index = logits.sort(dim=-1, descending=True)
        probs = ordered.softmax(dim=-1)
        outside = probs.cumsum(dim=-1) - probs > top_p  # the first token is always inside
        ordered = ordered.masked_fill(outside, float("-inf"))
        logits = torch.full_like(logits, float("-inf")).scatter(-1, index, ordered)
    return logits


def next_tokens(torch, logits, temperature: float, top_p: float, generators):
    """One token per row of ``logits`` (rows x vocab): argmax at temperature 0, else a draw
    from softmax(logits / temperature) within the top-p nucleus, by the Gumbel-max trick with
    each row's uniform noise from its own generator (a row's draw does not depend on the
    others in the batch)."""
    if temperature <= 0:
        return logits.argmax(dim=-1)
    logits = nucleus(torch, logits, temperature, top_p)
    noise = torch.stack([torch.rand(logits.shape[-1], generator=g, device=logits.device) for g in generators])
    gumbel = -torch.log(-torch.log(noise.clamp(min=torch.finfo(noise.dtype).tiny)))
    return (logits + gumbel).argmax(dim=-1)


class Engine(RolloutEngine):
    name = "transformers"

    def __init__(self, backend):
        self.backend = backend  # its model, tokenizer, device and options
        self.torch = backend.torch
        decode = backend.options.decode
        if decode == "auto":
            decode = AUTO_DECODE.get(self.device_type, "eager")
        if decode.startswith("graph") and not graph_decode.supports(backend.model):
            decode = "compiled"  # sliding-window layers, or a decoder that builds its own masks
        self.decode = decode
        self.compiled = decode != "eager"  # a static batch shape: power-of-two batches, a cache length ceiling
        self.cache_len = 0  # the compiled path's static cache length: a ceiling that only grows
        self.forward_rows = 0  # rows fed through the model while decoding, for tests and benchmarks
        self.prefilled_prompts = 0  # prompts read into the KV cache (each distinct prompt of a batch once)
        self.compiled_batch = 0  # the compiled path's batch size once chosen from free memory
        self._static_cache = None  # the compiled path's ((batch size, cache length), StaticCache)
        self._decoder = None  # the graph path's GraphDecoder (one batch size and cache length)
        self.cache_arg = cache_argument(backend.model)
        self.packed_gqa = use_packed_gqa(backend.model)

    @property
    def device_type(self) -> str:
        return self.torch.device(self.backend.device).type

    def info(self) -> dict:
        return {"rollout_engine": self.name, "decode": self.decode,
                "attention": self.backend.model.config._attn_implementation}

    # -- batching ------------------------------------------------------------------------------
    def generate(self, prompts: list[list[int]], sampling, seed: int) -> list[Response]:
        order = sorted(range(len(prompts)), key=lambda i: len(prompts[i]))  # stable: ties keep their order
        longest = max((len(p) for p in prompts), default=0)
        size = self.backend.options.generation_batch or self.auto_batch(longest, sampling.max_tokens)
        if self.compiled:  # few prompts are not padded to a wide batch: the next power of two holds them
            size = min(size, 1 << max(0, len(prompts) - 1).bit_length())
        out: list[Response | None] = [None] * len(prompts)
        self.backend.model.eval()
        for start in range(0, len(order), size):
            rows = order[start:start + size]
            batch = [prompts[i] for i in rows]
            if self.decode.startswith("graph"):
                responses = self._generate_graph(batch, size, sampling, [request_seed(seed, i, bits=63) for i in rows])
            elif self.compiled:
                responses = self._generate_compiled(batch, size, sampling, request_seed(seed, rows[0], bits=63))
            else:
                responses = self._generate_eager(batch, sampling, [request_seed(seed, i, bits=63) for i in rows])
            for i, response in zip(rows, responses):
                out[i] = response
        return out

    def auto_batch(self, width: int, max_tokens: int) -> int:
        """As many sequences as half the free device memory holds: each needs its KV cache at
        full length and, while its prompt is read, the widest layer's activations."""
        batch = sequences_that_fit(self.torch, self.backend.model, self.backend.device, width + max_tokens, width)
        if self.compiled:  # few distinct shapes for the compiled step: a power of two that only shrinks
            batch = 1 << (batch.bit_length() - 1)
            self.compiled_batch = batch = min(batch, self.compiled_batch or batch)
        return batch

    def _left_padded(self, batch: list[list[int]], width: int):
        return padded(self.torch, batch, width, self.backend.tokenizer.pad_token_id, self.backend.device, left=True)

    # -- eager: a dynamic cache, finished sequences dropped --------------------------------------
    def _generate_eager(self, batch: list[list[int]], sampling, seeds: list[int]) -> list[Response]:
        torch, model = self.torch, self.backend.model
        eos = self.backend.tokenizer.eos_token_id
        generators = [torch.Generator(device=self.backend.device).manual_seed(s) for s in seeds]
        tokens: list[list[int]] = [[] for _ in batch]
        finish = ["length"] * len(batch)
        alive = list(range(len(batch)))  # batch row of each cache row
        with torch.no_grad():
            # each distinct prompt is read once; its cache and last logits serve all its samples
            read = read_prompts(torch, model, batch, max(len(p) for p in batch), self.backend.tokenizer.pad_token_id,
                                self.backend.device, logits_to_keep=1)
            self.prefilled_prompts += read.distinct
            self.forward_rows += len(batch)
            cache, mask, last = read.cache, read.mask, read.positions[:, -1]
            logits = read.output.logits[read.index, -1]
            for step in range(sampling.max_tokens):
                chosen = next_tokens(torch, logits, sampling.temperature, sampling.top_p,
                                     [generators[row] for row in alive])
                ended = []
                for cache_row, token in enumerate(chosen.tolist()):
                    row = alive[cache_row]
                    tokens[row].append(token)
                    if token == eos:
                        finish[row] = "stop"
                        ended.append(cache_row)
                if step == sampling.max_tokens - 1 or len(ended) == len(alive):
                    break
                if ended:  # drop the finished rows from the cache and the batch
                    keep = sorted(set(range(len(alive))) - set(ended))
                    index = torch.tensor(keep, device=chosen.device)
                    cache.batch_select_indices(index)
                    chosen, mask, last = chosen[index], mask[index], last[index]
                    alive = [alive[r] for r in keep]
                mask = torch.cat([mask, mask.new_ones((len(alive), 1))], dim=1)
                last = last + 1
                logits = model(input_ids=chosen[:, None], attention_mask=mask, position_ids=last[:, None],
                               use_cache=True, **{self.cache_arg: cache}).logits[:, -1]
                self.forward_rows += len(alive)
        return [Response(t, None, f) for t, f in zip(tokens, finish)]

    # -- graph: an own loop over a static cache, each step a replayed CUDA graph -----------------
    def _generate_graph(self, batch: list[list[int]], size: int, sampling, seeds: list[int]) -> list[Response]:
        torch, model = self.torch, self.backend.model
        tok = self.backend.tokenizer
        real = len(batch)
        batch = batch + [batch[-1]] * (size - real)  # one batch shape for the captured steps
        seeds = seeds + [seeds[-1]] * (size - real)
        longest = max(len(p) for p in batch)
        width = -(-longest // WIDTH_STEP) * WIDTH_STEP
        needed = -(-longest // CACHE_STEP) * CACHE_STEP + sampling.max_tokens
        self.cache_len = max(self.cache_len, -(-needed // graph_decode.BUCKET) * graph_decode.BUCKET)
        if self._decoder is None or (self._decoder.batch, self._decoder.length) != (size, self.cache_len):
            self._decoder = None  # its cache and graphs go before the new ones are made
            self._decoder = graph_decode.GraphDecoder(torch, model, self.cache_arg, size, self.cache_len,
                                                      eos=tok.eos_token_id, pad=tok.pad_token_id,
                                                      compiled=self.decode == "graph-compiled")
        with torch.no_grad():
            read = read_prompts(torch, model, batch, width, tok.pad_token_id, self.backend.device, logits_to_keep=1)
            self.prefilled_prompts += read.distinct
            self.forward_rows += len(batch)
            self._decoder.start(read, width, seeds, sampling, read.output.logits[read.index, -1])
            del read  # the prompts' own KV cache, copied into the decoder's
            fed = self._decoder.row_steps
            rows = self._decoder.run(sampling, real)
        self.forward_rows += self._decoder.row_steps - fed
        out = []
        for ids in rows:
            if tok.eos_token_id in ids:
                out.append(Response(ids[: ids.index(tok.eos_token_id) + 1], None, "stop"))
            else:
                out.append(Response(ids, None, "length"))
        return out

    # -- compiled: transformers' generate, static cache ------------------------------------------
    def _generate_compiled(self, batch: list[list[int]], size: int, sampling, seed: int) -> list[Response]:
        torch, model = self.torch, self.backend.model
        real = len(batch)
        batch = batch + [batch[-1]] * (size - real)  # one batch shape for the compiled step
        longest = max(len(p) for p in batch)
        ids, mask = self._left_padded(batch, -(-longest // WIDTH_STEP) * WIDTH_STEP)
        self.cache_len = max(self.cache_len, -(-longest // CACHE_STEP) * CACHE_STEP + sampling.max_tokens)
        cache = self._prefilled_cache(batch, ids.shape[1])
        torch.manual_seed(seed)
        with torch.no_grad():  # generate reads the prompts' last column, then decodes
            generated = model.generate(input_ids=ids, attention_mask=mask, **{self.cache_arg: cache},
                                       generation_config=self._generation_config(sampling))
        self.forward_rows += len(batch) * (generated.shape[1] - ids.shape[1])
        return [self._response(row[ids.shape[1]:].tolist()) for row in generated[:real]]

    def _prefilled_cache(self, batch: list[list[int]], width: int):
        """The static cache of the batch, holding every column of its left-padded prompts but
        the last: each distinct prompt read once, its keys and values copied to the rows of its
        samples. One cache object per batch size and cache length, reset and refilled on each
        call, so the compiled step sees the same tensors every time (new ones would make it
        compile or record its CUDA graph again)."""
        import transformers

        torch, model = self.torch, self.backend.model
        key = (len(batch), self.cache_len)
        if self._static_cache is None or self._static_cache[0] != key:
            self._static_cache = (key, transformers.StaticCache(config=model.config, max_cache_len=self.cache_len))
        cache = self._static_cache[1]
        cache.reset()
        with torch.no_grad():  # left-padded, the columns but the last are the prompts but their last token
            read = read_prompts(torch, model.get_decoder(), [p[:-1] for p in batch], width - 1,
                                self.backend.tokenizer.pad_token_id, self.backend.device)
            for layer, held in enumerate(read.cache.layers):
                cache.update(held.keys, held.values, layer)
        self.prefilled_prompts += read.distinct
        return cache

    def _generation_config(self, sampling):
        """Exactly the sampling the log-probs describe: softmax(logits / temperature), top-p
        only as asked. A checkpoint's generation_config.json (Qwen2.5's says top_k 20,
        repetition_penalty 1.05) must not reshape the distribution behind the policy's back."""
        import transformers

        tok = self.backend.tokenizer
        compile_config = transformers.CompileConfig(fullgraph=False, dynamic=False)
        compile_config._compile_all_devices = True  # "compiled" asked on a CPU too (tests)
        common = {"max_new_tokens": sampling.max_tokens, "pad_token_id": tok.pad_token_id,
                  "eos_token_id": tok.eos_token_id, "top_k": 0, "repetition_penalty": 1.0,
                  "compile_config": compile_config}
        if sampling.temperature > 0:
            return transformers.GenerationConfig(do_sample=True, temperature=sampling.temperature,
                                                 top_p=sampling.top_p, **common)
        return transformers.GenerationConfig(do_sample=False, **common)

    def _response(self, ids: list[int]) -> Response:
        """The response up to and including end-of-sequence, and why it ended."""
        tok = self.backend.tokenizer
        if tok.eos_token_id in ids:
            return Response(ids[: ids.index(tok.eos_token_id) + 1], None, "stop")
        while ids and ids[-1] == tok.pad_token_id:
            ids = ids[:-1]
        return Response(ids, None, "length")
