"""The ``codea1`` command line: a skeleton that dispatches to registered commands.

Every subcommand, built-in or a plugin's, is a ``Command`` subclass (``codea1.harness.command``)
registered through ``codea1_register_commands`` (the built-ins: one module each in
``codea1.harness.commands``). The skeleton reads ``--plugin`` first (plugin files may add
commands), loads the plugins, builds one argparse subparser per command and runs the chosen
one: no list of command names here.

Errors: a ``Codea1Error`` (bad input, a missing tool) prints one line and exits 2
(``--debug`` adds the traceback); anything else is a bug and shows its traceback.
"""

from __future__ import annotations

import argparse
import difflib
import os
import shlex
import sys
import traceback
from typing import Sequence

import codea1
from codea1.harness.errors import Codea1Error
from codea1.harness.plugin_manager import load_plugins


def _global_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--plugin", action="append", default=[], metavar="PATH",
                        help="load a plugin from a local .py file (repeatable)")
    parser.add_argument("--debug", action="store_true", help="show the traceback of user errors too")


class _Parser(argparse.ArgumentParser):
    """argparse, with a usage error on one line (the usage is one ``--help`` away)."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser(plugins) -> argparse.ArgumentParser:
    parser = _Parser(prog="codea1", description="Evaluate and train code LLMs and test LLMs.")
    parser.add_argument("--version", action="version", version=f"codea1 {codea1.__version__}")
    _global_flags(parser)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in plugins.commands.names():
        command = plugins.commands.get(name).cls
        command().add_arguments(sub.add_parser(name, help=command.description, description=command.description))
    parser.set_defaults(_commands=sub.choices)
    return parser


def parse(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace:
    """``parser.parse_args``, where an unknown flag is answered by the command's own parser,
    with the flag it may have meant (the global flags are read anywhere on the line)."""
    args, extras = parser.parse_known_args(argv)
    if extras:
        command = args._commands[args.command]
        known = [flag for flag in command._option_string_actions if flag.startswith("--")]
        close = [difflib.get_close_matches(extra.split("=", 1)[0], known, n=3, cutoff=0.6) for extra in extras
                 if extra.startswith("--")]
        hint = "".join(f"; did you mean {' or '.join(names)}?" for names in close if names)
        command.error(f"unrecognized arguments: {' '.join(extras)}{hint}")
    del args._commands
    return args


def main(argv: Sequence[str] | None = None) -> int:
    as_program = argv is None
    argv = list(sys.argv[1:] if argv is None else argv)
    early = argparse.ArgumentParser(add_help=False)
    _global_flags(early)
    known, _ = early.parse_known_args(argv)
    command = args = None
    try:
        plugins = load_plugins(known.plugin)
        args = parse(build_parser(plugins), argv)
        command = plugins.commands.create(args.command)
        status = command.run(plugins, args)
        sys.stdout.flush()  # here, not at exit: a reader that closed the pipe early is handled below
        return status
    except Codea1Error as exc:
        if known.debug:
            traceback.print_exc()
        print(f"codea1: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        hint = (f"resume with: {shlex.join(['codea1', *command.resume_argv(args, argv)])}"
                if command is not None else "nothing had started")
        print(f"codea1: interrupted; {hint}", file=sys.stderr)
        if as_program:
            # Everything kept is written (the flows' with/finally blocks ran on the way here);
            # do not wait at exit for threads still blocked on a request nobody will read.
            for stream in (sys.stdout, sys.stderr):
                try:
                    stream.flush()
                except OSError:
                    pass
            os._exit(130)
        return 130
    except BrokenPipeError:  # `codea1 ... | head` closed the pipe: nothing more to say
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit
        return 0
    except OSError as exc:
        # A place the run writes to that refuses (read-only, full, no permission) is the
        # user's to fix: one line; what was written before it stays (runstore.write_error).
        from codea1.harness.runstore import WRITE_ERRNOS, write_error

        if exc.errno not in WRITE_ERRNOS or not exc.filename:
            raise
        if known.debug:
            traceback.print_exc()
        print(f"codea1: error: {write_error(exc.filename, exc)}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
