"""Peak memory of the torch backend's update with and without the full logits, on CPU.

    python scripts/bench_logprob_memory.py [--vocab 32768] [--responses 8] [--prompt 256]
                                           [--response 1024] [--dtype float32]

One update (forward and backward of the GRPO loss) on one micro-batch of ``--responses``
responses, each ``--prompt`` + ``--response`` tokens, by a random-init Qwen2 (2 layers x 128,
the local tokenizer, the output layer widened to ``--vocab`` rows: the vocabulary is what
the log-prob pass's memory grows with; Qwen2.5's is 151,936). Each way runs in a child
process of its own and reports its peak resident memory (ru_maxrss) and its seconds:

- chunked: the backend as it is (trainers/backends/token_logprobs.py: only the responses'
  positions scored, a chunk of tokens at a time);
- full logits: the same backend with ``plain_head`` off (every position's logits, float32,
  log-softmax per response), what it did before.

The resident memory of a child that only loads the model is printed too (the baseline).
Memory, not time, is the point: on a GPU the full logits of the paper's micro-batches
(8 x 5,600 tokens x 151,936 x 4 bytes, 27 GB a copy) do not fit beside two policies.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def child(spec: dict) -> None:
    import torch
    import transformers

    from codea1.harness.plugin_manager import load_plugins
    from codea1.harness.training import PolicySample
    from codea1.trainers.backends.policy_update import Rollout

    plugins = load_plugins(autoload=False)
    b = plugins.backends.create("torch", {"model": spec["model"], "device": "cpu", "dtype": spec["dtype"],
                                          "kl_coef": "0", "micro_batch_size": str(spec["responses"])}, seed=0)
    assert isinstance(b.model, transformers.PreTrainedModel)
    if spec["way"] == "full":
        b.plain_head = False
    gen = torch.Generator().manual_seed(0)
    samples = []
    for _ in range(spec["responses"]):
        prompt = torch.randint(5, 1000, (spec["prompt"],), generator=gen).tolist()
        response = torch.randint(5, 1000, (spec["response"],), generator=gen).tolist()
        samples.append(PolicySample("", response, [-7.0] * len(response), "length", Rollout(prompt, 1.0)))
    t0 = time.perf_counter()
    if spec["way"] != "load":
        b.update(samples, [0.0] * len(samples), [1.0 if i % 2 else -1.0 for i in range(len(samples))])
    seconds = time.perf_counter() - t0
    print(json.dumps({"way": spec["way"], "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                      "seconds": round(seconds, 2), "plain_head": b.plain_head}))


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--child":
        child(json.loads(sys.argv[2]))
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--vocab", type=int, default=32768)
    parser.add_argument("--responses", type=int, default=8)
    parser.add_argument("--prompt", type=int, default=256)
    parser.add_argument("--response", type=int, default=1024)
    parser.add_argument("--dtype", default="float32", choices=["float32", "bfloat16"])
    args = parser.parse_args()

    import torch
    import transformers

    from codea1.harness.testing.tiny_model import build_tiny_model

    with tempfile.TemporaryDirectory() as tmp:
        model = build_tiny_model(Path(tmp))
        config = transformers.AutoConfig.from_pretrained(model)
        config.vocab_size = args.vocab
        torch.manual_seed(0)
        transformers.Qwen2ForCausalLM(config).save_pretrained(model)
        rows = {}
        for way in ("load", "chunked", "full"):
            spec = {**vars(args), "way": way, "model": str(model)}
            run = subprocess.run([sys.executable, __file__, "--child", json.dumps(spec)], capture_output=True,
                                 text=True, check=True)
            rows[way] = json.loads(run.stdout.strip().splitlines()[-1])
    base = rows["load"]["peak_mb"]
    print(f"update of {args.responses} responses of {args.prompt} + {args.response} tokens, vocabulary "
          f"{args.vocab:,}, {args.dtype}, CPU; peak resident memory of the child (MB), and above the "
          f"loaded model's {base:,.0f} MB")
    for way in ("chunked", "full"):
        r = rows[way]
        print(f"  {way:8s} peak {r['peak_mb']:8,.0f} MB  (+{r['peak_mb'] - base:7,.0f})  {r['seconds']:6.2f} s")
    extra = {w: rows[w]["peak_mb"] - base for w in ("chunked", "full")}
    print(f"  the full logits' update needs {extra['full'] / max(extra['chunked'], 1):.1f}x the chunked one's "
          f"memory above the model")


if __name__ == "__main__":
    main()
