"""Advice for a trace, per thread: pool size, ``old_blocks_time`` and instances.

:func:`advise` answers from InnoDB replays of the trace (linear read-ahead,
midpoint insertion, ``old_blocks_time``), stream by stream, and says which
streams it protects and why.  Every number in its :class:`Report` (Markdown or
HTML) comes from the trace.

1. **Which thread matters.** Each stream is profiled from the trace
   (:func:`bufsim.advise_profile.stream_profile`: its sequential fraction,
   one-touch fraction and LRU reuse distances) and from the replay at the
   smallest size (the share of its pages that read-ahead brought), and classified
   latency-bound (point/range lookups: each synchronous read is a wait) or
   scan/batch (:func:`bufsim.advise_profile.classify`).  The *protected* streams
   are the latency-bound ones, or those named by ``protect``, or those given a
   ``target_hit``.

2. **Pool size.** The trace is replayed through InnoDB (one instance, the
   preset's version, ``device``) with ``old_blocks_time`` 0 and 1000 at a grid of
   sizes: the version's smallest pool (:attr:`bufsim.versions.ServerVersion.min_pool_bytes`:
   5 MiB, 320 pages, in MySQL and MariaDB 10.5; 6 MiB in MariaDB 10.11+), doubling up to
   the footprint (distinct pages touched, rounded up to a whole MiB), plus, for each
   stream the profile calls latency-bound, the size where *its own* exact LRU curve has
   its knee and where its LRU misses come within the margin of its footprint's (its
   *working set*; the LRU curve chooses where to replay and which cliff is the stream's
   own, it never gives the answer), plus ``current_pages``.  The *reference* size is the
   largest replayed size; when the trace has a scan/batch stream, the largest *below* the
   footprint, since at the footprint nothing is ever evicted and that step is the scan's
   cliff.

   The rule (``criterion``):

   ``'knee'`` (default)
       At each size take the setting (0 or 1000 ms) that gives the protected
       streams the fewest synchronous reads; on those reads from the smallest size
       to the reference, a step between two replayed sizes is *steep* when it cuts
       the reads by a larger factor per doubling of the pool than the average over
       the whole span does, and a *cliff* is a run of steep steps that cuts them by
       more than the margin.  The answer is the end of the first cliff that ends at
       or above the protected streams' working set (the largest of theirs)
       (:func:`cliff_end`): where their reads stop falling fast once their own
       pages fit.  A cliff below it is a part of their pages fitting (document
       004's UPDATE: its undo pages fit at 6 MiB, its hot leaves much later); a
       later one is another stream's interference fading (a scan's table starting
       to fit), which a margin on the reads left at a large size would chase
       several times higher.  For a stream whose gets fall on a hot set beside a
       scan, the answer is where the hot set stays in the pool, which
       old_blocks_time 1000 makes possible.  Without such a cliff (reads that fall
       evenly, or keep falling to the reference), the answer is as with
       ``'reads'``.
   ``'reads'``
       The smallest size where every protected stream's synchronous reads are at
       most ``(1 + margin)`` times its fewest of the two settings at the
       reference size (per setting; the smaller of the two sizes).
   ``'wait'``
       Likewise with its I/O wait, at most the reference's plus ``margin`` times
       its virtual elapsed time.

   A stream given a ``target_hit`` must reach that hit ratio instead (the size
   is then at least the smallest that reaches it).  The grid is then refined
   (three sizes between the grid size below the answer and it) and the rule
   applied again.  With no protected stream, the answer is the smallest size
   whose total synchronous reads are within the margin of the fewest any size
   below the footprint gives: a knee at the footprint made by a scan is never
   the answer.

3. **old_blocks_time.** At the recommended size and one and two grid steps below
   it (and ``current_pages``), the report gives every stream's reads and I/O wait
   with 0 and 1000 ms.  The recommendation is the value with fewer protected reads
   at the recommended size when they differ by more than the margin, else the
   version default (with ``'reads'`` and ``'wait'``: the value whose candidate
   size was the smaller, a tie as with ``'knee'``).
   ``old_blocks_pct`` 20 and 50 are replayed at the recommended size; they are
   reported when they move a protected stream's reads by more than the margin.

4. **Instances, only on evidence.** When the caller gives ``threads`` or ``cores``,
   or the trace carries several threads, each instance count ``N`` in 1, 2, 4 ...
   64 that leaves every instance at least 320 pages is replayed at the recommended
   size, its per-instance gets, reads and make-young moves become mutex demand
   (:func:`bufsim.contention.instance_demand`, hold and CPU times of
   :class:`bufsim.contention.Costs`), and exact MVA gives the throughput of
   ``threads`` closed-loop users on ``cores`` cores; the recommendation is the
   smallest ``N`` within 95% of the best.  Otherwise the report says "not
   assessed".  MariaDB 10.5+ has one buffer pool, so no model runs for it.

The replays run through :func:`bufsim.sweep` (local processes, or any executor
such as a ``dask.distributed`` client).

References
----------
.. [1] V. Satopää, J. Albrecht, D. Irwin and B. Raghavan, "Finding a 'Kneedle'
   in a haystack: detecting knee points in system behavior", ICDCS Workshops 2011.
.. [2] R. L. Mattson, J. Gecsei, D. R. Slutz and I. L. Traiger, "Evaluation
   techniques for storage hierarchies", IBM Systems Journal 9(2), 1970.
.. [3] MySQL 5.7 Reference Manual, 14.8.3.3 "Making the Buffer Pool Scan
   Resistant" (innodb_old_blocks_time, innodb_old_blocks_pct).
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ._validation import check_int
from .advise_instances import assessed, modelled
from .advise_report import OBT_VALUES, OLD_PCT_ALTERNATIVES, Report, fixed, mib, rel
from .config import MIN_POOL_PAGES, PAGE_SIZE, preset as make_preset

__all__ = ["advise", "miss_ratio_curve", "knee", "cliff_end", "footprint", "Report"]

_MIB_PAGES = 2**20 // PAGE_SIZE          # 64


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


def cliff_end(sizes, reads, at_least, margin: float = 0.05) -> int | None:
    """Index of the end of the first *cliff* of a reads curve that ends at ``at_least`` or
    above, or None (see the module docstring, point 2).

    A step between two sizes is *steep* when it cuts the reads by a larger factor per
    doubling of the pool than the average over the whole curve does (on ``log(reads +
    1)``); a cliff is a run of steep steps that cuts the reads by more than ``margin`` in
    all; its end is the size after its last steep step.

    Examples
    --------
    Two cliffs, 1 -> 2 and 4 -> 8; the first that ends at 4 or above ends at 8:

    >>> cliff_end([1, 2, 4, 8, 16], [1000, 100, 90, 10, 9], 4)
    3
    >>> cliff_end([1, 2, 4, 8, 16], [1000, 100, 90, 10, 9], 2)
    1
    >>> cliff_end([1, 2, 4], [10, 10, 10], 1) is None
    True
    """
    s = np.asarray(sizes, dtype=float)
    r = np.log(np.asarray(reads, dtype=float) + 1.0)
    if s.size < 2 or r[-1] >= r[0]:
        return None
    avg = (r[0] - r[-1]) / math.log2(s[-1] / s[0])
    steep = (r[:-1] - r[1:]) / np.log2(s[1:] / s[:-1]) > avg
    i = 0
    while i < steep.size:
        if not steep[i]:
            i += 1
            continue
        j = i
        while j < steep.size and steep[j]:
            j += 1
        if r[i] - r[j] > math.log1p(margin) and s[j] >= at_least:
            return j
        i = j
    return None


def _replay_names(trace, ids) -> list[str]:
    """The stream names :func:`bufsim.replay` gives the streams of ``trace``."""
    if len(ids) > 1:
        names = trace.stream_names
        return [names[s] if names and s < len(names) else str(s) for s in ids]
    if len(ids) == 1 and trace.stream_start_ns is not None and trace.stream_names:
        return [trace.stream_names[int(ids[0])]]
    return [trace.name or "0"]


def _mib_round(pages: float, min_pages: int = MIN_POOL_PAGES) -> int:
    """``pages`` rounded to a whole MiB (64 pages), at least ``min_pages``."""
    return max(min_pages, int(round(pages / _MIB_PAGES)) * _MIB_PAGES)


def _replays(trace, points, *, preset, executor, jobs, progress, base=None, nominal=None,
             per_instance: bool = False) -> pd.DataFrame:
    """Per-stream rows of a sweep over ``points``; raises if any replay failed.  With
    ``per_instance``, the ``instances`` and ``per_instance`` columns too.  ``frames`` is
    the pool replayed, ``pool_pages`` the size asked for (``nominal`` maps one to the
    other)."""
    from .sweeps import sweep
    df = sweep(trace, points, preset=preset, executor=executor, jobs=jobs, progress=progress,
               streams=True, per_instance=per_instance)
    bad = df[df["error"].notna()]
    if len(bad):
        raise RuntimeError(f"replay of {bad['params'].iloc[0]} failed: {bad['error'].iloc[0]}")
    keep = ["pool_pages", "old_blocks_time_ms", "old_blocks_pct", "stream", "gets", "misses",
            "read_ahead", "hit_ratio", "io_wait_ns", "elapsed_ns"]
    if per_instance:
        keep += ["instances", "per_instance"]
    for c in ("old_blocks_pct",):
        if c not in df.columns:
            df[c] = np.nan
    out = df[keep].copy()
    for c in ("pool_pages", "old_blocks_time_ms", "gets", "misses", "read_ahead", "io_wait_ns",
              "elapsed_ns"):
        out[c] = out[c].astype(np.int64)
    out.insert(1, "frames", out["pool_pages"])
    if nominal:
        out["pool_pages"] = np.array([nominal.get(int(x), int(x)) for x in out["frames"]],
                                     dtype=np.int64)
    return out


def _candidate(tab: pd.DataFrame, protected, margin, targets, ref,
               criterion: str = "knee", ref_at: int | None = None,
               ws: dict | None = None) -> tuple[int | None, dict]:
    """Smallest size of ``tab`` (one old_blocks_time, one pct) meeting the rule for every
    protected stream (module docstring, point 2):

    ``'knee'``
        the end of the first cliff of the protected streams' synchronous reads (summed)
        over the sizes from the smallest to ``ref_at`` that ends at or above the largest
        of their working sets ``ws`` (:func:`cliff_end`); without one, as ``'reads'``;
    ``'reads'``
        misses at most ``(1 + margin) * ref[stream]``;
    ``'wait'``
        I/O wait at most ``ref_wait + margin * ref_elapsed`` (``ref`` then maps a stream to
        ``(wait, elapsed)``);

    a stream with a reachable target in ``targets`` must reach that hit ratio instead.
    Returns (size or None, {stream: (limit kind, limit)}); for ``'knee'`` the limit is
    the streams' reads at the knee."""
    sizes = np.sort(tab["pool_pages"].unique())
    m = tab.set_index(["pool_pages", "stream"])
    limits = {}
    for st in protected:
        t = targets.get(st)
        if t is not None and max(float(m.loc[(s, st), "hit_ratio"]) for s in sizes) >= t - 1e-12:
            limits[st] = ("hit", t)
        elif criterion == "wait":
            w, el = ref[st]
            limits[st] = ("wait", w + margin * el)
        elif criterion == "reads":
            limits[st] = ("misses", (1 + margin) * int(ref[st]))
    knee_at = None
    rest = [st for st in protected if st not in limits]
    if criterion == "knee" and rest:
        span = sizes[sizes <= (ref_at if ref_at is not None else sizes[-1])]
        reads = np.array([sum(int(m.loc[(s, st), "misses"]) for st in rest) for s in span],
                         dtype=float)
        # the cliff where the streams' own working sets fit; none: the margin on the reference
        j = cliff_end(span, reads, max((ws or {}).get(st, 0) for st in rest), margin)
        if j is None:
            for st in rest:
                limits[st] = ("misses", (1 + margin) * int(ref[st]))
        else:
            knee_at = int(span[j])
            for st in rest:
                limits[st] = ("knee", int(m.loc[(knee_at, st), "misses"]))
    for s in sizes:
        if knee_at is not None and s < knee_at:
            continue
        ok = True
        for st, (kind, lim) in limits.items():
            if kind == "hit":
                ok &= float(m.loc[(s, st), "hit_ratio"]) >= lim - 1e-12
            elif kind == "wait":
                ok &= int(m.loc[(s, st), "io_wait_ns"]) <= lim
            elif kind == "misses":
                ok &= int(m.loc[(s, st), "misses"]) <= lim
        if ok:
            if knee_at is not None and s != knee_at:   # a target asks for more: its reads there
                for st in rest:
                    limits[st] = ("knee", int(m.loc[(s, st), "misses"]))
            return int(s), limits
    return None, limits


