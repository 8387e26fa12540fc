"""How the zygote pool hands out jobs (harness.sandbox.pool)."""

from codea1.harness.sandbox.pool import _NO_GROUP, _Groups


def test_each_worker_keeps_to_its_group_and_starts_on_one_nobody_is_on():
    items = ["a1", "b1", "a2", "c1", "a3", "b2"]
    groups = _Groups(items, group=lambda item: item[0])
    first = groups.take(_NO_GROUP)
    second = groups.take(_NO_GROUP)
    assert (first, second) == ("a1", "b1")  # the second worker does not join group a
    assert groups.take("a") == "a2" and groups.take("b") == "b2"
    assert groups.take("b") == "c1"  # b is done: c, which nobody is on
    assert groups.take("c") == "a3"  # only a is left: the worker on c helps out
    assert groups.take("c") is None and groups.take("a") is None
    assert len(groups) == 0


def test_items_without_groups_go_out_in_order():
    groups = _Groups(range(5), group=lambda item: None)
    taken, current = [], _NO_GROUP
    while (item := groups.take(current)) is not None:
        taken.append(item)
        current = None
    assert taken == [0, 1, 2, 3, 4]


def zygotes_of_this_process() -> list[int]:
    import os

    found = []
    for entry in os.listdir("/proc"):
        try:
            stat = open(f"/proc/{entry}/stat").read()
            cmdline = open(f"/proc/{entry}/cmdline", "rb").read()
        except (OSError, ValueError):
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[1]) == os.getpid() and fields[0] != "Z" and b"codea1.harness.sandbox.zygote" in cmdline:
            found.append(int(entry))
    return found


def test_zygotes_started_in_the_background_are_waited_for_and_closed():
    """start_in_background returns at once; start (and every request) waits for the zygotes
    it began; close waits for a start under way, so no zygote outlives the pool."""
    from codea1.harness.sandbox.pool import ZygotePool

    others = set(zygotes_of_this_process())  # other tests' executors in this process
    pool = ZygotePool(2, preload=())
    pool.start_in_background()
    pool.start_in_background()  # a second call starts nothing more
    assert pool.start()["ready"] is True
    mine = {z.proc.pid for z in pool._all}
    assert len(mine) == 2 and set(zygotes_of_this_process()) - others == mine
    pool.close()
    assert set(zygotes_of_this_process()) - others == set()

    closed_at_once = ZygotePool(2, preload=())
    closed_at_once.start_in_background()
    closed_at_once.close()  # waits for the start under way, then closes what it started
    assert set(zygotes_of_this_process()) - others == set()


def test_a_background_start_that_fails_is_raised_by_the_start_that_needs_it(tmp_path):
    import pytest

    from codea1.harness.sandbox.pool import ZygotePool

    pool = ZygotePool(1, preload=(), python=str(tmp_path / "no-such-python"))
    pool.start_in_background()
    with pytest.raises(OSError):
        pool.start()
    pool.close()


def test_a_start_where_one_zygote_fails_leaves_no_zygote_running(tmp_path):
    """Of two zygotes starting at once, the one that gets the lock directory runs and the
    other exits before it is ready: start raises, and the one that did start is closed
    with it rather than left waiting on a pipe nobody holds."""
    import pytest

    from codea1.harness.sandbox.pool import ZygoteDied, ZygotePool

    others = set(zygotes_of_this_process())
    only_one = ["sh", "-c", f'mkdir "{tmp_path}/lock" 2>/dev/null || exit 3; exec "$@"', "sh"]
    pool = ZygotePool(2, prefix=only_one, preload=())
    with pytest.raises(ZygoteDied, match="did not start"):
        pool.start()
    assert (tmp_path / "lock").is_dir()  # one of them did start
    assert set(zygotes_of_this_process()) - others == set()
    pool.close()
