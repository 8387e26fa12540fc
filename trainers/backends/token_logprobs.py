"""Per-token log-probabilities from a causal LM's last hidden states and its output layer,
a chunk of tokens at a time, without the full logits.

The plain way (logits of every position, cast to float32, log-softmax) holds tokens x
vocabulary floats several times over: at the paper's setting (micro-batches of 8 responses
of up to 4,096 tokens after prompts of ~1,500, Qwen2.5's vocabulary of 151,936) that is
8 x 5,600 x 151,936 x 4 bytes = 27 GB per copy. Here only the response positions are
scored (a prompt's logits were never needed), a chunk of them at a time: logits of the
chunk in float32, their log-sum-exp kept (one float a token), the target's log-probability
taken; the backward pass computes each chunk's logits again (softmax - one-hot). The
extra memory is one chunk's logits, about 256 MB whatever the lengths.

torch is imported where it is used (``import codea1...`` stays light); the autograd
function is made once, on first use.
"""

from __future__ import annotations

import functools

CHUNK_BYTES = 2**28  # float32 logits of one chunk: about 256 MB


def chunk_tokens(vocab: int) -> int:
    return max(16, CHUNK_BYTES // (4 * vocab))


@functools.cache
def token_logprobs_function():
    """The autograd function (made once: it subclasses torch's)."""
    import torch

    class TokenLogprobs(torch.autograd.Function):
        """log softmax(linear(hidden, weight) / temperature)[target] per row of ``hidden``
        (tokens x hidden size), in float32; ``temperature`` per token. Gradients flow to
        ``hidden`` and ``weight``."""

        @staticmethod
        def forward(ctx, hidden, weight, targets, temperature, chunk: int):
            out = torch.empty(hidden.shape[0], dtype=torch.float32, device=hidden.device)
            lse = torch.empty_like(out)
            for start in range(0, hidden.shape[0], chunk):
                end = start + chunk
                logits = torch.nn.functional.linear(hidden[start:end], weight).float() / temperature[start:end, None]
                lse[start:end] = torch.logsumexp(logits, dim=-1)
                out[start:end] = logits.gather(-1, targets[start:end, None]).squeeze(-1) - lse[start:end]
            ctx.save_for_backward(hidden, weight, targets, temperature, lse)
            ctx.chunk = chunk
            return out

        @staticmethod
        def backward(ctx, grad):
            hidden, weight, targets, temperature, lse = ctx.saved_tensors
            grad_hidden = torch.empty_like(hidden) if ctx.needs_input_grad[0] else None
            grad_weight = torch.zeros(weight.shape, dtype=torch.float32, device=weight.device) \
                if ctx.needs_input_grad[1] else None
            for start in range(0, hidden.shape[0], ctx.chunk):
                end = start + ctx.chunk
                h, g, t = hidden[start:end], grad[start:end].float(), temperature[start:end, None]
                logits = torch.nn.functional.linear(h, weight).float() / t
                # d logp / d logits = one-hot(target) - softmax, divided by the temperature for the raw logits
                d = torch.exp(logits - lse[start:end, None]).mul_(-g[:, None])
                d.scatter_add_(-1, targets[start:end, None], g[:, None])
                d = (d / t).to(hidden.dtype)
                if grad_hidden is not None:
                    grad_hidden[start:end] = d @ weight
                if grad_weight is not None:
                    grad_weight += (d.t() @ h).float()
            return grad_hidden, None if grad_weight is None else grad_weight.to(weight.dtype), None, None, None

    return TokenLogprobs


def has_plain_head(model) -> bool:
    """Whether ``model``'s logits are exactly its output layer (a Linear without bias) applied
    to its decoder's last hidden states, as for Qwen2 and Llama (no logit scaling or
    soft-capping): checked on a short input, bit for bit."""
    import torch

    head = model.get_output_embeddings()
    if not isinstance(head, torch.nn.Linear) or head.bias is not None:
        return False
    was_training = model.training
    model.eval()
    try:
        ids = torch.arange(1, 9, device=head.weight.device)[None] % model.config.vocab_size
        with torch.no_grad():
            logits = model(input_ids=ids).logits
            hidden = model.get_decoder()(input_ids=ids).last_hidden_state
            return torch.equal(logits, head(hidden))
    except Exception:  # noqa: BLE001 - a model that cannot be taken apart keeps the plain path
        return False
    finally:
        model.train(was_training)


def response_logprobs(model, ids, mask, spans: list[tuple[int, int]], temperatures: list[float]) -> list:
    """Each row's response log-probabilities (float32): row i's tokens ids[i, start:end],
    each given the tokens before it, at that row's temperature. ``ids``/``mask``: right-padded."""
    import torch

    hidden = model.get_decoder()(input_ids=ids, attention_mask=mask, use_cache=False).last_hidden_state
    rows = [hidden[i, start - 1:end - 1] for i, (start, end) in enumerate(spans)]
    targets = torch.cat([ids[i, start:end] for i, (start, end) in enumerate(spans)])
    temperature = torch.cat([torch.full((end - start,), float(t), device=ids.device)
                             for (start, end), t in zip(spans, temperatures)])
    weight = model.get_output_embeddings().weight
    flat = token_logprobs_function().apply(torch.cat(rows), weight, targets, temperature, chunk_tokens(weight.shape[0]))
    return list(flat.split([end - start for start, end in spans]))


def prompt_shared_logprobs(model, prompts: list[list[int]], responses: list[list[int]], temperatures: list[float],
                           pad_id: int) -> list:
    """Each response's log-probabilities given its prompt (float32, no gradient), each distinct
    prompt read once: the distinct prompts, left-padded, go through the decoder into a KV
    cache, which is copied to every response of the prompt; then the responses, right-padded,
    are read on that cache. A rollout samples each prompt n times, and a prompt is usually
    longer than its response: scored whole, the prompt would be read n times (Code-A1's tests
    prompt, question and code, 8 times). The same positions and mask as a whole sequence's
    forward, so the same values up to float rounding."""
    import torch

    from codea1.trainers.backends.rollouts import cache_argument, padded, read_prompts

    decoder = model.get_decoder()
    device = model.get_output_embeddings().weight.device
    with torch.no_grad():
        read = read_prompts(torch, decoder, prompts, max(len(p) for p in prompts), pad_id, device)
        prompt_last = read.output.last_hidden_state[read.index, -1]  # predicts each response's first token
        longest = max(1, max(len(r) for r in responses))
        tokens, answer_mask = padded(torch, responses, longest, pad_id, device, left=False)
        hidden = decoder(input_ids=tokens, attention_mask=torch.cat([read.mask, answer_mask], dim=1),
                         position_ids=read.positions[:, -1:] + 1 + torch.arange(longest, device=device)[None],
                         use_cache=True, **{cache_argument(decoder): read.cache}).last_hidden_state
        rows = [torch.cat([prompt_last[i, None], hidden[i, :len(r) - 1]]) if r else hidden[i, :0]
                for i, r in enumerate(responses)]
        targets = torch.cat([tokens[i, :len(r)] for i, r in enumerate(responses)])
        temperature = torch.cat([torch.full((len(r),), float(t), device=device) for r, t in zip(responses, temperatures)])
        weight = model.get_output_embeddings().weight
        flat = token_logprobs_function().apply(torch.cat(rows), weight, targets, temperature,
                                               chunk_tokens(weight.shape[0]))
    return list(flat.split([len(r) for r in responses]))
