"""read_trace: formats, column maps, count and flags, streaming, and the trace probes of issue 17.

Every format reads the same small trace to the same events; every hostile input is
a ``bufsim.TraceError`` (a ValueError) naming the file and, for a bad cell, the
row and column, never another exception.
"""
import gzip
import string
import tracemalloc

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import zstandard
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests._hypothesis import examples

import bufsim
from bufsim import FLAG_MODIFY, FLAG_STMT_END, TraceError, read_trace
from bufsim.trace_import import ORACLE_DTYPE

PAGES = [3, 3, 7, 1, 1, 1, 7]
SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def _events(t):
    c = t.materialize()
    return c.page.tolist(), c.count.tolist(), c.cpu_ns.tolist(), c.flags.tolist()


def _write(tmp_path, fmt):
    df = pd.DataFrame({"blk": PAGES})
    if fmt == "csv":
        p = tmp_path / "t.csv"
        df.to_csv(p, index=False)
    elif fmt == "csv.gz":
        p = tmp_path / "t.csv.gz"
        p.write_bytes(gzip.compress(df.to_csv(index=False).encode()))
    elif fmt == "tsv.zst":
        p = tmp_path / "t.tsv.zst"
        p.write_bytes(zstandard.ZstdCompressor().compress(df.to_csv(index=False, sep="\t").encode()))
    elif fmt == "parquet":
        p = tmp_path / "t.parquet"
        df.to_parquet(p)
    elif fmt == "npz":
        p = tmp_path / "t.npz"
        np.savez_compressed(p, blk=np.array(PAGES, dtype=np.uint32))
    elif fmt in ("bin", "oracleGeneral.zst", "bin.gz"):
        rec = np.zeros(len(PAGES), dtype=ORACLE_DTYPE)
        rec["obj_id"], rec["time"], rec["size"] = PAGES, np.arange(len(PAGES)), 4096
        raw = rec.tobytes()
        p = tmp_path / f"t.{fmt}"
        p.write_bytes(zstandard.ZstdCompressor().compress(raw) if fmt.endswith("zst")
                      else gzip.compress(raw) if fmt.endswith("gz") else raw)
    else:  # text
        p = tmp_path / "t.txt"
        p.write_text("".join(f"{x}\n" for x in PAGES))
    return p


@pytest.mark.parametrize("fmt", ["csv", "csv.gz", "tsv.zst", "parquet", "npz", "bin",
                                 "oracleGeneral.zst", "bin.gz", "txt"])
@pytest.mark.parametrize("chunk_size", [1, 2, 100])
def test_every_format_reads_the_same_events(tmp_path, fmt, chunk_size):
    p = _write(tmp_path, fmt)
    cols = {"page": "blk"} if fmt in ("csv", "csv.gz", "tsv.zst", "parquet", "npz") else None
    t = read_trace(p, columns=cols, cpu_ns_per_get=5, chunk_size=chunk_size)
    assert t.tablespaces.space_ids.tolist() == [0] and t.tablespaces.sizes.tolist() == [8]
    assert _events(t) == ([3, 7, 1, 7], [2, 1, 3, 1], [5] * 4, [0] * 4)
    assert all(len(c) <= chunk_size for c in t)
    assert not t.is_materialized and _events(t) == _events(t)  # lazy and re-iterable


def test_format_argument_overrides_the_suffix(tmp_path):
    p = tmp_path / "pages.log"
    p.write_text("5\n5\n6\n")
    assert _events(read_trace(p, format="text"))[:2] == ([5, 6], [2, 1])
    q = tmp_path / "trace.dat"
    q.write_text("page;x\n1;2\n")
    with pytest.raises(TraceError, match=r"file type '\.dat' is not supported"):
        read_trace(q)


