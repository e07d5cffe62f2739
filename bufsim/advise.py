"""Advice for a trace: pool size, ``old_blocks_time`` and the number of instances.

:func:`advise` computes, for one trace, a short report (:class:`Report`, as
Markdown or HTML) whose every number comes from the trace:

1. **Pool size.** The LRU miss-ratio curve (exact by Mattson stack distances,
   or SHARDS-sampled) is evaluated at every whole-MiB size (multiples of 64
   pages) from 5 MiB (MySQL's minimum pool) up to the trace's *footprint* (the
   distinct pages it touches, where the curve reaches its ceiling
   ``1 - distinct pages / gets``).

   * The **target size** is the smallest of those sizes whose LRU hit ratio is
     at least ``target_hit``; there is none when the target is above the ceiling.
   * The **knee** is the size whose point lies furthest above the straight line
     from the curve's first point (5 MiB) to its last (the footprint), with
     ``log2(size)`` and the hit ratio each scaled to ``[0, 1]`` over that range:
     ``argmax((h(s) - h(s0)) / (h(s1) - h(s0)) - log(s / s0) / log(s1 / s0))``
     (the Kneedle criterion of Satopää et al., 2011, on a logarithmic size
     axis: past the knee, each doubling of the pool buys less hit ratio than
     the average doubling).  A flat curve has its knee at 5 MiB.
   * The **recommended size** is the target size when there is one, otherwise
     the knee.

2. **old_blocks_time.** The trace is replayed through InnoDB at the recommended
   size with ``old_blocks_time`` 0 and 1000 (one instance, the chosen preset and
   device), and the hit ratios, reads, pages made young and not made young and
   the virtual elapsed time are compared.

3. **Instances.** For each instance count ``N`` in 1, 2, 4, ... 64 that leaves
   every instance at least 320 pages, the trace is replayed with ``N``
   instances, its per-instance gets, reads and make-young moves become mutex
   demand (:func:`bufsim.contention.instance_demand`, with the hold and CPU
   times of :class:`bufsim.contention.Costs`), and exact MVA gives the
   throughput of ``threads`` closed-loop users on ``cores`` cores.  The
   recommendation is the smallest ``N`` within 95% of the best throughput
   (:func:`bufsim.contention.instances_for_fraction`).  Every assumption is
   listed in the report.

References
----------
.. [1] V. Satopää, J. Albrecht, D. Irwin and B. Raghavan, "Finding a 'Kneedle'
   in a haystack: detecting knee points in system behavior", ICDCS Workshops 2011.
.. [2] R. L. Mattson, J. Gecsei, D. R. Slutz and I. L. Traiger, "Evaluation
   techniques for storage hierarchies", IBM Systems Journal 9(2), 1970.
"""
from __future__ import annotations

import html as _html
import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ._validation import check_int
from .config import MIN_POOL_PAGES, PAGE_SIZE, preset as make_preset
from .versions import CONTENTION_PRESETS, record as server_record

__all__ = ["advise", "miss_ratio_curve", "knee", "Report"]

_MIB_PAGES = 2**20 // PAGE_SIZE          # 64
INSTANCE_COUNTS = (1, 2, 4, 8, 16, 32, 64)
#: Gets per transaction assumed when a trace has no statement marks.
DEFAULT_GETS_PER_TXN = 100


def _mib(pages) -> str:
    return f"{pages / _MIB_PAGES:,.0f} MiB" if pages % _MIB_PAGES == 0 else \
        f"{pages / _MIB_PAGES:,.2f} MiB"


def footprint(trace) -> int:
    """Distinct pages a trace touches (one pass)."""
    from .analytic.mrc import distinct_pages
    return distinct_pages(trace)  # memory by the pages touched, not the largest one


def _counter(trace, shards, seed):
    from .analytic.mrc import ShardsCounter, StackDistanceCounter, infer_n_pages
    n = infer_n_pages(trace, None)  # None for a large page map: pages renumbered
    cnt = StackDistanceCounter(n) if shards is None else ShardsCounter(n, rate=shards, seed=seed)
    for c in trace:
        if len(c):
            cnt.update(c.page, c.count)
    return cnt


