"""Reporter plugin base: turns run directories into tables and pages.

The report flow reads the results of evaluate, evaluate-tests, tts and train runs into one
comparison (tables and figures); each reporter writes it in its own format (Markdown, CSV,
LaTeX, HTML, or a third party's: a W&B exporter, say). Reporters never change the runs
they read. Register through ``codea1_register_reporters``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


class Reporter:
    """Subclasses set ``name`` (the format: "md", "html", ...) and ``description``, may
    declare an ``Options`` dataclass, and implement ``write``."""

    name = ""
    description = ""

    def write(self, report: Any, out_dir: Path) -> list[Path]:
        """Write ``report`` (the comparison the report flow assembled) under ``out_dir``;
        return the files written."""
        raise NotImplementedError
