"""One OpenRLHF stack (the ``openrlhf`` backend's policy role): Ray placement group, DeepSpeed
policy and reference actors, vLLM engines, and OpenRLHF's PPO step driven from this process.

Imported only when an ``openrlhf`` policy is built: it imports openrlhf, ray, torch and vllm.
"""

from __future__ import annotations

import ast
import inspect
import itertools
import json
import os
import threading
from pathlib import Path
from typing import Any, Sequence

import ray
import torch
from openrlhf.cli import train_ppo_ray
from openrlhf.trainer.ppo_trainer import BasePPOTrainer
from openrlhf.trainer.ppo_utils.experience import Experience
from openrlhf.trainer.ppo_utils.experience_maker import RemoteExperienceMaker
from openrlhf.trainer.ray.launcher import RayActorGroup, ReferenceModelActor
from openrlhf.trainer.ray.ppo_actor import PolicyModelActor
from openrlhf.trainer.ray.vllm_engine import create_vllm_engines
from openrlhf.utils import get_strategy
from ray.util.placement_group import placement_group, remove_placement_group

from codea1.harness.errors import Codea1Error
from codea1.harness.generation import SamplingParams, load_tokenizer
from codea1.harness.prompts import chat_prompt
from codea1.harness.training import PolicySample
from codea1.trainers.backends.model_source import local_model
from codea1.trainers.backends.policy_update import Rollout
from codea1.trainers.backends.rollouts import request_seed

CPU_STAND_INS = "codea1_openrlhf_cpu"
CPU_ENV = {"CODEA1_OPENRLHF_CPU": "1", "VLLM_CPU_KVCACHE_SPACE": "1", "TOKENIZERS_PARALLELISM": "false"}
CPU_LOGICAL_GPUS = 8  # what a local CPU cluster declares: enough for a few stacks of one bundle
CHECKPOINT_TAG = "policy"

# Ray started by this process, and the stacks open on it: the last to close shuts it down.
_ray_lock = threading.Lock()
_ray_users: list[int] = []
_ray_started_here = False


def openrlhf_args(argv: list[str]):
    """OpenRLHF's own ``train_ppo_ray`` arguments for ``argv``: its parser and its checks, read
    from its CLI module, where they are built inline under ``__main__`` (nothing to import),
    less the final ``train(args)``. Every default and every check is OpenRLHF's."""
    tree = ast.parse(inspect.getsource(train_ppo_ray))
    main = next(node for node in tree.body if isinstance(node, ast.If) and "__main__" in ast.unparse(node.test))
    body = [node for node in main.body
            if not (isinstance(node, ast.Expr) and ast.unparse(node.value).startswith("train("))]
    for node in body:  # the one parse_args() call reads argv instead of sys.argv
        if isinstance(node, ast.Assign) and ast.unparse(node.value) == "parser.parse_args()":
            node.value = ast.parse("parser.parse_args(_codea1_argv)").body[0].value
    module = ast.fix_missing_locations(ast.Module(body=body, type_ignores=[]))
    namespace = dict(vars(train_ppo_ray), _codea1_argv=argv)
    exec(compile(module, train_ppo_ray.__file__, "exec"), namespace)  # noqa: S102 - OpenRLHF's own code
    return namespace["args"]


