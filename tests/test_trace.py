"""Chunks, traces, persistence and importing users' CSV/Parquet traces."""
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests._hypothesis import examples

from bufsim.pages import SpaceSpec, Tablespaces
from bufsim.trace import FLAG_AHI, FLAG_MODIFY, Chunk, Trace
from bufsim.trace_import import read_trace

TS = Tablespaces([SpaceSpec(5, 200, "a"), SpaceSpec(9, 100, "b")])


# ---- Chunk ------------------------------------------------------------------------------
def test_chunk_from_arrays_broadcasts_and_casts():
    c = Chunk.from_arrays([3, 4, 3], count=[1, 5, 1], cpu_ns=200, stream=np.int32(2),
                          flags=FLAG_AHI | FLAG_MODIFY)
    assert len(c) == 3 and c.n_gets == 7
    assert c.cpu_ns.tolist() == [200] * 3 and c.stream.tolist() == [2] * 3
    for col in ("page", "count", "cpu_ns", "stream"):
        assert getattr(c, col).dtype == np.int64
    assert c.flags.dtype == np.uint8 and c.flags.tolist() == [3, 3, 3]
    assert Chunk.from_arrays(np.array([1.0, 2.0])).page.tolist() == [1, 2]
    assert Chunk.from_arrays(7).page.tolist() == [7]


@pytest.mark.parametrize("kwargs, match", [
    (dict(page=[1, 2.5]), r"page row 1 = 2\.5 is not an integer"),
    (dict(page=[1, np.nan]), r"page row 1 = nan is not an integer"),
    (dict(page=[1, 2], cpu_ns=[0, np.inf]), r"cpu_ns row 1 = inf is not an integer"),
    (dict(page=[1, -2]), r"page row 1 = -2 is out of range; allowed: >= 0"),
    (dict(page=[1, 2], count=[1, 0]), r"count row 1 = 0 is out of range; allowed: >= 1"),
    (dict(page=[1, 2], cpu_ns=-1), r"cpu_ns row 0 = -1 is out of range"),
    (dict(page=[1, 2], stream=[0, -3]), r"stream row 1 = -3 is out of range"),
    (dict(page=[1, 2], flags=[0, 300]), r"flags row 1 = 300 is out of range; allowed: 0\.\.255"),
    (dict(page=[1, 2], count=[1, 1, 1]), r"count has shape \(3,\); expected a scalar or \(2,\)"),
    (dict(page=[True, False]), r"page must hold integers, got booleans"),
])
def test_chunk_rejects(kwargs, match):
    with pytest.raises(ValueError, match=match):
        Chunk.from_arrays(**kwargs)


def test_chunk_takes_the_access_kind_bits():
    # bits 6-7 are the access kind (FLAG_STEP, FLAG_DESCENT, both = FLAG_NO_RA): every uint8
    # flag value is now a defined combination, and the kind survives construction
    from bufsim.trace import FLAG_DESCENT, FLAG_KIND, FLAG_MASK, FLAG_NO_RA, FLAG_STEP
    assert (FLAG_STEP, FLAG_DESCENT, FLAG_NO_RA, FLAG_KIND, FLAG_MASK) == (64, 128, 192, 192, 255)
    c = Chunk.from_arrays([1, 2, 3, 4], flags=[0, FLAG_STEP, FLAG_DESCENT | 2, FLAG_NO_RA | 16])
    assert c.flags.tolist() == [0, 64, 130, 208]


def test_chunk_validate_names_column_and_first_bad_row():
    c = Chunk.from_arrays([0, 5, 10, 11])
    assert c.validate(12) is c
    with pytest.raises(ValueError, match=r"page row 2 = 10 is out of range; allowed: 0\.\.9"):
        c.validate(10)


# ---- Trace ------------------------------------------------------------------------------
def test_trace_from_arrays_and_passes():
    t = Trace.from_arrays([0, 1, 1, 7], count=[1, 2, 3, 4], stream=[0, 1, 0, 3], chunk_size=3,
                          name="x")
    assert t.tablespaces == Tablespaces.single(8) and t.is_materialized
    assert [len(c) for c in t] == [3, 1]
    assert t.n_gets() == 10 and t.n_events() == 4
    assert t.streams().tolist() == [0, 1, 3]
    m = t.materialize()
    assert m.page.tolist() == [0, 1, 1, 7]
    parts = t.split_streams()
    assert [p.materialize().page.tolist() for p in parts] == [[0, 1], [1], [7]]
    assert [p.materialize().stream.tolist() for p in parts] == [[0, 0], [1], [3]]


