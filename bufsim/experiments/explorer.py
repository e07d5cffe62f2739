"""Notebook 08, the explorer: one synthetic workload replayed under MySQL 5.6 with the
settings of the notebook's sliders.

The workloads (:data:`WORKLOADS`) are synthetic, of :data:`HOT_PAGES` hot pages and
:data:`SCAN_PAGES` scanned ones, each get costing :data:`CPU_NS` of CPU (sizes and cost
chosen for the explorer, not taken from a document):

* "hot set + scans": Zipf(0.9) gets of the hot set with a full scan of the scanned
  pages every third of the trace (:func:`bufsim.synthetic.hot_and_scan_trace`);
* "hot set only": the same Zipf gets without the scans;
* "uniform": gets spread evenly over all pages.
"""
from __future__ import annotations

import functools
import time

import pandas as pd

from .._units import NS_PER_S
from ..config import mysql56
from ..engine import replay
from ..synthetic import hot_and_scan_trace, uniform_trace, zipf_trace

__all__ = ["WORKLOADS", "HOT_PAGES", "SCAN_PAGES", "CPU_NS", "COUNTERS", "SAMPLE_NS", "trace", "explore"]

WORKLOADS = ("hot set + scans", "hot set only", "uniform")
HOT_PAGES, SCAN_PAGES, CPU_NS = 5_000, 20_000, 2_000
#: the counters the explorer shows, INNODB_BUFFER_POOL_STATS names (and evictions)
COUNTERS = ["NUMBER_PAGES_GET", "NUMBER_PAGES_READ", "NUMBER_PAGES_READ_AHEAD", "PAGES_MADE_YOUNG",
            "PAGES_NOT_MADE_YOUNG", "evictions"]
#: the timeline's sampling interval (virtual ns)
SAMPLE_NS = 20_000_000


@functools.cache
def trace(workload: str, n_gets: int, seed: int):
    """The workload's trace of ``n_gets`` hot-set gets (generated once; replays re-read it)."""
    if workload == "hot set + scans":
        return hot_and_scan_trace(n_gets, HOT_PAGES, 0.9, SCAN_PAGES, n_gets // 3, seed=seed, cpu_ns=CPU_NS)
    if workload == "hot set only":
        return zipf_trace(n_gets, HOT_PAGES, alpha=0.9, seed=seed, cpu_ns=CPU_NS)
    if workload == "uniform":
        return uniform_trace(n_gets, HOT_PAGES + SCAN_PAGES, seed=seed, cpu_ns=CPU_NS)
    raise ValueError(f"workload={workload!r} is unknown; allowed: {', '.join(WORKLOADS)}")


def explore(workload: str, *, n_gets: int, seed: int, old_blocks_time_ms: int, old_blocks_pct: int,
            pool_pages: int, instances: int, device: str):
    """Replay ``workload`` under MySQL 5.6 with these settings.  Returns (counters: one
    row of settings, hit ratio, :data:`COUNTERS`, virtual and wall seconds; resident:
    pages of the hot and scanned indexes and the pool size per sample, long form;
    hit: the hit ratio per sample interval)."""
    t0 = time.perf_counter()
    cfg = mysql56(pool_pages=int(pool_pages), instances=int(instances), old_blocks_time_ms=int(old_blocks_time_ms),
                  old_blocks_pct=int(old_blocks_pct), device=device)
    res = replay(trace(workload, n_gets, seed), cfg, sample_every_ns=SAMPLE_NS)
    row = {"workload": workload, "innodb_old_blocks_time (ms)": int(old_blocks_time_ms),
           "innodb_old_blocks_pct (%)": int(old_blocks_pct), "pool (pages)": int(pool_pages),
           "innodb_buffer_pool_instances": int(instances), "hit ratio": round(res.hit_ratio, 4)}
    row.update({k: int(res.totals[k]) for k in COUNTERS})
    row["virtual seconds"] = round(float(res.streams.elapsed_ns.max()) / NS_PER_S, 3)
    row["replay seconds (wall)"] = round(time.perf_counter() - t0, 2)
    tl = res.timeline
    t_s = tl.time_ns / NS_PER_S
    resident = pd.concat([pd.DataFrame({"t_s": t_s, "index": name, "pages": tl[f"pages:{name}"]})
                          for name in ("hot", "scan") if f"pages:{name}" in tl.columns]
                         + [pd.DataFrame({"t_s": t_s, "index": "pool size", "pages": cfg.pool_pages})])
    gets = tl.NUMBER_PAGES_GET.diff().fillna(tl.NUMBER_PAGES_GET)
    reads = tl.NUMBER_PAGES_READ.diff().fillna(tl.NUMBER_PAGES_READ)
    hit = pd.DataFrame({"t_s": t_s, "hit_ratio": (1 - reads / gets.where(gets > 0)).clip(lower=0)})
    return pd.DataFrame([row]), resident, hit