@pytest.mark.parametrize("name, match", [
    ("t.csv.parquet", r"name several formats \(csv, parquet\); pass format="),
    ("t.txt.csv", r"name several formats"),
    ("t.gz", r"file type '\.gz' is not supported"),
    ("t", r"file type '\(none\)' is not supported"),
    ("t.parquet.gz", r"a compressed parquet file \(\.gz\) is not supported"),
])
def test_unknown_or_ambiguous_suffix_is_an_error(tmp_path, name, match):
    p = tmp_path / name
    p.write_bytes(b"page\n1\n")
    with pytest.raises(TraceError, match=match):
        read_trace(p)


def test_column_map_and_names_in_errors(tmp_path):
    p = tmp_path / "t.csv"
    p.write_text("sp,blk,page\n4,1,99\n4,x,99\n")
    with pytest.raises(TraceError, match=r"t\.csv: row 1 \(line 3\): column 'blk' \(page\) value 'x' "
                                         r"is not a number"):
        read_trace(p, columns={"page": "blk", "space": "sp"})
    p.write_text("sp,blk,page\n4,1,99\n4,2,99\n")
    t = read_trace(p, columns={"page": "blk", "space": "sp"})
    assert t.tablespaces.space_ids.tolist() == [4] and _events(t)[0] == [1, 2]
    with pytest.raises(TraceError, match=r"columns maps 'thread' to 'tid', but the file has no such "
                                         r"column; found columns: \['sp', 'blk', 'page'\]"):
        read_trace(p, columns={"page": "blk", "thread": "tid"})
    for bad, match in (({"pg": "blk"}, r"'pg' is not a canonical column name"),
                       ({"page": "blk", "space": "blk"}, r"both map to the file's column 'blk'"),
                       ({"page": 3}, r"columns\['page'\] must be a non-empty column name"),
                       (["page"], r"columns must be a mapping")):
        with pytest.raises(ValueError, match=match):
            read_trace(p, columns=bad)
    with pytest.raises(ValueError, match=r"columns= does not apply to format 'text'"):
        read_trace(p, format="text", columns={"page": "blk"})


def test_count_is_consecutive_gets(tmp_path):
    # count n = n gets of the page in a row; runs merge with neighbouring rows of the page
    p = tmp_path / "t.csv"
    p.write_text("space,page,count,time_ns\n1,0,3,0\n1,0,2,30\n1,5,1,60\n1,0,4,100\n")
    t = read_trace(p, cpu_ns_per_get=8)
    c = t.materialize()
    assert c.count.tolist() == [5, 1, 4] and c.n_gets == 10
    # (60 - 0) // 5, (100 - 60) // 1, last run: (100 - 100 + 8) // 4
    assert c.cpu_ns.tolist() == [12, 40, 2]
    r = bufsim.replay(t, bufsim.mysql56(pool_pages=400))
    assert r.totals["NUMBER_PAGES_GET"] == 10


def test_flags_column_and_statement_ends(tmp_path):
    p = tmp_path / "t.csv"
    p.write_text("page,flags\n1,0\n1,2\n1,2\n1,8\n1,8\n1,16\n2,0\n")
    c = read_trace(p).materialize()
    # equal flags merge, a row carrying STMT_END ends its event
    assert c.count.tolist() == [1, 2, 1, 1, 1, 1]
    assert c.flags.tolist() == [0, FLAG_MODIFY, FLAG_STMT_END, FLAG_STMT_END, 16, 0]
    for bad, match in (("256", r"value 256 has bits outside the defined flags"),
                       ("-1", r"value -1 is negative"), ("1.5", r"value 1\.5 is not an integer")):
        p.write_text(f"page,flags\n1,0\n1,{bad}\n")
        with pytest.raises(TraceError, match=r"row 1 \(line 3\): column 'flags'" + ".*" + match[6:]):
            read_trace(p)


@pytest.mark.parametrize("value, match", [("0", r"value 0 is out of range; allowed: 1\.\.4294967295"),
                                          ("2.5", r"value 2\.5 is not an integer"),
                                          ("", r"is empty")])
def test_count_rejects(tmp_path, value, match):
    p = tmp_path / "t.csv"
    p.write_text(f"page,count\n1,1\n2,{value}\n")
    with pytest.raises(TraceError, match=r"t\.csv: row 1 \(line 3\): column 'count'.*" + match):
        read_trace(p)


