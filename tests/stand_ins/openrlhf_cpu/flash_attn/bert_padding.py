"""flash-attn's padding helpers in plain torch (same signatures and results as flash-attn 2.8's
``flash_attn.bert_padding``). Indexing and ``index_put`` carry autograd themselves, so no custom
autograd functions are needed."""

import torch
import torch.nn.functional as F
from einops import rearrange  # re-exported: openrlhf imports rearrange from here

__all__ = ["index_first_axis", "index_put_first_axis", "pad_input", "rearrange", "unpad_input"]


def index_first_axis(input, indices):
    """Rows ``indices`` of ``input`` along its first axis: (n, ...) -> (len(indices), ...)."""
    assert input.ndim >= 2
    return input[indices]


def index_put_first_axis(values, indices, first_axis_dim):
    """Zeros of first axis ``first_axis_dim`` with ``values`` written at rows ``indices``."""
    assert indices.ndim == 1 and values.ndim >= 2
    output = values.new_zeros(first_axis_dim, *values.shape[1:])
    return output.index_put((indices,), values)


def unpad_input(hidden_states, attention_mask, unused_mask=None):
    """(batch, seqlen, ...) -> the tokens where ``attention_mask`` (or ``unused_mask``) is set.

    Returns (tokens (nnz, ...), indices into the flattened batch (nnz,), cu_seqlens (batch + 1,)
    int32, max_seqlen int, used_seqlens (batch,) int32), as flash-attn 2.8 does: ``unused_mask``
    marks tokens that are kept but not counted in ``used_seqlens``."""
    all_masks = attention_mask + unused_mask if unused_mask is not None else attention_mask
    seqlens = all_masks.sum(dim=-1, dtype=torch.int32)
    used_seqlens = attention_mask.sum(dim=-1, dtype=torch.int32)
    indices = torch.nonzero(all_masks.flatten(), as_tuple=False).flatten()
    cu_seqlens = F.pad(torch.cumsum(seqlens, dim=0, dtype=torch.int32), (1, 0))
    tokens = index_first_axis(rearrange(hidden_states, "b s ... -> (b s) ..."), indices)
    return tokens, indices, cu_seqlens, int(seqlens.max().item()), used_seqlens


def pad_input(hidden_states, indices, batch, seqlen):
    """The inverse of ``unpad_input``: (nnz, ...) -> (batch, seqlen, ...), zeros elsewhere."""
    output = index_put_first_axis(hidden_states, indices, batch * seqlen)
    return rearrange(output, "(b s) ... -> b s ...", b=batch)
