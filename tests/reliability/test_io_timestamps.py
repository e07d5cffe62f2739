"""Time columns are decimal text parsed into exact integer nanoseconds (issue 42, item 8):
epoch milliseconds with microsecond fractions keep their 1,000 ns gaps, and a value that is
not a whole number of nanoseconds is an error naming row and column, above 2**53 as below."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from bufsim import TraceError, read_trace


def _cpu(trace):
    return np.concatenate([c.cpu_ns for c in trace])


def test_epoch_ms_with_microseconds_keeps_1000_ns_gaps(tmp_path):
    p = tmp_path / "t.csv"
    base = 1_732_000_000_000      # epoch ms (2024)
    rows = [f"{i % 7},{base}.{i * 1:03d}{0:03d}" for i in range(6)]   # base.000000, .001000...
    p.write_text("page,time_ms\n" + "\n".join(rows) + "\n")
    assert _cpu(read_trace(p, cpu_ns_per_get=5))[:5].tolist() == [1000] * 5
    # and with microsecond digits that a float64 cannot hold: 1_732_000_000_000.000001 ms
    p.write_text(f"page,time_ms\n1,{base}.000001\n2,{base}.000002\n3,{base}.000004\n")
    assert _cpu(read_trace(p, cpu_ns_per_get=5)).tolist() == [1, 2, 5]


@pytest.mark.parametrize("value", ["9007199254740993.0", "9007199254740993.5",
                                   "1000.5", "12345678901234567.25"])
def test_time_ns_fraction_is_refused_or_exact(tmp_path, value):
    p = tmp_path / "t.csv"
    p.write_text(f"page,time_ns\n1,0\n2,{value}\n3,{int(value.split('.')[0]) + 10}\n")
    if value.endswith(".0"):     # a whole number written with a zero fraction: exact
        cpu = _cpu(read_trace(p))
        assert cpu.tolist() == [int(value[:-2]), 10, 0]
    else:
        with pytest.raises(TraceError, match=r"row 1 \(line 3\): column 'time_ns' value "
                           + value.replace(".", r"\.") + " is not an integer"):
            read_trace(p)


def test_time_ms_beyond_nanoseconds_is_refused(tmp_path):
    p = tmp_path / "t.csv"
    p.write_text("page,time_ms\n1,0\n2,1.0000005\n")
    with pytest.raises(TraceError, match=r"row 1 \(line 3\): column 'time_ms' value 1\.0000005 "
                       "is not a whole number of nanoseconds"):
        read_trace(p)
    p.write_text("page,time_ms\n1,0\n2,1.0000010000\n")   # zeros after the 6th decimal: exact
    assert _cpu(read_trace(p)).tolist() == [1_000_001, 0]


def test_parquet_float_and_string_times(tmp_path):
    q = tmp_path / "t.parquet"
    pd.DataFrame({"page": [1, 2, 3], "time_ms": ["1732000000000.000001", "1732000000000.000002",
                                                 "1732000000000.000004"]}).to_parquet(q)
    assert _cpu(read_trace(q, cpu_ns_per_get=5)).tolist() == [1, 2, 5]
    pd.DataFrame({"page": [1, 2], "time_ms": [0.001, 0.5]}).to_parquet(q)   # shortest decimals
    assert _cpu(read_trace(q)).tolist() == [499_000, 0]


def test_vectorised_on_a_million_rows(tmp_path):
    """The parser works on whole blocks (no per-row Python): a 10**6-row block of
    fractional ms parses, and every gap is exact."""
    from bufsim.trace_import import _parse_time
    n = 1_000_000
    us = np.arange(n, dtype=np.int64) * 3
    text = pd.Series([f"{1_732_000_000_000 + u // 1000}.{u % 1000:03d}" for u in us])
    v, bad, _ = _parse_time(text, 10**6)
    assert not bad.any()
    assert (np.diff(v) == 3000).all()


@pytest.mark.parametrize("chunk_size", [1, 2, 3, 100])
def test_fraction_in_a_later_block(tmp_path, chunk_size):
    """Integer blocks are read as integers; a fraction (or blank cell) in a later block
    switches the file to text from the start, the blocks already given kept once."""
    p = tmp_path / "t.csv"
    p.write_text("page,time_ms\n1,0\n2,1\n3,2\n\n4,3.000001\n5,4\n6,9007199254.740993\n")
    tr = read_trace(p, chunk_size=chunk_size, cpu_ns_per_get=7)
    assert _cpu(tr).tolist() == [10**6, 10**6, 1_000_001, 999_999, 9_007_199_254_740_993 - 4_000_000, 7]
    p.write_text("page,time_ns\n1,0\n2,1\n3,2\n4,3\n5,4.5\n")
    with pytest.raises(TraceError, match=r"row 4 \(line 6\): column 'time_ns' value 4\.5 is not"):
        read_trace(p, chunk_size=chunk_size)
