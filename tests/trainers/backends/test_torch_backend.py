"""The torch policy backend on the tiny local model: repeatable rollouts with their
log-probabilities, the loss as the formula says, micro-batches that add up to the full
batch exactly, PPO mini-batches and epochs (the ratio leaves 1 after the first optimiser
step, the clip acts, one mini-batch is the plain single step, the shuffle is seeded), state
that survives save/load, an export the hf generator loads, a learning check on a
scripted reward, bfloat16 weights that move at lr 1e-6 (float32 masters) and resume
exactly, log-probabilities scored a chunk of response tokens at a time that equal the
full logits' (values and gradients), and a log-prob pass over fresh samples that reads each
prompt once, scores what the whole sequences' forward does and goes in generation batches."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed (pip install 'codea1[hf]')")

from codea1.harness.generation import SamplingParams  # noqa: E402

PROMPTS = [[{"role": "user", "content": "Write a function."}], [{"role": "user", "content": "Write a test."}]]
SAMPLING = SamplingParams(temperature=1.0, top_p=1.0, max_tokens=8)


def backend(plugins, model, **options):
    return plugins.backends.create("torch", {"model": str(model), **{k: str(v) for k, v in options.items()}}, seed=0)


def params(b) -> torch.Tensor:
    return torch.cat([p.detach().flatten() for p in b.model.parameters()])


def test_rollouts_repeat_for_a_seed_and_carry_their_logprobs(plugins, tiny_model):
    b = backend(plugins, tiny_model)
    first = b.generate(PROMPTS, 3, SAMPLING, seed=7)
    again = b.generate(PROMPTS, 3, SAMPLING, seed=7)
    assert [[s.text for s in row] for row in first] == [[s.text for s in row] for row in again]
    assert len(first) == 2 and all(len(row) == 3 for row in first)
    other = b.generate(PROMPTS, 3, SAMPLING, seed=8)
    assert [[s.token_ids for s in row] for row in other] != [[s.token_ids for s in row] for row in first]
    for sample in first[0] + first[1]:
        assert 0 < len(sample.token_ids) <= 8 and len(sample.logprobs) == len(sample.token_ids)
        assert all(lp <= 0 for lp in sample.logprobs)
        assert sample.finish_reason in ("stop", "length")


def test_on_policy_loss_is_minus_the_token_mean_of_the_advantages(plugins, tiny_model):
    """ratio = 1 on the samples just drawn: the policy loss is -sum(A x tokens) / tokens, and
    nothing is clipped."""
    b = backend(plugins, tiny_model, kl_coef=0.0)
    samples = [s for row in b.generate(PROMPTS, 2, SAMPLING, seed=1) for s in row]
    advantages = [1.0, -0.5, 2.0, 0.0]
    stats = b.update(samples, [0.0] * 4, advantages)
    tokens = [len(s.token_ids) for s in samples]
    expected = -sum(a * n for a, n in zip(advantages, tokens)) / sum(tokens)
    assert stats["policy_loss"] == pytest.approx(expected, abs=1e-5)
    assert stats["clip_ratio"] == 0.0 and stats["tokens"] == sum(tokens) and stats["kl"] == 0.0


def test_micro_batches_add_up_to_the_full_batch_even_with_a_partial_last_one(plugins, tiny_model):
    """Five responses as one micro-batch, or as 2 + 2 + 1: the same accumulated gradient (the
    batch's token mean) and the same loss. (Compared before the optimiser: Adam's first step
    is about lr x sign(g), so float-order noise in near-zero gradients would flip signs.)"""
    results = []
    for micro in (5, 2):
        b = backend(plugins, tiny_model, micro_batch_size=micro, lr=1e-3)
        samples = [s for row in b.generate(PROMPTS, 3, SAMPLING, seed=3) for s in row][:5]
        grads = []  # as the optimiser is about to step (the step frees them)
        b.optimizer.register_step_pre_hook(
            lambda opt, args, kwargs, b=b, grads=grads: grads.append(torch.cat([p.grad.flatten() for p in b.params])))
        stats = b.update(samples, [0.0] * 5, [1.0, -1.0, 0.5, -0.5, 0.25])
        results.append((grads[0], stats))
    assert results[0][0].abs().max() > 0
    assert torch.allclose(results[0][0], results[1][0], rtol=1e-4, atol=1e-7)
    assert results[0][1]["loss"] == pytest.approx(results[1][1]["loss"], abs=1e-6)


def samples_of(b, seed: int, n: int = 2) -> list:
    return [s for row in b.generate(PROMPTS, n, SAMPLING, seed=seed) for s in row]


def test_one_mini_batch_is_the_single_step_of_the_whole_batch(plugins, tiny_model):
    """The default (mini_batch_size 0), a mini-batch the size of the batch and a larger one
    are the same update to the bit: one optimiser step, in the batch's order."""
    results = []
    for options in ({}, {"mini_batch_size": 6}, {"mini_batch_size": 64}):
        b = backend(plugins, tiny_model, lr=1e-3, micro_batch_size=4, **options)
        stats = b.update(samples_of(b, 3, n=3), [0.0] * 6, [1.0, -1.0, 0.5, -0.5, 0.25, 2.0])
        results.append((params(b), stats))
    assert results[0][1]["optimizer_steps"] == 1.0 and results[0][1]["clip_ratio"] == 0.0
    for weights, stats in results[1:]:
        assert torch.equal(weights, results[0][0]) and stats == results[0][1]


