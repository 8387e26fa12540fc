"""The torch backend's ``transformers`` rollout engine on the tiny model: prompts bucketed by
length, a prompt's KV cache read once for all its samples, finished sequences leave the batch (the model is fed exactly one row per generated
token), a response does not depend on the batch it shares (so the batch size chosen from
free memory cannot change a run), greedy decoding equals transformers' own ``generate``,
grouped-query attention decodes on the packed layout with SDPA's results, and the compiled path (static cache, compiled step) decodes the same tokens."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed (pip install 'codea1[hf]')")

from rollout_hooks import favour_eos  # noqa: E402

from codea1.harness.generation import SamplingParams  # noqa: E402

# Prompts of different lengths: the engine sorts them into buckets and must put each
# response back in its place.
PROMPTS = [[{"role": "user", "content": "Write a function " + "that adds numbers " * i + "."}] for i in (3, 0, 5, 1)]
SAMPLED = SamplingParams(temperature=1.0, top_p=0.9, max_tokens=24)
GREEDY = SamplingParams(temperature=0.0, top_p=1.0, max_tokens=24)


def backend(plugins, model, **options):
    return plugins.backends.create("torch", {"model": str(model), "device": "cpu",
                                             **{k: str(v) for k, v in options.items()}}, seed=0)


def ids(groups):
    return [[s.token_ids for s in samples] for samples in groups]


def transformers_greedy(b, prompt_ids: list[int]) -> list[int]:
    """transformers' own greedy generate for one prompt alone (no padding)."""
    import transformers

    tok, prompt = b.tokenizer, torch.tensor([prompt_ids])
    config = transformers.GenerationConfig(do_sample=False, max_new_tokens=GREEDY.max_tokens,
                                           eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id)
    with torch.no_grad():
        return b.model.generate(input_ids=prompt, attention_mask=torch.ones_like(prompt),
                                generation_config=config)[0, prompt.shape[1]:].tolist()


def test_finished_sequences_stop_costing_and_the_batch_does_not_change_a_response(plugins, tiny_model):
    runs = {}
    for batch in (1, 3, 0):  # one at a time, buckets of 3, the size chosen from free memory
        b = backend(plugins, tiny_model, generation_batch=batch)
        favour_eos(b)
        groups = b.generate(PROMPTS, 3, SAMPLED, seed=4)
        runs[batch] = ids(groups)
        samples = [s for row in groups for s in row]
        # every row fed to the model produced one token: a finished response costs nothing more
        assert b.engine.forward_rows == sum(len(s.token_ids) for s in samples)
        # a prompt sampled 3 times is read once per batch it is in (one prompt a batch at size 1)
        assert b.engine.prefilled_prompts == (len(samples) if batch == 1 else len(PROMPTS))
    assert runs[1] == runs[3] == runs[0]
    finishes = [s.finish_reason for row in groups for s in row]
    assert "stop" in finishes and "length" in finishes  # rows ended at different steps
    assert b.engine.forward_rows < len(samples) * SAMPLED.max_tokens
    for s in samples:  # a stopped response ends with end-of-sequence, and only there
        eos = b.tokenizer.eos_token_id
        assert (s.token_ids[-1] == eos) == (s.finish_reason == "stop") and eos not in s.token_ids[:-1]
        assert len(s.logprobs) == len(s.token_ids)
    assert b.info()["rollout_engine"] == "transformers" and b.info()["decode"] == "eager"


def test_samples_follow_the_seed_and_the_engine_keeps_prompt_order(plugins, tiny_model):
    b = backend(plugins, tiny_model, generation_batch=2)
    first = b.generate(PROMPTS, 2, SAMPLED, seed=9)
    assert ids(first) == ids(b.generate(PROMPTS, 2, SAMPLED, seed=9))
    assert ids(first) != ids(b.generate(PROMPTS, 2, SAMPLED, seed=10))
    alone = b.generate(PROMPTS[2:3], 2, SAMPLED, seed=9)  # the third prompt alone is response 4 and 5 of the call
    assert ids(alone)[0] != ids(first)[2]  # its seeds are those of its own indices, 0 and 1
    tok = b.tokenizer
    for messages, samples in zip(PROMPTS, first):  # each sample carries its own prompt
        assert tok.decode(samples[0].handle.prompt_ids).count(messages[0]["content"]) == 1


def test_greedy_decoding_equals_transformers_generate(plugins, tiny_model):
    b = backend(plugins, tiny_model, generation_batch=4)
    favour_eos(b, bias=2.0)
    ours = b.generate(PROMPTS, 1, GREEDY, seed=0)
    for (sample,) in ours:
        assert sample.token_ids == transformers_greedy(b, sample.handle.prompt_ids)


def test_the_batch_chosen_from_free_memory_fits_the_model(plugins, tiny_model):
    b = backend(plugins, tiny_model)
    assert b.options.generation_batch == 0
    size = b.engine.auto_batch(width=300, max_tokens=512)
    assert 1 <= size <= 16  # the CPU cap


@pytest.mark.parametrize("key, value, message", [
    ("rollout_engine", "vlm", "did you mean 'vllm'"),
    ("decode", "grpah", "option 'decode' must be one of auto, eager, compiled, graph, graph-compiled.*did you mean 'graph'"),
    ("generation_batch", -1, "option 'generation_batch' must be >= 0"),
])
def test_wrong_rollout_options_fail_naming_the_key(plugins, tiny_model, key, value, message):
    with pytest.raises(Exception, match=message):
        backend(plugins, tiny_model, **{key: value})


