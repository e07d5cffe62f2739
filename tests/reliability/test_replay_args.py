"""Issue 42: replay() arguments refused with clear errors, sampling from the first
stream's start (item 7: start_ns=[2**62] with sampling never returned), exact
Trace.n_gets past 2**63, and one compiled kernel for CSV and Parquet traces."""
import signal

import numpy as np
import pandas as pd
import pytest

import bufsim
from bufsim import engine
from bufsim.pages import SpaceSpec, Tablespaces
from bufsim.trace import Trace

SPACES = Tablespaces([SpaceSpec(1, 900, "t1")])
CFG = bufsim.mysql56(pool_pages=512)


def trace(n=40, cpu_ns=100_000_000):
    return Trace.from_arrays(np.arange(n) % 700, cpu_ns=cpu_ns, tablespaces=SPACES)


@pytest.fixture
def deadline():
    """Fail (instead of hanging, as the old sampling loop did) after 60 s."""
    def alarm(signum, frame):
        raise TimeoutError("replay did not return within 60 s")
    old = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(60)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)


def test_sampling_starts_at_the_first_stream_start(deadline):
    t0 = 2**62
    res = bufsim.replay(trace(80), CFG, start_ns=[t0], sample_every_ns=10**9)
    times = res.timeline["time_ns"].tolist()
    end = int(res.streams["end_ns"].iloc[0])
    # 80 gets of 0.1 s CPU each (plus I/O): samples at t0 + 1 s, + 2 s, ..., then the end
    assert t0 + 8 * 10**9 < end < t0 + 9 * 10**9
    assert times[:7] == [t0 + k * 10**9 for k in range(1, 8)] and times[-1] == end
    assert len(times) <= 9
    # a first sample beyond the int64 clock: only the final one, no overflow
    near = 2**63 - 1 - 10**8
    res = bufsim.replay(trace(3, 0), CFG, start_ns=[near], sample_every_ns=10**9)
    assert len(res.timeline) == 1 and res.timeline["time_ns"].iloc[0] >= near


@pytest.mark.parametrize("bad, match", [
    (dict(trace=None), r"trace must be a bufsim.Trace .* got None \(NoneType\)"),
    (dict(trace=[trace(), "x"]), r"trace\[1\] must be a bufsim.Trace, got 'x' \(str\)"),
    (dict(start_ns=5), r"start_ns must be a sequence of one integer >= 0 per stream \(1 streams\)"
                       r", got 5 \(int\)"),
    (dict(start_ns=[float("nan")]), r"start_ns\[0\] must be an integer .*got nan \(float\)"),
    (dict(start_ns=[1, 2]), r"start_ns holds 2 times for 1 streams"),
    (dict(start_ns=[-1]), r"start_ns\[0\]=-1 is out of range"),
])
def test_replay_arguments_refused_clearly(bad, match):
    kw = dict(trace=trace(3), config=CFG)
    kw.update(bad)
    with pytest.raises(ValueError, match=match):
        bufsim.replay(kw.pop("trace"), kw.pop("config"), **kw)


def test_trace_n_gets_is_exact_past_2_63():
    t = Trace.from_arrays([0, 1, 2], count=[2**62, 2**62, 5], tablespaces=SPACES)
    assert t.n_gets() == 2**63 + 5
    assert t.materialize().n_gets == 2**63 + 5


def _signatures():
    out = {}
    for mod in (engine, bufsim.policies.innodb, bufsim._validation):
        for name, f in vars(mod).items():
            if hasattr(f, "signatures") and hasattr(f, "py_func"):
                out[f"{mod.__name__}.{name}"] = len(f.signatures)
    return out


def test_parquet_traces_reuse_the_csv_kernel(tmp_path):
    rng = np.random.default_rng(7)
    df = pd.DataFrame({"space": 1, "page": rng.integers(0, 900, 3000)})
    df.to_csv(tmp_path / "t.csv", index=False)
    df.to_parquet(tmp_path / "t.parquet", index=False)
    from_csv = bufsim.read_trace(tmp_path / "t.csv")
    want = bufsim.replay(from_csv, CFG).totals
    before = _signatures()
    assert before["bufsim.policies.innodb.run"] >= 1
    from_csv.save(tmp_path / "saved.parquet")
    for t in (bufsim.read_trace(tmp_path / "t.parquet"), Trace.load(tmp_path / "saved.parquet")):
        pd.testing.assert_series_equal(bufsim.replay(t, CFG).totals, want)
    after = _signatures()
    assert {k: v for k, v in after.items() if v != before.get(k)} == {}