def test_the_second_mini_batch_sees_ratios_that_left_one(plugins, tiny_model):
    """Every advantage 1 and no KL: a token's policy loss is -min(r, clip(r)), -1 exactly
    while r = 1. In one step over the whole batch every r is 1: the loss is -1. In two
    mini-batches of 2 the first step's tokens give -1 each, and the mean moves off -1 only
    because the second step's ratios are no longer 1 (the policy moved in between)."""
    whole = backend(plugins, tiny_model, lr=1e-2, kl_coef=0.0)
    one = whole.update(samples_of(whole, 6), [0.0] * 4, [1.0] * 4)
    assert one["policy_loss"] == pytest.approx(-1.0, abs=1e-6) and one["optimizer_steps"] == 1.0
    halves = backend(plugins, tiny_model, lr=1e-2, kl_coef=0.0, mini_batch_size=2)
    two = halves.update(samples_of(halves, 6), [0.0] * 4, [1.0] * 4)
    assert two["optimizer_steps"] == 2.0 and two["tokens"] == one["tokens"]
    assert abs(two["policy_loss"] + 1.0) > 1e-3, two
    # epochs go through the batch again: 2 epochs x 2 mini-batches = 4 optimiser steps
    again = backend(plugins, tiny_model, lr=1e-2, kl_coef=0.0, mini_batch_size=2, ppo_epochs=2)
    assert again.update(samples_of(again, 6), [0.0] * 4, [1.0] * 4)["optimizer_steps"] == 4.0


def test_a_large_learning_rate_makes_the_clip_act(plugins, tiny_model):
    """lr 0.05 moves the tiny model far in one step: on the second mini-batch (and the second
    epoch) some ratios leave [0.8, 1.28] on the side where the clipped term is taken, so
    clip_ratio > 0; the same lr in a single step clips nothing (r = 1)."""
    advantages = [1.0, -1.0, 1.0, -1.0, 1.0, -1.0]
    single = backend(plugins, tiny_model, lr=5e-2, kl_coef=0.0)
    assert single.update(samples_of(single, 8, n=3), [0.0] * 6, advantages)["clip_ratio"] == 0.0
    b = backend(plugins, tiny_model, lr=5e-2, kl_coef=0.0, mini_batch_size=3, ppo_epochs=2)
    stats = b.update(samples_of(b, 8, n=3), [0.0] * 6, advantages)
    print("clip ratio with lr 0.05, 2 mini-batches x 2 epochs:", stats["clip_ratio"])
    assert 0.0 < stats["clip_ratio"] < 1.0 and stats["optimizer_steps"] == 4.0


def test_mini_batches_are_shuffled_by_the_seed(plugins, tiny_model):
    """Three mini-batches of 2, two epochs: the same seed gives the same update to the bit;
    another seed another order, so other weights."""
    advantages = [1.0, -1.0, 0.5, -0.5, 0.25, 2.0]
    runs = []
    for seed in (0, 0, 1):
        b = plugins.backends.create("torch", {"model": str(tiny_model), "lr": "1e-3", "mini_batch_size": "2",
                                              "ppo_epochs": "2"}, seed=seed)
        stats = b.update(samples_of(b, 9, n=3), [0.0] * 6, advantages)
        runs.append((params(b), stats))
    assert runs[0][1]["optimizer_steps"] == 6.0
    assert torch.equal(runs[0][0], runs[1][0]) and runs[0][1] == runs[1][1]
    assert not torch.equal(runs[0][0], runs[2][0])


