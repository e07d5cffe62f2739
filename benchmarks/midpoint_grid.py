"""The analytic midpoint-LRU model (bufsim.analytic.midpoint) against the replay engine.

A hot independent-reference stream (Zipf or uniform over ``hot_pages``, one get
every ``hot_gap_ns``) runs alone until the hot set is warm; then a second stream
starts scanning ``scan_pages`` pages pass after pass, each page touched
``scan_k`` times in a burst (``scan_get_ns`` per get), with ``pass_gap_ns`` of
idle time between passes (0: back to back).  This is the side-load experiment of
``shared/seeds/001`` (sysbench on a small table while mysqldump reads a big one)
on a small pool.  Hit ratios are measured over a window that starts ``settle_ns``
after the scan began.

Run from the repo root::

    .venv/bin/python -P benchmarks/midpoint_grid.py [--quick] [--csv PATH]

It prints one row per grid point: model and simulated hit ratio (all gets, hot
gets, scan gets), the absolute error and the model's regime.
"""
from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass

import numpy as np
import pandas as pd

import bufsim
from bufsim import CostModel, DeviceModel, SpaceSpec, Tablespaces, Trace
from bufsim.analytic.midpoint import ScanClass, midpoint_lru
from bufsim.engine import STOP_TIME, PoolState
from bufsim.policies._state import C_NOT_YOUNG, C_YOUNG, T_GETS, T_MISSES
from bufsim.synthetic import zipf_probabilities, zipf_trace
from bufsim.trace import Chunk

NO_COST = CostModel(0, 0, 0, 0)
MS = 1_000_000
S = 1_000_000_000


@dataclass(frozen=True)
class Mixture:
    """A hot set plus a periodic scan, timed in virtual nanoseconds."""

    name: str
    pool_pages: int
    hot_pages: int
    alpha: float          # 0 = uniform
    hot_gap_ns: int       # CPU per hot get
    scan_pages: int
    scan_k: int           # gets per scan page, in one burst
    scan_get_ns: int      # CPU per scan get
    pass_gap_ns: int = 0  # idle time between scan passes
    warm_ns: int = 2 * S  # hot stream alone
    settle_ns: int = 3 * S  # after the scan starts, before measuring
    measure_ns: int = 8 * S
    seed: int = 7

    @property
    def hot_rate(self) -> float:
        """Hot gets per second."""
        return S / self.hot_gap_ns

    def hot_rates(self) -> np.ndarray:
        """Per-page reference rates of the hot set (per second)."""
        return zipf_probabilities(self.hot_pages, self.alpha, seed=self.seed) * self.hot_rate

    def scan_class(self) -> ScanClass:
        return ScanClass(pages=self.scan_pages, gets_per_page=self.scan_k,
                         get_time=self.scan_get_ns / S, pass_gap=self.pass_gap_ns / S)

    @property
    def window(self) -> tuple[float, float]:
        """Seconds after the scan started over which hit ratios are measured."""
        return (self.settle_ns / S, (self.settle_ns + self.measure_ns) / S)