def test_trace_rejects_pages_outside_tablespaces():
    with pytest.raises(ValueError, match=r"chunk 1: page row 0 = 300 is out of range; allowed: 0\.\.299"):
        Trace([Chunk.from_arrays([0]), Chunk.from_arrays([300])], TS)


def test_generator_trace_is_reiterable_and_checked_lazily():
    calls = []

    def gen():
        calls.append(1)
        for i in range(3):
            yield Chunk.from_arrays(np.arange(i, i + 2))
    t = Trace(gen, Tablespaces.single(10))
    assert not t.is_materialized
    assert t.n_events() == 6 and t.n_gets() == 6 and len(calls) == 2
    assert t.materialize().page.tolist() == [0, 1, 1, 2, 2, 3]

    bad = Trace(lambda: iter([Chunk.from_arrays([0]), Chunk.from_arrays([10])]),
                Tablespaces.single(10), name="bad")
    with pytest.raises(ValueError, match=r"trace 'bad' chunk 1: page row 0 = 10"):
        bad.n_events()


def test_concat():
    a = Trace.from_arrays([0, 1], tablespaces=TS, name="a")
    b = Trace(lambda: iter([Chunk.from_arrays([2, 3])]), TS, name="b")
    c = Trace.concat([a, b])
    assert c.name == "a+b" and not c.is_materialized
    assert c.materialize().page.tolist() == [0, 1, 2, 3]
    assert Trace.concat([a, a]).is_materialized
    with pytest.raises(ValueError, match=r"traces\[1\] has other tablespaces"):
        Trace.concat([a, Trace.from_arrays([0])])


# ---- save / load ------------------------------------------------------------------------
def _sample_trace(chunk_size=3):
    page = TS.dense([5, 5, 9, 9, 5, 9, 5], [0, 199, 0, 99, 3, 4, 5])
    return Trace.from_arrays(page, count=[1, 2, 3, 4, 5, 6, 7], cpu_ns=[10, 0, 20, 0, 5, 0, 1],
                             stream=[0, 1, 0, 1, 2, 2, 0], flags=[0, 1, 2, 3, 0, 1, 0],
                             tablespaces=TS, chunk_size=chunk_size, name="sample")


@pytest.mark.parametrize("suffix", [".npy", ".parquet"])
def test_save_load_round_trip(tmp_path, suffix):
    t = _sample_trace()
    t.stream_names = ("main", "dump", "x")
    path = t.save(tmp_path / f"tr{suffix}")
    back = Trace.load(path, chunk_size=2)
    assert not back.is_materialized
    assert back.tablespaces == TS and back.name == "sample"
    assert back.stream_names == ("main", "dump", "x")
    assert back.materialize() == t.materialize()
    assert max(len(c) for c in back) <= 2
    assert sorted(p.name for p in tmp_path.iterdir()) == (
        ["tr.npy", "tr.npy.tablespaces.json"] if suffix == ".npy" else ["tr.parquet"])


@pytest.mark.parametrize("suffix", [".npy", ".parquet"])
def test_saved_threads_replay_as_they_did_before_saving(tmp_path, suffix):
    """A trace of two threads saved and loaded again replays each thread on its own
    clock, as before saving (it used to replay as one stream: other counters)."""
    import bufsim
    rng = np.random.default_rng(7)
    n = 3000
    df = pd.DataFrame({"space": np.r_[np.ones(n, int), np.full(n, 2)],
                       "page": np.r_[rng.integers(0, 300, n), np.arange(n) % 2000],
                       "time_ns": np.r_[np.arange(n) * 20_000, np.arange(n) * 20_000 + 5],
                       "thread": np.r_[np.full(n, "oltp"), np.full(n, "scan")]})
    df.sort_values("time_ns", kind="stable").to_csv(tmp_path / "t.csv", index=False)
    t = read_trace(tmp_path / "t.csv")
    back = Trace.load(t.save(tmp_path / f"t{suffix}"), chunk_size=500)
    assert not back.is_materialized and len(back.split_streams()) == 2
    assert [s.n_events() for s in back.split_streams()] == [n, n]
    cfg = bufsim.mysql57(pool_pages=320)
    a, b = bufsim.replay(t, cfg), bufsim.replay(back, cfg)
    assert b.streams["name"].tolist() == ["oltp", "scan"]
    assert a.streams.drop(columns="name").equals(b.streams.drop(columns="name"))
    assert a.totals.equals(b.totals)


