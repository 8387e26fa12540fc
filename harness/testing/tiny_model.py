"""A tiny Qwen2-style checkpoint built locally, for tests and dry runs; no download anywhere.

``build_tiny_model(directory)`` trains a byte-level BPE tokenizer on 32 KB of local text
(tiny_corpus.json: this project's demo problems, prompts and some of its sources, frozen),
gives it a ChatML chat template like
Qwen2.5's, builds a random-init ``Qwen2ForCausalLM`` with that vocabulary, and saves both
as a normal Hugging Face directory. Everything that loads a checkpoint (the hf and vllm
generators, the trainers) loads it through the same code path as a real one. The weights are
random: it writes noise, which is the point: the pipeline must work end to end on noise.

Also on the command line: ``codea1 dev tiny-model DIR``.
"""

from __future__ import annotations

import json
from pathlib import Path

SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
# The ChatML template Qwen2.5 ships, reduced to what plain chat needs.
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)


def corpus() -> list[str]:
    """The tokenizer's training text: 32 KB, frozen in tiny_corpus.json (the demo problems,
    the prompts and two of this package's modules as they were on 2026-11-23). It was read
    from those files, so editing judge.py changed the tokenizer and moved the learning
    curves that tests check; frozen, the tiny models stay the same whatever the code does."""
    return json.loads((Path(__file__).with_name("tiny_corpus.json")).read_text(encoding="utf-8"))


def build_tiny_model(directory: str | Path, *, vocab_size: int = 1024, hidden_size: int = 128, layers: int = 2,
                     heads: int = 2, kv_heads: int | None = None, seed: int = 0) -> Path:
    """Write a tokenizer and a random-init Qwen2 model to ``directory``; returns it.
    ``kv_heads`` below ``heads``: grouped-query attention, as Qwen2.5's (default: as many).

    head_dim = hidden_size / heads = 64 by default: a size every attention backend
    (including vLLM's CPU one) supports."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import (
        GenerationConfig,
        PreTrainedTokenizerFast,
        Qwen2Config,
        Qwen2ForCausalLM,
    )

    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=SPECIAL_TOKENS, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(corpus(), trainer=trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>",
                                   bos_token=None, unk_token=None, model_max_length=4096)
    fast.chat_template = CHAT_TEMPLATE
    fast.save_pretrained(out)

    config = Qwen2Config(vocab_size=len(fast), hidden_size=hidden_size, intermediate_size=2 * hidden_size,
                         num_hidden_layers=layers, num_attention_heads=heads, num_key_value_heads=kv_heads or heads,
                         max_position_embeddings=4096, tie_word_embeddings=True,
                         eos_token_id=fast.eos_token_id, pad_token_id=fast.pad_token_id, bos_token_id=None)
    torch.manual_seed(seed)
    model = Qwen2ForCausalLM(config)
    model.save_pretrained(out)
    GenerationConfig(eos_token_id=fast.eos_token_id, pad_token_id=fast.pad_token_id).save_pretrained(out)
    return out
