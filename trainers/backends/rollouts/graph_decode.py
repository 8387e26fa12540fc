"""The transformers engine's ``graph`` decode path: an own loop over a static KV cache whose
every step (the model's forward for one token per sequence, the draw, the bookkeeping) runs
on the device with no host round trip, captured once as a CUDA graph and replayed.

Why not transformers' ``generate``: its compiled step leaves the GPU idle a third of the
time (a decode step of 256 sequences was 5.7 ms of GPU work in 8.6 ms of wall time, on an
H200), because its sampling loop is Python that synchronises with the device every step
(the stopping criteria read a flag back). Here the host only enqueues graph replays and looks
at whether every sequence has ended once every ``CHECK_EVERY`` steps, so it runs ahead of
the device.

- The cache (``DecodeCache``) is the engine's own: one (batch, kv heads, length, head dim)
  tensor per layer for keys and one for values, written in place at a column held in a
  device tensor, so a captured step writes where the current step is. Its ``update`` hands
  the attention only the first ``limit`` columns: the steps are captured once per bucket of
  ``BUCKET`` columns, and a step reads the cache up to the end of its bucket instead of the
  whole length (at 4,096 new tokens after a prompt of 500, that halves the bytes read).
- The attention mask is a (batch, 1, 1, length) boolean tensor kept in place (the prompt's
  columns, then one column more each step), handed to the model as its prepared mask, so the
  model builds no mask inside the captured step.
- The draw (``draw``): the temperature and top-p of the backend's log-probs, then inverse
  transform sampling: one uniform number a sequence and step, ``uniform``, a hash of the
  sequence's seed and the step computed on the device. A sequence's tokens therefore depend on
  its seed alone, never on what else shares its batch or on the device's random state, and a
  CPU computes the same draw (up to the arithmetic of the logits) as a GPU.
- The step's function is plain PyTorch; on a CPU (tests) the loop calls it directly, which is
  also what is captured on CUDA. ``compiled = True`` runs the forward through torch.compile
  (default mode: fused kernels) before the capture, with one bucket, the whole cache, and
  no compaction: a bucket or a smaller batch changes the shapes the compiled code was traced
  with, and it would compile again.

Differences from the eager path (the CPU default): the same model and the same distribution,
but the eager path draws by the Gumbel-max trick with a vocabulary's worth of uniform numbers
from a torch generator per response, this path one hashed number per response and step, so the
same seed samples other tokens (greedy decoding is the same); finished sequences stay in the
batch until every one has ended (a static batch), their further tokens thrown away.
"""

from __future__ import annotations

import inspect

BUCKET = 256  # cache columns per captured step: a step reads the cache up to its bucket's end
CHECK_EVERY = 16  # decode steps between two looks (a host synchronisation) at whether all ended
MASK32 = 0xFFFFFFFF


def _mul32(x, constant: int):
    """(x * constant) mod 2**32 for int64 tensors x in [0, 2**32), with no intermediate above
    2**63 (a signed overflow is undefined behaviour in the kernels that compute it)."""
    low, high = constant & 0xFFFF, constant >> 16
    return (x * low + ((x * high) & 0xFFFF) * 65536) & MASK32


def _mix32(x):
    """A 32-bit integer hash (Wellons' lowbias32) of int64 tensors x in [0, 2**32)."""
    x = x ^ (x >> 16)
    x = _mul32(x, 0x7FEB352D)
    x = x ^ (x >> 15)
    x = _mul32(x, 0x846CA68B)
    return x ^ (x >> 16)


def uniform(torch, seeds, step):
    """One number in (0, 1) per row: a hash of the row's 63-bit seed (int64 tensor) and the
    step (an int64 tensor, broadcast), 24 bits of it as float32. Pure tensor arithmetic: the same
    on every device, and inside a captured graph it reads the step's current value."""
    low, high = seeds & MASK32, (seeds >> 32) & MASK32
    x = _mix32(low ^ _mix32(high ^ _mix32(step & MASK32)))
    return ((x >> 8).float() + 0.5) * (1.0 / (1 << 24))


