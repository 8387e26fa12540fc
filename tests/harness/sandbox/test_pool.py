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