# ---- probes of issue 17 -------------------------------------------------------------------
def test_duplicated_column_names_are_an_error(tmp_path):
    p = tmp_path / "t.csv"
    p.write_text("space,page,page\n1,2,3\n")
    with pytest.raises(TraceError, match=r"t\.csv: column 'page' appears twice"):
        read_trace(p)
    p.write_text("space, page ,page\n1,2,3\n")  # equal once stripped
    with pytest.raises(TraceError, match=r"column 'page' appears twice"):
        read_trace(p)
    q = tmp_path / "t.parquet"
    pq.write_table(pa.Table.from_arrays([pa.array([1]), pa.array([2]), pa.array([3])],
                                        names=["space", "page", "page"]), q)
    with pytest.raises(TraceError, match=r"t\.parquet: column 'page' appears twice"):
        read_trace(q)


@pytest.mark.parametrize("chunk_size", [1, 2, 100])
def test_time_ns_above_2_53_keeps_precision(tmp_path, chunk_size):
    base = 2**53
    p = tmp_path / "t.csv"
    p.write_text(f"page,time_ns\n1,{base + 1}\n2,{base + 2}\n3,{base + 5}\n")
    assert _events(read_trace(p, chunk_size=chunk_size))[2] == [1, 3, 0]
    # with a blank cell pandas reads floats: the block is re-read exactly
    p.write_text(f"page,time_ns\n1,{base + 1}\n\n2,{base + 2}\n3,{base + 5}\n")
    assert _events(read_trace(p, chunk_size=chunk_size))[2] == [1, 3, 0]
    q = tmp_path / "t.parquet"
    pd.DataFrame({"page": [1, 2], "time_ns": np.array([base + 1, base + 4])}).to_parquet(q)
    assert _events(read_trace(q))[2] == [3, 0]


@pytest.mark.parametrize("value", [".5", "0.5", "1e20", "9223372036854775808"])
def test_time_ns_fraction_or_overflow_is_rejected(tmp_path, value):
    p = tmp_path / "t.csv"
    p.write_text(f"page,time_ns\n1,0\n1,{value}\n")
    with pytest.raises(TraceError, match=r"row 1 \(line 3\): column 'time_ns'.*(not an integer|too large)"):
        read_trace(p)


@pytest.mark.parametrize("col, value, match", [
    ("page", 2**32, r"column 'page' value 4294967296 is out of range; allowed: 0\.\.4294967295"),
    ("space", 2**32, r"column 'space' value 4294967296 is out of range; allowed: 0\.\.4294967295"),
    ("page", 2**64 - 1, r"column 'page' value 18446744073709551615 is too large"),
    ("space", -1, r"column 'space' value -1 is negative"),
])
@pytest.mark.parametrize("kind", ["csv", "parquet"])
def test_large_page_or_space_id_names_file_row_column(tmp_path, col, value, match, kind):
    df = pd.DataFrame({"space": np.array([1, 1], dtype=object), "page": np.array([0, 1], dtype=object)})
    df.loc[1, col] = value
    if kind == "csv":
        p = tmp_path / "t.csv"
        df.to_csv(p, index=False)
        where = r"t\.csv: row 1 \(line 3\): "
    else:
        p = tmp_path / "t.parquet"
        typ = pa.uint64() if value >= 2**63 else pa.int64()
        pq.write_table(pa.table({c: pa.array(df[c].tolist(), type=typ) for c in df}), p)
        where = r"t\.parquet: row 1: "
    with pytest.raises(TraceError, match=where + match):
        read_trace(p)


def test_oracle_id_above_2_32_names_row_and_column(tmp_path):
    rec = np.zeros(3, dtype=ORACLE_DTYPE)
    rec["obj_id"] = [1, 2**40, 3]
    p = tmp_path / "t.oracleGeneral"
    rec.tofile(p)
    with pytest.raises(TraceError, match=r"row 1: column 'obj_id' \(page\) value 1099511627776 is "
                                         r"out of range"):
        read_trace(p)
    p.write_bytes(rec.tobytes()[:-5])
    with pytest.raises(TraceError, match=r"row 2: a truncated record of 19 bytes"):
        read_trace(p)


