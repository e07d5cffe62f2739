"""Statement boundaries in imported traces: the optional ``statement`` column of read_trace.

The last get of each statement (a run of a thread's rows with one label) must end
an event flagged FLAG_STMT_END, whatever the run-length encoding and the read
blocks; ``PoolConfig(cleaner_activity="statement")`` relies on these marks.
"""
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests._hypothesis import examples

from bufsim import CostModel, DeviceModel, mysql56, replay
from bufsim.pages import SpaceSpec, Tablespaces
from bufsim.trace import FLAG_STMT_END
from bufsim.trace_import import read_trace

E = FLAG_STMT_END

# two threads interleaved: a runs q1, q2, then q1 again (a new statement); b runs x, y
ROWS = pd.DataFrame({
    "space":     [1, 1, 1, 1, 1, 1, 1, 1, 1],
    "page":      [0, 0, 1, 0, 1, 2, 2, 2, 3],
    "thread":    ["a", "a", "b", "a", "b", "a", "b", "b", "a"],
    "statement": ["q1", "q1", "x", "q2", "x", "q2", "y", "y", "q1"],
})
# events: a:0 x2 (ends q1) | b:1 | a:0 (q2 starts: not merged into a's q1) | b:1 (ends x)
#         | a:2 (ends q2) | b:2 x2 (ends y, b's last) | a:3 (ends the second q1, a's last)
EXPECTED = dict(page=[0, 1, 0, 1, 2, 2, 3], count=[2, 1, 1, 1, 1, 2, 1],
                stream=[0, 1, 0, 1, 0, 1, 0], flags=[E, 0, 0, E, E, E, E])


def _check(c, expected):
    for col, want in expected.items():
        assert getattr(c, col).tolist() == want, col


@pytest.mark.parametrize("chunk_size", [1, 2, 3, 4, 100])
def test_csv_two_threads_interleaved(tmp_path, chunk_size):
    p = tmp_path / "t.csv"
    ROWS.to_csv(p, index=False)
    t = read_trace(p, chunk_size=chunk_size)
    assert t.stream_names == ("a", "b")
    _check(t.materialize(), EXPECTED)


@pytest.mark.parametrize("labels", [
    ROWS["statement"].tolist(),
    [10, 10, 10, 11, 10, 11, 12, 12, 10],      # integer labels; b's first label is a's too
])
def test_parquet_two_threads_interleaved(tmp_path, labels):
    df = ROWS.assign(statement=labels)
    df.to_parquet(tmp_path / "t.parquet")
    _check(read_trace(tmp_path / "t.parquet", chunk_size=2).materialize(), EXPECTED)


def test_without_the_column_no_flags(tmp_path):
    p = tmp_path / "t.csv"
    ROWS.drop(columns="statement").to_csv(p, index=False)
    c = read_trace(p).materialize()
    # a's rows 1 and 3 (page 0) are not consecutive, so the events are the same; no flags
    _check(c, dict(EXPECTED, flags=[0] * 7))


@pytest.mark.parametrize("chunk_size", [1, 2, 3, 100])
@pytest.mark.parametrize("kind", ["csv", "parquet"])
def test_boundary_between_identical_pages_is_kept(tmp_path, chunk_size, kind):
    # one thread (no thread column), five gets of one page in three statements
    df = pd.DataFrame(dict(space=5, page=[7] * 5, statement=["s1", "s1", "s2", "s2", "s1"]))
    p = tmp_path / f"t.{kind}"
    df.to_csv(p, index=False) if kind == "csv" else df.to_parquet(p)
    c = read_trace(p, chunk_size=chunk_size, cpu_ns_per_get=3).materialize()
    _check(c, dict(count=[2, 2, 1], stream=[0, 0, 0], flags=[E, E, E], cpu_ns=[3, 3, 3]))
    q = tmp_path / f"u.{kind}"
    df = df.drop(columns="statement")
    df.to_csv(q, index=False) if kind == "csv" else df.to_parquet(q)
    _check(read_trace(q, chunk_size=chunk_size).materialize(), dict(count=[5], flags=[0]))


