"""A program cannot find other jobs' programs or results in its own memory. A child is a
copy of the process that forked it, freed blocks included; forked from the zygote, which
reads every job's line (reference solutions among them) and relays every result (reference
outputs: expected values), it could scan its address space for them. Children are forked by
the zygote's forker, which never holds a job: the scan finds only what the scanner made."""

from __future__ import annotations

import pytest
from adversarial.hostile import EXECUTOR_BINARIES, make_executor
from codea1_testkit import run_code

# Long, so that its job line is longer than the scanner's: a shorter line read later into the
# same buffer would overwrite only the start of it, and the marker sits at the end.
SIBLING = ("def f(x):\n    return x + 1 if x else 'SIBL' + 'INGSECRET-4242-RESULT'\n" + "# padding\n" * 600
           + "# SIBLING" + "SECRET-4242-PROGRAM: a correct sibling's program\n")

# Probes pages around its own objects (write() answers EFAULT for an unmapped page, so
# nothing faults) and returns where the marker lies. `planted` is made at run time: a copy
# the scan must find, so an empty answer means the heap was read and held no other copy.
# Stale copies of `planted` itself (the scan's own chunks of the page that holds it, freed
# and not yet overwritten: its bytes and their end, NUL) are the scanner's, not a sibling's,
# whose markers go on with "-RESULT" and "-PROGRAM".
SCANNER = r'''
import ctypes, os
def f(x):
    libc = ctypes.CDLL(None, use_errno=True)
    r, w = os.pipe()
    planted = b"".join([b"SIBL", b"INGSECRET-4242"])
    needle = planted[:11]
    def mapped(page):
        if libc.write(w, ctypes.c_void_p(page), 1) != 1:
            return False
        os.read(r, 1)
        return True
    big = ctypes.create_string_buffer(1 << 16)
    seen, found = set(), []
    for centre in (id(planted), id(f), id(os), ctypes.addressof(big), id(ctypes)):
        centre &= ~0xFFF
        for page in range(max(centre - (256 << 20), 4096), centre + (256 << 20), 4096):
            if page in seen or not mapped(page):
                continue
            seen.add(page)
            chunk = ctypes.string_at(page, 4096 + 64) if mapped(page + 4096) else ctypes.string_at(page, 4096)
            at = chunk.find(needle)
            while at >= 0:
                if at < 4096 and page + at != id(needle) + 32:
                    if page + at == id(planted) + 32:
                        found.append("planted")
                    elif not chunk.startswith(planted + b"\0", at):
                        found.append(chunk[at:at + 30].decode("latin-1"))
                at = chunk.find(needle, at + 1)
    return sorted(set(found))
'''


@pytest.mark.parametrize("name", list(EXECUTOR_BINARIES))
def test_no_program_finds_an_earlier_jobs_program_or_result_in_its_memory(plugins, name):
    executor = make_executor(plugins, name, workers=1)  # one zygote: the scanner runs where the sibling ran
    try:
        verdict, raw = run_code(executor, SIBLING, "assert f(1) == 2\nassert f(0) == 'x'", "f", fail_fast=False)
        assert raw.outcomes[1].value == "SIBLINGSECRET-4242-RESULT", raw  # the zygote relayed it
        verdict, raw = run_code(executor, SCANNER, "assert f(1) == []", "f", limit=120)
        assert raw.outcomes[0].status == "ok", raw
        assert raw.outcomes[0].value == ["planted"]
    finally:
        executor.close()
