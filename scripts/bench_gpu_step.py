"""One Code-A1 step on one GPU, timed: a random-init model of a named
Qwen2.5-Coder shape on this project's local tokenizer, one warm-up step and one timed step
of the real `codea1 train` (trainer code-a1, torch backend for both policies), for each
rollout engine present. Needs only torch, transformers and this project (vLLM when
installed); nothing is downloaded.

    python scripts/bench_gpu_step.py [--shape 1.5b] [--engines transformers,vllm] [--max-tokens 512]
                                     [--batch-size 4] [--generation-batch N] [--device cuda:0]
                                     [--workers 16] [--data FILE|demo] [--eos-bias B] [--out DIR]
                                     [--timeout 900] [--option KEY=VALUE ...] [--executor-option KEY=VALUE ...]
    python scripts/bench_gpu_step.py --shape tiny        # CPU (CI): about a minute on 2 cores

Before and after a change: the same command from each checkout's venv (the runs import the
codea1 of the interpreter that runs this script; the first line printed says which).

The setting is the paper's step at a small batch: 4 questions, M = N = K = 8, TopVar 1, max_tokens 512 for
both roles, bf16 and gradient checkpointing on CUDA (float32 without on CPU), micro-batch 8,
the subprocess executor with min(16, CPUs) workers, KodCode questions (the CPU demo's eight,
from ../shared/data/kodcode or $CODEA1_SHARED_DATA/kodcode; the shipped demo benchmark where
that data is missing), steps = 2: step 1 warms up, step 2 is measured. On CPU the defaults are
the tiny shape and max_tokens 64. A random model rarely samples end-of-sequence, so nearly
every response runs to max_tokens (the worst case for generation); --eos-bias makes it stop
at varying lengths (see bench_generation.py).

Shapes (random weights, vocabulary 1024 from harness.testing.tiny_model's tokenizer):
tiny 2 layers x 128 (build_tiny_model's), 0.5b 24 x 896 (14 heads, 2 KV), 1.5b 28 x 1536
(12 heads, 2 KV), 7b 28 x 3584 (28 heads, 4 KV). The weights are built in the target dtype
on the target device, in a child process, and saved as safetensors under DIR/model-SHAPE
(kept and reused with --out).

Each engine's run is `codea1 train --config DIR/ENGINE/config.toml --out DIR/ENGINE/run`
(harness.cli.main, as `python -m codea1` runs it) in a child process, with two wrappers
installed in that process first (nothing in the project changes):
AdversarialTrainer.generate records each call's time window, sequences, generated tokens
and finish reasons, and TrainContext.update its window; both record torch's peak CUDA memory
of the training process. The run is stopped (SIGINT) once step 2's row is in steps.jsonl:
its final checkpoint and export are not part of the measurement. `rollout_engine` is set in
[policies.*] only where the torch backend's options have it (older code: transformers only),
`generation_batch` only when --generation-batch is given; --option KEY=VALUE sets another
field of the torch backend's options in both policies (decode=compiled), left out (and said)
where the code under measurement has no such field; --executor-option KEY=VALUE another field
of the subprocess executor's.

Printed: one row per engine: the phases of step 2 from its steps.jsonl "timing"
(generate_code_s, generate_tests_s, validate_s + execute_s, update_s), the step's wall time
(from the start of its code generation to its row in steps.jsonl), generated tokens of both
roles, tokens/s = generated tokens / (generate_code_s + generate_tests_s) (the torch
backend's generate includes the log-prob pass over the responses), the mean GPU utilisation
(nvidia-smi every 0.5 s) over step 2's two generation phases and over the whole step, and
peak memory: nvidia-smi's memory.used over the run (the whole device) and torch's
max_memory_allocated in the training process. DIR/bench.json holds the table and more.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("CODEA1_SHARED_DATA", ROOT.parent / "shared" / "data"))
KODCODE_FILE = "KodCode_prefill_200_1741214325.json"
# The CPU demo's eight questions (trainers/configs/demo-code-a1.toml): two steps of four.
DEMO_TASKS = ["Prefill_00000020_I", "Prefill_00000021_I", "Prefill_00000049_I", "Prefill_00000057_I",
              "Prefill_00000058_I", "Prefill_00000084_I", "Prefill_00000086_I", "Prefill_00000092_I"]

# layers, hidden, attention heads, KV heads, intermediate, tied embeddings, max positions
SHAPES = {
    "tiny": (2, 128, 2, 2, 256, True, 4096),  # harness.testing.tiny_model.build_tiny_model's
    "small": (4, 256, 4, 4, 512, True, 4096),  # a CPU shape a little heavier (bench_generation)
    "0.5b": (24, 896, 14, 2, 4864, True, 32768),  # Qwen2.5-Coder-0.5B
    "1.5b": (28, 1536, 12, 2, 8960, True, 32768),  # Qwen2.5-Coder-1.5B
    "7b": (28, 3584, 28, 4, 18944, False, 32768),  # Qwen2.5-Coder-7B
}
PHASES = ("generate_code_s", "generate_tests_s", "validate_s", "execute_s", "update_s")

# Runs `codea1 train` (argv after the log path) with the generate and update calls recorded.
SHIM = r'''
import json, sys, time
log = open(sys.argv[1], "a")

def record(**row):
    log.write(json.dumps(row) + "\n")
    log.flush()

def peak():
    torch = sys.modules.get("torch")
    try:
        if torch is not None and torch.cuda.is_initialized():
            return round(torch.cuda.max_memory_allocated() / 2**30, 3)
    except Exception:
        pass
    return None

try:
    from codea1.harness.training import TrainContext
    from codea1.trainers.method.adversarial import AdversarialTrainer

    generate, update = AdversarialTrainer.generate, TrainContext.update

    def timed_generate(self, role, prompts, n, step, what):
        t0 = time.time()
        out = generate(self, role, prompts, n, step, what)
        flat = [s for samples in out for s in samples]
        record(kind="generate", role=role, step=step, t0=t0, t1=time.time(), prompts=len(prompts),
               sequences=len(flat), tokens=sum(len(s.token_ids) for s in flat),
               stop=sum(s.finish_reason == "stop" for s in flat), peak_gb=peak())
        return out

    def timed_update(self, batches):
        t0 = time.time()
        out = update(self, batches)
        record(kind="update", t0=t0, t1=time.time(), peak_gb=peak())
        return out

    AdversarialTrainer.generate, TrainContext.update = timed_generate, timed_update
except Exception as exc:  # an older or newer layout: the run goes on, unrecorded
    record(kind="shim-error", error=repr(exc))
sys.argv = ["codea1", *sys.argv[2:]]
from codea1.harness.cli import main
sys.exit(main())
'''


# -- the model ---------------------------------------------------------------------------------

def build_model(directory: Path, shape: str, device: str, dtype: str, eos_bias: float | None = None,
                seed: int = 0) -> dict:
    """A random-init Qwen2 model of ``shape`` with the local tokenizer, saved (safetensors) to
    ``directory``; built in ``dtype`` on ``device``. With ``eos_bias`` b, the end-of-sequence
    row of lm_head (untied from the embeddings first) becomes b * u / |u|^2, u the mean
    final hidden state over the tokenizer's corpus: at that mean state the EOS logit is b,
    the other logits staying near 0 (random rows, std 0.02), so EOS is sampled with
    probability about e^b / (e^b + vocab) a token and responses stop at varying lengths.
    Returns what bench.json records of the model."""
    import torch
    from transformers import AutoTokenizer, GenerationConfig, Qwen2Config, Qwen2ForCausalLM
    from transformers.utils import logging

    from codea1.harness.testing.tiny_model import build_tiny_model, corpus

    logging.disable_progress_bar()
    directory = Path(directory)
    with tempfile.TemporaryDirectory() as tmp:
        build_tiny_model(tmp)  # the tokenizer, trained here on the frozen corpus
        tok = AutoTokenizer.from_pretrained(tmp)
    directory.mkdir(parents=True, exist_ok=True)
    tok.save_pretrained(directory)
    layers, hidden, heads, kv_heads, intermediate, tied, positions = SHAPES[shape]
    config = Qwen2Config(vocab_size=len(tok), hidden_size=hidden, intermediate_size=intermediate,
                         num_hidden_layers=layers, num_attention_heads=heads, num_key_value_heads=kv_heads,
                         max_position_embeddings=positions, tie_word_embeddings=tied and eos_bias is None,
                         eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id, bos_token_id=None)
    if positions > 4096:
        config.rope_theta = 1000000.0  # Qwen2.5's
        if isinstance(getattr(config, "rope_parameters", None), dict):
            config.rope_parameters["rope_theta"] = 1000000.0
    torch_dtype = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[dtype]
    torch.manual_seed(seed)
    default = torch.get_default_dtype()
    torch.set_default_dtype(torch_dtype)
    try:
        with torch.device(device):
            model = Qwen2ForCausalLM(config)
    finally:
        torch.set_default_dtype(default)
    model.eval()
    if eos_bias is not None:
        with torch.no_grad():
            ids = [tok(text, add_special_tokens=False)["input_ids"][:512] for text in corpus()[:16]]
            states = torch.cat([model.model(input_ids=torch.tensor([i], device=device)).last_hidden_state[0]
                                for i in ids if i]).float()
            u = states.mean(0)
            model.lm_head.weight[tok.eos_token_id] = (eos_bias * u / u.dot(u)).to(torch_dtype)
    model.config.dtype = dtype
    model.save_pretrained(directory)
    GenerationConfig(eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id).save_pretrained(directory)
    info = {"shape": shape, "parameters": sum(p.numel() for p in model.parameters()), "dtype": dtype,
            "eos_bias": eos_bias, "layers": layers, "hidden": hidden, "heads": heads, "kv_heads": kv_heads,
            "intermediate": intermediate, "tied": config.tie_word_embeddings, "vocab": len(tok)}
    (directory / "bench_model.json").write_text(json.dumps(info))
    return info


def ensure_model(directory: Path, shape: str, device: str, dtype: str, eos_bias: float | None = None) -> dict:
    """The model in ``directory``: reused when it is this shape, dtype and bias, otherwise
    built in a child process (the weights' CUDA memory and context are gone when it exits,
    so nvidia-smi later sees only the training run)."""
    marker = directory / "bench_model.json"
    if marker.is_file():
        info = json.loads(marker.read_text())
        if (info.get("shape"), info.get("dtype"), info.get("eos_bias")) == (shape, dtype, eos_bias):
            return info
    shutil.rmtree(directory, ignore_errors=True)
    spec = json.dumps({"directory": str(directory), "shape": shape, "device": device, "dtype": dtype,
                       "eos_bias": eos_bias})
    subprocess.run([sys.executable, str(Path(__file__).resolve()), "--build-model", spec], check=True)
    return json.loads(marker.read_text())


# -- the run -----------------------------------------------------------------------------------

def torch_options():
    """The torch backend's option names (the code under measurement may predate some)."""
    from codea1.trainers.backends.torch_backend import TorchBackendOptions

    return {f.name for f in dataclasses.fields(TorchBackendOptions)}