@pytest.mark.parametrize("make, match", [
    (lambda d: (d / "t.csv.gz").write_bytes(b"space,page\n1,2\n") and d / "t.csv.gz",
     r"cannot read as csv \(gzip-compressed\): BadGzipFile"),
    (lambda d: (d / "t.csv").mkdir() or d / "t.csv", r"is a directory"),
    (lambda d: (d / "t.csv").write_bytes(b"space,page\n1,\xff\n") and d / "t.csv",
     r"cannot read as csv: UnicodeDecodeError"),
    (lambda d: (d / "t.csv").write_bytes(b"sp\xe9ce,page\n1,2\n") and d / "t.csv",
     r"cannot read as csv: UnicodeDecodeError"),
    (lambda d: (d / "t.parquet").write_bytes(b"PAR1 not really") and d / "t.parquet",
     r"cannot read as parquet"),
    (lambda d: (d / "t.npz").write_bytes(b"PK not a zip") and d / "t.npz",
     r"cannot read as npz: BadZipFile"),
    (lambda d: (d / "t.tsv.zst").write_bytes(b"garbage") and d / "t.tsv.zst",
     r"cannot read as tsv \(zstd-compressed\): ZstdError"),
])
def test_unreadable_files_are_trace_errors(tmp_path, make, match):
    p = make(tmp_path)
    with pytest.raises(TraceError, match=match):
        read_trace(p)


def test_missing_file_and_bad_arguments_are_value_errors(tmp_path):
    with pytest.raises(TraceError, match=r"no trace file at this path") as e:
        read_trace(tmp_path / "nope.csv")
    assert isinstance(e.value, FileNotFoundError)
    p = tmp_path / "t.csv"
    p.write_text("page\n1\n")
    for kw, match in ((dict(chunk_size=None), r"chunk_size must be an integer"),
                      (dict(chunk_size=0), r"chunk_size=0 is out of range"),
                      (dict(cpu_ns_per_get=1.5), r"cpu_ns_per_get must be an integer .*1\.5"),
                      (dict(format=3), r"format=3 is unknown"),
                      (dict(tablespaces="x"), r"tablespaces must be a Tablespaces")):
        with pytest.raises(ValueError, match=match):
            read_trace(p, **kw)
    with pytest.raises(ValueError, match=r"path must be a str or path-like, got None"):
        read_trace(None)


def test_npz_arrays_must_agree(tmp_path):
    p = tmp_path / "t.npz"
    np.savez(p, page=np.arange(3), space=np.arange(2))
    with pytest.raises(TraceError, match=r"array 'page' has 3 rows but 'space' has 2"):
        read_trace(p)
    np.savez(p, page=np.arange(6).reshape(2, 3))
    with pytest.raises(TraceError, match=r"array 'page' must be a one-dimensional array"):
        read_trace(p)
    np.savez(p, page=np.array([1, 2]), thread=np.array(["a", "b"]))
    t = read_trace(p)
    # several threads: held in memory (the file is not read again), split by thread
    assert t.stream_names == ("a", "b") and len(t.split_streams()) == 2
    p.unlink()
    assert t.n_events() == 2 and [x.n_events() for x in t.split_streams()] == [1, 1]


# ---- streaming ----------------------------------------------------------------------------
def test_a_single_thread_trace_streams_in_bounded_memory(tmp_path):
    n = 400_000
    rng = np.random.default_rng(7)
    page = rng.integers(0, 50_000, n)
    p = tmp_path / "t.csv"
    pd.DataFrame({"space": 2, "page": page, "time_ns": np.arange(n) * 10}).to_csv(p, index=False)
    t = read_trace(p, chunk_size=8192)
    assert not t.is_materialized
    tracemalloc.start()
    gets = events = 0
    for c in t:
        gets += c.n_gets
        events += len(c)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert gets == n and events == n - int((page[1:] == page[:-1]).sum())
    # the whole trace as events is 41 bytes x 400k = 16 MB; streaming holds a few chunks
    assert peak < 4_000_000, peak
    c = t.materialize()
    assert np.repeat(c.page, c.count).tolist() == t.tablespaces.dense(2, page).tolist()
    assert (c.cpu_ns[:-1] == 10).all() and c.cpu_ns[-1] == 10 * (c.count[-1] - 1) // c.count[-1]


