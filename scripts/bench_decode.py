"""The rollout engine's decoding alone, per decode path, against the memory-bandwidth bound:
the torch backend's transformers engine (``engine.generate``: prefill, decode; no log-prob
pass) on a random-init model of a Qwen2.5-Coder shape, every response running to
max_tokens (a random model almost never samples end-of-sequence).

    python scripts/bench_decode.py [--shape 1.5b] [--decode compiled graph ...] [--max-tokens 256 1024 4096]
                                   [--prompts 32] [-n 8] [--prompt-tokens 256 768] [--bandwidth 4.8]
                                   [--device cuda] [--out DIR] [--budget SECONDS]
    python scripts/bench_decode.py --shape tiny --device cpu --decode eager graph --max-tokens 64   # CPU (tests)

The setting is a Code-A1 step's tests generation: --prompts distinct prompts of random token
ids, their lengths evenly spread over --prompt-tokens, each sampled n times (256 sequences
by default), one batch of all of them (generation_batch = prompts x n), temperature 1.0,
top_p 1.0, seed 0. Per decode path (the backend's ``decode`` option) and max_tokens: one
warm-up call (compilation, graph capture), a timed call of max_tokens 1 (the prefill and
the first draw) and a timed call of max_tokens. Printed per row:

- step ms: (t(max_tokens) - t(1)) / (longest response - 1), the wall time of a decode step
  ("noise", and no x bound, where the difference is not positive: a tiny model on a busy CPU);
- bound ms: the bytes the responses generated must read, at --bandwidth TB/s (the H200's
  datasheet 4.8, an H100's 3.35), over the same steps: the weights once a step, and for each
  token after a response's first, that response's KV cache up to it (a response that ended
  costs nothing more, whatever a path does with its row); x bound: step ms / bound ms;
- tokens/s: generated tokens / t(max_tokens), the prefill included;
- GPU busy %: nvidia-smi's utilization.gpu every 0.5 s over the timed call (CUDA only);
- peak GB: torch's max_memory_allocated over the row (CUDA only).

A row that fails prints its error and the rows go on; --budget stops starting rows after that
many seconds (a device lent for minutes). DIR/decode.json holds the rows, written after each.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_gpu_step import SHAPES, GpuSampler, codea1_location, ensure_model, nvidia_gpu  # noqa: E402


def prompt_ids(count: int, low: int, high: int, vocab: int, special: set[int]) -> list[list[int]]:
    rng = random.Random(0)
    ordinary = [t for t in range(vocab) if t not in special]
    lengths = [round(low + (high - low) * i / max(1, count - 1)) for i in range(count)]
    return [[rng.choice(ordinary) for _ in range(n)] for n in lengths]


def kv_bytes_per_token(config, itemsize: int) -> int:
    heads = config.num_attention_heads
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // heads
    kv_heads = getattr(config, "num_key_value_heads", None) or heads
    return 2 * config.num_hidden_layers * kv_heads * head_dim * itemsize


def bound_ms(weights: int, per_token: int, prompts: list[list[int]], lengths: list[int], bandwidth: float) -> float:
    """The least time a decode step can take on average, for the responses of ``lengths``
    tokens: the steps read the weights once each (as many steps as the longest response has
    tokens after its first), and each response's later tokens read its KV cache up to
    themselves (prompt + tokens so far), all at ``bandwidth`` TB/s; divided by the steps."""
    steps = max(1, max(lengths) - 1)
    kv = sum((n - 1) * len(p) + n * (n - 1) // 2 for p, n in zip(prompts, lengths))
    return (steps * weights + kv * per_token) / (bandwidth * 1e12) * 1e3 / steps


def run_row(args, torch, model_dir: Path, decode: str, prompts: list[list[int]], sampler_gpu) -> list[dict]:
    from codea1.harness.generation import SamplingParams
    from codea1.trainers.backends.torch_backend import TorchBackend, TorchBackendOptions

    cuda = args.device.startswith("cuda")
    try:
        options = TorchBackendOptions(model=str(model_dir), device=args.device, dtype=args.dtype, decode=decode,
                                      generation_batch=len(prompts))
        backend = TorchBackend(options, seed=0)
    except Exception as exc:  # a decode path this code does not have: said, and the next one runs
        rows = [{"decode": decode, "max_tokens": n, "error": f"{type(exc).__name__}: {exc}"} for n in args.max_tokens]
        for row in rows:
            print(line(row), flush=True)
        return rows
    engine = backend.engine
    weights = sum(p.numel() * p.element_size() for p in backend.model.parameters())
    per_token = kv_bytes_per_token(backend.model.config, backend.model.dtype.itemsize)
    rows = []
    try:
        for max_tokens in args.max_tokens:
            if time.time() - args.started > args.budget:
                rows.append({"decode": decode, "max_tokens": max_tokens, "error": "skipped: out of --budget"})
                continue
            row = {"decode": decode, "max_tokens": max_tokens, "sequences": len(prompts)}
            try:
                sampling = SamplingParams(temperature=1.0, top_p=1.0, max_tokens=max_tokens)
                if cuda:
                    torch.cuda.reset_peak_memory_stats()
                t0 = time.time()
                engine.generate(prompts, sampling, seed=0)  # warm-up: compilation, capture
                row["warmup_s"] = round(time.time() - t0, 2)
                timed = {}
                for tokens in (1, max_tokens):
                    if cuda:
                        torch.cuda.synchronize()
                    gpu = GpuSampler(sampler_gpu) if tokens == max_tokens and sampler_gpu is not None else None
                    if gpu:
                        gpu.start()
                    t0 = time.time()
                    out = engine.generate(prompts, SamplingParams(temperature=1.0, top_p=1.0, max_tokens=tokens), seed=0)
                    if cuda:
                        torch.cuda.synchronize()
                    timed[tokens] = (t0, time.time(), out)
                    if gpu:
                        gpu.done.set()
                        gpu.join()
                        row["gpu_busy"] = gpu.mean_util([timed[tokens][:2]])
                t_one = timed[1][1] - timed[1][0]
                t_all = timed[max_tokens][1] - timed[max_tokens][0]
                generated = sum(len(r.token_ids) for r in timed[max_tokens][2])
                step = (t_all - t_one) / max(1, max(len(r.token_ids) for r in timed[max_tokens][2]) - 1) * 1e3
                lengths = [len(r.token_ids) for r in timed[max_tokens][2]]
                bound = bound_ms(weights, per_token, prompts, lengths, args.bandwidth)
                if step <= 0:  # the decode steps were lost in the two calls' noise (a busy CPU): no figure
                    row["note"] = "t(max_tokens) <= t(1): the decode steps took less than the timing's noise"
                row.update({"prefill_s": round(t_one, 3), "total_s": round(t_all, 3), "generated": generated,
                            "step_ms": round(step, 4) if step > 0 else None, "bound_ms": round(bound, 6),
                            "x_bound": round(step / bound, 2) if step > 0 else None,
                            "tokens_per_s": round(generated / t_all, 1),
                            "stopped": sum(r.finish == "stop" for r in timed[max_tokens][2]),
                            "info": {k: v for k, v in backend.info().items() if k in ("decode", "attention")}})
                if cuda:
                    row["peak_gb"] = round(torch.cuda.max_memory_allocated() / 2**30, 2)
            except Exception as exc:  # the next rows still run
                row["error"] = f"{type(exc).__name__}: {exc}"
                row["traceback"] = traceback.format_exc().splitlines()[-25:]
            rows.append(row)
            print(line(row), flush=True)
    finally:
        backend.close()
    return rows


def line(row: dict) -> str:
    head = f"{row['decode']:>15} {row['max_tokens']:>6}"
    if "error" in row:
        return f"{head}  error: {row['error']}" + "".join(f"\n      {t}" for t in row.get("traceback", [])[-8:])
    busy = f"{row['gpu_busy']:.0f}" if row.get("gpu_busy") is not None else "n/a"
    peak = f"{row['peak_gb']:.1f}" if row.get("peak_gb") is not None else "n/a"
    step = f"{row['step_ms']:>8.3f}" if row["step_ms"] is not None else f"{'noise':>8}"
    x_bound = f"{row['x_bound']:>7.2f}" if row["x_bound"] is not None else f"{'n/a':>7}"
    return (f"{head} {step} {row['bound_ms']:>8.3f} {x_bound} "
            f"{row['tokens_per_s']:>10,.0f} {row['prefill_s']:>9.2f} {row['warmup_s']:>8.1f} {busy:>6} {peak:>7}")


def main() -> None:
    import torch

    cuda = torch.cuda.is_available()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shape", choices=list(SHAPES), default="1.5b" if cuda else "tiny")
    parser.add_argument("--decode", nargs="+", default=["compiled", "graph"] if cuda else ["eager", "graph"])
    parser.add_argument("--max-tokens", type=int, nargs="+", default=[256, 1024, 4096] if cuda else [64])
    parser.add_argument("--prompts", type=int, default=32 if cuda else 4)
    parser.add_argument("-n", type=int, default=8 if cuda else 2, help="samples per prompt")
    parser.add_argument("--prompt-tokens", type=int, nargs=2, default=[256, 768] if cuda else [16, 48],
                        metavar=("LOW", "HIGH"))
    parser.add_argument("--bandwidth", type=float, default=4.8, help="TB/s for the bound (H200 4.8, H100 3.35)")
    parser.add_argument("--device", default="cuda" if cuda else "cpu")
    parser.add_argument("--out", default=None, help="keep the model and decode.json here")
    parser.add_argument("--budget", type=float, default=float("inf"), help="seconds after which no row starts")
    args = parser.parse_args()
    args.started = time.time()
    args.dtype = "bfloat16" if args.device.startswith("cuda") else "float32"
    out = Path(args.out or tempfile.mkdtemp(prefix="bench-decode-"))
    out.mkdir(parents=True, exist_ok=True)
    info = ensure_model(out / f"model-{args.shape}", args.shape, args.device, args.dtype)
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(out / f"model-{args.shape}")
    prompts = prompt_ids(args.prompts, *args.prompt_tokens, len(tok), set(tok.all_special_ids))
    prompts = [p for p in prompts for _ in range(args.n)]
    device = torch.cuda.get_device_name() if args.device.startswith("cuda") else "cpu"
    print(f"code: {codea1_location()}\nmodel: {args.shape}, {info['parameters']:,} parameters, {args.dtype}, "
          f"on {device}; torch {torch.__version__}; {len(prompts)} sequences ({args.prompts} prompts x {args.n}) "
          f"of {args.prompt_tokens[0]}-{args.prompt_tokens[1]} prompt tokens; bound at {args.bandwidth} TB/s")
    print(f"{'decode':>15} {'tokens':>6} {'step ms':>8} {'bound ms':>8} {'x bound':>7} {'tokens/s':>10} "
          f"{'prefill s':>9} {'warmup s':>8} {'busy %':>6} {'peak GB':>7}", flush=True)
    rows = []
    for decode in args.decode:
        rows += run_row(args, torch, out / f"model-{args.shape}", decode, prompts, nvidia_gpu(args.device))
        (out / "decode.json").write_text(json.dumps({"settings": {k: v for k, v in vars(args).items()},
                                                     "device": device, "torch": torch.__version__,
                                                     "model": info, "rows": rows}, indent=1))
    print(f"rows in {out / 'decode.json'}")


if __name__ == "__main__":
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    main()