def config_text(args, model: Path, engine: str, options: set[str]) -> str:
    cuda = args.device.startswith("cuda")
    if args.data == "demo":
        benchmark = {"name": "demo"}
    else:
        data = Path(args.data)
        benchmark = {"name": "kodcode", "data": str(data.resolve())}
        if data.name == KODCODE_FILE and 2 * args.batch_size <= len(DEMO_TASKS):
            benchmark["tasks"] = DEMO_TASKS
    policy = {"model": str(model), "temperature": 1.0, "top_p": 1.0, "max_tokens": args.max_tokens,
              "device": args.device, "dtype": "bfloat16" if cuda else "float32", "gradient_checkpointing": cuda,
              "lr": 1e-6, "weight_decay": 0.1, "kl_coef": 0.001, "micro_batch_size": 8}
    if "rollout_engine" in options:
        policy["rollout_engine"] = engine
    if args.generation_batch is not None:
        policy["generation_batch"] = args.generation_batch
    for item in args.option:
        key, _, value = item.partition("=")
        if key in options:
            policy[key] = json_or_text(value)
    from codea1.harness.flows.train import toml_text

    return toml_text({"train": {"trainer": "code-a1", "steps": 2, "batch_size": args.batch_size, "seed": 0,
                                "checkpoint_every": 1000},
                      "benchmark": benchmark,
                      "executor": {"name": "subprocess", "workers": args.workers,
                                   **{k: json_or_text(v) for k, _, v in (o.partition("=") for o in args.executor_option)}},
                      "trainer": {"m": 8, "n": 8, "k": 8, "topvar": 1, "alpha": 0.5, "reward_variant": "authors"},
                      "policies": {"code": policy, "tests": dict(policy)}})


