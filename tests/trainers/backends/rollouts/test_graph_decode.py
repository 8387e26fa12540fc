"""The transformers engine's ``graph`` decode path (CUDA's default; here on the CPU, where
the loop runs the step it would capture): greedy tokens equal the eager path's; a sampled
response equals what a model with no cache at all samples with the same draw, and depends on
its seed alone (not on the batch or the rows that ended and left it); rows that ended stop
costing once half the batch has; the draw follows the distribution the log-probs describe."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed (pip install 'codea1[hf]')")

from rollout_hooks import favour_eos  # noqa: E402

from codea1.harness.generation import SamplingParams  # noqa: E402

PROMPTS = [[{"role": "user", "content": "Write a function " + "that adds numbers " * i + "."}]
           for i in (3, 0, 5, 1, 2, 4)]
SAMPLED = SamplingParams(temperature=1.0, top_p=0.95, max_tokens=40)
GREEDY = SamplingParams(temperature=0.0, top_p=1.0, max_tokens=40)


def backend(plugins, model, eos_bias: float = 3.0, **options):
    """A torch backend on ``model`` whose end-of-sequence logit is raised by ``eos_bias`` (the
    random model rarely ends a response; a hook on the LM head, so sampling and the log-prob
    pass see the same model)."""
    b = plugins.backends.create("torch", {"model": str(model), "device": "cpu",
                                          **{k: str(v) for k, v in options.items()}}, seed=0)
    favour_eos(b, eos_bias)
    return b


def ids(groups):
    return [[s.token_ids for s in samples] for samples in groups]


@pytest.fixture(scope="module")
def gqa_model(tmp_path_factory):
    """Qwen2.5's layout in small: 4 query heads on 2 key/value heads (the packed attention)."""
    pytest.importorskip("transformers", reason="transformers is not installed (pip install 'codea1[hf]')")
    from codea1.harness.testing.tiny_model import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("gqa-model"), hidden_size=256, heads=4, kv_heads=2)


@pytest.mark.parametrize("model", ["tiny_model", "gqa_model"])
def test_greedy_graph_decoding_equals_the_eager_path(plugins, request, model):
    path = request.getfixturevalue(model)
    eager = backend(plugins, path, generation_batch=8, decode="eager")
    graph = backend(plugins, path, generation_batch=8, decode="graph")
    assert graph.info()["decode"] == "graph"
    long = SamplingParams(temperature=0.0, top_p=1.0, max_tokens=300)  # past a bucket of cache columns
    assert ids(graph.generate(PROMPTS, 1, long, seed=0)) == ids(eager.generate(PROMPTS, 1, long, seed=0))
    assert graph.engine._decoder.length % 256 == 0 and graph.engine._decoder.length >= 128 + 300


def reference_tokens(b, prompt_ids: list[int], seed: int, sampling) -> list[int]:
    """What the model samples with the graph path's draw, one token at a time over the whole
    sequence so far: no KV cache, no padding, no batch."""
    from codea1.trainers.backends.rollouts.graph_decode import draw

    tokens, seeds = [], torch.tensor([seed])
    with torch.no_grad():
        for step in range(sampling.max_tokens):
            logits = b.model(input_ids=torch.tensor([prompt_ids + tokens])).logits[:, -1]
            token = int(draw(torch, logits, sampling.temperature, sampling.top_p, seeds, torch.tensor([step])))
            tokens.append(token)
            if token == b.tokenizer.eos_token_id:
                break
    return tokens


def test_a_sampled_response_is_what_the_model_samples_with_no_cache_and_depends_on_its_seed_alone(
        plugins, tiny_model):
    from codea1.trainers.backends.rollouts import request_seed

    runs = {}
    for batch in (1, 4, 16):
        b = backend(plugins, tiny_model, generation_batch=batch, decode="graph")
        runs[batch] = b.generate(PROMPTS, 2, SAMPLED, seed=7)
    assert ids(runs[1]) == ids(runs[4]) == ids(runs[16])
    samples = [s for row in runs[16] for s in row]
    finishes = {s.finish_reason for s in samples}
    assert finishes == {"stop", "length"}  # responses ended at different steps
    for index in (0, 5, 11):  # the call's responses are listed prompt by prompt, n each
        sample = samples[index]
        assert sample.token_ids == reference_tokens(b, sample.handle.prompt_ids, request_seed(7, index, bits=63),
                                                    SAMPLED)
    assert ids(b.generate(PROMPTS, 2, SAMPLED, seed=8)) != ids(runs[16])
    for s in samples:  # the backend's log-probs are the policy's for these tokens
        assert len(s.logprobs) == len(s.token_ids) and all(lp <= 0 for lp in s.logprobs)


