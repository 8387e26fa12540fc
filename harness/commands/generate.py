"""``codea1 generate``: sample code or test suites from a model."""

from __future__ import annotations

from codea1.harness.command import Command
from codea1.harness.commands.shared import benchmark_flags, common, key_values, run_dir_flags
from codea1.harness.hookspecs import hookimpl


class GenerateCommand(Command):
    name = "generate"
    description = "sample code (samples.jsonl) or test suites (tests.jsonl) from a model"

    def add_arguments(self, p):
        p.add_argument("--role", required=True, choices=("code", "tests"), help="what to generate")
        benchmark_flags(p, "benchmark whose tasks are the questions")
        p.add_argument("--generator", required=True, help="generator name: hf, vllm, openai, replay (see `codea1 plugins`)")
        p.add_argument("--generator-opt", action="append", default=[], metavar="KEY=VALUE", help="generator option")
        p.add_argument("--model", help="checkpoint directory, hub name, or served model name")
        p.add_argument("--n", type=int, default=1, help="samples per task (per candidate code with --white-box-from)")
        p.add_argument("--temperature", type=float, default=0.7, help="sampling temperature (default 0.7; 0 = greedy)")
        p.add_argument("--top-p", type=float, default=0.95, help="nucleus sampling (default 0.95)")
        p.add_argument("--max-tokens", type=int, default=1024, help="new tokens per sample (default 1024)")
        p.add_argument("--seed", type=int, default=0, help="base seed; each prompt's seed derives from it")
        p.add_argument("--k", type=int, default=8, help="asserts per test suite (default 8, the paper's)")
        p.add_argument("--white-box-from", metavar="SAMPLES",
                       help="tests: attack these candidate codes (a suite per code and sample), paper's white-box prompt")
        p.add_argument("--prompt", help="prompt name (code, test-white-box, test-black-box, test-sft); default by role")
        p.add_argument("--prompt-file", help="TOML file overriding prompts (same tables as harness/prompts/paper.toml)")
        p.add_argument("--no-cache", action="store_true", help="do not read or write the generation cache")
        p.add_argument("--cache-dir", help="generation cache (default $CODEA1_CACHE_DIR/generations or ~/.cache/codea1)")
        run_dir_flags(p, "output directory")

    def run(self, plugins, args):
        from codea1.harness.flows.generate import GenerateConfig, generate, rows_name

        cfg = GenerateConfig(**common(args, executor=False), role=args.role, generator=args.generator,
                             model=args.model, n=args.n, temperature=args.temperature, top_p=args.top_p,
                             max_tokens=args.max_tokens, seed=args.seed, k=args.k, white_box_from=args.white_box_from,
                             prompt=args.prompt, prompt_file=args.prompt_file,
                             generator_options=key_values(args.generator_opt, "--generator-opt"),
                             cache=not args.no_cache, cache_dir=args.cache_dir)
        r = generate(plugins, cfg)
        run = r["this_run"]
        print(f"{r['role']} from {r['generator']} ({r['model'] or '-'}), prompt {r['prompt']}: {r['rows']} rows for "
              f"{r['tasks']} tasks; this run {run['samples']} samples ({run['cache_hits']} from cache) in "
              f"{run['seconds']:.1f} s, {run['completion_tokens']} completion tokens "
              f"({run['completion_tokens_per_s'] or 0:.1f}/s)")
        print("parsing: " + ", ".join(f"{k} {v}" for k, v in r["parsing"].items()))
        print(f"\nwrote {args.out}/{rows_name(args.role)}, results.json, config.json, environment.json")
        return 0


@hookimpl
def codea1_register_commands(registry):
    registry.add(GenerateCommand)