MIXTURES = (
    # uniform hot set of 40% of the pool, continuous scan of 5x the pool (a mysqldump)
    Mixture("uniform40+scan5x", pool_pages=4000, hot_pages=1600, alpha=0.0, hot_gap_ns=50_000,
            scan_pages=20_000, scan_k=64, scan_get_ns=1_000),
    # Zipf(0.8) hot set of 40% of the pool, scan of 3x the pool, 100 gets per page,
    # 0.5 s idle between passes
    Mixture("zipf0.8x40+scan3x", pool_pages=4000, hot_pages=1600, alpha=0.8, hot_gap_ns=20_000,
            scan_pages=12_000, scan_k=100, scan_get_ns=1_000, pass_gap_ns=S // 2),
)
TIMES_MS = (0, 100, 1000)
PCTS = (5, 37, 95)


def _no_leaf_links(n: int):
    none = np.full(n, -1, dtype=np.int64)
    return none, none.copy()


def tablespaces(mix: Mixture) -> Tablespaces:
    """Hot and scanned spaces without B-tree leaf links, so that linear read-ahead
    never fires (its step 7 needs the neighbour leaf)."""
    return Tablespaces([SpaceSpec(1, mix.hot_pages, "hot", leaf_links=_no_leaf_links(mix.hot_pages)),
                        SpaceSpec(2, mix.scan_pages, "scan",
                                  leaf_links=_no_leaf_links(mix.scan_pages))])


def traces(mix: Mixture) -> list[Trace]:
    """The hot stream (0) and the scan stream (1), over one tablespace map."""
    ts = tablespaces(mix)
    end = mix.warm_ns + mix.settle_ns + mix.measure_ns
    n_hot = end // mix.hot_gap_ns + 1
    hot = zipf_trace(n_hot, mix.hot_pages, mix.alpha, seed=mix.seed, cpu_ns=mix.hot_gap_ns,
                     stream=0)
    pass_ns = mix.scan_pages * mix.scan_k * mix.scan_get_ns + mix.pass_gap_ns
    n_pass = (end - mix.warm_ns) // pass_ns + 1
    base = mix.hot_pages
    n = mix.scan_pages
    page = np.arange(base, base + n, dtype=np.int64)
    count = np.full(n, mix.scan_k, dtype=np.int64)
    cpu = np.full(n, mix.scan_get_ns, dtype=np.int64)
    if mix.pass_gap_ns:
        # one more get of the last page, charged with the idle time
        page = np.append(page, base + n - 1)
        count = np.append(count, 1)
        cpu = np.append(cpu, mix.pass_gap_ns)
    one = Chunk.from_arrays(page, count, cpu, 1, 0)

    def scan_chunks():
        for _ in range(n_pass):
            yield one
    return [Trace(lambda: iter(hot), ts, "hot"), Trace(scan_chunks, ts, "scan")]


def config(mix: Mixture, pct: int, tau_ms: int):
    """MySQL 5.5 (the seed's server; no page cleaner, so the LRU fills the pool), one
    instance, no adaptive hash index, no CPU extras and an instant device: virtual
    time is the trace's CPU alone.  Read-ahead is off through the tablespaces."""
    return bufsim.mysql55(pool_pages=mix.pool_pages, instances=1, old_blocks_pct=pct,
                          old_blocks_time_ms=tau_ms, adaptive_hash_index=False, cost=NO_COST,
                          device=DeviceModel.instant())


def simulate(mix: Mixture, pct: int, tau_ms: int) -> dict:
    """Replay the mixture; hit ratios and counters over the measurement window."""
    ts = traces(mix)
    state = PoolState(config(mix, pct, tau_ms), ts[0].tablespaces, 2, start_ns=[0, mix.warm_ns])
    iters = [iter(t) for t in ts]

    def refill(s):
        for chunk in iters[s]:
            if len(chunk):
                state.feed(s, chunk)
                return
        state.close(s)

    def run_to(t_ns):
        while True:
            code = state.run(stop_ns=t_ns)
            if code > 0:
                refill(code - 1)
            else:
                return code

    for s in range(2):
        refill(s)
    t0 = mix.warm_ns + mix.settle_ns
    t1 = t0 + mix.measure_ns
    assert run_to(t0) == STOP_TIME
    a_sst, a_cnt = state.sst.copy(), state.cnt.sum(axis=0)
    assert run_to(t1) == STOP_TIME
    d = state.sst - a_sst
    dc = state.cnt.sum(axis=0) - a_cnt
    gets, miss = d[:, T_GETS].astype(float), d[:, T_MISSES].astype(float)
    pages, old = state.group_counts()
    secs = mix.measure_ns / S
    return dict(hit=1 - miss.sum() / gets.sum(), hot_hit=1 - miss[0] / gets[0],
                scan_hit=1 - miss[1] / gets[1], made_young=dc[C_YOUNG] / secs,
                not_made_young=dc[C_NOT_YOUNG] / secs, hot_resident=int(pages[0]),
                hot_old=int(old[0]), scan_resident=int(pages[1]), scan_old=int(old[1]))


def model(mix: Mixture, pct: int, tau_ms: int):
    return midpoint_lru(mix.hot_rates(), [mix.scan_class()], pool_pages=mix.pool_pages,
                        old_blocks_pct=pct, old_blocks_time_ms=tau_ms, start="warm", window=mix.window)


def run_grid(mixtures=MIXTURES, times=TIMES_MS, pcts=PCTS, verbose=True) -> pd.DataFrame:
    rows = []
    for mix in mixtures:
        for tau in times:
            for pct in pcts:
                w = time.perf_counter()
                sim = simulate(mix, pct, tau)
                w_sim = time.perf_counter() - w
                m = model(mix, pct, tau)
                row = dict(mixture=mix.name, old_blocks_time_ms=tau, old_blocks_pct=pct,
                           model=m.hit_ratio, sim=sim["hit"], err=m.hit_ratio - sim["hit"],
                           model_hot=m.class_hit_ratio[0], sim_hot=sim["hot_hit"],
                           model_scan=m.class_hit_ratio[1], sim_scan=sim["scan_hit"],
                           regime=m.regime, T_old_ms=1e3 * m.t_old, T_young_ms=1e3 * m.t_young,
                           model_made_young=m.made_young, sim_made_young=sim["made_young"],
                           model_not_made_young=m.not_made_young,
                           sim_not_made_young=sim["not_made_young"], sim_seconds=w_sim)
                rows.append(row)
                if verbose:
                    print(f"{mix.name:20s} tau={tau:5d} pct={pct:2d}  model {m.hit_ratio:.4f} "
                          f"sim {sim['hit']:.4f} err {row['err']:+.4f}  hot {row['model_hot']:.3f}/"
                          f"{row['sim_hot']:.3f} scan {row['model_scan']:.4f}/{row['sim_scan']:.4f}"
                          f"  {m.regime}  ({w_sim:.2f}s)", flush=True)
    return pd.DataFrame(rows)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="first mixture only")
    ap.add_argument("--csv", help="write the table to this CSV file")
    args = ap.parse_args(argv)
    mixes = MIXTURES[:1] if args.quick else MIXTURES
    df = run_grid(mixes)
    pd.set_option("display.width", 200)
    print(df[["mixture", "old_blocks_time_ms", "old_blocks_pct", "model", "sim", "err",
              "regime"]].to_string(index=False))
    print(f"max |err| = {df['err'].abs().max():.4f}")
    if args.csv:
        df.to_csv(args.csv, index=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
