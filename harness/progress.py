"""One progress bar per stage (never one per item), on stderr."""

from __future__ import annotations

import contextlib
import sys


class _NoBar:
    total = 0

    def update(self, n: int = 1) -> None:
        pass


@contextlib.contextmanager
def stage_bar(stage: str, total: int, enabled: bool = True):
    if not enabled or total == 0:
        yield _NoBar()
        return
    from tqdm import tqdm

    bar = tqdm(total=total, desc=stage, unit="job", file=sys.stderr, mininterval=0.5, dynamic_ncols=True)
    try:
        yield bar
    finally:
        bar.close()