# ---- properties: any input is a trace or a ValueError with a message ----------------------
_CELL = st.one_of(st.integers(-3, 2**33).map(str), st.sampled_from(
    ["", " ", "x", "1.5", ".5", "nan", "NA", "inf", "-0", "1e3", "2**3", "\"4\"", "18446744073709551616"]))
_NAMES = st.sampled_from(["space", "page", "time_ns", "time_ms", "thread", "statement", "count",
                          "flags", "blk", "", " page", "page "])


def _check_result(p, **kw):
    try:
        t = read_trace(p, **kw)
        c = t.materialize()
    except ValueError as e:  # TraceError included
        assert str(e)
        return None
    assert c.n_gets >= 1 and (c.count >= 1).all()
    assert (c.page < t.tablespaces.n_pages).all()
    return c


@settings(max_examples=examples(150), **SETTINGS)
@given(st.lists(_NAMES, min_size=1, max_size=4),
       st.lists(st.lists(_CELL, min_size=0, max_size=5), max_size=6),
       st.sampled_from([",", "\t"]), st.integers(1, 3))
def test_any_csv_is_a_trace_or_a_value_error(tmp_path, header, rows, sep, chunk_size):
    p = tmp_path / ("t.csv" if sep == "," else "t.tsv")
    p.write_text("\n".join([sep.join(header)] + [sep.join(r) for r in rows]) + "\n")
    _check_result(p, chunk_size=chunk_size)


@settings(max_examples=examples(150), **SETTINGS)
@given(st.binary(max_size=200), st.sampled_from(["t.csv", "t.csv.gz", "t.txt", "t.bin", "t.npz",
                                                 "t.parquet", "t.tsv.zst", "t.oracleGeneral.zst"]))
def test_any_bytes_are_a_trace_or_a_value_error(tmp_path, data, name):
    p = tmp_path / name
    p.write_bytes(data)
    _check_result(p)


@settings(max_examples=examples(60), **SETTINGS)
@given(st.dictionaries(st.sampled_from(["page", "space", "count", "flags", "thread", "time_ms"]),
                       st.one_of(st.lists(st.integers(-2, 2**34), min_size=2, max_size=2),
                                 st.lists(st.floats(allow_nan=True), min_size=2, max_size=2),
                                 st.lists(st.text(string.printable, max_size=3), min_size=2,
                                          max_size=2),
                                 st.lists(st.booleans(), min_size=2, max_size=2)),
                       min_size=1, max_size=4),
       st.sampled_from(["parquet", "npz"]))
def test_any_table_is_a_trace_or_a_value_error(tmp_path, cols, fmt):
    p = tmp_path / f"t.{fmt}"
    if fmt == "parquet":
        pq.write_table(pa.table({k: pa.array(v) for k, v in cols.items()}), p)
    else:
        np.savez(p, **{k: np.array(v) for k, v in cols.items()})
    c = _check_result(p)
    if c is not None:
        assert "page" in cols


@settings(max_examples=examples(60), **SETTINGS)
@given(st.one_of(st.none(), st.integers(), st.text(max_size=5), st.dictionaries(
    st.text(max_size=6), st.one_of(st.text(max_size=4), st.integers()), max_size=3)),
    st.one_of(st.none(), st.sampled_from(["csv", "tsv", "text", "oracle", "npz", "parquet", "CSV"]),
              st.integers()))
def test_any_arguments_are_a_trace_or_a_value_error(tmp_path, columns, fmt):
    p = tmp_path / "t.csv"
    p.write_text("page,blk\n1,2\n")
    _check_result(p, columns=columns, format=fmt)


