"""What the RL backends share: the policy-gradient settings every one takes (the paper's GRPO:
token-level loss, clip-higher, k3 KL to a frozen reference, AdamW), so ``torch`` and
``openrlhf`` read the same keys with the same defaults and checks (each backend's Options adds
its own), and the rollout a sample carries to the update."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class PolicyUpdateOptions:
    model: str = ""
    lr: float = 1e-6
    weight_decay: float = 0.1
    clip_low: float = 0.2
    clip_high: float = 0.28
    kl_coef: float = 0.001
    micro_batch_size: int = 4
    mini_batch_size: int = 0  # responses per optimiser step; 0: the whole rollout batch (torch)
    ppo_epochs: int = 1
    max_grad_norm: float = 1.0
    gradient_checkpointing: bool = False

    def __post_init__(self):
        if not self.model:
            raise ValueError("option 'model' is required (a checkpoint directory or a hub name)")
        if self.micro_batch_size < 1:
            raise ValueError("option 'micro_batch_size' must be at least 1")
        if self.mini_batch_size < 0:
            raise ValueError(f"option 'mini_batch_size' must be >= 0 (0: the whole batch), not {self.mini_batch_size}")
        if self.ppo_epochs < 1:
            raise ValueError(f"option 'ppo_epochs' must be at least 1, not {self.ppo_epochs}")
        if self.clip_low < 0 or self.clip_high < 0 or self.kl_coef < 0 or self.lr <= 0:
            raise ValueError("options 'clip_low', 'clip_high', 'kl_coef' must be >= 0 and 'lr' > 0")


@dataclass
class Rollout:
    """What an update needs of a sample besides its response (``PolicySample.handle``): the
    prompt's token ids and the temperature it was sampled at."""

    prompt_ids: list[int]
    temperature: float
