import json
import math

import pytest

from codea1.harness.verdicts import plaindata
from codea1.harness.verdicts.plaindata import Opaque, PlainDataError


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


# -- arrays: numpy arrays and pandas objects, read in the child, compared in the parent ----------

def arrays_round_trip(value):
    return plaindata.loads(json.dumps(plaindata.to_tree(value, arrays=True)))


def test_numpy_arrays_and_pandas_objects_cross_as_arrays_only_when_asked():
    np = pytest.importorskip("numpy")
    pd = pytest.importorskip("pandas")
    assert plaindata.to_tree(np.array([1, 2])) == {"o": "numpy.ndarray"}  # call tests: opaque, as before
    grid = arrays_round_trip(np.arange(6).reshape(2, 3))
    assert (grid.kind, grid.shape, grid.items) == ("ndarray", (2, 3), [0, 1, 2, 3, 4, 5])
    assert grid.nested() == [[0, 1, 2], [3, 4, 5]] and arrays_round_trip(np.zeros((2, 0))).nested() == [[], []]
    assert arrays_round_trip(np.float64(2.5)) == 2.5 and arrays_round_trip(np.array(7)).nested() == 7
    masked = arrays_round_trip(np.ma.MaskedArray([1, 2, 3], mask=[0, 1, 0]))
    assert masked.items == [1, None, 3]  # masked items as MaskedArray.tolist gives them
    frame = pd.DataFrame({"a": [1, 2], "b": ["x", "y"]})
    columns, index, series, whole = map(arrays_round_trip, (frame.columns, frame.index, frame["a"], frame))
    assert (columns.kind, columns.items, index.items) == ("Index", ["a", "b"], [0, 1])
    assert (series.kind, series.items, series.keys) == ("Series", [1, 2], [0, 1])
    assert (whole.kind, whole.shape, whole.items, whole.keys) == ("DataFrame", (2, 2), [1, "x", 2, "y"], ["a", "b"])
    assert isinstance(arrays_round_trip(np.array(["2020-01-01"], dtype="datetime64[ns]")), Opaque)


def test_only_numpys_and_pandas_own_classes_are_read():
    """A subclass (its tolist, __eq__, __contains__ would answer) and a class that names
    itself numpy.ndarray, through its attributes or a metaclass, stay opaque."""
    np = pytest.importorskip("numpy")
    pd = pytest.importorskip("pandas")

    class Lying(np.ndarray):
        def tolist(self):
            return [80]

        def __eq__(self, other):
            return True

    class Meta(type):
        __flags__ = property(lambda cls: 0)  # "not a heap type"
        __module__ = property(lambda cls: "numpy")

    mimic = Meta("ndarray", (), {"tolist": lambda self: [80], "shape": (1,), "__module__": "numpy"})
    frame = type("Frame", (pd.DataFrame,), {"__contains__": lambda self, key: True})({"a": [1]})
    for value in (np.array([1]).view(Lying), mimic(), type("ndarray", (), {"__module__": "numpy"})(), frame):
        assert isinstance(arrays_round_trip(value), Opaque), value


def test_arrays_compare_as_numpy_and_pandas_do():
    Array, nan = plaindata.Array, math.nan
    one, two, grid = Array("ndarray", (1,), [80]), Array("ndarray", (2,), [1, 2]), Array("ndarray", (2, 2), [1, 2, 3, 4])
    assert one == 80 and one != 81 and one < 100 and not one > 100 and (one, one) == (80, 80) and one
    for ambiguous in (lambda: two == 1, lambda: two == [1, 2], lambda: bool(two), lambda: Array("ndarray", (0,), []) == 1):
        with pytest.raises(ValueError):
            ambiguous()
    assert 3 in grid and 5 not in grid and [1, 2] == list(two)  # `in`: any element equal
    assert Array("ndarray", (), [5]) == 5 and len(grid) == 2 and [r.items for r in grid] == [[1, 2], [3, 4]]
    # arrays of different shapes are unequal at once (numpy would broadcast, or refuse)
    assert not grid == [[1, 2], [3, 4], [5, 6]] and grid != [[1, 2], [3, 4], [5, 6]] and grid != [1, 2]
    assert plaindata.elementwise(lambda x, y: (x, y), [[1], [2]], [[10, 20], [30, 40]]) == \
        [(1, 10), (1, 20), (2, 30), (2, 40)]  # one side stretched to the other's shape
    with pytest.raises(ValueError):  # an outer product: larger than either side, never made
        plaindata.elementwise(lambda x, y: (x, y), [[1], [2]], [10, 20])
    index = Array("Index", (3,), ["a", nan, 1])
    assert "a" in index and nan in index and nan not in Array("ndarray", (1,), [nan]) and "b" not in index
    with pytest.raises(TypeError):
        assert [1] in index  # pandas: an unhashable key
    series = Array("Series", (2,), [10, 20], ["x", "y"])
    frame = Array("DataFrame", (1, 2), [1, "a"], ["num", "name"])
    assert "x" in series and 10 not in series and "name" in frame and list(frame) == ["num", "name"]
    for ambiguous in (lambda: series == 10, lambda: frame == 1, lambda: bool(series), lambda: bool(index)):
        with pytest.raises(ValueError):
            ambiguous()
    assert repr(series) == "Series([10, 20], index=['x', 'y'])"


@pytest.mark.parametrize("tree", [{"a": ["ndarray", [2], [1]]}, {"a": ["matrix", [1], [1]]},
                                  {"a": ["Series", [1], [1]]}, {"a": ["ndarray", [1], [1], ["k"]]},
                                  {"a": ["Index", [1, 1], [1]]}, {"a": ["ndarray", [-1], []]},
                                  {"a": ["DataFrame", [1, 2], [1, 2], ["only one"]]}])
def test_malformed_arrays_are_refused(tree):
    with pytest.raises(PlainDataError):
        plaindata.from_tree(tree)


def test_an_array_a_program_builds_is_checked_before_it_crosses():
    made = plaindata.Array("ndarray", (3,), [1])
    with pytest.raises(PlainDataError):
        plaindata.to_tree(made)
    assert plaindata.plainify(plaindata.Array("ndarray", (1,), [1])).items == [1]