@pytest.fixture(scope="module")
def gqa_model(tmp_path_factory):
    """Qwen2.5's layout in small: 4 query heads on 2 key/value heads (head_dim 64)."""
    pytest.importorskip("transformers", reason="transformers is not installed (pip install 'codea1[hf]')")
    from codea1.harness.testing.tiny_model import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("gqa-model"), hidden_size=256, heads=4, kv_heads=2)


def test_a_grouped_query_decode_step_on_the_packed_layout_equals_sdpa(plugins, gqa_model):
    """One decode step of a left-padded batch: the engine's attention (each key/value head
    read once by its group) gives SDPA's logits, and the steps took the packed path."""
    from codea1.trainers.backends.rollouts import transformers_engine

    b = backend(plugins, gqa_model)
    model, engine = b.model, b.engine
    assert engine.packed_gqa and b.info()["attention"] == transformers_engine.PACKED_ATTENTION
    batch = [[5, 6, 7, 8, 9, 10, 11], [12, 13], [14, 15, 16, 17]]
    ids, mask = engine._left_padded(batch, 7)
    positions = (mask.cumsum(-1) - 1).clamp(min=0)
    step = torch.tensor([[20], [21], [22]])
    mask2 = torch.cat([mask, mask.new_ones((3, 1))], dim=1)
    logits = {}
    for attention in (transformers_engine.PACKED_ATTENTION, "sdpa"):
        model.set_attn_implementation(attention)
        before = transformers_engine.packed_gqa_sdpa.calls
        with torch.no_grad():
            out = model(input_ids=ids, attention_mask=mask, position_ids=positions, use_cache=True)
            cache = getattr(out, "cache", None) or out.past_key_values
            logits[attention] = model(input_ids=step, attention_mask=mask2, position_ids=positions[:, -1:] + 1,
                                      use_cache=True, **{engine.cache_arg: cache}).logits[:, -1]
        packed = transformers_engine.packed_gqa_sdpa.calls - before
        # the prefill (7 query tokens) is SDPA's own; the decode step is packed in every layer
        assert packed == (model.config.num_hidden_layers if attention != "sdpa" else 0)
    assert torch.allclose(logits["sdpa"], logits[transformers_engine.PACKED_ATTENTION], atol=1e-5, rtol=1e-5)


def test_grouped_query_greedy_decoding_equals_transformers_generate(plugins, gqa_model):
    """Batched, padded and packed, the engine decodes what transformers' generate does for
    each prompt alone (no padding, no packing)."""
    from codea1.trainers.backends.rollouts import transformers_engine

    b = backend(plugins, gqa_model, generation_batch=4)
    favour_eos(b, bias=2.0)
    before = transformers_engine.packed_gqa_sdpa.calls
    ours = b.generate(PROMPTS, 1, GREEDY, seed=0)
    assert transformers_engine.packed_gqa_sdpa.calls > before
    b.model.set_attn_implementation("sdpa")
    for (sample,) in ours:
        assert sample.token_ids == transformers_greedy(b, sample.handle.prompt_ids)


@pytest.mark.long
def test_the_compiled_path_decodes_what_the_eager_path_does(plugins, tiny_model):
    """A static KV cache and a compiled step (what CUDA gets by default), here on the CPU:
    greedy tokens equal the eager path's; each distinct prompt of a batch is read once; later
    calls reuse the compiled step (torch compiles no frame again)."""
    from torch._dynamo.utils import counters

    eager = backend(plugins, tiny_model, generation_batch=4, decode="eager")
    compiled = backend(plugins, tiny_model, generation_batch=4, decode="compiled")
    assert compiled.info()["decode"] == "compiled"
    assert ids(compiled.generate(PROMPTS, 1, GREEDY, seed=0)) == ids(eager.generate(PROMPTS, 1, GREEDY, seed=0))
    assert compiled.engine.prefilled_prompts == 4
    frames = counters["frames"]["total"]
    sampled = compiled.generate(PROMPTS, 2, SAMPLED, seed=3)
    assert compiled.engine.prefilled_prompts == 4 + 4  # two batches of 4 rows, each 2 prompts x 2 samples
    assert ids(sampled) == ids(compiled.generate(PROMPTS, 2, SAMPLED, seed=3))
    assert counters["frames"]["total"] == frames


@pytest.mark.long
def test_the_compiled_path_packs_grouped_heads_and_sizes_a_batch_to_its_prompts(plugins, gqa_model):
    """What CUDA gets by default, on the CPU: grouped-query attention packed inside the
    compiled step decodes the eager path's greedy tokens, and three prompts run as a batch of
    four (the next power of two), not as the batch chosen from free memory (16 here)."""
    eager = backend(plugins, gqa_model, decode="eager")
    compiled = backend(plugins, gqa_model, decode="compiled")
    assert compiled.engine.packed_gqa and compiled.info()["decode"] == "compiled"
    assert ids(compiled.generate(PROMPTS[:3], 1, GREEDY, seed=0)) == ids(eager.generate(PROMPTS[:3], 1, GREEDY, seed=0))
    assert compiled.engine.forward_rows == 4 * GREEDY.max_tokens  # 4 rows a step; none stopped early
