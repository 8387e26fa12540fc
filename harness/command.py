"""The base class of a ``codea1`` subcommand, built-in or a plugin's.

A module of its own: the CLI skeleton (``codea1.harness.cli``) builds its parser from the
registered commands and the plugin manager checks each one subclasses this, so both import
it from here rather than from each other.
"""

from __future__ import annotations

import argparse
from typing import Any


class Command:
    """A ``codea1`` subcommand. Subclasses set ``name`` and ``description`` (one line, shown
    by ``codea1 --help``) and implement ``add_arguments`` and ``run``."""

    name = ""
    description = ""

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        """Declare this command's flags on its own subparser."""

    def run(self, plugins: Any, args: argparse.Namespace) -> int:
        """Do the work; return the exit status. Raise a ``Codea1Error`` for user errors."""
        raise NotImplementedError

    def resume_argv(self, args: argparse.Namespace, argv: list[str]) -> list[str]:
        """The arguments that go on where an interrupted ``codea1 ARGV`` stopped: the same,
        less ``--overwrite`` (which would discard what the interrupted run kept)."""
        return [a for a in argv if a not in ("--overwrite", "--i-just-wanna-run")]