def miss_ratio_curve(trace, sizes=None, *, shards: float | None = None, seed: int = 0,
                     counter=None) -> pd.DataFrame:
    """The LRU miss-ratio curve of a trace at ``sizes`` (pages).

    Parameters
    ----------
    trace : Trace
    sizes : sequence of int, optional
        Pool sizes in pages; default 320 (5 MiB) doubling up to the first size
        that holds the trace's footprint.
    shards : float, optional
        SHARDS sampling rate in (0, 1]; default: the exact curve.
    seed : int
        Seed of the SHARDS page hash.

    Returns
    -------
    pandas.DataFrame
        ``size, hits, misses, gets, hit_ratio, miss_ratio`` (see
        :func:`bufsim.analytic.exact_mrc`).
    """
    if counter is None:
        counter = _counter(trace, shards, seed)
    if sizes is None:
        fp = footprint(trace)
        sizes = [MIN_POOL_PAGES]
        while sizes[-1] < fp:
            sizes.append(sizes[-1] * 2)
    df = counter.mrc(np.asarray(sizes, dtype=np.int64))
    df["miss_ratio"] = 1.0 - df["hit_ratio"]
    return df


def knee(sizes, hit_ratio) -> int:
    """Index of the knee of a hit-ratio curve (see the module docstring).

    Examples
    --------
    >>> knee([1, 2, 4, 8, 16], [0.1, 0.8, 0.85, 0.88, 0.9])
    1
    """
    s = np.asarray(sizes, dtype=float)
    h = np.asarray(hit_ratio, dtype=float)
    if s.size < 3 or h[-1] <= h[0] or s[-1] <= s[0]:
        return 0
    x = np.log2(s / s[0]) / math.log2(s[-1] / s[0])
    y = (h - h[0]) / (h[-1] - h[0])
    return int(np.argmax(y - x))