@pytest.mark.parametrize("key, value", [("mini_batch_size", -1), ("ppo_epochs", 0), ("ppo_epochs", "two")])
def test_wrong_mini_batch_options_fail_naming_the_key(plugins, tiny_model, key, value):
    from codea1.harness.registry import OptionError

    with pytest.raises(OptionError, match=f"backend 'torch'.*option '{key}'"):
        backend(plugins, tiny_model, **{key: value})


@pytest.mark.parametrize("options", [{}, {"mini_batch_size": 2, "ppo_epochs": 2}], ids=["one-step", "mini-batches"])
def test_save_and_load_restore_weights_and_optimiser(plugins, tiny_model, tmp_path, options):
    """The resumed update is the live one, the mini-batches' seeded order included."""
    a = backend(plugins, tiny_model, lr=1e-3, **options)
    samples = [s for row in a.generate(PROMPTS, 2, SAMPLING, seed=2) for s in row]
    a.update(samples, [0.0] * 4, [1.0, -1.0, 1.0, -1.0])
    a.save(tmp_path / "ckpt")
    b = backend(plugins, tiny_model, lr=1e-3, **options)
    b.load(tmp_path / "ckpt")
    assert torch.equal(params(a), params(b)) and b.updates == 1
    # the next step is the same from the saved state as from the live one (AdamW moments too)
    more = [s for row in a.generate(PROMPTS, 2, SAMPLING, seed=5) for s in row]
    assert [s.text for s in more] == [s.text for row in b.generate(PROMPTS, 2, SAMPLING, seed=5) for s in row]
    a.update(more, [0.0] * 4, [0.5, -0.5, 1.0, -1.0])
    b.update(more, [0.0] * 4, [0.5, -0.5, 1.0, -1.0])
    assert torch.allclose(params(a), params(b), atol=1e-7)


def masters(b) -> torch.Tensor:
    return torch.cat([m.detach().flatten() for m in b.master])


def test_bfloat16_weights_move_at_the_papers_learning_rate_through_float32_masters(plugins, tiny_model):
    """At lr 1e-6 an AdamW step is about 1e-6 per weight, far below half a bfloat16 step of a
    weight near 0.02 (6e-5): stepped in bfloat16 nearly every weight stays as it was. The
    masters take every step; the model holds them rounded, and after enough steps moves."""
    runs = {}
    for master in (False, True):
        b = backend(plugins, tiny_model, dtype="bfloat16", master_weights=master, kl_coef=0.0)
        assert b.info()["master_weights"] is master
        start = params(b).float()
        samples = [s for row in b.generate(PROMPTS, 2, SAMPLING, seed=3) for s in row]
        for _ in range(10):
            b.update(samples, [0.0] * 4, [1.0, -1.0, 1.0, -1.0])
        runs[master] = b
        moved = (params(b).float() != start).float().mean().item()
        if master:
            assert (masters(b) != start).float().mean().item() > 0.9  # the masters took every step
            assert torch.equal(params(b), masters(b).to(torch.bfloat16))  # the model holds them rounded
            assert moved > 0.05
        else:
            assert moved < 0.05  # the steps were rounded away
    assert b.optimizer.state[b.master[0]]["exp_avg"].dtype == torch.float32
    assert all(p.grad is None for p in b.params) and all(m.grad is None for m in b.master)  # freed after a step


def test_masters_survive_save_and_load(plugins, tiny_model, tmp_path):
    """A resumed bfloat16 run steps the saved masters, not its weights rounded: the next
    update equals the live one bit for bit."""
    a = backend(plugins, tiny_model, dtype="bfloat16", lr=1e-5)
    samples = [s for row in a.generate(PROMPTS, 2, SAMPLING, seed=2) for s in row]
    a.update(samples, [0.0] * 4, [1.0, -1.0, 1.0, -1.0])
    a.save(tmp_path / "ckpt")
    b = backend(plugins, tiny_model, dtype="bfloat16", lr=1e-5)
    b.load(tmp_path / "ckpt")
    assert torch.equal(masters(a), masters(b)) and not torch.equal(masters(b), params(b).float())
    a.update(samples, [0.0] * 4, [0.5, -0.5, 1.0, -1.0])
    b.update(samples, [0.0] * 4, [0.5, -0.5, 1.0, -1.0])
    assert torch.equal(masters(a), masters(b)) and torch.equal(params(a), params(b))


