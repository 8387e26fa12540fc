"""Do verdicts move with the machine's load? The same HumanEval+ samples evaluated on a quiet
machine and beside busy processes, every verdict compared.

    python scripts/bench_load_verdicts.py --data ../shared/data/humanevalplus/HumanEvalPlus-v0.1.10.jsonl.gz

The samples are bench_evalplus' ``--preset`` files (default ``mutants``: per task the canonical
solution and up to --n - 1 distinct cosmic-ray mutants of it; ``canonical``: one a task). Each
run is ``codea1 evaluate``; with ``--reference each`` (the default) each measures the reference
outputs and times itself (``--no-reference-cache``: the limits, 4x the reference's time and at
least 1 s, are measured under the same load as the programs); with ``--reference quiet`` the
quiet run fills a fresh reference cache that the loaded run reads, as a user's cache filled on
a quiet machine is read on a busy one. The loaded run has --busy processes beside it (each a
Python loop in a session of its own, unpinned) on a machine of os.cpu_count() cores.

Printed: each run's time, its verdict counts and results.json's ``clock`` block (tests whose
limit passed on the wall clock while their process waited for a CPU, timeouts at the wall
cap), then the samples whose status or first failing test differ between the runs. Exit 1
when any differs. ``--codea1 PATH`` runs another checkout's ``codea1`` (a "before" tree).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_evalplus import ENV, ROOT, build_samples  # noqa: E402

BUSY = "while True:\n    pass\n"


def evaluate(codea1: list[str], data: Path, samples: Path, workers: int, out: Path, cache: Path | None
             ) -> tuple[float, dict, dict]:
    start = time.perf_counter()
    subprocess.run([*codea1, "evaluate", "--benchmark", "humaneval+", "--data", str(data), "--samples", str(samples),
                    "--workers", str(workers), "--out", str(out), "--overwrite", "--no-progress",
                    *(["--no-reference-cache"] if cache is None else [])], check=True, capture_output=True, text=True,
                   env={**ENV, **({"CODEA1_CACHE_DIR": str(cache)} if cache else {})})
    seconds = time.perf_counter() - start
    verdicts = {}
    for line in (out / "verdicts.jsonl").read_text().splitlines():
        v = json.loads(line)
        verdicts[(v["task_id"], v["sample_index"])] = (v["status"], (v.get("first_failure") or {}).get("test"))
    return seconds, verdicts, json.loads((out / "results.json").read_text())


def describe(name: str, seconds: float, results: dict) -> None:
    counts = {k: v for k, v in results["counts"].items() if v and k != "judged_in_process"}
    clock = {k: v for k, v in (results.get("clock") or {}).items() if k != "rule"}
    print(f"{name:<7} {seconds:7.1f} s  {counts}")
    print(f"{'':<7} clock: {clock or 'not recorded (a checkout before the own-time rule)'}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, type=Path)
    parser.add_argument("--preset", choices=("canonical", "mutants"), default="mutants")
    parser.add_argument("--n", type=int, default=10)
    parser.add_argument("--busy", type=int, default=4, help="busy processes beside the loaded run")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--codea1", default=None, help="the codea1 command to run (default: this checkout's)")
    parser.add_argument("--reference", choices=("each", "quiet"), default="each",
                        help="each: every run measures the reference's times itself; quiet: the quiet run "
                             "fills a fresh reference cache and the loaded run reads it (limits made quiet)")
    args = parser.parse_args()
    codea1 = [args.codea1] if args.codea1 else [sys.executable, "-m", "codea1"]
    if not args.codea1:
        ENV["PYTHONPATH"] = str(ROOT)
    with tempfile.TemporaryDirectory(prefix="codea1-load-") as tmp:
        samples = Path(tmp) / "samples.jsonl"
        count = build_samples(args.data, args.preset, args.n, samples)
        cache = Path(tmp) / "cache" if args.reference == "quiet" else None
        print(f"{count} samples ({args.preset}), {args.workers} workers, {os.cpu_count()} cores; "
              f"loaded: {args.busy} busy processes beside the run; reference times: "
              + ("each run's own" if cache is None else "the quiet run's, cached"))
        quiet_s, quiet, quiet_results = evaluate(codea1, args.data, samples, args.workers, Path(tmp) / "quiet", cache)
        busy = [subprocess.Popen([sys.executable, "-c", BUSY], start_new_session=True) for _ in range(args.busy)]
        try:
            loaded_s, loaded, loaded_results = evaluate(codea1, args.data, samples, args.workers, Path(tmp) / "loaded",
                                                        cache)
        finally:
            for process in busy:
                process.kill()
                process.wait()
    describe("quiet", quiet_s, quiet_results)
    describe("loaded", loaded_s, loaded_results)
    differ = sorted(key for key in quiet.keys() | loaded.keys() if quiet.get(key) != loaded.get(key))
    print(f"verdicts compared: {len(quiet)} quiet, {len(loaded)} loaded; differing: {len(differ)}")
    for key in differ[:20]:
        print(f"  {key[0]} #{key[1]}: quiet {quiet.get(key)}, loaded {loaded.get(key)}")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
