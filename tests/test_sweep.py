"""bufsim.sweep: the size grammar, the grid, parallel == serial, errors, provenance, dask."""
from __future__ import annotations

import concurrent.futures as cf
import hashlib
import json

import numpy as np
import pandas as pd
import pytest

import bufsim
from bufsim.sweeps import (expand_grid, load_trace, parse_sizes, parse_values, sweep,
                          trace_sha256)


# ---- grammar ----------------------------------------------------------------------------
def test_parse_sizes_geometric_list_pages_and_steps():
    assert parse_sizes("64M:4G:x2") == [4096 * 2**k for k in range(7)]
    assert parse_sizes("64M:200M:x2") == [4096, 8192]          # 256M would pass the stop
    assert parse_sizes("64M,128M,1G") == [4096, 8192, 65536]
    assert parse_sizes("8192") == [8192]
    assert parse_sizes("64M:256M:+64M") == [4096, 8192, 12288, 16384]
    assert parse_sizes("1GB, 8192, 512M") == [65536, 8192, 32768]
    assert parse_sizes("8192,512M") == [8192, 32768]
    assert parse_sizes("128M,8192") == [8192]                   # duplicates dropped
    assert parse_sizes("10M:20M:x1.5") == [640, 960]


@pytest.mark.parametrize("spec, part", [
    ("abc", "'abc' is not a size"), ("", "empty"), ("64M:1M:x2", "ends below its start"),
    ("64M:1G:x1", "must be a number > 1"), ("64M:1G", "START:STOP"), ("64M:1G:*2", "xFACTOR"),
    ("-5", "not a positive size"), ("1K", "smaller than one 16 KiB page"),
    ("1M:1T:+16K", "more than 10000"),
])
def test_parse_sizes_errors_name_the_argument(spec, part):
    with pytest.raises(ValueError, match="--pool") as e:
        parse_sizes(spec, "--pool")
    assert part in str(e.value)


def test_parse_values():
    assert parse_values("0,1000", "t") == [0, 1000]
    assert parse_values("5:95:+30", "p", 5, 95) == [5, 35, 65, 95]
    with pytest.raises(ValueError, match=r"--old-blocks-pct: 99 is out of range; allowed: 5\.\.95"):
        parse_values("37,99", "--old-blocks-pct", 5, 95)
    with pytest.raises(ValueError, match="--instances: 'x' is not an integer"):
        parse_values("1,x", "--instances", 1, 64)


def test_expand_grid_product_order_and_unknown_field():
    pts = expand_grid({"pool_pages": [1, 2], "old_blocks_time_ms": [0, 1000, 5]})
    assert pts[:4] == [{"pool_pages": 1, "old_blocks_time_ms": 0},
                       {"pool_pages": 1, "old_blocks_time_ms": 1000},
                       {"pool_pages": 1, "old_blocks_time_ms": 5},
                       {"pool_pages": 2, "old_blocks_time_ms": 0}]
    assert len(pts) == 6
    assert expand_grid([{"instances": 2}, {"preset": "mysql55"}]) == [{"instances": 2},
                                                                      {"preset": "mysql55"}]
    with pytest.raises(ValueError, match="grid field 'pool_size' is unknown; allowed: preset"):
        expand_grid({"pool_size": [1]})
    with pytest.raises(ValueError, match=r"grid\['instances'\] is empty"):
        expand_grid({"instances": []})


# ---- sweeps --------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def trace():
    return bufsim.synthetic.zipf_trace(40_000, 3_000, alpha=0.9, seed=3, cpu_ns=2_000)


