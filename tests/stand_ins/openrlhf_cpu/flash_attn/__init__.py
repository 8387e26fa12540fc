"""A CPU stand-in for flash-attn: only the padding helpers and the distributed all_gather that
OpenRLHF imports. No attention kernels and no ``flash_attn.ops``: OpenRLHF's
``log_probs_from_logits`` imports ``flash_attn.ops.triton.cross_entropy`` inside a try and must
fall back to its pure-torch path, so that module must stay missing."""

# Below the 2.1 that transformers requires of flash-attn 2, so nothing mistakes this for kernels.
__version__ = "0.0.0+cpu.stand.in"
