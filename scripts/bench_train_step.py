"""The execution side of one paper-sized Code-A1 step, timed: 256 questions x 8 programs x
8 suites x 8 asserts, plus 8 Mistake Book tests per question (the paper's batch 256, M = N
= 8, K = 8).

Built from KodCode (../shared/data/kodcode): each question's programs are its reference and
mutants of it (harness.mutation); each suite is generated-looking: the question's golden
asserts, rotated per suite, with a wrong answer in every fourth, a repeated call and, in
every third suite, an assert cut off mid-line. The three phases Code-A1 runs per step are
timed as the trainer runs them: validation of every suite on the references
(trainers.method.validation), every program against its suites' kept tests and the book
(trainers.method.layout and rollouts.run_codes), and the rewards, advantages and TopVar
(trainers.method.rewards). Then the executor's raw throughput on the same machine: the same number
of programs, each a one-line function against as many trivial tests.

    python scripts/bench_train_step.py [--data ../shared/data/kodcode] [--questions 256] [--workers 2]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from codea1.harness.mutation import generate_mutants
from codea1.harness.plugin_manager import load_plugins
from codea1.harness.records import ExecJob
from codea1.harness.verdicts.asserts import parse_assert
from codea1.harness.verdicts.execution import run_jobs
from codea1.harness.verdicts.validity import SECOND_SEED
from codea1.trainers.method.layout import SuiteLayout, book_tests
from codea1.trainers.method.rewards import advantages_by_group, candidate_rewards, topvar
from codea1.trainers.method.rollouts import run_codes
from codea1.trainers.method.validation import VALID, validate_for_training

ROOT = Path(__file__).resolve().parents[1]


def wrong(source: str) -> str:
    """The same assert with another answer."""
    return source.rsplit("==", 1)[0] + "== 'not the answer'"


def workload(problems, questions: int, m: int, n: int, k: int):
    usable = [p for p in problems if len([t for t in p.tests if t.kind == "call" and t.op == "=="]) >= 2]
    chosen = [usable[i % len(usable)] for i in range(questions)]
    codes, suites, books = {}, {}, {}
    mutants = {}
    for qi, p in enumerate(chosen):
        if p.task_id not in mutants:
            mutants[p.task_id] = [mu.code for mu in generate_mutants(p.reference)[0][:m - 1]]
        programs = [p.reference] + mutants[p.task_id]
        golden = [t.source for t in p.tests if t.kind == "call" and t.op == "=="]
        books[qi] = [golden[i % len(golden)] for i in range(8)]
        for mi in range(m):
            codes[(qi, mi)] = programs[mi % len(programs)]
            for ni in range(n):
                suite = [golden[(ni + j) % len(golden)] for j in range(k)]
                suite[3::4] = [wrong(s) for s in suite[3::4]]
                suite[k - 2] = suite[0]  # a repeated call
                if ni % 3 == 2:
                    suite[-1] = suite[-1][: len(suite[-1]) // 2]  # cut off
                suites[(qi, mi, ni)] = suite
    return chosen, codes, suites, books


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", default=str(ROOT.parent / "shared" / "data" / "kodcode"))
    parser.add_argument("--questions", type=int, default=256)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("-m", type=int, default=8)
    parser.add_argument("-n", type=int, default=8)
    parser.add_argument("-k", type=int, default=8)
    args = parser.parse_args()
    M, N, K = args.m, args.n, args.k

    plugins = load_plugins(autoload=False)
    bench = plugins.benchmarks.create("kodcode", {"data": args.data})
    t0 = time.perf_counter()
    questions, codes, suites, books = workload(bench.load(), args.questions, M, N, K)
    print(f"workload: {len(questions)} questions x {M} programs x {N} suites x {K} asserts + 8 book tests "
          f"({len(suites)} suites) built in {time.perf_counter() - t0:.1f} s")

    executor = plugins.executors.create("subprocess", workers=args.workers)
    with executor:
        executor.info()  # start the zygotes before timing, and those of validity's second run (once per training)
        executor.pool_for(SECOND_SEED).start()
        t0 = time.perf_counter()
        validated = validate_for_training(executor, {f"{qi}/{mi}/{ni}": (questions[qi], s)
                                                     for (qi, mi, ni), s in suites.items()}, K)
        t_valid = time.perf_counter() - t0

        t0 = time.perf_counter()
        book_parsed = [book_tests(q, books[qi]) for qi, q in enumerate(questions)]
        layouts = {(qi, mi): SuiteLayout([validated[f"{qi}/{mi}/{ni}"] for ni in range(N)], book_parsed[qi])
                   for qi, mi in codes}
        runs = {key: (questions[key[0]], code, layouts[key].tests, layouts[key].limits) for key, code in codes.items()}
        results = run_codes(executor, runs, bench, 10.0, None,
                            {key: layouts[key].checker(bench, questions[key[0]]) for key in codes},
                            {key: layouts[key].part_starts for key in codes})
        t_exec = time.perf_counter() - t0

        t0 = time.perf_counter()
        code_rewards, zero = [], 0
        for qi in range(len(questions)):
            row, suite_rewards = [], []
            for mi in range(M):
                layout = layouts[(qi, mi)]
                rewards = candidate_rewards(layout.suite_results(layout.read(results[(qi, mi)]), K, [""] * N))
                row.append(rewards.code)
                suite_rewards.append(rewards.tests)
            code_rewards.append(row)
            kept = topvar(suite_rewards, max(1, M // N))
            zero += advantages_by_group([suite_rewards[m] for m in kept]).zero_variance_groups
        advantages_by_group(code_rewards)
        t_rewards = time.perf_counter() - t0

        validated_tests = sum(len(set(s)) for s in suites.values())
        executed_tests = sum(len(t) for _, _, t, _ in runs.values())
        total = t_valid + t_exec + t_rewards
        print(f"validation  {t_valid:7.1f} s   ({len(suites)} suites, {validated_tests} asserts, "
              f"{sum(v.count(VALID) for v in validated.values())} valid)")
        print(f"execution   {t_exec:7.1f} s   ({len(runs)} programs, {executed_tests} tests)")
        print(f"rewards     {t_rewards:7.1f} s   (advantages, TopVar; {zero} zero-variance suite groups kept)")
        print(f"step total  {total:7.1f} s   goal: under 60 s on 2 cores")

        # The executor's raw throughput: as many programs, trivial tests.
        tests = [parse_assert(f"assert f({i}) == {i}", "f", f"t/{i}") for i in range(64)]
        jobs = [ExecJob(job_id=f"raw/{i}", code=f"def f(x):\n    return x  # {i}\n", tests=tests, entry_point="f",
                        time_limits=[1.0] * len(tests), batch_timeout=30.0, fail_fast=False)
                for i in range(len(runs))]
        t0 = time.perf_counter()
        run_jobs(executor, jobs)
        t_raw = time.perf_counter() - t0
        raw_rate = len(jobs) * len(tests) / t_raw
        step_rate = (executed_tests + validated_tests) / (t_valid + t_exec)
        print(f"raw executor: {raw_rate:,.0f} tests/s ({len(jobs)} programs x {len(tests)} trivial tests in "
              f"{t_raw:.1f} s); this step: {step_rate:,.0f} tests/s, {1e3 / step_rate:.3f} ms a test, "
              f"{raw_rate / step_rate:.2f}x the raw time per test")


if __name__ == "__main__":
    main()