@pytest.mark.parametrize("data", [b"\r\x00", b"page\r\x00x\n1\n", b"\x00\x00"])
def test_odd_bytes_in_the_header_are_trace_errors(tmp_path, data):
    p = tmp_path / "t.csv"
    p.write_bytes(data)
    with pytest.raises(TraceError):
        read_trace(p)


@pytest.mark.parametrize("name, data", [("t.npy", b"garbage"), ("t.parquet", b"garbage"),
                                        ("t.npy", None)])
def test_trace_load_errors_are_trace_errors(tmp_path, name, data):
    p = tmp_path / name
    if data is None:
        p.mkdir()
    else:
        p.write_bytes(data)
    with pytest.raises(TraceError, match=r"(cannot read as a bufsim|is a directory)"):
        bufsim.Trace.load(p)


@settings(max_examples=examples(60), **SETTINGS)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(1, 3), st.integers(0, 20),
                          st.sampled_from([0, 0, 2, 8]), st.sampled_from(["q1", "q2"])),
                min_size=1, max_size=30),
       st.integers(1, 5))
def test_streamed_events_equal_the_in_memory_ones(tmp_path, rows, chunk_size):
    # one thread streams (all but the last event emitted per block); the same rows as
    # thread 'a' of a two-thread file are resolved in memory: stream 0 must be equal
    page, count, dt, flags, stmt = (list(x) for x in zip(*rows))
    df = pd.DataFrame(dict(page=page, count=count, time_ns=np.cumsum(dt), flags=flags,
                           statement=stmt, thread="a"))
    p = tmp_path / "one.csv"
    df.to_csv(p, index=False)
    one = read_trace(p, chunk_size=chunk_size, cpu_ns_per_get=3)
    assert not one.is_materialized
    q = tmp_path / "two.csv"
    extra = pd.DataFrame(dict(page=[9], count=[1], time_ns=[0], flags=[0], statement=["z"],
                              thread=["b"]))
    pd.concat([df, extra]).to_csv(q, index=False)
    two = read_trace(q, chunk_size=chunk_size, cpu_ns_per_get=3)
    assert len(two.split_streams()) == 2   # several threads: in memory, split by thread
    c1, c2 = one.materialize(), two.materialize()
    a = c2.take(c2.stream == 0)
    for col in ("count", "cpu_ns", "flags"):
        assert getattr(c1, col).tolist() == getattr(a, col).tolist(), col
    assert one.tablespaces.locate(c1.page)[1].tolist() == two.tablespaces.locate(a.page)[1].tolist()
    assert c1.n_gets == sum(count)


@pytest.mark.parametrize("sep,suffix", [(",", "csv"), ("\t", "tsv")])
@pytest.mark.parametrize("chunk_size", [1, 1 << 20])
def test_a_row_with_more_fields_than_the_header_is_an_error(tmp_path, sep, suffix, chunk_size):
    # pandas' usecols would drop the extra field silently; the reader must name the row
    p = tmp_path / f"t.{suffix}"
    p.write_text(sep.join(["page", "space"]) + "\n" + "\n".join(
        sep.join(r) for r in [["1", "0"], ["2", "0"], ["3", "0", "7"], ["4", "0"]]) + "\n")
    with pytest.raises(TraceError, match=r"row 2 \(line 4\): 3 fields, but the header names 2"):
        read_trace(p, chunk_size=chunk_size)
    # the first data row too (pandas only warns there, and drops the extra field)
    p.write_text(sep.join(["page", "space"]) + "\n" + sep.join(["1", "0", "9"]) + "\n"
                 + sep.join(["2", "0"]) + "\n")
    with pytest.raises(TraceError, match=r"row 0 \(line 2\): more fields than the header "
                                         r"names \(2 columns\)"):
        read_trace(p, chunk_size=chunk_size)


def test_unused_columns_are_still_read_and_ignored(tmp_path):
    p = tmp_path / "t.csv"
    p.write_text("page,note,space\n1,a b,0\n2,,0\n3,x,0\n")
    t = read_trace(p)
    c = t.materialize()
    assert c.page.tolist() == [1, 2, 3]