def test_time_column_with_statements(tmp_path):
    # the split run keeps the CPU times of each part: 1 ms, then 2 ms to the next access
    p = tmp_path / "t.csv"
    p.write_text("space,page,time_ms,statement\n1,0,0,s\n1,0,1,t\n1,1,3,t\n")
    _check(read_trace(p, cpu_ns_per_get=5).materialize(),
           dict(count=[1, 1, 1], cpu_ns=[1_000_000, 2_000_000, 5], flags=[E, 0, E]))


def test_labels_are_text(tmp_path):
    # NA and None are labels, as for thread; padding is stripped
    p = tmp_path / "t.csv"
    p.write_text("space,page,statement\n1,0,NA\n1,1, NA \n1,2,None\n1,3,none\n")
    _check(read_trace(p).materialize(), dict(count=[1, 1, 1, 1], flags=[0, E, E, E]))


@pytest.mark.parametrize("body, match", [
    ("space,page,statement\n1,0,s\n1,1,\n", r"row 1 \(line 3\): column 'statement' is empty"),
    ("space,page,statement\n1,0,s\n1,1,   \n", r"row 1 \(line 3\): column 'statement' is empty"),
    ("space,page,thread,statement\n1,0,a,s\n\n1,1,b\n",
     r"row 1 \(line 4\): column 'statement' is empty"),
    # the first bad row wins; on one row the thread column is reported first
    ("space,page,thread,statement\n1,0,a,s\n1,1,,\n",
     r"row 1 \(line 3\): column 'thread' is empty"),
    ("space,page,statement\n1,0,s\n1,x,t\n1,1,\n", r"row 1 \(line 3\): column 'page'"),
])
def test_csv_rejects(tmp_path, body, match):
    p = tmp_path / "t.csv"
    p.write_text(body)
    with pytest.raises(ValueError, match=match):
        read_trace(p)


def test_csv_rejects_in_a_later_block(tmp_path):
    p = tmp_path / "t.csv"
    p.write_text("space,page,statement\n" + "1,0,s\n" * 5 + "1,0,\n")
    with pytest.raises(ValueError, match=r"row 5 \(line 7\): column 'statement' is empty"):
        read_trace(p, chunk_size=2)


@pytest.mark.parametrize("values", [pa.array(["s", None, "s"]), pa.array([1, None, 1]),
                                    pa.array([1.0, float("nan"), 1.0])])
def test_parquet_rejects(tmp_path, values):
    pq.write_table(pa.table(dict(space=[1, 1, 1], page=[0, 1, 2], statement=values)),
                   tmp_path / "t.parquet")
    with pytest.raises(ValueError, match=r"row 1: column 'statement' is empty"):
        read_trace(tmp_path / "t.parquet")


@settings(max_examples=examples(40), deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2), st.sampled_from(["a", "b"]), st.sampled_from("xyz")),
                min_size=1, max_size=40),
       st.integers(1, 7))
def test_flags_sit_on_each_statement_last_get(tmp_path_factory, rows, chunk_size):
    page, thread, stmt = (np.array(x) for x in zip(*rows))
    p = tmp_path_factory.mktemp("s") / "t.csv"
    pd.DataFrame(dict(space=1, page=page, thread=thread, statement=stmt)).to_csv(p, index=False)
    t = read_trace(p, chunk_size=chunk_size)
    c = t.materialize()
    # the reference, row by row: a row ends a statement if its thread's next row has
    # another label or the thread has no next row
    want = np.zeros(len(rows), dtype=bool)
    for label in ("a", "b"):
        own = np.flatnonzero(thread == label)
        want[own] = np.append(stmt[own][1:] != stmt[own][:-1], True)
    # the trace, expanded back to rows: the flag belongs to the last get of its event
    got = np.zeros(c.n_gets, dtype=bool)
    got[np.cumsum(c.count) - 1] = (c.flags & E) != 0
    assert got.tolist() == want.tolist()
    labels = np.array(t.stream_names)[np.repeat(c.stream, c.count)]
    assert labels.tolist() == thread.tolist()
    assert t.tablespaces.locate(np.repeat(c.page, c.count))[1].tolist() == page.tolist()
    assert ((c.flags & ~np.uint8(E)) == 0).all()


