"""Known gap (issue 24, item 5): a child is forked from its zygote, whose freed heap may still
hold earlier jobs' lines (their programs) and the results it relayed. A program that scans
its address space can find them. Landlock governs files, not memory.

Runs a sibling program carrying a marker, then a scanner in the same zygote, and prints what
the scanner found (empty: not found this time; the heap's layout varies from run to run).

    python scripts/probe_sibling_memory.py
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from codea1_testkit import run_code  # noqa: E402

from codea1.harness.plugin_manager import load_plugins  # noqa: E402

# Probes its address space (write() answers EFAULT for an unmapped page, so nothing faults)
# within 512 MB of its own objects and returns every copy of the marker it finds there.
MEMORY_SCANNER = r'''
import ctypes, os
def f(x):
    libc = ctypes.CDLL(None, use_errno=True)
    r, w = os.pipe()
    needle = b"SIBLING" + b"SECRET-4242"
    start = id(needle) & ~0xFFFFF
    found = []
    for base in range(max(start - (512 << 20), 1 << 20), start + (512 << 20), 1 << 20):
        mapped = True
        for off in range(0, 1 << 20, 4096):
            if libc.write(w, ctypes.c_void_p(base + off), 1) != 1:
                mapped = False
                break
            os.read(r, 1)
        if mapped:
            chunk = ctypes.string_at(base, 1 << 20)
            at = chunk.find(needle)
            while at >= 0:
                if base + at != id(needle) + 32:  # the scanner's own constant
                    found.append(chunk[at:at + 34].decode("latin-1"))
                at = chunk.find(needle, at + 1)
    return found
'''


def main() -> None:
    plugins = load_plugins(autoload=False)
    ex = plugins.executors.create("subprocess", {}, workers=1)
    try:
        sibling = "def f(x):\n    # SIBLING" + "SECRET-4242: a correct sibling's program\n    return x + 1\n"
        run_code(ex, sibling, "assert f(1) == 2", "f")
        verdict, raw = run_code(ex, MEMORY_SCANNER, "assert f(1) == []", "f", limit=60)
        print("found:", raw.outcomes[0].value if raw.outcomes else raw.load_error)
    finally:
        ex.close()


if __name__ == "__main__":
    main()
