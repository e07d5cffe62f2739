"""Parquet probes of issue 42's "also" list: binary columns, fractional thread labels."""
from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from bufsim import TraceError, read_trace


def test_binary_column_that_is_not_utf8_names_row_and_column(tmp_path):
    p = tmp_path / "t.parquet"
    pq.write_table(pa.table({"page": pa.array([b"1", b"2", b"\xff7"], pa.binary())}), p)
    with pytest.raises(TraceError, match=r"row 2: column 'page' holds bytes that are not UTF-8"):
        read_trace(p)


def test_binary_column_of_utf8_text_is_read(tmp_path):
    p = tmp_path / "t.parquet"
    pq.write_table(pa.table({"page": pa.array([b"1", b"2", b"7"], pa.binary()),
                             "thread": pa.array([b"a", b"b", b"a"], pa.binary())}), p)
    t = read_trace(p)
    assert t.stream_names == ("a", "b")
    assert sorted(int(x) for c in t for x in c.page) == [1, 2, 7]


def test_fractional_thread_is_a_label_not_empty(tmp_path):
    p = tmp_path / "t.parquet"
    pq.write_table(pa.table({"page": [1, 2, 3], "thread": [1.0, 1.5, float("nan")]}), p)
    with pytest.raises(TraceError, match=r"row 2: column 'thread' is empty"):
        read_trace(p)
    pq.write_table(pa.table({"page": [1, 2, 3], "thread": [1.0, 1.5, 1.0]}), p)
    assert read_trace(p).stream_names == ("1", "1.5")
