"""``codea1 dev``: developer helpers (tiny-model)."""

from __future__ import annotations

from codea1.harness.command import Command
from codea1.harness.hookspecs import hookimpl


class DevCommand(Command):
    name = "dev"
    description = "developer helpers (tiny-model: a random-init Qwen2 and a local tokenizer)"

    def add_arguments(self, p):
        dev = p.add_subparsers(dest="dev_command", required=True)
        d = dev.add_parser("tiny-model", help="write a tiny random-init Qwen2 model and local tokenizer to DIR")
        d.add_argument("directory")
        d.add_argument("--seed", type=int, default=0)

    def run(self, plugins, args):
        from codea1.harness.testing.tiny_model import build_tiny_model

        print(f"wrote {build_tiny_model(args.directory, seed=args.seed)}")
        return 0


@hookimpl
def codea1_register_commands(registry):
    registry.add(DevCommand)
