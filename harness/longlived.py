"""Building data a run keeps to its end, and the cyclic garbage collector.

A benchmark's problems with every test input, and the reference's outputs, are millions of
objects that live until the run ends and form no garbage cycles. Each full collection walks
them all: on HumanEval+ (160,000 inputs and outputs) that was a quarter of the evaluating
process' CPU. ``long_lived()`` pauses the collector while such data is built, then freezes
what exists (``gc.freeze``): later collections leave it alone, and it is freed as usual
when its last reference goes. The price: garbage cycles that exist at that moment are never
collected, so use it right after loading, not in the middle of other work.
"""

from __future__ import annotations

import contextlib
import gc


@contextlib.contextmanager
def long_lived():
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if enabled:
            gc.enable()