def test_rows_that_ended_leave_the_batch_once_half_of_it_has(plugins, tiny_model):
    b = backend(plugins, tiny_model, eos_bias=4.5, generation_batch=16, decode="graph")
    groups = b.generate(PROMPTS, 2, SamplingParams(temperature=1.0, top_p=1.0, max_tokens=200), seed=3)
    decoder = b.engine._decoder
    lengths = [len(s.token_ids) for row in groups for s in row]
    assert decoder.steps_run == max(lengths) - 1 or decoder.steps_run % 16 == 0  # stopped at a look
    # 12 responses in a batch of 16 (4 rows fill its shape): without compaction 16 rows each step
    assert decoder.row_steps < 16 * decoder.steps_run / 2
    assert decoder.row_steps >= sum(lengths) - len(lengths)  # every token after a response's first was fed
    assert b.engine.forward_rows == 16 + decoder.row_steps  # the prompts' rows, then the rows decoded
    alone = backend(plugins, tiny_model, eos_bias=4.5, generation_batch=1, decode="graph")
    assert ids(alone.generate(PROMPTS, 2, SamplingParams(temperature=1.0, top_p=1.0, max_tokens=200), seed=3)) \
        == ids(groups)


def test_the_draw_follows_softmax_within_the_nucleus():
    from codea1.trainers.backends.rollouts.graph_decode import draw, uniform

    seeds = torch.arange(20000, dtype=torch.long) * 7919 + (1 << 40)
    u = uniform(torch, seeds, torch.tensor([3]))
    assert bool((u > 0).all()) and bool((u < 1).all())
    assert abs(float(u.mean()) - 0.5) < 0.01 and abs(float(u.var()) - 1 / 12) < 0.003
    assert not torch.equal(u, uniform(torch, seeds, torch.tensor([4])))  # another step, other numbers
    assert torch.equal(u, uniform(torch, seeds.clone(), torch.tensor([3])))
    logits = torch.tensor([2.0, 1.0, 0.0, -1.0, -3.0]).repeat(len(seeds), 1)
    for temperature, top_p in ((1.0, 1.0), (0.7, 1.0), (1.0, 0.8)):
        drawn = draw(torch, logits, temperature, top_p, seeds, torch.tensor([3]))
        probs = (logits[0] / temperature).softmax(-1)
        if top_p < 1:  # the nucleus: the smallest prefix of the sorted tokens reaching top_p
            keep = (probs.cumsum(-1) - probs) <= top_p
            probs = torch.where(keep, probs, 0.0)
            probs = probs / probs.sum()
        counts = torch.bincount(drawn, minlength=5).float()
        expected = probs * len(seeds)
        assert counts[probs == 0].sum() == 0  # nothing outside the nucleus
        inside = probs > 0
        chi2 = float((((counts - expected)[inside]) ** 2 / expected[inside]).sum())
        assert chi2 < 20.5, (temperature, top_p, counts, expected)  # p < 0.001 for 4 degrees of freedom
    assert torch.equal(draw(torch, logits[:3], 0.0, 1.0, seeds[:3], torch.tensor([0])), torch.zeros(3, dtype=torch.long))


def test_the_hash_needs_no_overflowing_product():
    from codea1.trainers.backends.rollouts.graph_decode import _mul32

    x = torch.tensor([0, 1, 2**32 - 1, 123456789, 2**31], dtype=torch.long)
    for constant in (0x7FEB352D, 0x846CA68B):
        assert _mul32(x, constant).tolist() == [(v * constant) % 2**32 for v in x.tolist()]