def json_or_text(text: str):
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


class GpuSampler(threading.Thread):
    """nvidia-smi's utilization.gpu and memory.used every 0.5 s: (time, percent, MiB)."""

    def __init__(self, gpu: str | None):
        super().__init__(daemon=True)
        self.gpu, self.samples, self.done = gpu, [], threading.Event()

    def run(self) -> None:
        command = ["nvidia-smi", "--query-gpu=utilization.gpu,memory.used", "--format=csv,noheader,nounits"]
        if self.gpu is not None:
            command += ["-i", self.gpu]
        while not self.done.is_set():
            t = time.time()
            try:
                line = subprocess.run(command, capture_output=True, text=True, timeout=5).stdout.splitlines()[0]
                util, mem = (float(x) for x in line.split(","))
                self.samples.append((t, util, mem))
            except (OSError, subprocess.SubprocessError, IndexError, ValueError):
                pass
            self.done.wait(max(0.0, 0.5 - (time.time() - t)))

    def mean_util(self, windows) -> float | None:
        values = [u for t, u, _ in self.samples if any(a <= t <= b for a, b in windows)]
        return round(sum(values) / len(values), 1) if values else None


def nvidia_gpu(device: str) -> str | None:
    """The nvidia-smi id of ``device`` (cuda:N, through CUDA_VISIBLE_DEVICES), None on CPU."""
    if not device.startswith("cuda") or shutil.which("nvidia-smi") is None:
        return None
    index = int(device.split(":")[1]) if ":" in device else 0
    visible = [v.strip() for v in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if v.strip()]
    return visible[index] if index < len(visible) else str(index)


