"""``codea1 train``: train policies with a trainer plugin from a TOML config."""

from __future__ import annotations

from pathlib import Path

from codea1.harness.command import Command
from codea1.harness.hookspecs import hookimpl


class TrainCommand(Command):
    name = "train"
    description = "train policies with a trainer plugin (code-a1, golden-tests, self-play, sft) from a TOML config"

    def add_arguments(self, p):
        p.add_argument("--config", required=True, help="training config (TOML; examples in trainers/configs/)")
        p.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE",
                       help="override a config key, e.g. --set trainer.alpha=0.25 (repeatable)")
        p.add_argument("--out", required=True, help="run directory: steps.jsonl, checkpoints/, mistake_book/, export/")
        again = p.add_mutually_exclusive_group()
        again.add_argument("--resume", action="store_true", help="continue the run in --out from its last checkpoint")
        again.add_argument("--overwrite", action="store_true", help="discard the run in --out and start over")
        p.add_argument("--no-progress", action="store_true", help="no progress bar")
        p.add_argument("--dry-run", action="store_true",
                       help="check the config and --out, print the resolved config and what would start; load no "
                            "model, write nothing")

    def resume_argv(self, args, argv):
        # Once --out holds a run, the same command without --resume is refused.
        again = super().resume_argv(args, argv)
        started = (Path(args.out) / "config.json").is_file()
        return [*again, "--resume"] if started and "--resume" not in again else again

    def run(self, plugins, args):
        from codea1.harness.flows.train import dry_run, load_config, train
        from codea1.harness.training import headline

        cfg = load_config(plugins, args.config, args.set, args.out, overwrite=args.overwrite, resume=args.resume,
                          progress=not args.no_progress)
        if args.dry_run:  # all of it TOML: the output saved is a config file
            r = dry_run(plugins, cfg)
            print("# codea1 train --dry-run: nothing loaded, nothing written. It would start:")
            print("\n".join(f"#   {line}" for line in r["plan"]))
            print(f"# The resolved config ({args.config}" + "".join(f" --set {s}" for s in args.set) + "):\n")
            print(r["config"], end="")
            return 0
        r = train(plugins, cfg)
        trainer = plugins.trainers.get(cfg.settings.train.trainer).cls
        shown = headline(trainer.columns_for(cfg.settings.trainer), r["last"])
        print(f"{r['trainer']}: {r['steps']} steps; last step: " +
              ", ".join(f"{k} {v:.3f}" for k, v in shown.items()))
        for role, path in r["exported"].items():
            print(f"  {role} policy exported to {path}")
        print(f"\nwrote {args.out}/steps.jsonl, checkpoints/, export/, results.json, config.json")
        return 0


@hookimpl
def codea1_register_commands(registry):
    registry.add(TrainCommand)