def _envelope(tab: pd.DataFrame, protected) -> pd.DataFrame:
    """Per size, the rows of the old_blocks_time that gives the ``protected`` streams the
    fewest synchronous reads together (ties: the smaller setting)."""
    p = tab[tab["stream"].isin(protected)]
    tot = p.groupby(["pool_pages", "old_blocks_time_ms"])["misses"].sum().reset_index()
    best = tot.sort_values(["pool_pages", "misses", "old_blocks_time_ms"]).groupby(
        "pool_pages").first()["old_blocks_time_ms"]
    keep = tab["old_blocks_time_ms"].to_numpy() == best.reindex(tab["pool_pages"]).to_numpy()
    return tab[keep]


def _scan_only_candidate(tab: pd.DataFrame, margin: float, fp: int) -> int:
    """With no protected stream: the smallest size whose total reads are within the
    margin of the fewest any size below 90% of the footprint gives."""
    a = tab[tab["stream"] == "all"].sort_values("pool_pages")
    below = a[a["pool_pages"] < 0.9 * fp]
    if below.empty:
        below = a
    lim = (1 + margin) * int(below["misses"].min())
    return int(below[below["misses"] <= lim]["pool_pages"].iloc[0])


def advise(trace, *, margin: float = 0.05, protect=None, target_hit=None,
           threads: int | None = None, cores: int | None = None, preset: str = "mysql57",
           device: str = "ssd", current_pages: int | None = None, criterion: str = "knee",
           shards: float | None = None,
           seed: int = 0, gets_per_txn: int | None = None, trace_label: str | None = None,
           executor=None, jobs: int | None = None, progress: bool = False,
           costs=None) -> Report:
    """Recommend a pool size, ``old_blocks_time`` and instance count for a trace, per thread.

    Parameters
    ----------
    trace : Trace
        A trace with one or several streams (threads); an in-memory trace is
        split by its stream ids, as :func:`bufsim.replay` does.
    margin : float
        In (0, 1), default 5%: the smallest change of the protected streams' reads
        that counts (old_blocks_time and old_blocks_pct); with ``criterion``
        ``'reads'`` or ``'wait'``, the allowed excess over the reference.
    protect : sequence of str, optional
        Stream names to protect instead of the streams classified latency-bound.
    target_hit : float or mapping, optional
        A hit ratio in (0, 1] every protected stream must reach, or ``{stream:
        hit ratio}`` (those streams are then protected too); a target above what
        the largest size gives falls back to the margin rule, and the report says so.
    threads, cores : int, optional
        Closed-loop user threads and CPU cores of the contention model; without
        either, and with a one-thread trace, instances are not assessed.  With a
        several-thread trace, ``threads`` defaults to its thread count and
        ``cores`` to ``threads``.
    preset : str
        Any preset of :data:`bufsim.config.PRESETS`.
    device : str
        Device model of the replays (``'ssd'``, ``'hdd7200'``, ``'fs_cache'``,
        ``'instant'``).
    criterion : {'knee', 'reads', 'wait'}
        How the size is chosen (module docstring, point 2): ``'knee'``, the end of the
        first cliff of the protected streams' synchronous reads (the better
        old_blocks_time at each size) that ends where their own working set fits;
        ``'reads'``, the smallest size where each one's synchronous reads
        are at most ``(1 + margin)`` times the reference's; ``'wait'``, where its
        I/O wait is at most the reference's plus ``margin`` times the reference's
        virtual elapsed time (the reads that cost the thread under ``margin`` of
        its time).
    current_pages : int, optional
        The pool the user has now (pages, >= 320): replayed too, and shown in the
        old_blocks_time section.
    shards : float, optional
        SHARDS rate of the per-stream LRU curves that choose where to replay
        (default: exact).
    seed : int
        SHARDS hash seed.
    gets_per_txn : int, optional
        Page gets per transaction of the contention model when the trace has no
        statement marks (default 100).
    trace_label : str, optional
        How the report names the trace.
    executor, jobs
        Where the replays run (:func:`bufsim.sweep`): an executor (e.g. a
        ``dask.distributed.Client``) or local worker processes (``jobs``; 1 runs
        them in this process).
    progress : bool
        Show progress bars (tqdm) over the profile and the replays.
    costs : bufsim.contention.Costs, optional
        Hold and CPU times of the contention model (default ``Costs()``, uncalibrated);
        e.g. those fitted on document 003 (:func:`bufsim.experiments.contention.dbstress_costs`),
        as notebook 04 uses.  The report lists the values it used.

    Returns
    -------
    Report

    Raises
    ------
    ValueError
        For an argument out of range, naming it, before any replay.
    """
    args = _check_arguments(trace, margin, criterion, preset, device, threads, cores, costs,
                            current_pages, target_hit, gets_per_txn)
    base, targets, min_pages = args["base"], args["targets"], args["min_pages"]
    if not trace.is_materialized and len(trace.streams()) > 1:
        # replay() splits only an in-memory trace into its threads: hold the chunks
        from .trace import Trace
        trace = Trace(list(trace), trace.tablespaces, trace.name,
                      stream_names=trace.stream_names, stream_start_ns=trace.stream_start_ns)
    gets, stmt_ends = _count_gets(trace, gets_per_txn)

    # 1. the streams and the grid of sizes
    g = _grid(trace, margin, protect, targets, current_pages, shards, seed, progress, min_pages)
    rkw = dict(preset=preset, executor=executor, jobs=jobs, progress=progress, base=base)
    rkw["nominal"] = {_frames(x, base): x for x in g["sizes"]}
    tab = _replays(trace, _points(g["sizes"], device, base), **rkw)
    tab["old_blocks_pct"] = base.old_blocks_pct
    cls = _classify(tab, g["prof"], base, protect, targets, min_pages)
    protected = cls["protected"]

    # 2. pool size: the rule, then the grid refined below the candidate
    def choose(t):
        return _choose_size(t, protected, cls["targets"], cls["scans"], margin, criterion,
                            base, g["fp"], g["ws"])
    cand, limits, ref_at = choose(tab)
    rec = _recommended(cand)
    extra = _refinement(sorted(tab["pool_pages"].unique()), rec, min_pages)
    if extra:
        rkw["nominal"].update({_frames(x, base): x for x in extra})
        more = _replays(trace, _points(extra, device, base), **rkw)
        more["old_blocks_pct"] = base.old_blocks_pct
        tab = pd.concat([tab, more], ignore_index=True)
        cand, limits, ref_at = choose(tab)
        rec = _recommended(cand)
    grid = sorted(tab["pool_pages"].unique())

    # 3. old_blocks_time at the recommended size and below
    key = tab.set_index(["pool_pages", "old_blocks_time_ms", "old_blocks_pct", "stream"])

    def val(s, t, st, col="misses"):
        return int(key.loc[(s, t, base.old_blocks_pct, st), col])

    obt, at_rec = _choose_obt(val, rec, cand, protected, margin, base.old_blocks_time_ms)
    shown = protected + [n for n in cls["streams"]["name"] if n not in protected]
    obt_sizes, obt_tab, protects = _obt_at_sizes(val, grid, rec, current_pages, shown,
                                                 protected, margin)

    # 4. instances (whether the model runs), old_blocks_pct and the instance counts' replays
    n_threads = len(g["names"])
    rec_n, inst_note, inst_counts = assessed(base, rec, threads, cores, n_threads,
                                                        min_pages)
    pct_tab, per_n, pct_moves = _pct_and_instance_replays(trace, rec, obt, inst_counts, device,
                                                          rkw, val, protected, margin)
    curve = pd.concat([tab, pct_tab], ignore_index=True).sort_values(
        ["old_blocks_pct", "old_blocks_time_ms", "pool_pages", "stream"], ignore_index=True)
    inst, assumptions = pd.DataFrame(), []
    if inst_counts:
        inst, rec_n, inst_note, assumptions = modelled(
            trace, per_n, threads, cores, n_threads, base, gets, stmt_ends, gets_per_txn, costs,
            rec)

    # 5. the report
    from .advise_report import Facts, render
    return render(Facts(
        label=trace_label or trace.name or "the trace", preset=preset, device=device,
        base=base, min_pages=min_pages, gets=gets, n_threads=n_threads, fp=g["fp"],
        top=g["top"], margin=margin, criterion=criterion, streams=cls["streams"],
        protected=protected, how=cls["how"], lru_rows=g["lru_rows"], tab=tab, grid=grid,
        cand=cand, limits=limits, ref_at=ref_at, rec=rec, obt=obt, at_rec=at_rec, shown=shown,
        obt_tab=obt_tab, protects=protects, pct_sizes=[rec], pct_moves=pct_moves, curve=curve,
        inst=inst, rec_n=rec_n, inst_note=inst_note, current_pages=current_pages,
        assumptions=assumptions, ws=g["ws"], rec_frames=_frames(rec, base)))