@pytest.mark.parametrize("dtype, tolerance", [("float32", 1e-5), ("bfloat16", 2e-2)])
def test_chunked_response_logprobs_equal_the_full_logits_values_and_gradients(plugins, tiny_model, monkeypatch,
                                                                              dtype, tolerance):
    """Prompts of different lengths, two temperatures, chunks of 16 tokens (the responses
    span several): the log-probabilities and the gradient of a weighted sum of them equal
    those of the full logits; the output layer's module never runs (no full logits)."""
    from codea1.trainers.backends import token_logprobs

    monkeypatch.setattr(token_logprobs, "CHUNK_BYTES", 4 * 1024 * 16)  # vocabulary 1024: 16 tokens a chunk
    b = backend(plugins, tiny_model, dtype=dtype)
    assert b.plain_head
    samples = [s for row in b.generate(PROMPTS + [[{"role": "user", "content": "Add " * 30}]], 2,
                                       SamplingParams(temperature=1.0, top_p=1.0, max_tokens=12), seed=1) for s in row]
    for i, sample in enumerate(samples):
        sample.handle.temperature = 0.7 if i % 2 else 1.0
    assert sum(len(s.token_ids) for s in samples) > 3 * 16
    weights = [torch.linspace(-1, 1, len(s.token_ids)) for s in samples]
    results = {}
    for plain in (True, False):
        b.plain_head = plain
        head_calls = []
        hook = b.model.lm_head.register_forward_hook(lambda module, args, out, calls=head_calls: calls.append(out.shape))
        b.model.zero_grad(set_to_none=True)
        logps = b._logprobs(b.model, samples)
        sum((lp * w).sum() for lp, w in zip(logps, weights)).backward()
        hook.remove()
        assert bool(head_calls) is not plain
        results[plain] = (torch.cat(logps).detach(), torch.cat([p.grad.flatten().float() for p in b.params]))
    (chunked, chunked_grad), (full, full_grad) = results[True], results[False]
    assert torch.allclose(chunked, full, rtol=tolerance, atol=tolerance)
    assert torch.allclose(chunked_grad, full_grad, rtol=tolerance, atol=tolerance * full_grad.abs().max().item())


@pytest.mark.parametrize("dtype, tolerance", [("float32", 1e-5), ("bfloat16", 2e-2)])
def test_the_rollout_logprob_pass_reads_each_prompt_once_and_scores_as_the_whole_sequence(plugins, tiny_model,
                                                                                       dtype, tolerance):
    """Three prompts (of two lengths) sampled three times each, the samples shuffled, two
    temperatures: scored with each distinct prompt read once (its cache copied to its
    responses), the log-probs equal those of the whole sequences' forward with the full logits;
    the embedding sees the three prompts once, then the nine responses."""
    from codea1.trainers.backends import token_logprobs

    b = backend(plugins, tiny_model, dtype=dtype)
    prompts = PROMPTS + [[{"role": "user", "content": "Add " * 30}]]
    samples = [s for row in b.generate(prompts, 3, SamplingParams(temperature=1.0, top_p=1.0, max_tokens=12), seed=2)
               for s in row]
    samples = [samples[i] for i in (4, 0, 8, 1, 7, 2, 5, 3, 6)]
    for i, sample in enumerate(samples):
        sample.handle.temperature = 0.7 if i % 2 else 1.0
    reads = []
    hook = b.model.get_input_embeddings().register_forward_hook(
        lambda module, args, out, reads=reads: reads.append(tuple(args[0].shape)))
    with torch.no_grad():
        shared = token_logprobs.prompt_shared_logprobs(
            b.model, [s.handle.prompt_ids for s in samples], [s.token_ids for s in samples],
            [s.handle.temperature for s in samples], b.tokenizer.pad_token_id)
        hook.remove()
        b.plain_head = False
        whole = b._logprobs(b.model, samples)
    assert len({tuple(s.handle.prompt_ids) for s in samples}) == 3
    widest, longest = max(len(s.handle.prompt_ids) for s in samples), max(len(s.token_ids) for s in samples)
    assert reads == [(3, widest), (9, longest)]
    assert [len(lp) for lp in shared] == [len(s.token_ids) for s in samples]
    assert torch.allclose(torch.cat(shared), torch.cat(whole).float(), rtol=tolerance, atol=tolerance)


