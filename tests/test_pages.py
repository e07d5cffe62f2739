"""Tablespaces: dense mapping, kernel arrays, instance hash, JSON."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests._hypothesis import examples

from bufsim.pages import IndexSpec, SpaceSpec, Tablespaces

TS = Tablespaces([
    SpaceSpec(5, 200, "orders", (IndexSpec("PRIMARY", range(0, 150)),
                                 IndexSpec("idx_date", np.array([160, 161, 170])))),
    SpaceSpec(9, 100, "t2"),
    SpaceSpec(2, 10),
])


def test_layout_and_kernel_arrays():
    assert TS.n_pages == 310 and TS.n_spaces == 3
    assert TS.space_ids.tolist() == [5, 9, 2]
    assert TS.bases.tolist() == [0, 200, 300] and TS.sizes.tolist() == [200, 100, 10]
    assert TS.space_base is TS.bases and TS.space_size is TS.sizes
    assert TS.page_space_idx[[0, 199, 200, 300, 309]].tolist() == [0, 0, 1, 2, 2]
    assert TS.page_space_id[[0, 200, 309]].tolist() == [5, 9, 2]
    assert TS.page_no[[0, 199, 200, 305]].tolist() == [0, 199, 0, 5]
    for name in ("page_space_idx", "page_space_id", "page_no", "page_group", "prev_leaf",
                 "next_leaf"):
        a = getattr(TS, name)
        assert a.dtype == np.int64 and a.shape == (310,) and not a.flags.writeable
        assert getattr(TS, name) is a  # cached


def test_groups():
    assert TS.group_names == ["orders.PRIMARY", "orders.idx_date", "orders", "t2", "space 2"]
    assert TS.group_space.tolist() == [0, 0, 0, 1, 2]
    g = TS.page_group
    assert (g[:150] == 0).all() and g[[160, 161, 170]].tolist() == [1, 1, 1]
    assert g[[150, 165, 199]].tolist() == [2, 2, 2]
    assert TS.group_sizes.tolist() == [150, 3, 47, 100, 10]
    # a space fully covered by its indexes has no implicit group
    full = Tablespaces([SpaceSpec(1, 4, "a", (IndexSpec("PRIMARY", range(4)),))])
    assert full.group_names == ["a.PRIMARY"]


def test_default_leaf_links_stop_at_space_edges():
    assert TS.prev_leaf[[0, 1, 199, 200, 201]].tolist() == [-1, 0, 198, -1, 200]
    assert TS.next_leaf[[0, 198, 199, 299, 309]].tolist() == [1, 199, -1, -1, -1]


def test_custom_leaf_links():
    prev = np.array([-1, 2, 0, 1])
    nxt = np.array([2, 3, 1, -1])
    ts = Tablespaces([SpaceSpec(1, 3), SpaceSpec(7, 4, leaf_links=(prev, nxt))])
    assert ts.prev_leaf.tolist() == [-1, 0, 1, -1, 5, 3, 4]
    assert ts.next_leaf.tolist() == [1, 2, -1, 5, 6, 4, -1]
    with pytest.raises(ValueError, match=r"leaf_links next_page_no row 1 = 4 .*-1 \(none\) or 0\.\.3"):
        SpaceSpec(7, 4, leaf_links=(prev, np.array([2, 4, 1, -1])))
    with pytest.raises(ValueError, match=r"leaf_links prev_page_no must have shape \(4,\)"):
        SpaceSpec(7, 4, leaf_links=(prev[:3], nxt))


def test_dense_and_locate():
    d = TS.dense([5, 9, 2, 5], [0, 3, 9, 199])
    assert d.dtype == np.int64 and d.tolist() == [0, 203, 309, 199]
    s, p = TS.locate(d)
    assert s.tolist() == [5, 9, 2, 5] and p.tolist() == [0, 3, 9, 199]
    assert TS.dense(9, np.arange(3)).tolist() == [200, 201, 202]  # broadcasting
    assert TS.dense(np.array([5.0]), np.array([3.0])).tolist() == [3]  # integral floats are fine


@pytest.mark.parametrize("space, page, match", [
    ([5, 7], [0, 0], r"space row 1 = 7 is not a known tablespace"),
    ([5, 9], [0, 100], r"page_no row 1 = 100 is out of range for space 9; allowed: 0\.\.99"),
    ([5, 9], [-1, 0], r"page_no row 0 = -1 is out of range"),
    ([5, 9], [0.5, 0], r"page_no row 0 = 0\.5 is not an integer"),
    ([5, 9], [0, np.nan], r"page_no row 1 = nan is not an integer"),
])
def test_dense_errors_name_column_and_row(space, page, match):
    with pytest.raises(ValueError, match=match):
        TS.dense(space, page)


def test_locate_errors():
    with pytest.raises(ValueError, match=r"dense row 1 = 310 is out of range; allowed: 0\.\.309"):
        TS.locate([0, 310])


@settings(max_examples=examples(50), deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2**32 - 1), st.integers(1, 300)), min_size=1, max_size=6,
                unique_by=lambda t: t[0]),
       st.data())
def test_dense_locate_round_trip(spaces, data):
    ts = Tablespaces([SpaceSpec(i, n) for i, n in spaces])
    k = data.draw(st.lists(st.integers(0, len(spaces) - 1), min_size=1, max_size=20))
    sid = np.array([spaces[j][0] for j in k])
    pno = np.array([data.draw(st.integers(0, spaces[j][1] - 1)) for j in k])
    d = ts.dense(sid, pno)
    s2, p2 = ts.locate(d)
    assert s2.tolist() == sid.tolist() and p2.tolist() == pno.tolist()
    assert ts.page_space_id[d].tolist() == sid.tolist() and ts.page_no[d].tolist() == pno.tolist()


# ---- instance hash ----------------------------------------------------------------------
def test_instance_of_hand_example():
    ts = Tablespaces.single(200, space_id=5)
    fold = (5 << 20) + 5 + (130 >> 6)
    assert fold == 5242887 and fold % 8 == 7
    assert ts.instance_of(8)[130] == 7
    # the whole aligned 64-page area shares the instance
    inst = ts.instance_of(8)
    assert (inst[128:192] == 7).all() and inst[127] != 7
    # a non-power-of-two count: fold mod 3
    assert ts.instance_of(3)[130] == 5242887 % 3
    assert ts.instance_of(1).max() == 0


@settings(max_examples=examples(40), deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(0, 5), st.integers(1, 1000))
def test_instance_of_power_of_two_is_simplified_formula(space_id, log_n, n_pages):
    n = 1 << log_n
    ts = Tablespaces.single(n_pages, space_id=space_id)
    expected = (space_id + np.arange(n_pages) // 64) % n
    assert ts.instance_of(n).tolist() == expected.tolist()


@settings(max_examples=examples(30), deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 64), st.integers(0, 10**6))
def test_instance_of_matches_unsigned_64_bit_fold(space_id, n, page_no):
    ts = Tablespaces([SpaceSpec(space_id, page_no + 1)])
    fold = ((space_id << 20) + space_id + (page_no >> 6)) % 2**64
    assert ts.instance_of(n)[page_no] == fold % n


@pytest.mark.parametrize("n", [0, 65, -1, 2.0, True])
def test_instance_of_validates(n):
    with pytest.raises(ValueError, match="n_instances"):
        TS.instance_of(n)


# ---- validation -------------------------------------------------------------------------
@pytest.mark.parametrize("make, match", [
    (lambda: SpaceSpec(-1, 10), r"SpaceSpec.space_id=-1 is out of range; allowed: 0\.\.4294967295"),
    (lambda: SpaceSpec(2**32, 10), r"space_id=4294967296 is out of range"),
    (lambda: SpaceSpec(1, 0), r"SpaceSpec\(space_id=1\).n_pages=0 is out of range; allowed: 1\.\."),
    (lambda: SpaceSpec(1, 10, indexes=(IndexSpec("a", [3, 10]),)),
     r"indexes\[0\] \('a'\).pages row 1 = 10 is out of range; allowed: 0\.\.9"),
    (lambda: SpaceSpec(1, 10, indexes=(IndexSpec("a", [1, 2]), IndexSpec("b", range(2, 5)))),
     r"indexes\[1\] \('b'\).pages overlaps an earlier index at page 2"),
    (lambda: SpaceSpec(1, 10, indexes=(IndexSpec("a", [1, 1]),)), r"lists page 1 twice"),
    (lambda: IndexSpec("a", [1.5]), r"IndexSpec\('a'\).pages row 0 = 1.5 is not an integer"),
    (lambda: Tablespaces([SpaceSpec(1, 3), SpaceSpec(1, 4)]), r"spaces\[1\].space_id=1 is a duplicate"),
    (lambda: Tablespaces([SpaceSpec(1, 3, "x"), SpaceSpec(2, 4, "x")]), r"spaces\[1\].name='x'"),
    (lambda: Tablespaces([]), r"at least one SpaceSpec"),
])
def test_validation_errors(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_equality_and_immutability():
    a = Tablespaces([SpaceSpec(1, 5, "a", (IndexSpec("p", range(3)),))])
    b = Tablespaces([SpaceSpec(1, 5, "a", (IndexSpec("p", np.arange(3)),))])
    assert a == b and a != Tablespaces.single(5)
    with pytest.raises(AttributeError):
        a.spaces[0].n_pages = 3
    with pytest.raises(ValueError):
        a.page_no[0] = 1


def test_json_round_trip():
    prev, nxt = np.array([-1, 0, 1, 2]), np.array([1, 2, 3, -1])
    ts = Tablespaces([
        SpaceSpec(5, 200, "orders", (IndexSpec("PRIMARY", range(0, 150, 2)),
                                     IndexSpec("idx", np.array([151, 160, 199])))),
        SpaceSpec(9, 4, leaf_links=(prev, nxt)),
    ])
    text = ts.to_json()
    back = Tablespaces.from_json(text)
    assert back == ts and back.to_json() == text
    assert isinstance(back.spaces[0].indexes[0].pages, range)
    for name in ("page_group", "prev_leaf", "next_leaf", "page_no"):
        assert np.array_equal(getattr(back, name), getattr(ts, name))
    assert back.group_names == ts.group_names
    with pytest.raises(ValueError, match="not a bufsim tablespaces document"):
        Tablespaces.from_json('{"spaces": []}')