@pytest.fixture(scope="module")
def csv_trace(tmp_path_factory):
    rng = np.random.default_rng(5)
    path = tmp_path_factory.mktemp("sweep") / "t.csv"
    pd.DataFrame({"space": np.repeat([1, 2], 6000),
                  "page": np.concatenate([rng.integers(0, 900, 6000),
                                          np.arange(6000) // 3])}).to_csv(path, index=False)
    return path


GRID = {"pool_pages": [320, 1024], "old_blocks_time_ms": [0, 1000]}


def _numbers(df):
    return df.drop(columns=["trace"])


def test_serial_sweep_equals_direct_replays(trace):
    df = sweep(trace, GRID, jobs=1, preset="mysql55")
    assert len(df) == 4 and df["error"].isna().all()
    for _, row in df.iterrows():
        res = bufsim.replay(trace, bufsim.mysql55(pool_pages=int(row["pool_pages"]),
                                                  old_blocks_time_ms=int(row["old_blocks_time_ms"])))
        for k in ("NUMBER_PAGES_GET", "NUMBER_PAGES_READ", "PAGES_MADE_YOUNG",
                  "PAGES_NOT_MADE_YOUNG", "evictions"):
            assert row[k] == int(res.totals[k]), k
        assert row["hit_ratio"] == res.hit_ratio
        assert row["preset"] == "mysql55"
    # the settings matter on this trace, so the rows are not all alike
    assert df["hit_ratio"].nunique() > 1


def test_process_pool_gives_the_serial_numbers(trace, csv_trace):
    serial = sweep(trace, GRID, jobs=1)
    parallel = sweep(trace, GRID, jobs=2)
    pd.testing.assert_frame_equal(serial, parallel)
    # a path is re-read by each worker: same numbers as the Trace read here
    by_path = sweep(csv_trace, GRID, jobs=2)
    in_memory = sweep(bufsim.read_trace(csv_trace), GRID, jobs=1)
    cols = [c for c in by_path.columns if c not in ("trace", "trace_sha256")]
    pd.testing.assert_frame_equal(by_path[cols], in_memory[cols])


def test_given_executor_is_used_and_left_open(trace):
    with cf.ThreadPoolExecutor(2) as ex:
        df = sweep(trace, GRID, executor=ex)
        assert ex.submit(lambda: 7).result() == 7
    pd.testing.assert_frame_equal(df, sweep(trace, GRID, jobs=1))


class _SubmitOnly:
    """Anything with submit() whose futures have result(), like a dask Client."""

    class _Done:
        def __init__(self, value):
            self.value = value

        def result(self):
            return self.value

    def __init__(self):
        self.calls = 0

    def submit(self, fn, *args):
        self.calls += 1
        return self._Done(fn(*args))


def test_any_object_with_submit_works(trace):
    ex = _SubmitOnly()
    df = sweep(trace, GRID, executor=ex)
    assert ex.calls == 4
    pd.testing.assert_frame_equal(df, sweep(trace, GRID, jobs=1))


def test_a_failing_configuration_is_recorded_and_the_rest_go_on(trace):
    grid = [{"pool_pages": 1024}, {"pool_pages": 100}, {"pool_pages": 640, "instances": 2}]
    df = sweep(trace, grid, jobs=2)
    assert df["error"].isna().tolist() == [True, False, True]
    assert "pool_pages=100 is out of range" in df["error"].iloc[1]
    assert pd.isna(df["NUMBER_PAGES_GET"].iloc[1])
    assert df["NUMBER_PAGES_GET"].iloc[0] == df["NUMBER_PAGES_GET"].iloc[2] == trace.n_gets()
    assert df["instances"].tolist()[2] == 2


def test_bad_arguments_fail_before_any_work(trace, tmp_path):
    with pytest.raises(ValueError, match="grid field 'buffer' is unknown"):
        sweep(trace, {"buffer": [1]})
    with pytest.raises(ValueError, match="preset='mysql99' is unknown"):
        sweep(trace, GRID, preset="mysql99")
    with pytest.raises(ValueError, match="jobs=0 is out of range"):
        sweep(trace, GRID, jobs=0)
    with pytest.raises(ValueError, match="executor must have a submit method"):
        sweep(trace, GRID, executor=object())
    with pytest.raises(FileNotFoundError, match="no trace file"):
        sweep(tmp_path / "missing.csv", GRID)


def test_provenance_columns(trace, csv_trace):
    df = sweep(csv_trace, {"pool_pages": [320]}, jobs=1)
    assert df["trace_sha256"].iloc[0] == hashlib.sha256(csv_trace.read_bytes()).hexdigest()
    assert df["bufsim_version"].iloc[0] == bufsim.__version__
    assert json.loads(df["params"].iloc[0]) == {"pool_pages": 320, "preset": "mysql56"}
    commit = df["git_commit"].iloc[0]
    assert commit is None or len(commit.split("-")[0]) == 40
    # a Trace is hashed by its chunks: equal events, equal hash; one get more, another
    assert trace_sha256(trace) == trace_sha256(bufsim.Trace(list(trace), trace.tablespaces))
    other = bufsim.Trace.from_arrays(np.append(trace.materialize().page, 0),
                                     tablespaces=trace.tablespaces)
    assert trace_sha256(other) != trace_sha256(trace)


def test_progress_bar_has_a_total(trace, capsys):
    sweep(trace, {"pool_pages": [320, 640, 960]}, jobs=1, progress=True)
    err = capsys.readouterr().err
    assert "3/3" in err and "sweep" in err


def test_load_trace_reads_saved_and_csv_traces(trace, tmp_path, csv_trace):
    trace.save(tmp_path / "t.npy")
    assert load_trace(tmp_path / "t.npy").materialize() == trace.materialize()
    assert load_trace(csv_trace).n_gets() == 12_000


def test_dask_local_cluster_gives_identical_results(trace, csv_trace, tmp_path):
    distributed = pytest.importorskip("distributed")
    from bufsim.cli import main
    serial = sweep(trace, GRID, jobs=1)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  host="127.0.0.1", dashboard_address=None,
                                  silence_logs=50) as cluster:
        with distributed.Client(cluster) as client:
            df = sweep(trace, GRID, executor=client)
        # the command line's --executor dask://HOST:PORT, on a trace file
        addr = cluster.scheduler_address.replace("tcp://", "dask://")
        out = tmp_path / "d.csv"
        assert main(["sweep", str(csv_trace), "--pool", "320,1024", "--old-blocks-time",
                     "0,1000", "--executor", addr, "-o", str(out), "--no-chart",
                     "--no-progress"]) == 0
    pd.testing.assert_frame_equal(df, serial)
    by_cli = pd.read_csv(out)
    by_cli = by_cli[by_cli["stream"] == "all"]
    local = sweep(csv_trace, GRID, jobs=1)
    assert by_cli["NUMBER_PAGES_READ"].tolist() == local["NUMBER_PAGES_READ"].tolist()
    assert by_cli["hit_ratio"].tolist() == local["hit_ratio"].tolist()


def test_per_stream_rows_are_the_replays_streams():
    # two threads: a hot point-lookup stream and a sequential scan of a larger table
    rng = np.random.default_rng(11)
    hot = rng.integers(0, 400, 3000)
    scan = 1000 + np.arange(3000)
    page = np.empty(6000, dtype=np.int64)
    page[0::2], page[1::2] = hot, scan
    stream = np.tile([0, 1], 3000)
    ts = bufsim.Tablespaces([bufsim.SpaceSpec(1, 1000, "small"), bufsim.SpaceSpec(2, 4000, "big")])
    tr = bufsim.Trace.from_arrays(page, stream=stream, cpu_ns=1000, tablespaces=ts, name="two")
    tr.stream_names = ("oltp", "scan")
    df = sweep(tr, {"pool_pages": [320, 640]}, jobs=1, preset="mysql56", streams=True)
    assert df["stream"].tolist() == ["all", "oltp", "scan"] * 2
    for size, g in df.groupby("pool_pages", sort=False):
        res = bufsim.replay(tr, bufsim.mysql56(pool_pages=int(size)))
        per = g.set_index("stream")
        for s in res.streams.itertuples():
            for k in ("gets", "misses", "read_ahead", "io_wait_ns", "elapsed_ns"):
                assert per.loc[s.name, k] == getattr(s, k), (size, s.name, k)
        assert per.loc["all", "gets"] == per.loc[["oltp", "scan"], "gets"].sum() == 6000
        assert per.loc["all", "read_ahead"] == int(res.totals["NUMBER_PAGES_READ_AHEAD"])
        # each thread reads its own tablespace: per space, that thread's gets and reads
        sp = res.spaces.set_index("name")
        assert sp.loc["small", "gets"] == per.loc["oltp", "gets"]
        assert sp.loc["small", "misses"] == per.loc["oltp", "misses"]
        assert sp.loc["big", "misses"] == per.loc["scan", "misses"]
        assert sp["pages"].sum() == int(res.contents["pages"].sum())
        # the scan's gets trigger most of the linear read-ahead
        assert per.loc["scan", "read_ahead"] > 10 * per.loc["oltp", "read_ahead"]
        assert per.loc["oltp", "NUMBER_PAGES_READ"] is pd.NA
    # worker processes replay the same two streams (the saved trace is split again)
    pd.testing.assert_frame_equal(
        sweep(tr, {"pool_pages": [320, 640]}, jobs=2, preset="mysql56", streams=True), df)