def draw(torch, logits, temperature: float, top_p: float, seeds, step):
    """One token per row of ``logits`` (rows x vocab): the argmax at temperature 0, else a draw
    from softmax(logits / temperature) within the top-p nucleus by inverse transform sampling
    with ``uniform(seeds, step)``."""
    if temperature <= 0:
        return logits.argmax(dim=-1)
    from codea1.trainers.backends.rollouts.transformers_engine import nucleus

    cdf = nucleus(torch, logits, temperature, top_p).softmax(dim=-1).cumsum(dim=-1)
    target = uniform(torch, seeds, step)[:, None] * cdf[:, -1:]
    return torch.searchsorted(cdf, target).squeeze(-1).clamp_(max=logits.shape[-1] - 1)


class DecodeCache:
    """A static KV cache (the duck type of transformers' Cache that a decoder layer uses: its
    ``update``). ``column`` (a device tensor) is where the next token's keys and values are
    written; ``rows`` and ``limit`` (numbers, fixed in each captured step) how many rows
    decode and how many columns the attention reads."""

    def __init__(self, torch, layers: int, batch: int, kv_heads: int, length: int, head_dim: int, dtype, device):
        shape = (batch, kv_heads, length, head_dim)
        self.keys = [torch.zeros(shape, dtype=dtype, device=device) for _ in range(layers)]
        self.values = [torch.zeros(shape, dtype=dtype, device=device) for _ in range(layers)]
        self.column = torch.zeros(1, dtype=torch.long, device=device)
        self.rows, self.limit = batch, length

    def update(self, keys, values, layer_idx: int, *args, **kwargs):
        mine_k, mine_v = self.keys[layer_idx][:self.rows], self.values[layer_idx][:self.rows]
        mine_k.index_copy_(2, self.column, keys)
        mine_v.index_copy_(2, self.column, values)
        return mine_k[:, :, :self.limit], mine_v[:, :, :self.limit]

    def get_seq_length(self, layer_idx: int = 0) -> int:  # transformers asks only without position ids
        return self.limit

    def fill(self, layers, width: int) -> None:
        """The prompts' keys and values (a transformers cache's ``layers``, rows in this batch's
        order) into the first ``width`` columns."""
        for mine_k, mine_v, held in zip(self.keys, self.values, layers):
            mine_k[:, :, :width].copy_(held.keys)
            mine_v[:, :, :width].copy_(held.values)


