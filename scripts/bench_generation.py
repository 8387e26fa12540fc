"""Rollouts of the torch policy backend alone, timed on CPU (or, --device cuda, a GPU): the
transformers generation path (`TorchBackend.generate`: chat prompts, batches of
`generation_batch` sequences, sampling, then the log-prob pass over the responses), measured
so that a change to it can be compared before and after on the same weights and prompts.

    python scripts/bench_generation.py [--shape small] [--prompts 16] [-n 4] [--max-tokens 128]
                                       [--max-prompt-tokens 512] [--eos-bias 4.5] [--repeat 2]
                                       [--generation-batch N ...] [--config KEY=VALUE,... ...]
                                       [--option KEY=VALUE ...] [--model-dir DIR] [--json]
                                       [--device cuda --dtype bfloat16] [--attention sdpa]

Before and after a change, on the same weights (the second from a cwd outside the checkout,
so that the venv's codea1 is the one imported):

    python scripts/bench_generation.py --model-dir /tmp/bench-gen-model
    cd /tmp && /work/venv-before/bin/python /work/main/scripts/bench_generation.py --model-dir /tmp/bench-gen-model

The model: a random-init Qwen2 of --shape (bench_gpu_step.py's shapes; default small: 4
layers x 256, 3.2M parameters) on the local tokenizer (harness.testing.tiny_model,
vocabulary 1024), --dtype (float32) on --device (cpu), built once under --model-dir (default:
a directory in the temp dir named by shape and bias) and reused by every later run. A random model almost never samples
end-of-sequence, so every response would run to max_tokens; --eos-bias b sets the EOS row of
lm_head (untied from the embeddings) to b * u / |u|^2, u the mean final hidden state over the
tokenizer's corpus: at that mean state EOS's logit is b while the other logits stay near 0,
so a token is EOS with probability about e^b / (e^b + 1023), varying with the state, and
responses stop at varying lengths (the default 4.5: a mean of about 60 tokens at max_tokens
128 on the small shape, one response in six running to the limit); --eos-bias none keeps the
random model (every response runs to max_tokens: bench_gpu_step.py's model, reused from its
--out directory's model-SHAPE).

--attention sdpa: every row decodes with transformers' own SDPA attention instead of the
engine's (the engine packs a grouped-query decode step; this measures what that saves).

The prompts: --prompts KodCode questions (../shared/data/kodcode or $CODEA1_SHARED_DATA; the
shipped demo problems where that is missing) whose chat prompt is at most --max-prompt-tokens
(long prompts dominate on a CPU), picked at evenly spaced quantiles of their length, as
code-policy chat messages (harness.prompts.question_messages "code"), each sampled n times:
temperature 1.0, top_p 1.0, seed 0. One warm-up call, then --repeat timed calls of
`backend.generate(prompts, n, SamplingParams(...), seed=0)` (the same tokens each time).

Rows: one per --generation-batch value, one per --config KEY=VALUE[,KEY=VALUE] (any of
TorchBackendOptions' fields, e.g. decode=eager,generation_batch=32), or, given neither, one
of the backend's defaults; --option KEY=VALUE goes to every row. A key the code under test
does not have is left out, and said, so one command runs before and after a change that adds
options. Printed per row: sequences, generated tokens (sum of len(token_ids)), mean response
length, responses ended by EOS ("stop") and by max_tokens ("length"), the mean seconds of a
timed call and tokens/s. --json: the same as JSON, with each call's seconds and what the
backend's info() says beyond the model (its engine, decode mode).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_gpu_step import KODCODE_FILE, SHAPES, SHARED_DATA, codea1_location, ensure_model  # noqa: E402


def pick_prompts(count: int, data: str | None, tokens) -> tuple[list, str]:
    """``count`` problems whose code prompt is at most as long as ``tokens`` says (a function
    of the chat messages: True to keep), at evenly spaced quantiles of their length."""
    from codea1.harness.plugin_manager import load_plugins
    from codea1.harness.prompts import question_messages

    plugins = load_plugins(autoload=False)
    path = Path(data) if data else SHARED_DATA / "kodcode" / KODCODE_FILE
    if data == "demo" or not path.exists():
        problems, source = plugins.benchmarks.create("demo", {}).load(), "demo"
    else:
        problems, source = plugins.benchmarks.create("kodcode", {"data": str(path)}).load(), str(path)
    sized = sorted((n, p.task_id, p) for p in problems if (n := tokens(question_messages("code", p))) is not None)
    if count >= len(sized):
        return [p for _, _, p in sized], source
    return [sized[round(i * (len(sized) - 1) / max(1, count - 1))][2] for i in range(count)], source


def synchronize(torch, device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def parse_value(text: str):
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shape", choices=list(SHAPES), default="small")
    parser.add_argument("--prompts", type=int, default=16, help="questions, of different lengths")
    parser.add_argument("-n", type=int, default=4, help="samples per prompt")
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--max-prompt-tokens", type=int, default=512,
                        help="questions whose prompt is longer are left out (long prompts dominate on CPU)")
    parser.add_argument("--generation-batch", type=int, nargs="*", default=[],
                        help="the backend's generation_batch, one row per value (default: the backend's default)")
    parser.add_argument("--config", action="append", default=[], metavar="KEY=VALUE[,KEY=VALUE]",
                        help="one more row with these TorchBackendOptions fields (decode=eager,generation_batch=32)")
    parser.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                        help="another TorchBackendOptions field for every row (JSON value or a string)")
    parser.add_argument("--eos-bias", type=lambda v: None if v == "none" else float(v), default=4.5,
                        help="EOS logit at the mean hidden state (see above), or 'none'")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dtype", default="float32", choices=["float32", "bfloat16", "float16"])
    parser.add_argument("--attention", default=None, help="the model's attention implementation for decoding "
                                                          "(default: the engine's choice)")
    parser.add_argument("--repeat", type=int, default=2, help="timed calls after the warm-up")
    parser.add_argument("--data", default=None, help=f"KodCode file or directory, or 'demo' (default: "
                                                     f"$CODEA1_SHARED_DATA/kodcode/{KODCODE_FILE})")
    parser.add_argument("--model-dir", default=None, help="where the weights are built, or reused from")
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    parser.add_argument("--json", action="store_true", help="the rows as JSON")
    args = parser.parse_args()
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")

    import torch
    from transformers import AutoTokenizer

    from codea1.harness.generation import SamplingParams
    from codea1.harness.prompts import chat_prompt, question_messages
    from codea1.trainers.backends.torch_backend import TorchBackend, TorchBackendOptions

    if args.threads:
        torch.set_num_threads(args.threads)
    default_dir = Path(tempfile.gettempdir()) / f"bench-generation-{args.shape}-eos{args.eos_bias}"
    model_dir = Path(args.model_dir or default_dir)
    t0 = time.perf_counter()
    info = ensure_model(model_dir, args.shape, args.device, args.dtype, args.eos_bias)
    built = time.perf_counter() - t0
    tok = AutoTokenizer.from_pretrained(model_dir)

    def prompt_tokens(messages) -> int | None:
        n = len(tok(chat_prompt(tok, messages), add_special_tokens=False)["input_ids"])
        return n if n <= args.max_prompt_tokens else None

    problems, source = pick_prompts(args.prompts, args.data, prompt_tokens)
    prompts = [question_messages("code", p) for p in problems]
    lengths = sorted(prompt_tokens(m) for m in prompts)

    fields = {f.name for f in dataclasses.fields(TorchBackendOptions)}
    left_out: list[str] = []

    def known(items) -> dict:
        out = {}
        for item in items:
            key, _, value = item.strip().partition("=")
            if key in fields:
                out[key] = parse_value(value)
            elif key not in left_out:
                left_out.append(key)
        return out

    extra = known(args.option)
    if "kl_coef" in fields:
        extra.setdefault("kl_coef", 0.0)  # no reference copy: generation only
    configs = [{"generation_batch": g} for g in args.generation_batch] + [known(c.split(",")) for c in args.config]
    configs = configs or [{}]
    sampling = SamplingParams(temperature=1.0, top_p=1.0, max_tokens=args.max_tokens, seed=0)
    rows = []
    for config in configs:
        label = ", ".join(f"{k}={v}" for k, v in config.items())
        try:
            options = TorchBackendOptions(model=str(model_dir), device=args.device, dtype=args.dtype,
                                          **{**extra, **config})
        except (TypeError, ValueError) as exc:  # a value this code refuses (generation_batch 0 before it meant auto)
            rows.append({"config": label, "error": str(exc)})
            continue
        if args.device.startswith("cuda"):
            torch.cuda.reset_peak_memory_stats()
        backend = TorchBackend(options, seed=0)
        if args.attention:
            backend.model.set_attn_implementation(args.attention)
        backend.generate(prompts, args.n, sampling, seed=0)  # warm-up
        seconds, samples = [], None
        for _ in range(args.repeat):
            synchronize(torch, args.device)
            t0 = time.perf_counter()
            samples = backend.generate(prompts, args.n, sampling, seed=0)
            synchronize(torch, args.device)
            seconds.append(time.perf_counter() - t0)
        flat = [s for group in samples for s in group]
        tokens = sum(len(s.token_ids) for s in flat)
        mean_s = statistics.mean(seconds)
        peak = torch.cuda.max_memory_allocated() / 2**30 if args.device.startswith("cuda") else None
        described = {k: v for k, v in backend.info().items()
                     if k not in ("backend", "model", "loaded_from", "device", "dtype", "parameters")}
        rows.append({"config": label or f"defaults (generation_batch={options.generation_batch})",
                     "backend_info": described,
                     "sequences": len(flat), "generated_tokens": tokens, "mean_length": round(tokens / len(flat), 1),
                     "stop": sum(s.finish_reason == "stop" for s in flat),
                     "length": sum(s.finish_reason == "length" for s in flat),
                     "seconds": round(mean_s, 3), "seconds_each": [round(s, 3) for s in seconds],
                     "tokens_per_s": round(tokens / mean_s, 1),
                     "peak_torch_gb": round(peak, 2) if peak is not None else None})
        backend.close()

    if args.json:
        print(json.dumps({"code": codea1_location(), "model": info, "model_dir": str(model_dir),
                          "prompts": [p.task_id for p in problems], "prompt_tokens": lengths, "data": source,
                          "max_tokens": args.max_tokens, "n": args.n, "options": extra, "left_out": left_out,
                          "rows": rows}, indent=1))
        return
    print(f"code: {codea1_location()}")
    print(f"model: {args.shape}, {info['parameters']:,} parameters, {args.dtype} on {args.device}, "
          f"eos bias {args.eos_bias} ({model_dir}"
          f"{f', built in {built:.0f} s' if built > 1 else ''}); {len(prompts)} prompts from {source} "
          f"({lengths[0]}-{lengths[-1]} tokens) x {args.n}, max_tokens {args.max_tokens}; "
          f"{args.repeat} timed calls after one warm-up; torch threads {torch.get_num_threads()}")
    if args.attention:
        print(f"attention for every row: {args.attention}")
    if extra:
        print("options for every row: " + ", ".join(f"{k}={v}" for k, v in extra.items()))
    if left_out:
        print("left out (not options of this code's TorchBackendOptions): " + ", ".join(left_out))
    header = ["configuration", "sequences", "gen tokens", "mean len", "stop", "length", "seconds", "tokens/s"]
    cells = [header] + [[r["config"], str(r["sequences"]), f"{r['generated_tokens']:,}", f"{r['mean_length']:.1f}",
                         str(r["stop"]), str(r["length"]), f"{r['seconds']:.2f}", f"{r['tokens_per_s']:,.0f}"]
                        if "error" not in r else [r["config"]] + ["-"] * (len(header) - 1) for r in rows]
    widths = [max(len(c[i]) for c in cells) for i in range(len(header))]
    for i, line in enumerate(cells):
        print("  ".join(c.ljust(w) if j == 0 else c.rjust(w) for j, (c, w) in enumerate(zip(line, widths))))
        if i == 0:
            print("  ".join("-" * w for w in widths))
    for r in rows:
        if "error" in r:
            print(f"{r['config']}: {r['error']}")


if __name__ == "__main__":
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    main()