def test_parquet_has_one_row_group_per_chunk(tmp_path):
    path = _sample_trace(chunk_size=3).save(tmp_path / "t.parquet")
    assert pq.ParquetFile(path).num_row_groups == 3


def test_npy_without_sidecar_rebuilds_tablespaces(tmp_path):
    path = _sample_trace().save(tmp_path / "t.npy")
    (tmp_path / "t.npy.tablespaces.json").unlink()
    back = Trace.load(path)
    assert back.tablespaces.space_ids.tolist() == [5, 9]
    assert back.tablespaces.sizes.tolist() == [200, 100]  # max page_no + 1
    assert np.array_equal(back.materialize().page, _sample_trace().materialize().page)


def test_parquet_without_metadata(tmp_path):
    table = pa.table({c: pa.array(v, type=pa.uint8() if c == "flags" else pa.int64()) for c, v in
                      dict(space=[3, 3, 1], page_no=[0, 4, 2], count=[1, 1, 2], cpu_ns=[0, 0, 0],
                           stream=[0, 0, 0], flags=[0, 0, 0]).items()})
    pq.write_table(table, tmp_path / "x.parquet")
    back = Trace.load(tmp_path / "x.parquet")
    assert back.tablespaces.space_ids.tolist() == [1, 3]
    assert back.tablespaces.sizes.tolist() == [3, 5]
    assert back.materialize().page.tolist() == [3, 7, 2]


def test_failed_save_keeps_old_file(tmp_path):
    path = _sample_trace().save(tmp_path / "t.parquet")
    before = path.read_bytes()

    def gen():
        yield Chunk.from_arrays([0])
        raise RuntimeError("generator failed")
    with pytest.raises(RuntimeError):
        Trace(gen, TS).save(path)
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["t.parquet"]  # no temp file left


def test_save_load_rejects_unknown_suffix(tmp_path):
    with pytest.raises(ValueError, match=r"suffix '\.csv' is not supported; allowed: \.npy, \.parquet"):
        _sample_trace().save(tmp_path / "t.csv")


def test_empty_trace_round_trip(tmp_path):
    t = Trace([], TS, "empty")
    for suffix in (".npy", ".parquet"):
        back = Trace.load(t.save(tmp_path / f"e{suffix}"))
        assert back.n_events() == 0 and back.tablespaces == TS


@settings(max_examples=examples(25), deadline=None)
@given(st.lists(st.tuples(st.integers(0, 299), st.integers(1, 9), st.integers(0, 10**12),
                          st.integers(0, 3), st.sampled_from([0, 1, 2, 3])), max_size=40),
       st.integers(1, 8))
def test_npy_round_trip_property(tmp_path_factory, rows, chunk_size):
    page, count, cpu, stream, flags = (list(x) for x in zip(*rows)) if rows else ([],) * 5
    t = Trace([Chunk.from_arrays(np.array(page, dtype=np.int64), count or 1, cpu or 0, stream or 0,
                                 flags or 0)] if rows else [], TS)
    path = t.save(tmp_path_factory.mktemp("p") / "t.npy")
    assert Trace.load(path, chunk_size=chunk_size).materialize() == t.materialize()


# ---- read_trace -------------------------------------------------------------------------
def _csv(tmp_path, text, name="t.csv"):
    p = tmp_path / name
    p.write_text(text)
    return p