class GraphDecoder:
    """Decoding for one batch shape (``batch`` rows, a cache of ``length`` columns): the state
    a step reads and writes, all in device tensors, and the captured steps (CUDA), one per
    bucket, number of rows still decoding and sampling setting.

    Rows that have ended stay in the batch until at most half of the rows still decode; then
    the live rows move to the front of every state tensor (the cache included) and the steps
    run on the first power of two of rows that holds them. A batch whose responses end at very
    different lengths (a trained model's, up to the paper's 4,096 tokens) does not pay for its
    longest response with every row."""

    def __init__(self, torch, model, cache_arg: str, batch: int, length: int, *, eos: int, pad: int,
                 compiled: bool = False):
        cfg = model.config
        heads = cfg.num_attention_heads
        head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // heads
        kv_heads = getattr(cfg, "num_key_value_heads", None) or heads
        device = next(model.parameters()).device
        self.torch, self.model, self.cache_arg = torch, model, cache_arg
        self.batch, self.length, self.eos, self.pad = batch, length, eos, pad
        self.capture = device.type == "cuda"
        self.compiled = compiled
        self.cache = DecodeCache(torch, cfg.num_hidden_layers, batch, kv_heads, length, head_dim, model.dtype, device)
        long = {"dtype": torch.long, "device": device}
        self.mask = torch.zeros((batch, 1, 1, length), dtype=torch.bool, device=device)
        self.token = torch.zeros((batch, 1), **long)  # the token the next step feeds
        self.position = torch.zeros((batch, 1), **long)  # its rotary position
        self.step = torch.zeros(1, **long)  # its index in the response
        self.seeds = torch.zeros(batch, **long)
        self.ended = torch.zeros(batch, dtype=torch.bool, device=device)
        self.tokens = torch.full((batch, length), pad, **long)  # the responses so far
        self.forward = model.forward
        if compiled:
            self.forward = torch.compile(model.forward, dynamic=False, fullgraph=False)
        self.graphs: dict[tuple, object] = {}
        self.pool = None
        self.weights = self._weight_pointers()
        self.rows = batch  # the rows now decoding: a prefix of every state tensor
        self.steps_run = 0  # decode steps (tests, benchmarks)
        self.row_steps = 0  # decode steps x rows fed (tests, benchmarks)

    def _weight_pointers(self) -> list[int]:
        return [p.data_ptr() for p in self.model.parameters()]

    def bucket_end(self, column: int) -> int:
        """The columns a step that writes ``column`` reads: its bucket's end (one bucket, the
        whole cache, when compiled)."""
        if self.compiled:
            return self.length
        return min(self.length, (column // BUCKET + 1) * BUCKET)

    # -- one step ------------------------------------------------------------------------------
    def _step(self, limit: int, temperature: float, top_p: float) -> None:
        """Feed each decoding row's token at the cache's column, draw the next, move on by one:
        device work only (what a CUDA graph captures)."""
        torch, rows = self.torch, self.rows
        self.cache.limit, self.cache.rows = limit, rows
        mask, ended = self.mask[:rows], self.ended[:rows]
        mask.index_fill_(3, self.cache.column, True)
        out = self.forward(input_ids=self.token[:rows], attention_mask={"full_attention": mask[..., :limit]},
                           position_ids=self.position[:rows], use_cache=True, **{self.cache_arg: self.cache})
        nxt = self.step + 1
        chosen = draw(torch, out.logits[:, -1], temperature, top_p, self.seeds[:rows], nxt)
        chosen = torch.where(ended, self.pad, chosen)
        self.tokens[:rows].index_copy_(1, nxt, chosen[:, None])
        ended |= chosen == self.eos
        self.token[:rows].copy_(chosen[:, None])
        self.step.add_(1)
        self.cache.column.add_(1)
        self.position[:rows].add_(1)

    def _run_step(self, limit: int, temperature: float, top_p: float) -> None:
        self.row_steps += self.rows
        if not self.capture:
            self._step(limit, temperature, top_p)
            return
        key = (limit, self.rows, temperature, top_p)
        graph = self.graphs.get(key)
        if graph is None:
            graph = self.graphs[key] = self._captured(limit, temperature, top_p)
        graph.replay()

    def _captured(self, limit: int, temperature: float, top_p: float):
        """The step for ``limit`` and the rows now decoding, recorded as a CUDA graph. Recording
        runs nothing; the first recording of a decoder is preceded by one step run on a side
        stream (lazy initialisations, torch.compile's compilation), the state it moved put back
        after (its keys, values and token at the current column are written again by the real
        step)."""
        torch = self.torch
        if self.pool is None:
            saved = [t.clone() for t in self._state()]
            stream = torch.cuda.Stream()
            stream.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(stream):
                self._step(limit, temperature, top_p)
            torch.cuda.current_stream().wait_stream(stream)
            for tensor, copy in zip(self._state(), saved):
                tensor.copy_(copy)
            self.pool = torch.cuda.graph_pool_handle()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, pool=self.pool):
            self._step(limit, temperature, top_p)
        return graph

    def _state(self) -> list:
        return [self.mask, self.token, self.position, self.step, self.ended, self.cache.column]

    def _rows_state(self) -> list:
        """Every tensor with one row per batch row (what moving rows moves)."""
        return [self.mask, self.token, self.position, self.seeds, self.ended, self.tokens,
                *self.cache.keys, *self.cache.values]

    def _keep(self, live: list[int]) -> None:
        """Move rows ``live`` (of the rows decoding) to the front, the first power of two rows
        that holds them decoding from now on (the rows past ``live`` copies of its last)."""
        torch = self.torch
        rows = 1 << max(0, len(live) - 1).bit_length()
        index = torch.tensor(live + [live[-1]] * (rows - len(live)), device=self.mask.device)
        for tensor in self._rows_state():
            tensor[:rows] = tensor.index_select(0, index)
        self.rows = rows

    # -- one batch -----------------------------------------------------------------------------
    def start(self, read, width: int, seeds: list[int], sampling, logits) -> None:
        """Take a batch whose prompts ``read`` (read_prompts' result, ``width`` columns, one
        row per seed) holds, and draw each row's first token from the prompts' last ``logits``."""
        torch = self.torch
        if self._weight_pointers() != self.weights:  # the weights moved: a graph would read the old memory
            self.graphs.clear()
            self.weights = self._weight_pointers()
        self.rows = self.batch
        self.cache.fill(read.cache.layers, width)
        self.cache.column.fill_(width)
        self.mask.zero_()
        self.mask[:, 0, 0, :width] = read.mask.bool()
        self.seeds.copy_(torch.tensor(seeds, dtype=torch.long))
        self.step.zero_()
        first = draw(torch, logits.float(), sampling.temperature, sampling.top_p, self.seeds, self.step)
        self.tokens[:, 0] = first
        self.token.copy_(first[:, None])
        self.ended.copy_(first == self.eos)
        self.position.copy_(read.positions[:, -1:] + 1)
        self.width = width

    def run(self, sampling, real: int) -> list[list[int]]:
        """Decode the batch taken by ``start`` until its first ``real`` rows (the rest fill the
        batch's shape) have all ended or max_tokens. Returns those rows' tokens (past
        end-of-sequence included); ``steps_run`` and ``row_steps`` count the work."""
        origin = list(range(self.batch))  # the batch row each decoding row holds
        finished: dict[int, list[int]] = {}  # batch row -> its tokens, once it left the decoding rows
        done = 1
        while done < sampling.max_tokens:
            if done % CHECK_EVERY == 1:
                ended = self.ended[:self.rows].tolist()
                live = [i for i in range(self.rows) if origin[i] < real and not ended[i]]
                if not live:
                    break
                if len(live) <= self.rows // 2 and not self.compiled:  # compiled: a new batch shape recompiles
                    gone = [i for i in range(self.rows) if origin[i] < real and ended[i]]
                    for i, ids in zip(gone, self.tokens[gone, :done].tolist() if gone else []):
                        finished[origin[i]] = ids
                    self._keep(live)
                    origin = [origin[i] for i in live] + [real] * (self.rows - len(live))
            self._run_step(self.bucket_end(self.width + done - 1), sampling.temperature, sampling.top_p)
            done += 1
        self.steps_run += done - 1
        held = self.tokens[:self.rows, :done].tolist()
        for i, row in enumerate(origin):
            if row < real and row not in finished:
                finished[row] = held[i]
        return [finished[row] for row in range(real)]


def supports(model) -> bool:
    """Whether ``model`` can decode on this path: every layer attends to the whole context (no
    sliding window: the one prepared mask serves every layer) and its decoder takes a mapping
    of prepared masks as ``attention_mask`` (transformers 5's decoders: "It may already have
    been prepared by e.g. generate")."""
    if any(kind != "full_attention" for kind in getattr(model.config, "layer_types", None) or ()):
        return False
    try:
        source = inspect.getsource(type(model.get_decoder()).forward)
    except (OSError, TypeError):
        return False
    return "causal_mask_mapping" in source
