"""Compare and time: `codea1 evaluate-tests` against cosmic-ray's own CLI flow on ULT_Lite.

For the first --tasks ULT_Lite tasks whose first golden test is valid on the reference:

1. `codea1 evaluate-tests --benchmark ult --tests FILE --k 1,2,5 --no-coverage` on those
   tasks (the golden tests, timed, whole command);
2. per task, cosmic-ray's reference flow, as the UnLeakedTestBench evaluation drives it
   (timed, whole): a module with the reference function, a pytest file with the same leading
   valid tests codea1 ran the mutants against, `cosmic-ray init`, `cosmic-ray baseline`,
   `cosmic-ray exec` (local distributor, 10 s timeout), `cosmic-ray dump`;
3. the comparison: the set of mutations (operator, occurrence) must be equal, and every
   cosmic-ray verdict (killed / survived) must equal codea1's verdict for the mutant with the
   same source (codea1 runs identical mutants once).

    python scripts/bench_cosmic_ray.py --data ../shared/data/unleakedtestbench/ULT_Lite.json --tasks 12

Prints per-task counts and disagreements, both wall times and the ratio; exits 1 on any
disagreement.
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

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from codea1.benchmarks.ult import IMPORT_HEADER  # noqa: E402


def all_positions(source: str) -> dict[str, str]:
    """operator#occurrence -> mutated source, for every position (no dedupe)."""
    from cosmic_ray.ast import ast_nodes, get_ast
    from cosmic_ray.mutating import mutate_code

    from codea1.harness.mutation import _operators

    nodes = list(ast_nodes(get_ast(source)))
    out = {}
    for name, operator in _operators():
        count = sum(1 for node in nodes for _ in operator.mutation_positions(node))
        for occurrence in range(count):
            code = mutate_code(source, operator, occurrence)
            if code is not None:
                out[f"{name}#{occurrence}"] = code
    return out


