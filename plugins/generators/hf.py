"""Generator ``hf``: a causal LM through transformers, on CPU or GPU.

``--model`` is a local checkpoint directory or a hub name, loaded with
``AutoTokenizer``/``AutoModelForCausalLM.from_pretrained`` exactly as any checkpoint is.
Prompts go through the tokenizer's chat template (ChatML, the paper's format, when the
tokenizer has none; ``info()`` says which). Sampling is batched: up to ``batch_size``
sequences per ``generate`` call, left-padded, one row per sample. Each batch is seeded from
its first request's seed, so a run is repeatable.

Options: ``device`` (auto|cpu|cuda|cuda:N), ``dtype`` (auto|float32|bfloat16|float16),
``batch_size``, ``trust_remote_code``, ``attn_implementation`` (e.g. sdpa, eager).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

from codea1.harness.generation import (
    Generation,
    GenerationError,
    GenerationRequest,
    Generator,
    GeneratorUnavailable,
    load_tokenizer,
    model_fingerprint,
)
from codea1.harness.hookspecs import hookimpl
from codea1.harness.prompts import chat_prompt, chat_template_source


@dataclass
class HFOptions:
    device: str = "auto"
    dtype: str = "auto"
    batch_size: int = 8
    trust_remote_code: bool = False
    attn_implementation: str = ""

    def __post_init__(self):
        if self.dtype not in ("auto", "float32", "bfloat16", "float16"):
            raise ValueError(f"option 'dtype' must be auto, float32, bfloat16 or float16, not {self.dtype!r}")
        if self.batch_size < 1:
            raise ValueError("option 'batch_size' must be at least 1")


class HFGenerator(Generator):
    name = "hf"
    description = "transformers AutoModelForCausalLM + chat template; batched sampling on CPU or GPU"
    Options = HFOptions

    def __init__(self, options: HFOptions | None = None, **kwargs):
        super().__init__(options or HFOptions(), **kwargs)
        try:
            import torch
            import transformers
        except ImportError:
            raise GeneratorUnavailable("generator 'hf' needs torch and transformers: pip install 'codea1[hf]'") from None
        if not self.model:
            raise GenerationError("generator 'hf' needs --model (a checkpoint directory or a hub name)")
        self.torch = torch
        o = self.options
        device = o.device
        if device == "auto":
            device = "cuda" if torch.cuda.is_available() else "cpu"
        dtype = {"auto": "auto", "float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[o.dtype]
        self.tokenizer = load_tokenizer(transformers, self.model, "--model", o.trust_remote_code)
        self.tokenizer.padding_side = "left"  # generation continues at the right edge
        if self.tokenizer.pad_token_id is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        extra = {"attn_implementation": o.attn_implementation} if o.attn_implementation else {}
        self.lm = transformers.AutoModelForCausalLM.from_pretrained(
            self.model, dtype=dtype, trust_remote_code=o.trust_remote_code, **extra).to(device)
        self.lm.eval()
        self.device = device

    def identity(self):
        return {"generator": self.name, **model_fingerprint(self.model), "dtype": self.options.dtype}

    def info(self) -> dict:
        return {"name": self.name, "model": self.model, "device": self.device, "dtype": str(self.lm.dtype),
                "chat_template": chat_template_source(self.tokenizer), "batch_size": self.options.batch_size}

    def generate(self, requests: list[GenerationRequest]) -> Iterator[tuple[GenerationRequest, list[Generation]]]:
        # One row per sample; a request is yielded once all its rows are done.
        rows = [(r, i) for r in requests for i in range(r.n)]
        texts = {id(r): chat_prompt(self.tokenizer, r.messages) for r in requests}
        done: dict[int, list[Generation | None]] = {id(r): [None] * r.n for r in requests}
        bs = self.options.batch_size
        for start in range(0, len(rows), bs):
            batch = rows[start:start + bs]
            for (req, pos), gen in zip(batch, self._sample([texts[id(r)] for r, _ in batch], batch[0][0].seed + start)):
                done[id(req)][pos] = gen
            for req in {id(r): r for r, _ in batch}.values():
                if all(g is not None for g in done[id(req)]):
                    yield req, done.pop(id(req))

    def _sample(self, prompts: list[str], seed: int) -> list[Generation]:
        torch, s, tok = self.torch, self.sampling, self.tokenizer
        enc = tok(prompts, return_tensors="pt", padding=True, add_special_tokens=False).to(self.device)
        torch.manual_seed(seed)
        sampling = {"do_sample": True, "temperature": s.temperature, "top_p": s.top_p} if s.temperature > 0 else \
            {"do_sample": False}
        with torch.no_grad():
            out = self.lm.generate(**enc, max_new_tokens=s.max_tokens, pad_token_id=tok.pad_token_id,
                                   eos_token_id=tok.eos_token_id, **sampling)
        width = enc["input_ids"].shape[1]
        gens = []
        for row, mask in zip(out, enc["attention_mask"]):
            new = row[width:].tolist()
            finish = "length"
            if tok.eos_token_id in new:
                new = new[: new.index(tok.eos_token_id) + 1]
                finish = "stop"
            while new and new[-1] == tok.pad_token_id and tok.pad_token_id != tok.eos_token_id:
                new.pop()
            gens.append(Generation(tok.decode(new, skip_special_tokens=True), int(mask.sum()), len(new), finish))
        return gens


@hookimpl
def codea1_register_generators(registry):
    registry.add(HFGenerator)