@dataclass
class Report:
    """The result of :func:`advise`: the numbers, and the report as text.

    Attributes
    ----------
    recommended_pages, knee_pages, target_pages : int or None
        Sizes in pages (``target_pages`` None when the target is above the
        curve's ceiling).
    ceiling : float
        The LRU hit ratio with the whole footprint resident.
    curve : DataFrame
        The curve at the whole-MiB sizes it was evaluated at.
    old_blocks_time : DataFrame
        The replays at 0 and 1000 ms.
    instances : DataFrame
        Per instance count: throughput, hottest instance's share of the pool
        mutex demand, the bottleneck station and its utilization.
    recommended_instances : int
    blocks : list
        ``(kind, content)`` blocks of the report: ``h1``, ``h2``, ``p``, ``ul``
        (a list of str) and ``table`` (a DataFrame).
    """

    recommended_pages: int
    knee_pages: int
    target_pages: int | None
    ceiling: float
    curve: pd.DataFrame
    old_blocks_time: pd.DataFrame
    instances: pd.DataFrame
    recommended_instances: int
    blocks: list = field(default_factory=list)

    def markdown(self) -> str:
        """The report as Markdown."""
        out = []
        for kind, content in self.blocks:
            if kind == "h1":
                out.append(f"# {content}\n")
            elif kind == "h2":
                out.append(f"## {content}\n")
            elif kind == "p":
                out.append(content + "\n")
            elif kind == "ul":
                out.append("\n".join(f"- {x}" for x in content) + "\n")
            elif kind == "table":
                cols = list(content.columns)
                lines = ["| " + " | ".join(map(str, cols)) + " |",
                         "|" + "|".join("---" for _ in cols) + "|"]
                for row in content.itertuples(index=False):
                    lines.append("| " + " | ".join(map(str, row)) + " |")
                out.append("\n".join(lines) + "\n")
        return "\n".join(out)

    def html(self) -> str:
        """The report as a standalone HTML page."""
        e = _html.escape
        body = []
        for kind, content in self.blocks:
            if kind in ("h1", "h2", "p"):
                body.append(f"<{kind}>{_inline_html(content)}</{kind}>")
            elif kind == "ul":
                body.append("<ul>" + "".join(f"<li>{_inline_html(x)}</li>" for x in content)
                            + "</ul>")
            elif kind == "table":
                head = "".join(f"<th>{e(str(c))}</th>" for c in content.columns)
                rows = "".join("<tr>" + "".join(f"<td>{e(str(v))}</td>" for v in r) + "</tr>"
                               for r in content.itertuples(index=False))
                body.append(f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>")
        title = e(self.blocks[0][1]) if self.blocks else "bufsim advice"
        style = ("body{font-family:sans-serif;max-width:60em;margin:2em auto;line-height:1.4}"
                 "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 8px;"
                 "text-align:right}code{background:#f4f4f4}")
        return (f"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{title}</title>"
                f"<style>{style}</style></head><body>\n" + "\n".join(body) + "\n</body></html>\n")


def _inline_html(text: str) -> str:
    """Escape, then turn `code` spans into <code>."""
    parts = _html.escape(text).split("`")
    return "".join(f"<code>{p}</code>" if i % 2 else p for i, p in enumerate(parts))


def _fmt(x, digits=4):
    return f"{x:.{digits}f}"


def advise(trace, *, target_hit: float = 0.99, threads: int = 32, cores: int = 16,
           preset: str = "mysql57", device: str = "ssd", shards: float | None = None,
           seed: int = 0, gets_per_txn: int | None = None, trace_label: str | None = None
           ) -> Report:
    """Recommend a pool size, ``old_blocks_time`` and instance count for a trace.

    Parameters
    ----------
    trace : Trace
    target_hit : float
        Hit ratio to reach, in (0, 1].
    threads : int
        Concurrent user threads (closed-loop, no think time) in the contention
        model.
    cores : int
        CPU cores of the modelled server.
    preset : str
        ``'mysql55'``, ``'mysql56'`` or ``'mysql57'``: the version whose mutex
        rules and defaults are used.
    device : str
        Device model of the replays (``'ssd'``, ``'hdd7200'``, ``'fs_cache'``,
        ``'instant'``).
    shards : float, optional
        SHARDS rate for the curve (default: exact).
    seed : int
        SHARDS hash seed.
    gets_per_txn : int, optional
        Page gets per transaction when the trace carries no statement marks
        (default 100).  With marks (a ``statement`` column), a transaction is a
        statement and this must be None.
    trace_label : str, optional
        How the report names the trace.

    Returns
    -------
    Report
        The numbers and the blocks of the report (see the module docstring
        for every definition).

    Raises
    ------
    ValueError
        For an argument out of range, naming it.
    """
    from .contention import Costs, instance_demand, instances_for_fraction
    from .engine import replay
    from .trace import FLAG_STMT_END

    if not (isinstance(target_hit, (int, float)) and 0 < target_hit <= 1):
        raise ValueError(f"target_hit={target_hit!r} is out of range; allowed: (0, 1]")
    for name, v in (("threads", threads), ("cores", cores)):
        check_int(name, v, 1)
    if preset not in CONTENTION_PRESETS:
        raise ValueError(f"preset={preset!r} is not supported here; allowed: "
                         f"{', '.join(CONTENTION_PRESETS)} (the versions whose mutex rules "
                         "are modelled)")
    label = trace_label or trace.name or "the trace"

    # ---- 1. the curve ------------------------------------------------------------------
    gets = 0
    stmt_ends = 0
    for c in trace:
        gets += int(c.count.sum())
        stmt_ends += int(((c.flags & np.uint8(FLAG_STMT_END)) != 0).sum())
    if gets == 0:
        raise ValueError("the trace has no gets")
    if stmt_ends and gets_per_txn is not None:
        raise ValueError("gets_per_txn: the trace marks its statements; a transaction is a "
                         "statement, leave gets_per_txn out")
    fp = footprint(trace)
    counter = _counter(trace, shards, seed)
    top = max(MIN_POOL_PAGES, -(-fp // _MIB_PAGES) * _MIB_PAGES)
    sizes = np.arange(MIN_POOL_PAGES, top + 1, _MIB_PAGES, dtype=np.int64)
    curve = counter.mrc(sizes)
    h = curve["hit_ratio"].to_numpy()
    ceiling = float(h[-1])
    k = knee(sizes, h)
    knee_pages = int(sizes[k])
    reach = np.flatnonzero(h >= target_hit - 1e-12)
    target_pages = int(sizes[reach[0]]) if reach.size else None
    rec = target_pages if target_pages is not None else knee_pages

    # ---- 2. old_blocks_time --------------------------------------------------------------
    obt_rows = []
    for ms in (0, 1000):
        cfg = make_preset(preset, pool_pages=rec, instances=1, old_blocks_time_ms=ms,
                          device=device)
        r = replay(trace, cfg)
        obt_rows.append({"old_blocks_time_ms": ms, "hit_ratio": round(r.hit_ratio, 6),
                         "pages_read": int(r.totals["NUMBER_PAGES_READ"]),
                         "read_ahead": int(r.totals["NUMBER_PAGES_READ_AHEAD"]),
                         "made_young": int(r.totals["PAGES_MADE_YOUNG"]),
                         "not_made_young": int(r.totals["PAGES_NOT_MADE_YOUNG"]),
                         "elapsed_s": round(int(r.streams["elapsed_ns"].max()) / 1e9, 3)})
    obt = pd.DataFrame(obt_rows)

    # ---- 3. instances -----------------------------------------------------------------------
    costs = Costs()
    version = make_preset(preset).version
    default_obt = make_preset(preset).old_blocks_time_ms
    if stmt_ends:
        n_txn = float(stmt_ends)
        g_txn = gets / n_txn
        txn_note = (f"a transaction is a statement: the trace marks {stmt_ends:,} statement "
                    f"ends, {g_txn:,.1f} gets each on average")
    else:
        g_txn = float(gets_per_txn or DEFAULT_GETS_PER_TXN)
        n_txn = gets / g_txn
        txn_note = (f"a transaction is {g_txn:g} page gets (the trace has no statement "
                    f"marks; `--gets-per-txn` changes it), so the trace is {n_txn:,.0f} "
                    "transactions")
    hold = costs.hold(g_txn, 1.0)
    inst_rows = []
    for n in INSTANCE_COUNTS:
        if rec // n < MIN_POOL_PAGES:
            break
        cfg = make_preset(preset, pool_pages=rec, instances=n, device=device)
        r = replay(trace, cfg)
        d = instance_demand(trace, n_instances=n, version=version, hold=hold,
                            n_transactions=n_txn, replay=r)
        net = d.network(cores, 0.0)
        m = net.mva(threads)
        u = m.utilization[-1]
        b = int(np.argmax(u))
        tot = d.pool_demand.sum()
        inst_rows.append({"instances": n, "throughput_tps": round(float(m.throughput[-1]), 1),
                          "hottest_share": round(float(d.pool_demand.max() / tot), 3)
                          if tot > 0 else 0.0,
                          "bottleneck": net.names[b], "utilization": round(float(u[b]), 3)})
    inst = pd.DataFrame(inst_rows)
    best = inst["throughput_tps"].max()
    rec_n = instances_for_fraction(dict(zip(inst["instances"], inst["throughput_tps"])), 0.95)
    row_n = inst[inst["instances"] == rec_n].iloc[0]

    # ---- the report ------------------------------------------------------------------------
    b: list = [("h1", f"bufsim advice for {label}")]
    b.append(("p", f"{gets:,} page gets over {fp:,} distinct pages ({_mib(fp)}); preset "
                   f"{preset}, device {device}; every number below is computed from this trace."))
    b.append(("h2", "Pool size"))
    how = "exact (Mattson stack distances)" if shards is None else \
        f"sampled by SHARDS at rate {shards:g} (seed {seed})"
    b.append(("p", f"LRU miss-ratio curve, {how}, evaluated at every whole MiB from 5 MiB to "
                   f"the footprint ({_mib(top)}). With the whole footprint resident the hit "
                   f"ratio is {_fmt(ceiling)} (its ceiling: the first get of each page misses)."))
    lines = [f"knee: **{_mib(knee_pages)}** ({knee_pages:,} pages), hit ratio "
             f"{_fmt(h[k])}: the size furthest above the line from 5 MiB to the footprint, "
             "with log2(size) and hit ratio each scaled to [0, 1] (Kneedle on a log size "
             "axis); past it each doubling of the pool buys less than the average doubling"]
    if target_pages is not None:
        lines.append(f"smallest size reaching the target hit ratio {target_hit:g}: "
                     f"**{_mib(target_pages)}** ({target_pages:,} pages)")
    else:
        lines.append(f"the target hit ratio {target_hit:g} is above the ceiling "
                     f"{_fmt(ceiling)}: no pool size reaches it on this trace")
    lines.append(f"recommended: **{_mib(rec)}** ({rec:,} pages; "
                 + ("the smallest size reaching the target)" if target_pages is not None
                    else "the knee, since the target cannot be reached)"))
    b.append(("ul", lines))
    pts = sorted({int(x) for x in (MIN_POOL_PAGES, knee_pages, rec, top)} |
                 {int(s) for s in sizes if s & (s - 1) == 0})
    sel = curve[curve["size"].isin(pts)]
    b.append(("table", pd.DataFrame({"pool": [_mib(s) for s in sel["size"]],
                                     "pages": sel["size"].to_numpy(),
                                     "LRU hit ratio": [_fmt(x) for x in sel["hit_ratio"]]})))

    b.append(("h2", "old_blocks_time"))
    ra = int(obt["read_ahead"].iloc[0])
    b.append(("p", f"InnoDB replays at the recommended size, one instance, old_blocks_time 0 "
                   f"and 1000 ms. The LRU curve gives {_fmt(float(h[sizes == rec][0]))} at "
                   "this size; the replays' hit ratio is 1 - synchronous misses / gets"
                   + (f", and the {ra:,} pages linear read-ahead brought in (with 0 ms) are "
                      "reads but not misses, which can lift it above the LRU curve:"
                      if ra else ":")))
    b.append(("table", obt))
    h0, h1 = obt["hit_ratio"]
    r0, r1 = obt["pages_read"]
    nmy = int(obt["not_made_young"].iloc[1])
    diff = h1 - h0
    if abs(diff) < 0.001:
        why = (f"On this workload old_blocks_time barely matters: the hit ratio moves by "
               f"{diff:+.4f} ({r1 - r0:+,} reads). Keep the version default.")
    elif diff > 0:
        why = (f"1000 ms helps: the hit ratio rises by {diff:+.4f} and {r0 - r1:,} fewer pages "
               f"are read. {nmy:,} accesses to old pages came within 1 s of the page's first "
               "access and left it in the old sublist, so pages read once (scans) are evicted "
               "from there instead of pushing the re-used pages out of the young sublist. "
               "Set innodb_old_blocks_time = 1000.")
    else:
        why = (f"1000 ms hurts here: the hit ratio falls by {-diff:.4f} and {r1 - r0:,} more "
               f"pages are read. {nmy:,} accesses came within 1 s of the page's first access, "
               "so pages that are re-used soon after being read stay old and are evicted "
               "before their later use. Set innodb_old_blocks_time = 0 for this workload.")
    b.append(("p", why))

    b.append(("h2", "Instances"))
    b.append(("p", f"Exact MVA of a closed network: {threads} user threads without think time, "
                   f"a {cores}-core CPU station, one mutex station per buffer-pool instance, "
                   "the adaptive-hash-index latch and the kernel (lock-system) mutex. Each "
                   "instance count is replayed at the recommended size to count its gets, "
                   "reads and make-young moves per instance."))
    b.append(("table", inst))
    if rec_n == inst["instances"].iloc[-1] and len(inst) == 1:
        reason = (f"Only 1 instance fits: at {_mib(rec)} more instances would leave one below "
                  "320 pages.")
    else:
        reason = (f"**{rec_n} instance(s)**: the smallest count within 95% of the best "
                  f"modelled throughput ({row_n['throughput_tps']:,.0f} of {best:,.0f} tx/s). ")
        bn = row_n["bottleneck"]
        if bn.startswith("pool["):
            reason += (f"At {rec_n} the busiest station is still an instance mutex ({bn}, "
                       f"utilization {row_n['utilization']:.0%}); the hottest instance carries "
                       f"{row_n['hottest_share']:.0%} of the pool-mutex demand, so more "
                       "instances help only as far as the hot 64-page areas spread out.")
        else:
            reason += (f"At {rec_n} the busiest station is {bn} (utilization "
                       f"{row_n['utilization']:.0%}), which more instances do not relieve.")
    if rec < 2**30 // PAGE_SIZE and server_record(version).instances_rule != "one":
        reason += (" Note: MySQL 5.6/5.7 use one instance whatever the setting when the pool "
                   "is below 1 GiB.")
    b.append(("p", reason))
    b.append(("p", "Assumptions of the contention model (defaults of "
                   "`bufsim.contention.Costs`, orders of magnitude, not measurements of your "
                   "server; calibrate them as notebooks 03 and 04 do):"))
    b.append(("ul", [
        txn_note,
        f"mutex rules of MySQL {version}: " + ("every page get takes its instance's mutex, "
                                               "as do make-young moves and reads"
                                               if server_record(version).get_takes_pool_mutex
                                               else
                                               "only make-young moves and page reads take the "
                                               "instance mutex (hits use the page-hash "
                                               "rw-lock)"),
        f"hold times per acquisition: get {costs.get_ns:g} ns, make-young move "
        f"{costs.move_ns:g} ns, page read {costs.miss_ns:g} ns, adaptive-hash-index lookup "
        f"{costs.ahi_ns:g} ns, kernel mutex {costs.kernel_ns:g} ns per transaction",
        f"CPU per transaction: {costs.stmt_cpu_ns:g} ns + {costs.get_cpu_ns:g} ns per get = "
        f"{hold.cpu_ns / 1000:,.1f} us, outside every mutex",
        f"reads and make-young moves per instance are those of a replay at "
        f"{_mib(rec)} with the preset's old_blocks_time ({default_obt} ms); a page's instance "
        "is InnoDB's fold(space, page_no >> 6) mod N",
        "product-form queueing: FIFO mutexes with exponential holds, a waiting thread uses no "
        "core, no spinning; I/O time is not in the network (the threads never wait for disk)",
        "instance counts 1, 2, 4, ... 64 with at least 320 pages per instance",
    ]))
    return Report(recommended_pages=rec, knee_pages=knee_pages, target_pages=target_pages,
                  ceiling=ceiling, curve=curve, old_blocks_time=obt, instances=inst,
                  recommended_instances=int(rec_n), blocks=b)