def ray_runtime(options) -> None:
    """Join the cluster at ``ray_address`` (or RAY_ADDRESS), or start a local one: on a CPU,
    with logical GPUs and the stand-ins installed in every worker."""
    global _ray_started_here
    if ray.is_initialized():
        if options.device == "cpu" and os.environ.get("CODEA1_OPENRLHF_CPU") != "1" and not _ray_started_here:
            raise Codea1Error("backend 'openrlhf' with device = \"cpu\" needs a Ray runtime started with its CPU "
                              "stand-ins: let the backend start Ray (do not call ray.init first)")
        return
    runtime_env: dict[str, Any] = {"env_vars": {"TOKENIZERS_PARALLELISM": "false"}}
    kwargs: dict[str, Any] = {}
    if options.device == "cpu":
        try:
            __import__(CPU_STAND_INS)
        except ImportError:
            raise Codea1Error(f"backend 'openrlhf' with device = \"cpu\" needs the CPU stand-ins ({CPU_STAND_INS}, "
                              "tests/stand_ins/openrlhf_cpu): scripts/install_openrlhf_cpu.sh VENV") from None
        runtime_env = {"env_vars": CPU_ENV, "worker_process_setup_hook": f"{CPU_STAND_INS}.install"}
        os.environ.update(CPU_ENV)  # this process (the driver) too: vLLM's plugin reads it in its engines' children
    if options.ray_address:
        kwargs["address"] = options.ray_address
    elif not os.environ.get("RAY_ADDRESS"):
        kwargs.update(include_dashboard=False, num_cpus=2 * CPU_LOGICAL_GPUS if options.device == "cpu" else None,
                      num_gpus=CPU_LOGICAL_GPUS if options.device == "cpu" else None)
    ray.init(runtime_env=runtime_env, log_to_driver=False, **kwargs)
    _ray_started_here = "address" not in kwargs and not os.environ.get("RAY_ADDRESS")


def argv_for(o, seed: int) -> list[str]:
    """OpenRLHF's train_ppo_ray flags for a stack with these backend options: the torch
    backend's algorithm (token-mean clipped loss, clip-higher, k3 KL as a loss, AdamW at a
    constant rate) in OpenRLHF's words; ``extra_args`` last, so they win."""
    g = str(o.num_gpus)
    argv = ["--actor.model_name_or_path", o.model, "--actor.num_nodes", "1", "--actor.num_gpus_per_node", g,
            "--ref.num_nodes", "1", "--ref.num_gpus_per_node", g, "--vllm.num_engines", g,
            "--vllm.gpu_memory_utilization", str(o.vllm_gpu_memory_utilization), "--data.max_len", str(o.max_len),
            "--train.seed", str(seed), "--train.micro_batch_size", str(o.micro_batch_size),
            "--train.batch_size", str(o.mini_batch_size or o.micro_batch_size * o.num_gpus),
            "--rollout.batch_size", str(o.mini_batch_size or o.micro_batch_size * o.num_gpus),
            "--rollout.micro_batch_size", str(o.micro_batch_size), "--rollout.n_samples_per_prompt", "1",
            "--train.max_epochs", str(o.ppo_epochs), "--actor.adam.lr", str(o.lr),
            "--actor.adam.weight_decay", str(o.weight_decay), "--actor.adam.betas", "0.9", "0.999",
            "--actor.lr_scheduler", "constant", "--actor.lr_warmup_ratio", "0", "--actor.max_norm",
            str(o.max_grad_norm), "--actor.eps_clip_low_high", str(o.clip_low), str(o.clip_high),
            "--actor.loss_agg_mode", "token-mean", "--algo.advantage.estimator", "reinforce",
            "--algo.kl.use_loss", "--algo.kl.estimator", "k3", "--algo.kl.init_coef", str(o.kl_coef),
            "--ds.zero_stage", str(o.zero_stage), "--ds.param_dtype", o.param_dtype,
            "--ds.attn_implementation", "sdpa" if o.device == "cpu" else o.attn_implementation,
            # OpenRLHF's own checkpoint paths stay unused: save, load and export get theirs from the train flow
            "--ckpt.path", "unused", "--ckpt.output_dir", "unused"]
    if o.gradient_checkpointing:
        argv.append("--actor.gradient_checkpointing_enable")
    if o.deterministic:
        argv.append("--train.full_determinism_enable")
    if o.device == "cpu":
        argv.append("--vllm.enforce_eager")
    return argv + list(o.extra_args)


class InjectedAdvantages(RemoteExperienceMaker):
    """OpenRLHF's experience maker with the trainer's advantages: every action token of sample
    i gets ``advantages[i]``, the return is its reward, nothing is clipped or renormalised."""

    advantages: Sequence[float] = ()  # the update's, in sample order (set before each train_step)

    @torch.no_grad()
    def compute_advantages_and_returns(self, experiences: list[Experience]) -> list[Experience]:
        for experience in experiences:
            per_sample = torch.tensor([self.advantages[i] for i in experience.index], dtype=torch.float32)
            mask = experience.action_mask.to(torch.float32)
            experience.advantages = per_sample[:, None] * mask
            experience.returns = experience.advantages.clone()
            experience.info["return"] = experience.rewards.to(torch.float32)
            experience.kl = None
        return experiences