# ---- replay with cleaner_activity="statement" ---------------------------------------------
FREE = CostModel(0, 0, 0, 0)
INSTANT = DeviceModel.instant()


def _unlinked(n):
    """No leaf links, so linear read-ahead never fires (as in test_innodb_rules)."""
    none = np.full(n, -1)
    return Tablespaces([SpaceSpec(1, n, "t", leaf_links=(none, none))])


def _long_select_csv(folder, with_statement):
    """test_innodb_rules._long_select as a user's trace: a 6 s read-only SELECT of 6,000
    pages at 1 ms each over a 2,048-page pool, then a second statement: a 1.5 s pause on
    page 5998 (resident) and one more get of page 0."""
    page = np.concatenate([np.arange(6000), [5998, 0]])
    time_ms = np.concatenate([np.arange(6001), [7500]])
    df = pd.DataFrame(dict(space=1, page=page, time_ms=time_ms))
    if with_statement:
        df["statement"] = ["select"] * 6000 + ["pause"] * 2
    folder.mkdir()
    df.to_csv(folder / "t.csv", index=False)   # one file name: the trace (stream) name
    return read_trace(folder / "t.csv", tablespaces=_unlinked(6000), cpu_ns_per_get=1_000_000)


def test_replay_statement_cleaner_sees_the_imported_ends(tmp_path):
    marked = _long_select_csv(tmp_path / "marked", True)
    plain = _long_select_csv(tmp_path / "plain", False)
    cm, cp = marked.materialize(), plain.materialize()
    # the same events; only the flags differ: the ends of both statements
    for col in ("page", "count", "cpu_ns", "stream"):
        assert np.array_equal(getattr(cm, col), getattr(cp, col)), col
    assert np.flatnonzero(cm.flags).tolist() == [5999, 6001] and not cp.flags.any()
    assert cm.cpu_ns[6000] == 1_500_000_000

    def run(trace, activity):
        return replay(trace, mysql56(pool_pages=2048, cost=FREE, device=INSTANT,
                                     cleaner_activity=activity))
    # under 'get' every get is activity and the marks are inert: identical replays
    g_m, g_p = run(marked, "get"), run(plain, "get")
    pd.testing.assert_frame_equal(g_m.stats, g_p.stats)
    pd.testing.assert_frame_equal(g_m.streams, g_p.streams)
    assert g_m.cleaner_passes == g_p.cleaner_passes == 7
    # under 'statement' the unmarked trace leaves the cleaner idle (InnoDB would not: its
    # statements end), the marked one gets one pass, at 6 s, after the SELECT ended
    s_m, s_p = run(marked, "statement"), run(plain, "statement")
    assert (s_m.cleaner_passes, s_p.cleaner_passes) == (1, 0)
    m, p = s_m.totals, s_p.totals
    assert m["NUMBER_PAGES_GET"] == p["NUMBER_PAGES_GET"] == 6002
    # the difference is the cleaner's: idle, the SELECT's thread evicts 3,952 victims, page
    # 5998 stays resident and page 0 evicts one more; the pass frees 1,024 tail pages,
    # among them 5998 and 0, so both later gets miss and take a free block each (as in
    # test_innodb_rules.test_cleaner_runs_only_after_activity)
    assert (p["evictions"], p["Innodb_buffer_pool_reads"], p["FREE_BUFFERS"]) == (3953, 6001, 0)
    assert (m["evictions"], m["Innodb_buffer_pool_reads"], m["FREE_BUFFERS"]) == \
        (3952 + 1024, 6002, 1024 - 2)