def test_the_rollout_logprob_pass_goes_in_generation_batches_not_micro_batches(plugins, tiny_model):
    """Without gradients the rollout's responses are scored as many at a time as generation
    takes (``generation_batch``, or what free memory holds), whatever the update's
    micro-batch: a forward of a few responses is mostly kernel launches on a GPU. The batching
    changes neither the samples nor (beyond float rounding) their log-probs. A model scored
    with the full logits keeps the micro-batch."""
    prompts = PROMPTS + [[{"role": "user", "content": "Add " * 30}]]
    sampling = SamplingParams(temperature=1.0, top_p=1.0, max_tokens=12)
    runs = {}
    for generation_batch in (0, 4, "full logits"):
        b = backend(plugins, tiny_model, micro_batch_size=2,
                    generation_batch=0 if generation_batch == "full logits" else generation_batch)
        b.plain_head = generation_batch != "full logits"
        chunks = []
        score = b._rollout_logprobs
        b._rollout_logprobs = lambda samples, chunks=chunks, score=score: chunks.append(len(samples)) or score(samples)
        samples = [s for row in b.generate(prompts, 3, sampling, seed=2) for s in row]
        runs[generation_batch] = (chunks, samples)
    assert runs[0][0] == [9]  # the CPU's auto batch holds all nine
    assert runs[4][0] == [4, 4, 1]
    assert runs["full logits"][0] == [2, 2, 2, 2, 1]
    for other in (4, "full logits"):
        assert [s.token_ids for s in runs[0][1]] == [s.token_ids for s in runs[other][1]]
        for one, again in zip(runs[0][1], runs[other][1]):
            assert len(one.logprobs) == len(one.token_ids)
            assert one.logprobs == pytest.approx(again.logprobs, abs=1e-5)


def test_export_is_a_checkpoint_the_hf_generator_loads(plugins, tiny_model, tmp_path):
    b = backend(plugins, tiny_model, lr=1e-3)
    samples = [s for row in b.generate(PROMPTS, 2, SAMPLING, seed=4) for s in row]
    b.update(samples, [0.0] * 4, [1.0, -1.0, 1.0, -1.0])
    b.export(tmp_path / "exported")
    from transformers import AutoModelForCausalLM

    reloaded = AutoModelForCausalLM.from_pretrained(tmp_path / "exported")
    assert torch.equal(torch.cat([p.detach().flatten() for p in reloaded.parameters()]), params(b))
    generator = plugins.generators.create("hf", model=str(tmp_path / "exported"), sampling=SamplingParams(max_tokens=4))
    assert generator.info()["model"] == str(tmp_path / "exported")


def scripted_reward(sample, limit: int) -> float:
    """The share of response tokens from the first half of the vocabulary (ids below
    ``limit``): about 0.5 for the random model, and something a policy can learn."""
    return sum(t < limit for t in sample.token_ids) / max(1, len(sample.token_ids))


def test_learning_check_raises_a_scripted_reward(plugins, tiny_model):
    """GRPO on a reward the model can learn: the mean reward of the last steps is well above
    the first steps', on a fixed seed (so the same curve every run)."""
    from codea1.trainers.method.rewards import group_advantages

    b = backend(plugins, tiny_model, lr=1e-2, kl_coef=0.0, micro_batch_size=8)
    target = len(b.tokenizer) // 2
    curve = []
    for step in range(12):
        rows = b.generate(PROMPTS, 8, SamplingParams(temperature=1.0, top_p=1.0, max_tokens=6), seed=100 + step)
        samples, advantages, rewards = [], [], []
        for row in rows:
            r = [scripted_reward(s, target) for s in row]
            advantages += group_advantages(r)[0]
            rewards += r
            samples += row
        curve.append(sum(rewards) / len(rewards))
        b.update(samples, rewards, advantages)
    print("scripted reward by step:", [round(x, 3) for x in curve])
    assert sum(curve[-3:]) / 3 > sum(curve[:3]) / 3 + 0.15, curve


def test_rollouts_ignore_the_checkpoints_own_sampling_defaults(plugins, tiny_model, tmp_path):
    """A checkpoint whose generation_config.json says top_k 1 (greedy) and a strong
    repetition penalty: the backend still samples softmax(logits / T), so two seeds give
    different rollouts, the same ones as from the plain checkpoint."""
    import json
    import shutil

    odd = tmp_path / "odd"
    shutil.copytree(tiny_model, odd)
    config = json.loads((odd / "generation_config.json").read_text())
    (odd / "generation_config.json").write_text(json.dumps({**config, "do_sample": True, "top_k": 1,
                                                            "repetition_penalty": 5.0}))
    plain, shaped = backend(plugins, tiny_model), backend(plugins, odd)
    a = shaped.generate(PROMPTS, 2, SAMPLING, seed=11)
    b = shaped.generate(PROMPTS, 2, SAMPLING, seed=12)
    assert [[s.token_ids for s in row] for row in a] != [[s.token_ids for s in row] for row in b]
    assert [[s.token_ids for s in row] for row in a] == \
        [[s.token_ids for s in row] for row in plain.generate(PROMPTS, 2, SAMPLING, seed=11)]
