"""bufsim.blktrace: blkparse's default text output -> page trace (hand-written sample).

The sample (tests/data/blkparse_sample.txt) has device 8,16 with the tablespace
file at 1 MiB (sector 2048), 16 KiB pages (32 sectors); the expected pages are
worked out by hand in the comments.
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

import bufsim
from bufsim.blktrace import convert_blkparse, parse_blkparse

SAMPLE = Path(__file__).parent / "data" / "blkparse_sample.txt"
MIB = 2**20


def parse(**kw):
    with open(SAMPLE) as fh:
        return parse_blkparse(fh, **{"file_offset": MIB, **kw})


def test_queued_reads_map_to_pages():
    df, st = parse()
    # Q RS 2048+32 -> page 0; Q R 2112+64 -> bytes 32K..64K-1 -> pages 2, 3;
    # Q RA 4096+256 -> bytes 1M..1M+128K-1 -> pages 64..71; Q R 1024+8 lies before the
    # file; Q R 2056+8 -> byte 4096 -> page 0; the 8,0 device's Q -> page 0.
    assert df["page"].tolist() == [0, 2, 3] + list(range(64, 72)) + [0, 0]
    assert df["time_ns"].tolist() == [0, 300_000, 300_000] + [500_000] * 8 + [700_000, 900_000]
    assert df["thread"].tolist() == [4162, 4170, 4170] + [4171] * 8 + [4162, 4162]
    assert (df["space"] == 0).all()
    assert st["events"] == 5 and st["rows"] == 13 and st["outside"] == 1
    assert st["skipped_lines"] == 8          # the summary (the P plug is another action)


def test_filters_actions_writes_device_and_page_size():
    df, _ = parse(device="8,16")
    assert len(df) == 12 and df["time_ns"].max() == 700_000
    df, _ = parse(writes=True)
    assert 1 in df["page"].tolist() and len(df) == 14      # Q WS 2080+32 -> page 1
    df, st = parse(actions="D")
    assert df["page"].tolist() == [0] and st["events"] == 1
    df, _ = parse(page_size=4096, file_offset=0, space=5)
    # 2048 * 512 / 4096 = 256: the first request covers 4 pages of 4 KiB
    assert df["page"].tolist()[:4] == [256, 257, 258, 259] and (df["space"] == 5).all()


@pytest.mark.parametrize("kw, msg", [
    ({"page_size": 3000}, "--page-size=3000 is out of range"),
    ({"file_offset": 100}, "--file-offset=100 is not a multiple of 512"),
    ({"actions": "Qz"}, "--action='Qz'"),
    ({"device": "sda"}, "--device='sda' is not MAJOR,MINOR"),
    ({"space": -1}, "--space=-1 is out of range"),
])
def test_bad_arguments(kw, msg):
    with pytest.raises(ValueError, match=msg.replace("(", r"\(").replace(")", r"\)")):
        parse(**kw)


def test_malformed_range_names_the_line():
    lines = SAMPLE.read_text().splitlines()[:3] + \
        ["  8,16   0       10     0.001000000  4162  Q   R 2048 - 32 [mysqld]"]
    with pytest.raises(ValueError, match="line 4: field 'sector \\+ count' is '2048 - 32"):
        parse_blkparse(lines, source="x")


def test_convert_writes_a_trace_read_trace_accepts(tmp_path):
    out = tmp_path / "p.csv"
    st = convert_blkparse(SAMPLE, out, file_offset=MIB, space=3)
    assert st["rows"] == 13
    t = bufsim.read_trace(out)
    assert t.n_gets() == 13
    assert list(t.stream_names) == ["4162", "4170", "4171"]
    # nothing found -> error, and nothing written
    with pytest.raises(ValueError, match="no Q read request inside the file"):
        convert_blkparse(SAMPLE, tmp_path / "none.csv", file_offset=1024 * MIB)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.csv"]
    pd.testing.assert_frame_equal(pd.read_csv(out)[["page"]],
                                  parse()[0][["page"]])
