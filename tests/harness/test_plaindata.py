import math

import pytest

from codea1.harness import plaindata
from codea1.harness.plaindata import Opaque, PlainDataError


@pytest.mark.parametrize("value", [
    None, True, False, 0, -7, 2 ** 300, -(3 ** 500), 1.5, "text", "", [], (), {}, set(), frozenset(),
    [1, [2, (3, 4)], {"a": {1, 2}}], {(1, 2): [None]}, b"\x00\xff", complex(1, -2), [1, None, 3], ["a", None],
    (1.5, 2.5), [True, 1], [1, 2.0], {frozenset({1}): "x"},
])
def test_round_trip_keeps_value_and_type(value):
    back = plaindata.loads(plaindata.dumps(value))
    assert back == value and type(back) is type(value)


def test_lists_of_mixed_scalars_are_their_own_tree_unless_an_int_is_huge():
    mixed = [1, 2.5, None, "x", True, -(2 ** 256) + 1]
    assert plaindata.to_tree(mixed) is mixed  # the fast path: no copy, no walk
    assert plaindata.to_tree([1.5, 2 ** 300, 3]) == [1.5, {"h": hex(2 ** 300)}, 3]
    assert plaindata.to_tree((2.0, -(2 ** 257))) == {"t": [2.0, {"h": hex(-(2 ** 257))}]}
    assert plaindata.loads(plaindata.dumps([0.5, 2 ** 300, None])) == [0.5, 2 ** 300, None]


def test_floats_keep_nan_and_infinity():
    back = plaindata.loads(plaindata.dumps([math.inf, -math.inf, math.nan]))
    assert back[0] == math.inf and back[1] == -math.inf and math.isnan(back[2])


def test_user_objects_become_opaque_and_never_equal():
    class Liar:
        def __eq__(self, other):
            return True

    back = plaindata.plainify(Liar())
    assert isinstance(back, Opaque) and "Liar" in back.type_name
    assert back != back and not (back == 1)


def test_builtin_subclasses_lose_their_methods():
    class Weird(int):
        def __eq__(self, other):
            return True

    back = plaindata.plainify([Weird(3)])
    assert back == [3] and type(back[0]) is int
    assert plaindata.plainify(Weird(3)) != 4


def test_limits_refuse_deep_and_huge_values():
    deep = []
    for _ in range(plaindata.MAX_DEPTH + 5):
        deep = [deep, 1]
    with pytest.raises(PlainDataError):
        plaindata.to_tree(deep)


@pytest.mark.parametrize("tree", [{"x": 1}, {"t": 5}, {"d": [[1]]}, {"s": [[1]]}, {"a": 1, "b": 2}])
def test_malformed_trees_are_refused(tree):
    with pytest.raises(PlainDataError):
        plaindata.from_tree(tree)