def read_rows(path: Path) -> list[dict]:
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return []
    rows = []
    for line in lines:
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            break  # a row being written
    return rows


def stop(proc: subprocess.Popen) -> None:
    """SIGINT (the run closes its executor and policies), then SIGKILL after 60 s."""
    if proc.poll() is not None:
        return
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def run_engine(args, engine: str, model: Path, model_info: dict, options: set[str]) -> dict:
    where = Path(args.out) / engine
    shutil.rmtree(where, ignore_errors=True)
    where.mkdir(parents=True)
    row = {"engine": engine, "shape": args.shape, "params": model_info["parameters"]}
    if engine != "transformers" and "rollout_engine" not in options:
        return {**row, "error": "the torch backend here has no option 'rollout_engine'"}
    (where / "config.toml").write_text(config_text(args, model, engine, options))
    steps_file, calls = where / "run" / "steps.jsonl", where / "calls.jsonl"
    sampler = GpuSampler(nvidia_gpu(args.device))
    sampler.start()
    t_start = time.time()
    with open(where / "stdout.txt", "w") as out, open(where / "stderr.txt", "w") as err:
        command = [sys.executable, "-c", SHIM, str(calls), "train", "--config", str(where / "config.toml"),
                   "--out", str(where / "run"), "--no-progress"]
        proc = subprocess.Popen(command, stdout=out, stderr=err, cwd=where)
        timed_out = False
        try:
            while proc.poll() is None and time.time() - t_start < args.timeout:
                if len(read_rows(steps_file)) >= 2:
                    break
                time.sleep(0.2)
            else:
                timed_out = proc.poll() is None
        finally:
            stop(proc)
            sampler.done.set()
            sampler.join()
    rows = read_rows(steps_file)
    try:  # what the backend says of itself (engine, decode, batch) where it says it
        row["policies"] = json.loads((where / "run" / "environment.json").read_text()).get("policies")
    except (OSError, ValueError, AttributeError):
        pass
    if len(rows) < 2:
        tail = (where / "stderr.txt").read_text(errors="replace").strip().splitlines()[-12:]
        why = f"timed out after {args.timeout:.0f} s" if timed_out else f"exit {proc.returncode}"
        if rows:
            why += f" in step 2; step 1 (warm-up) timing: {rows[0].get('timing')}"
        return {**row, "error": why, "stderr_tail": tail, "seconds": round(time.time() - t_start, 1)}
    step_end = steps_file.stat().st_mtime  # step 2's row, the last the file gets (steps = 2)
    timing = rows[1].get("timing", {})
    recorded = read_rows(calls)
    generated = [c for c in recorded if c["kind"] == "generate" and c["step"] == 1]
    if len(generated) == 2:
        tokens = sum(c["tokens"] for c in generated)
        sequences = sum(c["sequences"] for c in generated)
        stopped = sum(c["stop"] for c in generated)
        windows = [(c["t0"], c["t1"]) for c in generated]
        step_start = min(c["t0"] for c in generated)
        tokens_from = "recorded"
    else:  # no wrapper: the update's tokens (every program; the tests policy's kept suites only)
        tokens = int(rows[1].get("code_tokens", 0) + rows[1].get("tests_tokens", 0))
        sequences = stopped = None
        step_start = step_end - sum(timing.values())
        windows = [(step_start, step_start + timing.get("generate_code_s", 0) + timing.get("generate_tests_s", 0))]
        tokens_from = "update stats (tests: kept suites only)"
    generate_s = timing.get("generate_code_s", 0.0) + timing.get("generate_tests_s", 0.0)
    peaks = [c["peak_gb"] for c in recorded if c.get("peak_gb") is not None]
    gpu_mem = [m for _, _, m in sampler.samples]
    return {**row, "generate_code_s": timing.get("generate_code_s"), "generate_tests_s": timing.get("generate_tests_s"),
            "validate_execute_s": round(timing.get("validate_s", 0.0) + timing.get("execute_s", 0.0), 3),
            "update_s": timing.get("update_s"), "step_s": round(step_end - step_start, 3),
            "generated_tokens": tokens, "tokens_per_s": round(tokens / generate_s, 1) if generate_s else None,
            "gpu_util_generate": sampler.mean_util(windows),
            "gpu_util_step": sampler.mean_util([(step_start, step_end)]),
            "peak_gpu_gb": round(max(gpu_mem) / 1024, 2) if gpu_mem else None,
            "peak_torch_gb": max(peaks) if peaks else None,
            "sequences": sequences, "stopped": stopped, "tokens_from": tokens_from, "timing": timing,
            "generate_calls": generated, "warmup_timing": rows[0].get("timing", {}),
            "seconds": round(time.time() - t_start, 1)}


