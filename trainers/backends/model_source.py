"""Where a policy's ``model`` is loaded from: a checkpoint directory, or a Hugging Face hub
name, resolved from this machine's cache before the hub is asked anything.

Why not hand the name to transformers: with no network, ``from_pretrained`` of a name that
is not cached retries the hub ten times over about a minute, a warning line each, before its
error. Here a cached name loads from the cache with no request (as HF_HUB_OFFLINE would; run
``hf download NAME`` to take a newer revision), and a name that is not cached costs one
request with a short timeout: no answer, or no such model, is one line at once; a yes hands
the name to transformers, which downloads it.

``offline_error`` is what ``codea1 train --dry-run`` checks of each policy (nothing fetched);
``local_model`` is what a backend loads from.
"""

from __future__ import annotations

from pathlib import Path

from codea1.harness.generation import GenerationError, looks_like_path

HUB_TIMEOUT_S = 10  # the one request asking the hub about a name the cache lacks


def cached_snapshot(model: str) -> str | None:
    """The cache's directory of hub name ``model`` (its main revision, with a config.json),
    or None."""
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:  # no transformers either: the backend says what to install
        return None
    try:
        found = try_to_load_from_cache(model, "config.json")
    except ValueError:  # not a valid hub name (HFValidationError): not cached either
        return None
    return str(Path(found).parent) if isinstance(found, str) else None


def cache_directory() -> str:
    try:
        from huggingface_hub import constants
    except ImportError:
        return "HF_HUB_CACHE"
    return str(constants.HF_HUB_CACHE)


def offline_error(model: str) -> str:
    """Why ``model`` cannot be loaded here without a network, or "" when it can."""
    if Path(model).expanduser().exists():
        return ""
    if looks_like_path(model):
        return "no such checkpoint directory"
    if cached_snapshot(model):
        return ""
    return (f"not a checkpoint directory here, nor a hub name in this machine's Hugging Face cache "
            f"({cache_directory()}): download it first (hf download {model}) or name a checkpoint directory")


def hub_refusal(model: str) -> str:
    """Why the hub cannot give ``model`` now (no network, HF_HUB_OFFLINE, no such model, no
    access), from one request; "" when it can."""
    from huggingface_hub import HfApi, constants

    if constants.HF_HUB_OFFLINE:
        return "HF_HUB_OFFLINE is set"
    try:
        HfApi().model_info(model, timeout=HUB_TIMEOUT_S)
    except Exception as exc:  # noqa: BLE001 - whatever the one request hit (network, HTTP, a bad name), no model
        return (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    return ""


def local_model(model: str, what: str) -> str:
    """What to load ``model`` from: the directory it names, the cache's copy of a hub name,
    or the hub name itself once the hub has said it has it. Otherwise one line naming
    ``what`` (the flag or config key), at once."""
    if Path(model).expanduser().exists():
        return model
    if looks_like_path(model):
        raise GenerationError(f"{what} {model}: no such checkpoint directory")
    snapshot = cached_snapshot(model)
    if snapshot:
        return snapshot
    why = hub_refusal(model)
    if why:
        raise GenerationError(f"{what} {model}: not a checkpoint directory here, nor in this machine's Hugging Face "
                              f"cache, nor a model this machine can download ({why})")
    return model