def test_read_csv_time_ms_threads_and_run_length(tmp_path):
    p = _csv(tmp_path, "space,page,time_ms,thread\n"
                       "5,3,0.0,a\n5,3,0.5,a\n5,4,2.0,a\n9,1,2.5,b\n5,4,3.0,b\n5,4,3.5,b\n"
                       "5,9,3.0,a\n")
    t = read_trace(p, cpu_ns_per_get=7)
    c = t.materialize()
    assert t.stream_names == ("a", "b") and t.stream_start_ns.tolist() == [0, 2_500_000]
    ts = t.tablespaces  # built from the data: spaces 5 (10 pages), 9 (2 pages)
    assert ts.space_ids.tolist() == [5, 9] and ts.sizes.tolist() == [10, 2]
    assert c.page.tolist() == ts.dense([5, 5, 9, 5, 5], [3, 4, 1, 4, 9]).tolist()
    assert c.count.tolist() == [2, 1, 1, 2, 1]
    assert c.stream.tolist() == [0, 0, 1, 1, 0]
    # a: (0 -> 2.0 ms)/2 gets, (2.0 -> 3.0 ms), last access; b: (2.5 -> 3.0), last run of 2
    assert c.cpu_ns.tolist() == [1_000_000, 1_000_000, 500_000, (500_000 + 7) // 2, 7]
    assert t.name == "t"


def test_zero_latency_timeline_is_reproduced(tmp_path):
    rng = np.random.default_rng(0)
    n = 200
    thread = rng.integers(0, 3, n)
    times = np.sort(rng.integers(0, 10**9, n))
    page = rng.integers(0, 4, n)
    pd.DataFrame(dict(space=1, page=page, time_ns=times, thread=thread)).to_csv(
        tmp_path / "x.csv", index=False)
    t = read_trace(tmp_path / "x.csv", chunk_size=16)
    c = t.materialize()
    for s, label in enumerate(t.stream_names):
        own = times[thread == int(label)]
        sel = c.stream == s
        # replay clock of the stream: start + cumulative count * cpu; total = last - first
        total = int((c.count[sel] * c.cpu_ns[sel]).sum())
        assert abs(total - (own[-1] - own[0])) <= c.count[sel].sum()  # integer division only
        assert t.stream_start_ns[s] == own[0] - times[0]


def test_read_without_time_or_thread(tmp_path):
    p = _csv(tmp_path, "page,space\n1,2\n1,2\n0,2\n1,2\n")
    t = read_trace(p, cpu_ns_per_get=100)
    c = t.materialize()
    assert c.count.tolist() == [2, 1, 1] and c.cpu_ns.tolist() == [100] * 3
    assert c.stream.tolist() == [0] * 3 and t.stream_names is None and t.stream_start_ns is None


def test_run_length_merges_across_read_blocks(tmp_path):
    p = _csv(tmp_path, "space,page,thread\n" + "1,0,a\n" * 5 + "1,0,b\n" + "1,1,b\n" * 4)
    c = read_trace(p, chunk_size=2).materialize()
    assert c.count.tolist() == [5, 1, 4]


def test_whitespace_extra_columns_and_blank_lines(tmp_path):
    p = _csv(tmp_path, " space , page ,comment, thread\n"
                       " 5 ,  3 , hello, t1 \n\n5,4,x,t1\n\n")
    t = read_trace(p)
    c = t.materialize()
    assert c.page.tolist() == t.tablespaces.dense([5, 5], [3, 4]).tolist()
    assert t.stream_names == ("t1",)


def test_thread_labels_are_text(tmp_path):
    p = _csv(tmp_path, "space,page,thread\n1,0,NA\n1,0,None\n1,0,01\n1,0,1\n")
    t = read_trace(p)
    assert t.stream_names == ("NA", "None", "01", "1")
    assert t.materialize().stream.tolist() == [0, 1, 2, 3]


@pytest.mark.parametrize("chunk_size", [1, 2, 3, 100])
def test_exact_nanoseconds(tmp_path, chunk_size):
    # the blank line makes pandas read the block's time_ns as floats: re-read exactly
    base = 1_700_000_000_000_000_001
    p = _csv(tmp_path, f"space,page,time_ns\n1,0,{base}\n1,1,{base + 3}\n\n1,2,{base + 10}\n"
                       f"1,3,{base + 11}\n")
    c = read_trace(p, chunk_size=chunk_size).materialize()
    assert c.cpu_ns.tolist() == [3, 7, 1, 0]


@pytest.mark.parametrize("body, match", [
    ("space,page\n1,2\n1,-3\n", r"row 1 \(line 3\): column 'page' value -3 is negative"),
    ("space,page\n1,2\n1,3.5\n", r"row 1 \(line 3\): column 'page' value 3\.5 is not an integer"),
    ("space,page\n1,2\n1,abc\n", r"row 1 \(line 3\): column 'page' value 'abc' is not a number"),
    ("space,page\n1,2\n1,NaN\n", r"row 1 \(line 3\): column 'page' is empty or NaN"),
    ("space,page\n1,2\n,4\n", r"row 1 \(line 3\): column 'space' is empty or NaN"),
    ("space,page,thread\n1,2,a\n1,4\n", r"row 1 \(line 3\): column 'thread' is empty"),
    ("space,page\n1,2\n\n-1,x\n", r"row 1 \(line 4\): column 'space' value -1 is negative"),
    ("space,page\n1,2\n1,inf\n", r"row 1 \(line 3\): column 'page' value inf is not finite"),
    ("space,page,time_ns\n1,2,5\n1,2,-5\n",
     r"row 1 \(line 3\): column 'time_ns' value -5 is negative"),
    ("space,page,time_ns\n1,2,5\n1,2,5.5\n",
     r"row 1 \(line 3\): column 'time_ns' value 5\.5 is not an integer"),
    ("space,page,time_ms,thread\n1,2,5,a\n1,2,4,b\n1,3,4.5,a\n",
     r"row 2 \(line 4\): column 'time_ms' value 4\.5 goes backwards in thread 'a': "
     r"its previous access \(row 0\)"),
    ("space,page,time_ms\n1,2,5\n1,3,4\n",
     r"row 1 \(line 3\): column 'time_ms' value 4 goes backwards in the trace"),
    ("space,time_ms\n1,2\n", r"missing required column 'page'; found columns: \['space', 'time_ms'\]"),
    ("space\n1\n", r"missing required column 'page'"),  # without 'space': space 0
    ("space,page,time_ns,time_ms\n1,2,3,4\n", r"both columns 'time_ns' and 'time_ms' are present"),
    ("space,page,thread\n", r"no data rows"),
    ("", r"the file is empty"),
])
def test_read_csv_rejects(tmp_path, body, match):
    p = _csv(tmp_path, body)
    with pytest.raises(ValueError, match=match):
        read_trace(p)


def test_backwards_time_across_threads_is_fine(tmp_path):
    p = _csv(tmp_path, "space,page,time_ns,thread\n1,0,100,a\n1,1,50,b\n1,2,150,a\n1,3,60,b\n")
    c = read_trace(p, cpu_ns_per_get=1).materialize()
    assert c.cpu_ns.tolist() == [50, 10, 1, 1]


def test_first_bad_row_wins_across_columns(tmp_path):
    # the page error on row 2 comes before the space error on row 3, whatever the column order
    p = _csv(tmp_path, "space,page\n1,0\n1,1\n1,x\n-1,0\n")
    with pytest.raises(ValueError, match=r"row 2 \(line 4\): column 'page'"):
        read_trace(p)
    # a semantic error (page beyond the given space) before a parse error is the one reported
    p = _csv(tmp_path, "space,page\n1,0\n1,12\n1,x\n")
    with pytest.raises(ValueError, match=r"row 1 \(line 3\): column 'page' value 12 is beyond the "
                                         r"size of space 1 \(10 pages; allowed: 0\.\.9\)"):
        read_trace(p, tablespaces=Tablespaces.single(10, space_id=1))


def test_errors_in_later_blocks_have_the_right_row(tmp_path):
    p = _csv(tmp_path, "space,page\n" + "1,0\n" * 7 + "1,0.25\n")
    with pytest.raises(ValueError, match=r"row 7 \(line 9\)"):
        read_trace(p, chunk_size=3)


def test_given_tablespaces(tmp_path):
    ts = Tablespaces([SpaceSpec(3, 10), SpaceSpec(1, 4)])
    p = _csv(tmp_path, "space,page\n1,3\n3,9\n")
    assert read_trace(p, tablespaces=ts).materialize().page.tolist() == [13, 9]
    p = _csv(tmp_path, "space,page\n1,3\n2,0\n")
    with pytest.raises(ValueError, match=r"row 1 \(line 3\): column 'space' value 2 is not one of "
                                         r"the given tablespaces"):
        read_trace(p, tablespaces=ts)


def test_read_parquet(tmp_path):
    df = pd.DataFrame(dict(space=[1, 1, 2], page=[0, 0, 5], time_ns=[0, 10, 30], thread=[7, 7, 8],
                           other=["x", "y", "z"]))
    df.to_parquet(tmp_path / "u.parquet")
    t = read_trace(tmp_path / "u.parquet", cpu_ns_per_get=3)
    c = t.materialize()
    assert t.stream_names == ("7", "8") and c.count.tolist() == [2, 1]
    assert c.cpu_ns.tolist() == [(10 + 3) // 2, 3]


@pytest.mark.parametrize("col, values, match", [
    ("page", pa.array([0, None, 1], type=pa.int64()), r"row 1: column 'page' is missing \(null\)"),
    ("page", pa.array([0.0, 1.5, 1.0]), r"row 1: column 'page' value 1\.5 is not an integer"),
    ("page", pa.array([0, -1, 1]), r"row 1: column 'page' value -1 is negative"),
    ("space", pa.array(["1", "x", "1"]), r"row 1: column 'space' value 'x' is not a number"),
    ("thread", pa.array([3, None, 3]), r"row 1: column 'thread' is empty"),
])
def test_read_parquet_rejects(tmp_path, col, values, match):
    cols = dict(space=pa.array([1, 1, 1]), page=pa.array([0, 1, 2]), thread=pa.array([3, 3, 3]))
    cols[col] = values
    pq.write_table(pa.table(cols), tmp_path / "u.parquet")
    with pytest.raises(ValueError, match=match):
        read_trace(tmp_path / "u.parquet")


def test_read_trace_rejects_unknown_file_type(tmp_path):
    p = _csv(tmp_path, "space,page\n1,2\n", name="t.json")
    with pytest.raises(ValueError, match=r"file type '\.json' is not supported; allowed: \.csv"):
        read_trace(p)


def test_read_gzipped_csv(tmp_path):
    import gzip
    p = tmp_path / "t.csv.gz"
    p.write_bytes(gzip.compress(b"space,page\n1,2\n1,2\n"))
    assert read_trace(p).materialize().count.tolist() == [2]


@settings(max_examples=examples(30), deadline=None)
@given(st.lists(st.tuples(st.integers(1, 3), st.integers(0, 4), st.integers(0, 50),
                          st.sampled_from(["a", "b", "c"])), min_size=1, max_size=40),
       st.integers(1, 7))
def test_read_trace_expands_back_to_the_rows(tmp_path_factory, rows, chunk_size):
    space, page, dt, thread = (np.array(x) for x in zip(*rows))
    time = np.cumsum(dt)  # non-decreasing overall, hence within every thread
    p = tmp_path_factory.mktemp("r") / "t.csv"
    pd.DataFrame(dict(thread=thread, space=space, page=page, time_ns=time)).to_csv(p, index=False)
    t = read_trace(p, chunk_size=chunk_size, cpu_ns_per_get=5)
    c = t.materialize()
    assert all(len(x) <= chunk_size for x in t)
    s2, p2 = t.tablespaces.locate(np.repeat(c.page, c.count))
    labels = np.array(t.stream_names)[np.repeat(c.stream, c.count)]
    assert s2.tolist() == space.tolist() and p2.tolist() == page.tolist()
    assert labels.tolist() == thread.tolist()
    # no two adjacent events share (stream, page): runs are maximal
    assert not ((c.stream[1:] == c.stream[:-1]) & (c.page[1:] == c.page[:-1])).any()
    for s, label in enumerate(t.stream_names):
        own = time[thread == label]
        sel = c.stream == s
        total = int((c.count[sel] * c.cpu_ns[sel]).sum())
        assert own[-1] - own[0] + 5 - c.count[sel].sum() < total <= own[-1] - own[0] + 5


def test_a_chunk_keeps_its_columns_ranges_and_names_the_first_bad_row():
    c = Chunk(np.array([5, 2, 9]), np.array([1, 3, 2]), np.array([7, 0, 4]),
              np.array([1, 1, 1]), np.array([0, 0, 0], dtype=np.uint8))
    assert [c.span(col) for col in ("page", "count", "cpu_ns", "stream")] == \
        [(2, 9), (1, 3), (0, 7), (1, 1)]
    ro = np.array([3, 8, 1])
    ro.flags.writeable = False          # (a Parquet file's column: NumPy's min and max)
    assert Chunk(ro, np.ones(3, np.int64), np.zeros(3, np.int64), np.zeros(3, np.int64),
                 np.zeros(3, np.uint8)).span("page") == (1, 8)
    with pytest.raises(ValueError, match=r"count row 2 = 0 is out of range; allowed: >= 1"):
        Chunk(np.array([5, 2, 9]), np.array([1, 3, 0]), np.zeros(3, np.int64),
              np.zeros(3, np.int64), np.zeros(3, np.uint8))
    with pytest.raises(ValueError, match=r"stream row 0 = -1 is out of range; allowed: >= 0"):
        Chunk(np.array([5, 2, 9]), np.ones(3, np.int64), np.zeros(3, np.int64),
              np.array([-1, 0, 0]), np.zeros(3, np.uint8))
    with pytest.raises(ValueError, match=r"page row 2 = 9 is out of range; allowed: 0..8"):
        c.validate(9)