COLUMNS = [("engine", "engine", "{}"), ("shape", "shape", "{}"), ("params", "params", "{:,}"),
           ("gen code s", "generate_code_s", "{:.1f}"), ("gen tests s", "generate_tests_s", "{:.1f}"),
           ("valid+exec s", "validate_execute_s", "{:.1f}"), ("update s", "update_s", "{:.1f}"),
           ("step s", "step_s", "{:.1f}"), ("gen tokens", "generated_tokens", "{:,}"),
           ("tokens/s", "tokens_per_s", "{:,.0f}"), ("util gen %", "gpu_util_generate", "{:.0f}"),
           ("util step %", "gpu_util_step", "{:.0f}"), ("peak GB", "peak_gpu_gb", "{:.1f}"),
           ("torch peak GB", "peak_torch_gb", "{:.1f}")]


def table(rows: list[dict]) -> str:
    cells = [[title for title, _, _ in COLUMNS]]
    for r in rows:
        cells.append([fmt.format(r[key]) if r.get(key) is not None else ("-" if "error" in r else "n/a")
                      for _, key, fmt in COLUMNS])
    widths = [max(len(c[i]) for c in cells) for i in range(len(COLUMNS))]
    lines = ["  ".join(c.rjust(w) if i > 1 else c.ljust(w) for i, (c, w) in enumerate(zip(line, widths)))
             for line in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    for r in rows:
        if "error" in r:
            lines.append(f"{r['engine']}: {r['error']}" + "".join(f"\n    {t}" for t in r.get("stderr_tail", [])))
    return "\n".join(lines)


def codea1_location() -> str:
    """Where the codea1 under measurement is (the runs import the same one: cwd is no checkout)."""
    import codea1.trainers

    return str(Path(codea1.trainers.__file__).resolve().parent.parent)


def engines_present() -> list[str]:
    try:
        vllm = subprocess.run([sys.executable, "-c", "import vllm"], capture_output=True, timeout=300).returncode == 0
    except subprocess.TimeoutExpired:
        vllm = False
    return ["transformers"] + (["vllm"] if vllm else [])


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--build-model":  # the child ensure_model starts
        spec = json.loads(sys.argv[2])
        build_model(Path(spec.pop("directory")), **spec)
        return
    import torch

    cuda = torch.cuda.is_available()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shape", choices=list(SHAPES), default="1.5b" if cuda else "tiny")
    parser.add_argument("--engines", default="", help="comma-separated (default: every one present: transformers, "
                                                      "vllm where `import vllm` works)")
    parser.add_argument("--device", default="cuda" if cuda else "cpu")
    parser.add_argument("--max-tokens", type=int, default=None, help="both roles (default 512 on CUDA, 64 on CPU)")
    parser.add_argument("--batch-size", type=int, default=4, help="questions a step")
    parser.add_argument("--generation-batch", type=int, default=None,
                        help="the policies' generation_batch (default: unset, the backend's default)")
    parser.add_argument("--workers", type=int, default=min(16, os.cpu_count() or 1), help="executor workers")
    parser.add_argument("--data", default=None, help="KodCode file or directory, or 'demo' (default: "
                                                     f"$CODEA1_SHARED_DATA/kodcode/{KODCODE_FILE})")
    parser.add_argument("--eos-bias", type=float, default=None, help="make responses stop (bench_generation.py)")
    parser.add_argument("--out", default=None, help="keep the model and the runs here (default: a temporary directory)")
    parser.add_argument("--timeout", type=float, default=900, help="seconds per engine's run before it is stopped")
    parser.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                        help="another torch backend option for both policies (JSON value or a string)")
    parser.add_argument("--executor-option", action="append", default=[], metavar="KEY=VALUE",
                        help="another option of the subprocess executor (JSON value or a string)")
    args = parser.parse_args()
    cuda_run = args.device.startswith("cuda")
    if args.max_tokens is None:
        args.max_tokens = 512 if cuda_run else 64
    if args.data is None:
        default = SHARED_DATA / "kodcode" / KODCODE_FILE
        args.data = str(default) if default.is_file() else "demo"
    engines = [e.strip() for e in args.engines.split(",") if e.strip()] or engines_present()
    keep = args.out is not None
    args.out = args.out or tempfile.mkdtemp(prefix="bench-gpu-step-")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    try:
        t0 = time.time()
        dtype = "bfloat16" if cuda_run else "float32"
        model_dir = out / f"model-{args.shape}"
        model_info = ensure_model(model_dir, args.shape, args.device, dtype, args.eos_bias)
        options = torch_options()
        print(f"code: {codea1_location()}")
        unknown = [o.partition("=")[0] for o in args.option if o.partition("=")[0] not in options]
        if unknown:
            print("left out (not options of this code's torch backend): " + ", ".join(unknown))
        print(f"model: {args.shape}, {model_info['parameters']:,} parameters, {dtype} ({time.time() - t0:.0f} s); "
              f"data: {args.data}; engines: {', '.join(engines)}; batch {args.batch_size}, M = N = K = 8, "
              f"max_tokens {args.max_tokens}, generation_batch "
              f"{args.generation_batch if args.generation_batch is not None else 'default'}, "
              f"{args.workers} workers; step 2 of 2 timed", flush=True)
        rows, settings = [], dict(vars(args))
        for engine in engines:
            rows.append(run_engine(args, engine, model_dir, model_info, options))
            print(f"{engine}: done in {rows[-1].get('seconds', 0):.0f} s", flush=True)
            (out / "bench.json").write_text(json.dumps({"settings": settings, "code": codea1_location(),
                                                        "model": model_info, "rows": rows}, indent=1))
        print(table(rows))
        if not cuda_run:
            print("GPU utilisation and memory: n/a on CPU")
        else:
            print("util gen %: mean nvidia-smi utilization.gpu over step 2's two generation phases; util step %: "
                  "over the whole step; peak GB: nvidia-smi memory.used (whole device); torch peak GB: "
                  "max_memory_allocated of the training process")
        if keep:
            print(f"runs and table (bench.json) in {out}")
    finally:
        if not keep:
            shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    main()