class Driver(BasePPOTrainer):
    """OpenRLHF's single controller for one stack, in this process (its ``train_step``)."""

    def __init__(self, strategy, policy, reference, engines, tokenizer):
        super().__init__(strategy, policy, None, None, reference, engines, tokenizer)
        self.experience_maker = InjectedAdvantages(policy, None, None, reference, self.kl_ctl, strategy, tokenizer)


def _on_every_rank(group: RayActorGroup, fn, *args) -> list:
    """``fn(actor, *args)`` run inside each rank's live actor (Ray's ``__ray_call__``)."""
    return ray.get([handle.__ray_call__.remote(fn, *args) for handle in group._actor_handlers])


def _save_actor(actor, directory: str) -> None:
    actor.strategy.save_ckpt(actor.actor.model, directory, tag=CHECKPOINT_TAG, max_num=1, max_mem=float("inf"),
                             client_state={"torch_rng": torch.get_rng_state()})


def _load_actor(actor, directory: str) -> str:
    path, states = actor.strategy.load_ckpt(actor.actor.model, directory, tag=CHECKPOINT_TAG)
    if path is None:
        return f"no DeepSpeed checkpoint in {directory}"
    torch.set_rng_state(states["torch_rng"])
    return ""


def _export_actor(actor, directory: str) -> None:
    actor.strategy.save_model(actor.actor, actor.tokenizer, directory)


def _set_temperature(actor, temperature: float) -> None:
    model = getattr(actor, "actor", None) or actor.model  # policy or reference actor
    model.temperature = temperature


def _gpu_ids(actor) -> list:
    return [str(i) for i in ray.get_gpu_ids()]


