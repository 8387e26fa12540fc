"""Hooks on a tiny policy's model for the rollout engines' tests."""

from __future__ import annotations


def favour_eos(b, bias: float = 3.0) -> None:
    """The random model rarely ends a response: raise its end-of-sequence logit by ``bias``
    (a hook on the LM head, so sampling and the log-prob pass see the same model)."""
    import torch

    eos = b.tokenizer.eos_token_id

    def hook(module, inputs, logits):
        shift = torch.zeros(logits.shape[-1], dtype=logits.dtype)
        shift[eos] = bias
        return logits + shift

    b.model.lm_head.register_forward_hook(hook)