def cosmic_ray_flow(workdir: Path, reference: str, tests: list[str], timeout: float) -> dict[str, str]:
    """Run init / baseline / exec / dump; returns operator#occurrence -> killed|survived|..."""
    workdir.mkdir(parents=True)
    (workdir / "mod.py").write_text(reference)
    # every name of the module, private ones too (`from mod import *` skips _names)
    body = IMPORT_HEADER + "import mod\nglobals().update({k: v for k, v in vars(mod).items() if not k.startswith('__')})\n\n" + "".join(
        f"def test_{i}():\n    {t}\n\n" for i, t in enumerate(tests))
    (workdir / "test_mod.py").write_text(body)
    (workdir / "config.toml").write_text(
        "[cosmic-ray]\nmodule-path = \"mod.py\"\n"
        f"timeout = {timeout}\nexcluded-modules = []\n"
        "test-command = \"python -m pytest -x -q -p no:cacheprovider test_mod.py\"\n\n"
        "[cosmic-ray.distributor]\nname = \"local\"\n")
    cr = [sys.executable, "-m", "cosmic_ray.cli"]
    env = {**os.environ, "PYTHONPATH": str(workdir)}
    for step in (["init", "config.toml", "session.sqlite"], ["baseline", "config.toml"],
                 ["exec", "config.toml", "session.sqlite"]):
        subprocess.run([*cr, *step], cwd=workdir, env=env, check=True, capture_output=True)
    dump = subprocess.run([*cr, "dump", "session.sqlite"], cwd=workdir, env=env, check=True, capture_output=True,
                          text=True).stdout
    verdicts = {}
    for line in dump.splitlines():
        item, result = json.loads(line)
        mutation = item["mutations"][0]
        key = f"{mutation['operator_name']}#{mutation['occurrence']}"
        verdicts[key] = (result or {}).get("test_outcome", "not run")
    return verdicts


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", required=True, type=Path)
    parser.add_argument("--tasks", type=int, default=12)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=10.0)
    args = parser.parse_args()

    records = json.loads(args.data.read_text())
    tmp = Path(tempfile.mkdtemp(prefix="codea1-cosmic-ray-"))
    env = {**os.environ, "CODEA1_CACHE_DIR": str(tmp / "cache"), "PYTHONPATH": str(ROOT)}
    # Candidates: the golden tests of every task; keep the first --tasks eligible ones.
    probe = tmp / "all.jsonl"
    import ast as pyast
    probe.write_text("".join(json.dumps({"task_id": str(r["task_id"]), "tests": pyast.literal_eval(r["test_list"])
                                         if isinstance(r["test_list"], str) else r["test_list"]}) + "\n"
                             for r in records))
    codea1 = [sys.executable, "-m", "codea1", "evaluate-tests", "--benchmark", "ult", "--data", str(args.data),
              "--k", "1,2,5", "--workers", str(args.workers), "--no-progress", "--no-coverage",
              "--mutant-timeout", str(args.timeout), "--overwrite"]
    subprocess.run([*codea1, "--tests", str(probe), "--out", str(tmp / "probe")], check=True, env=env, cwd=ROOT,
                   stdout=subprocess.DEVNULL)
    rows = [json.loads(x) for x in (tmp / "probe" / "tasks.jsonl").read_text().splitlines()]
    chosen = [r for r in sorted(rows, key=lambda r: r["task_id"]) if r["mutated_with"] >= 1][:args.tasks]
    subset = tmp / "subset.jsonl"
    subset.write_text("".join(json.dumps({"task_id": r["task_id"], "tests": r["tests"]}) + "\n" for r in chosen))

    start = time.perf_counter()
    subprocess.run([*codea1, "--tests", str(subset), "--out", str(tmp / "codea1")], check=True, env=env, cwd=ROOT,
                   stdout=subprocess.DEVNULL)
    codea1_s = time.perf_counter() - start
    ours = {json.loads(x)["task_id"]: json.loads(x) for x in (tmp / "codea1" / "tasks.jsonl").read_text().splitlines()}

    by_task = {str(r["task_id"]): r for r in records}
    disagreements = 0
    cosmic_s = 0.0
    print(f"{'task':>10} {'positions':>9} {'unique':>6} {'killed':>6} {'survived':>8} {'differ':>6}")
    for r in chosen:
        task = r["task_id"]
        mine = ours[task]
        reference = IMPORT_HEADER + by_task[task]["code"]
        tests = mine["tests"][:mine["mutated_with"]]
        start = time.perf_counter()
        theirs = cosmic_ray_flow(tmp / "cr" / task.replace("/", "_"), reference, tests, args.timeout)
        cosmic_s += time.perf_counter() - start
        positions = all_positions(reference)
        import difflib  # our verdicts are per unique source; map each position to its source's verdict
        verdict_by_diff = {m["diff"]: ("killed" if m["first_fail"] is not None else "survived") for m in mine["mutants"]}
        differ = 0
        if set(positions) != set(theirs):
            differ += len(set(positions) ^ set(theirs))
        killed = survived = 0
        for key, code in positions.items():
            diff = "".join(difflib.unified_diff(reference.splitlines(True), code.splitlines(True),
                                                "a/solution.py", "b/solution.py", n=1))
            ours_verdict = verdict_by_diff.get(diff)
            their_verdict = {"TestOutcome.KILLED": "killed", "KILLED": "killed", "killed": "killed",
                             "TestOutcome.SURVIVED": "survived", "SURVIVED": "survived",
                             "survived": "survived"}.get(str(theirs.get(key)), str(theirs.get(key)))
            killed += their_verdict == "killed"
            survived += their_verdict == "survived"
            if ours_verdict != their_verdict:
                differ += 1
                print(f"    {task} {key}: codea1 {ours_verdict}, cosmic-ray {their_verdict}")
        disagreements += differ
        print(f"{task:>10} {len(positions):9d} {len(mine['mutants']):6d} {killed:6d} {survived:8d} {differ:6d}")
    print(f"\n{len(chosen)} tasks; codea1 evaluate-tests (validity + mutants, {args.workers} workers): {codea1_s:.1f} s; "
          f"cosmic-ray init/baseline/exec (local distributor): {cosmic_s:.1f} s; ratio {cosmic_s / codea1_s:.1f}x; "
          f"disagreements: {disagreements}")
    return 1 if disagreements else 0


if __name__ == "__main__":
    sys.exit(main())
