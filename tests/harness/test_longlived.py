"""harness.longlived: data built under long_lived() is left out of later collections."""

import gc

from codea1.harness.longlived import long_lived


def test_what_is_built_is_frozen_and_the_collector_runs_again_after():
    before = gc.get_freeze_count()
    try:
        with long_lived():
            assert not gc.isenabled()
            data = [[i] for i in range(10_000)]
        assert gc.isenabled()
        assert gc.get_freeze_count() >= before + len(data)
        assert not any(o is data for o in gc.get_objects())  # collections no longer walk it
    finally:
        gc.unfreeze()


def test_a_disabled_collector_stays_disabled():
    gc.disable()
    try:
        with long_lived():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()
        gc.unfreeze()
