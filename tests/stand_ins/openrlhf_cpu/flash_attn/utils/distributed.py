"""flash-attn's ``all_gather`` in plain torch.distributed (works over gloo on CPU)."""

import torch
import torch.distributed.nn.functional as dist_fn

__all__ = ["all_gather"]


def all_gather(input_, process_group):
    """Every rank's ``input_`` concatenated along the first axis, in rank order; differentiable
    (the gradient of each rank's slice comes back to that rank, summed over ranks)."""
    return torch.cat(dist_fn.all_gather(input_.contiguous(), group=process_group), dim=0)