def _check_arguments(trace, margin, criterion, preset, device, threads, cores, costs,
                     current_pages, target_hit, gets_per_txn) -> dict:
    """Every argument checked before any work: the preset's config, the targets
    (``{stream or None: hit ratio}``) and the version's smallest pool in pages."""
    from .config import PRESETS
    if not (isinstance(margin, (int, float)) and 0 < margin < 1):
        raise ValueError(f"margin={margin!r} is out of range; allowed: (0, 1)")
    if criterion not in ("knee", "reads", "wait"):
        raise ValueError(f"criterion={criterion!r} is unknown; allowed: knee, reads, wait")
    if preset not in PRESETS:
        raise ValueError(f"preset={preset!r} is unknown; allowed: {', '.join(PRESETS)}")
    base = make_preset(preset, device=device)          # validates the device
    min_pages = max(MIN_POOL_PAGES, -(-base.server.min_pool_bytes // PAGE_SIZE))
    for name, v in (("threads", threads), ("cores", cores)):
        if v is not None:
            check_int(name, v, 1)
    if costs is not None:
        from .contention import Costs
        if not isinstance(costs, Costs):
            raise ValueError(f"costs={costs!r}: allowed: a bufsim.contention.Costs")
    if current_pages is not None:
        check_int("current_pages", current_pages, min_pages)
    targets: dict = {}
    if target_hit is not None:
        items = target_hit.items() if isinstance(target_hit, dict) else [(None, target_hit)]
        for k, v in items:
            if not (isinstance(v, (int, float)) and 0 < v <= 1):
                what = "target_hit" if k is None else f"target_hit[{k!r}]"
                raise ValueError(f"{what}={v!r} is out of range; allowed: (0, 1]")
            targets[k] = float(v)
    return {"base": base, "targets": targets, "min_pages": min_pages}


def _count_gets(trace, gets_per_txn) -> tuple[int, int]:
    """The trace's gets and statement ends (one pass); an empty trace is an error."""
    from .trace import FLAG_STMT_END
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
    return gets, stmt_ends


def _grid(trace, margin, protect, targets, current_pages, shards, seed, progress,
          min_pages) -> dict:
    """Step 1: the streams' profile (names, ``prof``), the footprint and the sizes to
    replay: ``min_pages`` doubling to the footprint, each latency-bound stream's own LRU
    knee and the size where its LRU misses come within the margin of the footprint's
    (``lru_rows`` says which), and ``current_pages``."""
    from .advise_profile import classify, stream_profile
    names = _replay_names(trace, [int(x) for x in trace.streams()])
    for k in list(targets) + list(protect or []):
        if k is not None and k not in names:
            raise ValueError(f"stream {k!r} (protect/target_hit) is not in the trace; "
                             f"allowed: {', '.join(names)}")
    prof, counters = stream_profile(trace, shards=shards, seed=seed, progress=progress)
    prof["name"] = names
    fp = footprint(trace)
    top = max(min_pages, -(-fp // _MIB_PAGES) * _MIB_PAGES)
    pre = classify(prof)
    sizes = {min_pages, top}
    s = min_pages
    while s * 2 < top:
        s *= 2
        sizes.add(s)
    lru_rows = []
    ws = {}                # each stream's working set: its own LRU misses within the margin
    mib_grid = np.arange(min_pages, top + 1, _MIB_PAGES, dtype=np.int64)
    for r in pre.itertuples(index=False):
        df = counters[r.stream].mrc(mib_grid)
        h = df["hit_ratio"].to_numpy()
        miss = df["misses"].to_numpy()
        within = int(mib_grid[np.flatnonzero(miss <= (1 + margin) * miss[-1])[0]])
        ws[r.name] = within
        if r.kind != "latency-bound" and r.name not in (protect or []) and r.name not in targets:
            continue
        k = knee(mib_grid, h)
        sizes.update({int(mib_grid[k]), within})
        lru_rows.append({"stream": r.name, "LRU knee": f"{mib(int(mib_grid[k]))}",
                         f"LRU within {margin:.0%}": mib(within),
                         "LRU hit ratio there": fixed(float(h[mib_grid == within][0]))})
    if current_pages is not None:
        sizes.add(int(current_pages))
    return {"names": names, "prof": prof, "fp": fp, "top": top, "sizes": sorted(sizes),
            "lru_rows": lru_rows, "ws": ws}


def _frames(pages: int, base, instances: int = 1) -> int:
    """The frames the server has for innodb_buffer_pool_size = ``pages`` x 16 KiB: its
    chunk or extent layout's (:func:`bufsim.config.pages_from_bytes`, the record's
    ``pool_size_rule``), at least PoolConfig's 320; ``pages`` where the layout is unknown."""
    if base.server.pool_size_rule is None:
        return int(pages)
    from .config import pages_from_bytes
    return max(MIN_POOL_PAGES, pages_from_bytes(int(pages) * PAGE_SIZE, base.version,
                                                instances=instances))


def _points(sizes, device, base, obts=OBT_VALUES, pct=None) -> list[dict]:
    """Sweep points: one instance, each size (replayed at the frames the server has for
    it) with each old_blocks_time (and ``pct``)."""
    out = []
    for s in sizes:
        for t in obts:
            p = {"pool_pages": _frames(s, base), "instances": 1, "old_blocks_time_ms": int(t),
                 "device": device}
            if pct is not None:
                p["old_blocks_pct"] = int(pct)
            out.append(p)
    return out


def _classify(tab, prof, base, protect, targets, min_pages) -> dict:
    """The streams classified with the read-ahead share of the smallest size's replay, and
    which are protected (``how``: why), with their hit-ratio targets."""
    from .advise_profile import classify
    small = tab[(tab["pool_pages"] == min_pages)
                & (tab["old_blocks_time_ms"] == base.old_blocks_time_ms)]
    ras = {}
    for r in small.itertuples(index=False):
        if r.stream != "all":
            read = int(r.read_ahead) + int(r.misses)
            ras[r.stream] = int(r.read_ahead) / read if read else 0.0
    streams = classify(prof, ras)
    if protect:
        protected = list(dict.fromkeys(protect))
        how = "named by the user (`--protect`)"
    else:
        protected = [n for n, k in zip(streams["name"], streams["kind"]) if k == "latency-bound"]
        how = "classified latency-bound"
    per_stream_targets = {k: v for k, v in targets.items() if k is not None}
    for k in per_stream_targets:
        if k not in protected:
            protected.append(k)
    if None in targets:
        for k in protected:
            per_stream_targets.setdefault(k, targets[None])
    streams["protected"] = streams["name"].isin(protected)
    scans = [n for n, k in zip(streams["name"], streams["kind"]) if k != "latency-bound"]
    return {"streams": streams, "protected": protected, "how": how,
            "targets": per_stream_targets, "scans": scans}


def _choose_size(tab, protected, targets, scans, margin, criterion, base, fp, ws):
    """Step 2: each old_blocks_time's candidate size under the rule (and, for the knee,
    the better setting's at each size: ``'best'``), the limits each protected stream meets
    there, and the reference size."""
    # the reference: what the largest size gives a stream, with the better setting; with
    # a scan/batch stream, the largest size below the footprint (at the footprint nothing
    # is ever evicted: that step is the scan's cliff, not something to size for)
    sizes_ = np.sort(tab["pool_pages"].unique())
    at = int(sizes_[-2]) if scans and len(sizes_) > 2 else int(sizes_[-1])
    big = tab[(tab["pool_pages"] == at) & (tab["old_blocks_pct"] == base.old_blocks_pct)]
    if criterion == "wait":   # the setting with the least I/O wait there, and its time
        best = big.sort_values("io_wait_ns").groupby("stream").first()
        ref = {k: (int(r.io_wait_ns), int(r.elapsed_ns)) for k, r in best.iterrows()}
    else:
        ref = big.groupby("stream")["misses"].min().to_dict()
    cand, limits = {}, {}
    base_pct = tab[tab["old_blocks_pct"] == base.old_blocks_pct]
    for t in OBT_VALUES:
        sub = base_pct[base_pct["old_blocks_time_ms"] == t]
        if protected:
            cand[t], limits[t] = _candidate(sub, protected, margin, targets, ref, criterion, at,
                                            ws)
        else:
            cand[t], limits[t] = _scan_only_candidate(sub, margin, fp), {}
    if criterion == "knee" and protected:
        # the knee of what the better old_blocks_time gives the protected streams at
        # each size (the lower envelope of the two curves)
        env = _envelope(base_pct, protected)
        cand["best"], limits["best"] = _candidate(env, protected, margin, targets, ref,
                                                  criterion, at, ws)
    return cand, limits, at


def _recommended(cand) -> int:
    if "best" in cand and cand["best"] is not None:
        return cand["best"]
    return min(v for k, v in cand.items() if v is not None and k != "best")


def _refinement(grid, rec, min_pages) -> list[int]:
    """Three whole-MiB sizes between the grid size below ``rec`` and ``rec`` (geometric),
    not replayed yet."""
    below = [g for g in grid if g < rec]
    if not below:
        return []
    lo = below[-1]
    extra = sorted({_mib_round(lo * (rec / lo) ** (j / 4), min_pages) for j in (1, 2, 3)}
                   - set(grid))
    return [x for x in extra if lo < x < rec]


def _choose_obt(val, rec, cand, protected, margin, default_obt) -> tuple[int, dict]:
    """Step 3: the recommended old_blocks_time and the protected streams' (or the total)
    reads at the recommended size with each setting."""
    at_rec = {t: sum(val(rec, t, st) for st in protected) for t in OBT_VALUES} if protected \
        else {t: val(rec, t, "all") for t in OBT_VALUES}
    if "best" in cand or (cand[0] == cand[1000] and cand[0] is not None):
        # the knee is of the better setting at each size; a tie within the margin: the default
        lo_t, hi_t = sorted(OBT_VALUES, key=lambda t: at_rec[t])
        obt = lo_t if at_rec[hi_t] > (1 + margin) * at_rec[lo_t] else default_obt
    elif cand[0] != cand[1000] and None not in cand.values():
        obt = 0 if cand[0] < cand[1000] else 1000
    elif cand[0] is None or cand[1000] is None:
        obt = 1000 if cand[0] is None else 0
    else:
        obt = default_obt
    return obt, at_rec


def _obt_at_sizes(val, grid, rec, current_pages, shown, protected, margin):
    """The old_blocks_time table at the recommended size, two grid steps below and the
    current pool, and where 1000 ms cuts a protected stream's reads by more than the
    margin: ``(sizes, table, [(size, stream, reads 0 ms, reads 1000 ms)])``."""
    i = grid.index(rec)
    obt_sizes = [grid[j] for j in (i, i - 1, i - 2) if j >= 0]
    if current_pages is not None and current_pages not in obt_sizes:
        obt_sizes.append(int(current_pages))
    rows = []
    for s in obt_sizes:
        for st in shown:
            r0, r1 = val(s, 0, st), val(s, 1000, st)
            w0, w1 = val(s, 0, st, "io_wait_ns"), val(s, 1000, st, "io_wait_ns")
            rows.append({"pool": mib(s), "pages": s, "stream": st,
                         "reads 0 ms": r0, "reads 1000 ms": r1, "change": rel(r1, r0),
                         "I/O wait 0 ms (s)": round(w0 / 1e9, 3),
                         "I/O wait 1000 ms (s)": round(w1 / 1e9, 3)})
    protects = []
    for s in obt_sizes:
        for st in protected:
            r0, r1 = val(s, 0, st), val(s, 1000, st)
            if r1 < r0 and (r0 - r1) > margin * max(r0, 1):
                protects.append((s, st, r0, r1))
    return obt_sizes, pd.DataFrame(rows), protects


def _pct_and_instance_replays(trace, rec, obt, inst_counts, device, rkw, val, protected,
                              margin):
    """One sweep: old_blocks_pct 20 and 50 at the recommended size, and each instance count
    there.  Returns the pct rows, ``{instances: per-instance counters}`` and where a pct
    moves a protected stream's reads by more than the margin."""
    base = rkw["base"]
    inst_points = [{"pool_pages": _frames(rec, base, n), "instances": int(n),
                    "old_blocks_time_ms": int(obt), "device": device} for n in inst_counts]
    last = _replays(trace, [{**p} for pct in OLD_PCT_ALTERNATIVES
                            for p in _points([rec], device, base, (obt,), pct)] + inst_points,
                    **rkw,
                    per_instance=True)
    n_pct = len(OLD_PCT_ALTERNATIVES)
    first = last.groupby(last["stream"].eq("all").cumsum()).ngroup()  # the point of each row
    pct_tab = last[first < n_pct].drop(columns=["instances", "per_instance"])
    per_n = {int(r.instances): pd.DataFrame(r.per_instance)
             for r in last[(first >= n_pct) & (last["stream"] == "all")].itertuples()}
    pct_moves = []
    for r in pct_tab.itertuples(index=False):
        if r.stream not in protected:
            continue
        ref = val(int(r.pool_pages), obt, r.stream)
        if abs(int(r.misses) - ref) > margin * max(ref, 1):
            pct_moves.append((int(r.pool_pages), int(r.old_blocks_pct), r.stream, ref,
                              int(r.misses)))
    return pct_tab, per_n, pct_moves