class Stack:
    """One role's placement group, actors and engines."""

    def __init__(self, options, seed: int):
        import transformers

        self.options, self.seed = options, seed
        self.global_step = 1
        self.pg = self.policy = self.reference = None
        self.engines: list = []
        # the tokenizer first, from the cache where it is there: a name the hub cannot give fails here, once; the
        # actors load by the name (each node its own cache)
        self.tokenizer = load_tokenizer(transformers, local_model(options.model, "[policies] model"),
                                        "[policies] model", False)
        with _ray_lock:
            ray_runtime(options)
            _ray_users.append(id(self))
        try:
            self._start()
        except BaseException:
            self.close()
            raise

    def _start(self) -> None:
        o = self.options
        try:
            args = openrlhf_args(argv_for(o, self.seed))
        except SystemExit as exc:  # argparse: a wrong flag in extra_args
            raise Codea1Error(f"[policies] extra_args: OpenRLHF's train_ppo_ray refused them (exit {exc.code}); "
                              "see the message above") from None
        self.args = args
        self.temperature = args.rollout.temperature  # the actors' log-prob temperature; updates set theirs
        self.strategy = get_strategy(args)
        self.pg = placement_group([{"GPU": o.gpu_share, "CPU": 1}] * o.num_gpus, strategy="PACK")
        ray.get(self.pg.ready())
        self.engines = create_vllm_engines(
            o.num_gpus, 1, o.model, self.seed, args.train.full_determinism_enable, False, args.vllm.enforce_eager,
            o.max_len, shared_pg=self.pg, gpu_memory_utilization=o.vllm_gpu_memory_utilization,
            vllm_enable_sleep=False, logprobs_mode="processed_logprobs")
        share = (o.gpu_share - 0.2) / (2 if o.kl_coef > 0 else 1)  # what the engine leaves, per model
        self.policy = RayActorGroup(1, o.num_gpus, PolicyModelActor, pg=self.pg, num_gpus_per_actor=share)
        refs = self.policy.async_init_model_from_pretrained(self.strategy, o.model, 10**9, self.engines)
        if o.kl_coef > 0:
            self.reference = RayActorGroup(1, o.num_gpus, ReferenceModelActor, pg=self.pg, num_gpus_per_actor=share)
            refs += self.reference.async_init_model_from_pretrained(self.strategy, o.model)
        ray.get(refs)
        self.driver = Driver(self.strategy, self.policy, self.reference, self.engines, self.tokenizer)

    # -- rollouts ------------------------------------------------------------------------------
    def generate(self, prompts: Sequence[list[dict[str, str]]], n: int, sampling: SamplingParams,
                 seed: int) -> list[list[PolicySample]]:
        from vllm import SamplingParams as VllmSampling

        tok = self.tokenizer
        prompt_ids = [tok(chat_prompt(tok, messages), add_special_tokens=False)["input_ids"] for messages in prompts]
        longest = max((len(ids) for ids in prompt_ids), default=0)
        if longest + sampling.max_tokens > self.options.max_len:
            raise Codea1Error(f"backend 'openrlhf': a prompt of {longest} tokens and max_tokens {sampling.max_tokens} "
                              f"exceed max_len {self.options.max_len} (vLLM's context): raise [policies] max_len")
        requests = [(p, j) for p in range(len(prompts)) for j in range(n)]
        engines = itertools.cycle(self.engines)
        calls = []
        for index, (p, _) in enumerate(requests):
            params = VllmSampling(n=1, temperature=sampling.temperature, top_p=sampling.top_p,
                                  max_tokens=sampling.max_tokens, seed=request_seed(seed, index), logprobs=0)
            calls.append((next(engines), prompt_ids[p], params))
        # An engine batches the requests it holds as they arrive, so a batch's make-up, and with
        # it the rounding of a logit (now and then a sampled token), depends on timing. With
        # ``deterministic`` each engine holds one request at a time (a wave: one per engine).
        wave = len(self.engines) if self.options.deterministic else len(calls)
        results = []
        for start in range(0, len(calls), max(1, wave)):
            results += ray.get([engine.generate.remote(ids, params) for engine, ids, params in calls[start:start + wave]])
        out: list[list[PolicySample]] = [[] for _ in prompts]
        for (p, _), result in zip(requests, results):  # each response with its own request's ids
            response = result.outputs[0]
            ids = list(response.token_ids)
            logprobs = [step[token].logprob for step, token in zip(response.logprobs, ids)]
            finish = "stop" if response.finish_reason == "stop" else "length"
            out[p].append(PolicySample(tok.decode(ids, skip_special_tokens=True), ids, logprobs, finish,
                                       Rollout(prompt_ids[p], sampling.temperature or 1.0)))
        return out

    # -- updates -------------------------------------------------------------------------------
    def update(self, samples: Sequence[PolicySample], rewards: Sequence[float],
               advantages: Sequence[float]) -> dict[str, float]:
        o = self.options
        if not o.mini_batch_size or len(samples) % o.mini_batch_size:
            raise Codea1Error(f"backend 'openrlhf': an update of {len(samples)} responses, not a multiple of "
                              f"mini_batch_size {o.mini_batch_size} (DeepSpeed's train batch)")
        self._use_temperature({s.handle.temperature for s in samples})
        experiences = [experience(s, r) for s, r in zip(samples, rewards)]
        self.driver.experience_maker.advantages = [float(a) for a in advantages]
        status, self.global_step = self.driver.train_step(experiences, self.global_step)
        tokens = sum(len(s.token_ids) for s in samples)
        kl = float(status.get("kl", 0.0))
        return {"loss": float(status["policy_loss"]) + o.kl_coef * kl, "policy_loss": float(status["policy_loss"]),
                "kl": kl, "clip_ratio": float(status.get("ppo_clip_ratio", 0.0)), "tokens": float(tokens),
                "responses": float(len(samples)), "grad_norm": float(status.get("actor_grad_norm", 0.0)),
                "optimizer_steps": float(len(samples) // o.mini_batch_size * o.ppo_epochs)}

    def _use_temperature(self, temperatures: set[float]) -> None:
        """The actors' log-probs must describe the distribution the samples were drawn from."""
        if len(temperatures) != 1:
            raise Codea1Error(f"backend 'openrlhf': one update mixes sampling temperatures {sorted(temperatures)}")
        (temperature,) = temperatures
        if temperature != self.temperature:
            for group in (self.policy, self.reference):
                if group is not None:
                    _on_every_rank(group, _set_temperature, temperature)
            self.temperature = temperature

    # -- state ---------------------------------------------------------------------------------
    def save(self, directory: str) -> None:
        path = Path(directory)
        path.mkdir(parents=True, exist_ok=True)
        _on_every_rank(self.policy, _save_actor, str(path / "deepspeed"))
        (path / "openrlhf_backend.json").write_text(json.dumps({"global_step": self.global_step}))

    def load(self, directory: str) -> None:
        path = Path(directory)
        errors = [e for e in _on_every_rank(self.policy, _load_actor, str(path / "deepspeed")) if e]
        if errors:
            raise Codea1Error(f"backend 'openrlhf': {errors[0]}")
        self.global_step = json.loads((path / "openrlhf_backend.json").read_text())["global_step"]
        self.driver.broadcast_to_vllm()  # the engines sample from the loaded weights

    def export(self, directory: str) -> None:
        from transformers.utils import logging

        logging.disable_progress_bar()
        _on_every_rank(self.policy, _export_actor, directory)

    def info(self) -> dict[str, Any]:
        import deepspeed
        import vllm

        return {"model": self.options.model, "device": self.options.device, "dtype": self.options.param_dtype,
                "num_gpus": self.options.num_gpus, "gpu_share": self.options.gpu_share,
                "gpu_ids": sorted({i for ids in _on_every_rank(self.policy, _gpu_ids) for i in ids}),
                "openrlhf": _version("openrlhf"),
                "deepspeed": deepspeed.__version__, "ray": ray.__version__, "vllm": vllm.__version__}

    def close(self) -> None:
        """Kill the stack's actors and engines, remove its placement group; shut down the Ray
        runtime this process started once no stack uses it."""
        global _ray_started_here
        handles = list(self.engines)
        for group in (self.policy, self.reference):
            if group is not None:
                handles += group._actor_handlers
        for handle in handles:
            try:
                ray.kill(handle)
            except Exception:  # noqa: BLE001 - already gone (a dead node, an interrupted run): kill the rest
                pass
        self.engines, self.policy, self.reference = [], None, None
        if self.pg is not None:
            try:
                remove_placement_group(self.pg)
            except Exception:  # noqa: BLE001 - the cluster went first
                pass
            self.pg = None
        with _ray_lock:
            if id(self) in _ray_users:
                _ray_users.remove(id(self))
            if not _ray_users and _ray_started_here:
                ray.shutdown()
                _ray_started_here = False


def experience(sample: PolicySample, reward: float) -> Experience:
    """One sample as OpenRLHF's rollout makes it (samples_generator.py): the whole sequence,
    and over its T - 1 next-token positions an action mask that is 1 where the next token
    is the response's (the actor reads log-probs off that mask, whatever the padding)."""
    prompt, response = sample.handle.prompt_ids, sample.token_ids
    if not response:
        raise Codea1Error("backend 'openrlhf': an empty response cannot be trained on (vLLM returns at least "
                          "one token; was this sample generated by another backend?)")
    total = len(prompt) + len(response)
    action_mask = torch.zeros(1, total - 1, dtype=torch.bool)
    action_mask[0, len(prompt) - 1:] = True
    rollout_log_probs = torch.zeros(1, total - 1)
    rollout_log_probs[0, len(prompt) - 1:] = torch.tensor(sample.logprobs, dtype=torch.float32)
    length = torch.tensor([float(len(response))])
    return Experience(
        sequences=torch.tensor([prompt + response]), attention_mask=torch.ones(1, total, dtype=torch.long),
        action_mask=action_mask, rollout_log_probs=rollout_log_probs, rewards=torch.tensor([float(reward)]),
        response_length=length, truncated=torch.tensor([sample.finish_reason == "length"]),
        total_length=torch.tensor([float(total)]), prompts=[""], labels=[""],
        info={"reward": torch.tensor([float(reward)]), "response_length": length})


def _version(name: str) -> str:
    from importlib.metadata import version

    return version(name)
