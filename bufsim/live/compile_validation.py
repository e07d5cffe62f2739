"""Notebook 09's driver: a user's SQL compiled to a trace, held against a live MariaDB server.

On a private server (:class:`bufsim.live.MariaDBServer`) loaded with
:mod:`bufsim.live.workload`'s tables:

* **per statement** (:func:`statement_check`): the star-schema statements of
  :data:`STAR` and a sysbench-like OLTP template mix (``data/live/oltp.toml``)
  are compiled (:mod:`bufsim.live.compile`) and run one by one; each statement's
  compiled page gets are set beside the server's ``Innodb_buffer_pool_read_requests``
  delta.  Reads must be exact; writes exact but while the server creates pages (a new
  undo segment or undo page, a page split: ``Innodb_pages_created`` moves; not modelled,
  it only adds gets: such a statement must not have more compiled gets than the
  server's).
* **replayed at other pool sizes** (:func:`pool_check`): the read-only statements
  compiled once, the server restarted with each pool size (a cold pool), the
  statements run, the counter deltas set beside a replay of the compiled trace through
  the ``mariadb1011`` preset with the server's settings, several cold runs per pool:
  a row holds when the replay is within the live tier's tolerance
  (:func:`bufsim.live.tolerance.tolerance_band`) of the server's range over its runs
  (:func:`spread`).  Where the pool is smaller than what the statements read, the
  server's own count moves between identical cold runs (notebook 09's quick pages read at
  6 MiB: 239-249 in 12 runs, up to 268 in another 12 on a loaded machine), with when its
  page cleaner frees pages (the suspect, ``docs/cleaner-race.md``): one run is no yardstick.

Nothing is fitted: the compiler's rules come from the server's source and from
single-statement measurements listed in :mod:`bufsim.live.compile_btree`.
"""
from __future__ import annotations

import concurrent.futures as cf
import itertools
from pathlib import Path

import numpy as np
import pandas as pd

from .._validation import check_int
from ..config import DeviceModel, preset as make_preset
from ..engine import replay
from ..paths import data_dir
from ..trace import Chunk, Trace
from . import workload as W
from .client import delta
from .compile import Compiler
from .compile_workload import check_against_server, read_workload
from .server import MariaDBServer
from .tolerance import COMPARED, holds, tolerance_band
from .validation import SYSTEM_PAGES, startup_trace, with_system_space

__all__ = ["STAR", "oltp_workload", "statement_check", "pool_check", "more_runs", "spread",
           "pool_rows", "results_rows", "QUICK_SCALE"]



def oltp_workload() -> Path:
    """The sysbench-like OLTP template mix shipped in ``data/live/oltp.toml``
    (found through :func:`bufsim.paths.data_dir`, so ``BUFSIM_ROOT`` moves it too)."""
    return data_dir() / "live" / "oltp.toml"

#: the tables of the quick mode (the live tests' size)
QUICK_SCALE = W.Scale(orders=8_000, sbtest_rows=8_000, point_selects=10, krange_rows=10)

#: star-schema statements over ``lineorder`` and ``dates``: (name, SQL)
STAR = (
    ("q1.1 scan join", "SELECT SUM(lo_extendedprice * lo_discount) FROM lineorder "
                       "STRAIGHT_JOIN dates ON lo_orderdate = d_datekey WHERE d_year = 1993 "
                       "AND lo_discount BETWEEN 1 AND 3 AND lo_quantity < 25"),
    ("dates -> lineorder ref", "SELECT COUNT(*) FROM dates STRAIGHT_JOIN lineorder "
                               "ON lo_orderdate = d_datekey WHERE d_yearmonthnum = 199402"),
    ("range join eq_ref", "SELECT SUM(lo_revenue), MAX(d_year) FROM lineorder STRAIGHT_JOIN dates "
                          "ON lo_orderdate = d_datekey WHERE lo_orderkey BETWEEN 100 AND 900"),
    ("covering range", "SELECT COUNT(*) FROM lineorder WHERE lo_orderdate BETWEEN 19940101 "
                       "AND 19940331"),
    ("ref with rows", "SELECT SUM(lo_tax) FROM lineorder WHERE lo_orderdate = 19950704"),
    ("pk prefix", "SELECT * FROM lineorder WHERE lo_orderkey = 77"),
    ("in list", "SELECT d_year FROM dates WHERE d_datekey IN (19920101, 19930615, 19981231)"),
    ("limit", "SELECT lo_orderkey FROM lineorder WHERE lo_discount = 3 LIMIT 40"),
    ("full scan", "SELECT SUM(lo_revenue) FROM lineorder"),
    ("missing key", "SELECT d_year FROM dates WHERE d_datekey = 20300101"),
    ("aliases", "SELECT COUNT(*), SUM(l.lo_tax) FROM dates d, lineorder l WHERE "
                "l.lo_orderdate = d.d_datekey AND d.d_yearmonthnum BETWEEN 199601 AND 199603"),
    ("group by", "SELECT d_year, SUM(lo_revenue) FROM lineorder STRAIGHT_JOIN dates "
                 "ON lo_orderdate = d_datekey GROUP BY d_year"),
)

#: the star statements replayed at other pool sizes: all but "group by", compiled since
#: sorts after the join are (exact), but its scan of lineorder with a dates probe per row
#: more than doubles the set's gets (402,100 with it, 158,949 without, FULL's tables) and
#: at 32 MiB, old_blocks_time 1000, the server then made 101 and 130 pages young in two
#: runs (old pages re-read more than a second apart on a loaded machine) where the replay's
#: clock made none: a real-time effect, not the plan's
POOL_STAR = tuple(s for s in STAR if s[0] != "group by")

_TABLES = ("dates", "lineorder", "sbtest")


def _is_read(sql: str) -> bool:
    return sql.lstrip()[:6].lower() == "select"


def statement_check(server: MariaDBServer, *, statements: int = 60, seed: int = 7,
                    workload: str | Path | None = None, progress=None) -> pd.DataFrame:
    """Compile and run the STAR statements, then the OLTP mix (``statements`` per thread,
    ``seed``), one by one on ``server`` (whose schema :func:`prepare` loaded).

    Returns
    -------
    pandas.DataFrame
        :func:`bufsim.live.compile_workload.check_against_server`'s columns plus
        ``set`` ("star" or "oltp") and ``kind`` ("read" or "write").
    """
    check_int("statements", statements, 1, 100_000)
    w = read_workload(oltp_workload() if workload is None else workload,
                      statements=statements, seed=seed)
    oltp = [s for thread in w.draw() for s in thread]
    with server.connect() as conn:
        star = check_against_server(conn, W.SCHEMA, STAR)
        mix = check_against_server(conn, W.SCHEMA, oltp, progress=progress)
    out = pd.concat([star.assign(set="star"), mix.assign(set="oltp")], ignore_index=True)
    out["kind"] = np.where(out.sql.map(_is_read), "read", "write")
    return out


def prepare(server: MariaDBServer, scale: W.Scale, seed: int) -> None:
    """Load :mod:`bufsim.live.workload`'s tables (drawn from ``seed``) into ``server``."""
    with server.connect() as conn:
        W.load(conn, W.generate(scale, seed))


def pool_check(server: MariaDBServer, pools=("6M", "20M"), *, statements: int = 60,
               seed: int = 7, workload: str | Path | None = None,
               preset: str = "mariadb1011", settings: dict | None = None,
               old_blocks_times=(1000,), startup: bool = True, sqls=None,
               schema: str = W.SCHEMA, tables=None, session=(), repeats: int = 1,
               recheck: int = 0, standby: bool = True, rows: dict | None = None) -> pd.DataFrame:
    """The read-only statements (POOL_STAR's and the OLTP mix's supported SELECTs) compiled once
    and replayed at each pool size and ``innodb_old_blocks_time`` (ms) beside the server
    restarted with them (a cold pool each time).

    ``settings``: server settings for every pool (``innodb_*`` names, e.g.
    ``{"innodb_lru_scan_depth": 100}``), kept for the later restarts; the replay gets
    the server's values as it reads them back.  ``startup`` (default True): the replay's
    pool starts as the server's does after its restart, as in notebook 07
    (:func:`bufsim.live.validation.run_grid`): as many system pages as the server holds
    beyond the tables' roots (DATABASE_PAGES after the tables are opened), the last
    NUMBER_PAGES_CREATED of them dirty temporary pages, then the roots.

    ``sqls``, ``schema``, ``tables``: other read-only statements over another schema
    whose ``tables`` are opened after each restart (the DBT-3 subset,
    :mod:`bufsim.live.compile_dbt3`); ``session``: ``SET SESSION`` statements run on
    the connection before the statements are compiled and before they run; ``repeats``:
    runs of the server per pool size and old_blocks_time (column ``run``; the replay is
    deterministic and made once); ``recheck``: at most this many runs more of a pool size
    and old_blocks_time while a counter's replay is not within the server's spread
    (:func:`spread`), as notebook 07 reruns its missing rows
    (:func:`bufsim.live.validation.recheck_misses`).

    ``rows``: the index entries the compiler reads by SQL, shared with the compilers of
    other calls over the same unchanged data (:class:`bufsim.live.compile.Compiler`).

    ``standby`` (default True): a second server on a copy of ``server``'s data directory
    (:meth:`~bufsim.live.MariaDBServer.clone`, made once the statements are compiled)
    takes every other run, and is restarted for the next run (the same pool and
    old_blocks_time while fewer than ``repeats`` runs of it are made, else the next) while
    this run's statements run, as notebook 07's grid does
    (:func:`bufsim.live.validation.run_grid`): a restart is mostly waiting (0.25-0.45 s:
    InnoDB's shutdown sleeps 100 ms in ``logs_empty_and_mark_files_at_shutdown``, the
    start waits on its files), and a restarted server left idle changes no counter until
    it is used.  Where the next run is not the one guessed (a recheck), its server is
    restarted before it, as without a standby.  ``server`` is left running with the
    setting of the last run it took; the copy is removed.

    Returns
    -------
    pandas.DataFrame
        One row per pool, old_blocks_time, counter of
        :data:`bufsim.live.tolerance.COMPARED` and run: ``pool``, ``pool_pages`` (the
        server's POOL_SIZE), ``old_blocks_time``, ``metric``, ``reported``,
        ``simulated``, ``holds`` (this run alone), ``statements``, ``server_lru`` and
        ``server_old`` (the server's DATABASE_PAGES and OLD_DATABASE_PAGES after the
        statements: an old sublist exists from 512 LRU pages on), ``run``.
    """
    repeats = check_int("repeats", repeats, 1, 20)
    recheck = check_int("recheck", recheck, 0, 50)
    old_blocks_times = [check_int("old_blocks_time", o, 0, 2**32 - 1) for o in old_blocks_times]
    if sqls is None:
        w = read_workload(oltp_workload() if workload is None else workload,
                          statements=statements, seed=seed)
        sqls = [sql for _, sql in POOL_STAR] + [sql for thread in w.draw() for _, sql in thread]
    sqls = [s for s in sqls if _is_read(s)]
    tables = _TABLES if tables is None else tuple(tables)
    server.restart(innodb_buffer_pool_size=pools[0], **(settings or {}))
    with server.connect() as conn:
        for s in session:
            conn.execute(s, doing="setting the session")
        comp = Compiler(conn, schema, rows=rows)
        compiled = [comp.compile(s) for s in sqls]
    run = [(s, c) for s, c in zip(sqls, compiled) if c.ok]
    cases = list(itertools.product(pools, old_blocks_times))
    team = [server]
    rows = []
    ahead = None                        # (server, case, future): a restart beside the run
    try:
        if standby and (len(cases) > 1 or repeats + recheck > 1):
            server.stop()
            team.append(server.clone())
        with cf.ThreadPoolExecutor(max_workers=1) as starter:
            i = 0
            for k, (pool, obt) in enumerate(cases):
                mine, sim = [], None
                while more_runs(mine, repeats, recheck):
                    srv = team[i % len(team)]
                    if ahead is not None:
                        done, ahead = ahead, None
                        done[2].result()
                        if done[0] is not srv or done[1] != (pool, obt):
                            srv.restart(innodb_buffer_pool_size=pool, innodb_old_blocks_time=obt)
                    else:
                        srv.restart(innodb_buffer_pool_size=pool, innodb_old_blocks_time=obt)
                    nxt = cases[k] if len(mine) + 1 < repeats else \
                        (cases[k + 1] if k + 1 < len(cases) else None)
                    if len(team) > 1 and nxt is not None:
                        other = team[(i + 1) % len(team)]
                        ahead = (other, nxt, starter.submit(
                            other.restart, innodb_buffer_pool_size=nxt[0],
                            innodb_old_blocks_time=nxt[1]))
                    info, before, after = _run_reads(srv, schema, session, tables, run)
                    i += 1
                    real = delta(before, after)
                    if sim is None:
                        cfg = make_preset(preset, device=DeviceModel.ssd(), **info.preset_overrides())
                        sim = _replay_reads(comp.geo, [c for _, c in run], tables, cfg,
                                            before if startup else None)
                    mine.append([dict(pool=pool, pool_pages=info.pool_pages, old_blocks_time=obt,
                                      metric=m, reported=float(real[m]), simulated=float(sim[m]),
                                      holds=holds(m, float(real[m]), float(sim[m])),
                                      statements=len(run), server_lru=int(after["DATABASE_PAGES"]),
                                      server_old=int(after["OLD_DATABASE_PAGES"]), run=len(mine))
                                 for m in COMPARED])
                rows += [r for one in mine for r in one]
            if ahead is not None:
                ahead[2].result()
    finally:
        if ahead is not None:
            try:
                ahead[2].result()
            except BaseException:
                pass
        for other in team[1:]:
            other.close()
        if server.proc is None or server.proc.poll() is not None:
            server.start()              # left running, as without a standby
    return pd.DataFrame(rows)


def _run_reads(server: MariaDBServer, schema: str, session, tables, run) -> tuple:
    """One run of :func:`pool_check` on ``server``, restarted for it (a cold pool): the
    session settings, the server's settings, the tables opened, then the statements
    between two counter readings; returns (settings, before, after)."""
    with server.connect(database=schema) as conn:
        for s in session:
            conn.execute(s, doing="setting the session")
        info = conn.settings()
        for t in tables:
            conn.query(f"SELECT * FROM `{schema}`.`{t}` LIMIT 0", doing="opening tables")
        before = conn.counters()
        for s, _ in run:
            conn.query(s, doing="running the compiled statements")
        after = conn.counters()
    return info, before, after


def more_runs(runs: list[list[dict]], repeats: int, recheck: int) -> bool:
    """Whether :func:`pool_check` runs the server once more for one pool size and
    old_blocks_time, given the ``runs`` made so far (each a list of rows, one per
    counter): until ``repeats`` runs, then while a counter's replay is not within the
    server's spread over them (:func:`spread`), up to ``repeats + recheck`` runs."""
    if len(runs) < repeats:
        return True
    if len(runs) >= repeats + recheck:
        return False
    return not bool(spread(pd.DataFrame([r for one in runs for r in one])).holds.all())


def _replay_reads(geo, compiled, tables, cfg, before) -> pd.Series:
    """The compiled statements' counter deltas in a replay through ``cfg``, from a pool that
    starts as the server's does after its restart (``before``: the server's counters then,
    or None for a pool holding the tables' roots only)."""
    roots = [geo.dense(t, [geo.table(t).clustered.root])[0] for t in tables]
    # reads only: no get lands in the compiler's modelled undo space (appended after
    # the tables), so the tables' own tablespaces carry the trace
    ts = geo.tablespaces
    body = [c.chunk(0) for c in compiled]
    top = max((int(ch.page.max()) for ch in body if len(ch)), default=-1)
    if top >= ts.n_pages:
        raise ValueError(f"a read-only statement's trace reaches page {top}, past the "
                         f"tables' {ts.n_pages} pages")
    prep = Trace(Chunk.from_arrays(np.array(roots, dtype=np.int64)), ts, "open")
    if before is not None:
        n_roots = int(replay(prep, cfg).stats["DATABASE_PAGES"].sum())
        n_sys = min(max(int(before["DATABASE_PAGES"]) - n_roots, 0), SYSTEM_PAGES)
        ts = with_system_space(ts)
        prep = Trace(list(prep), ts, "open")
        if n_sys:
            created = min(int(before["NUMBER_PAGES_CREATED"]), n_sys)
            prep = Trace.concat([startup_trace(ts, n_sys, created), prep])
    body = Trace(body, ts, "statements")
    t0 = replay(prep, cfg).totals
    t1 = replay(Trace.concat([prep, body]), cfg).totals
    return t1 - t0


def spread(pools: pd.DataFrame) -> pd.DataFrame:
    """Per pool, old_blocks_time and counter (and ``set``, where the frame has one): the
    server's runs (``runs``, ``server_min``, ``server_max``), the replay's count
    (``simulated``: deterministic, one value) and ``holds``: the replay within the live
    tier's tolerance (:func:`bufsim.live.tolerance.tolerance_band`) of the server's range,
    from the band of its least count to that of its greatest.  Other columns (``statements``,
    ``queries``) are carried, their first value."""
    keys = [k for k in ("set", "pool", "pool_pages", "old_blocks_time", "metric") if k in pools]
    carried = {c: (c, "first") for c in ("statements", "queries") if c in pools}
    out = pools.groupby(keys, sort=False).agg(
        runs=("reported", "size"), server_min=("reported", "min"),
        server_max=("reported", "max"), simulated=("simulated", "first"),
        replay_values=("simulated", "nunique"), **carried).reset_index()
    low = [tolerance_band(m, v)[0] for m, v in zip(out.metric, out.server_min)]
    high = [tolerance_band(m, v)[1] for m, v in zip(out.metric, out.server_max)]
    out["holds"] = (out.simulated >= low) & (out.simulated <= high) & (out.replay_values == 1)
    return out


def pool_rows(pools: pd.DataFrame, experiment: str) -> list[dict]:
    """Rows for :func:`bufsim.results.write_results`, one per pool, old_blocks_time and
    counter (and ``set``, where the frame has one) of :func:`pool_check`'s runs: the
    replay beside the server's range over its runs (:func:`spread`; ``reported``: the
    median of the runs, the config names their range and what ran: the statements' count,
    or the ``queries``)."""
    if not len(pools):
        return []
    keys = [k for k in ("set", "pool", "old_blocks_time", "metric") if k in pools]
    med = pools.groupby(keys, sort=False).reported.median()
    out = []
    for r in spread(pools).itertuples(index=False):
        ran = r.queries if "queries" in pools else f"{r.statements} reads"
        out.append(dict(
            experiment=experiment,
            metric=(f"{r.set} " if "set" in pools else "") + f"replay {r.metric}",
            config=(f"pool={r.pool} ({r.pool_pages} pages) old_blocks_time={r.old_blocks_time}"
                    f", {ran}; server {int(r.server_min)}..{int(r.server_max)} over "
                    f"{r.runs} runs"),
            reported=float(med[tuple(getattr(r, k) for k in keys)]),
            simulated=float(r.simulated), fitted=False, holds=bool(r.holds)))
    return out


def results_rows(per_statement: pd.DataFrame, pools: pd.DataFrame,
                 experiment: str = "SQL -> trace, live MariaDB 10.11") -> list[dict]:
    """Rows for :func:`bufsim.results.write_results`: per statement set, template and kind
    the summed gets, and per pool, old_blocks_time and counter the replay beside the
    server's range over its runs (:func:`spread`; ``reported``: the median of the runs, the
    config names their range).

    A read row holds when every statement is exact.  A write row holds when every
    statement during which the server created no page is exact and every one during
    which it did (``created`` > 0: a new undo segment or undo page, a page split; the
    compiler models none of them, and they only add gets) has no more compiled gets than
    the server's; the config names how many created pages and the gets they added."""
    out = []
    ok = per_statement[per_statement.unsupported == ""]
    for (st, tmpl, kind), g in ok.groupby(["set", "template", "kind"], sort=False):
        rep, sim = float(g.server.sum()), float(g.compiled.sum())
        grew = g.created > 0
        good = bool((g.compiled[~grew] == g.server[~grew]).all()
                    and (g.compiled[grew] <= g.server[grew]).all())
        config = f"{len(g)} statement(s), {kind}"
        if kind == "read":
            good = good and not grew.any()
        if grew.any():
            extra = int((g.server[grew] - g.compiled[grew]).sum())
            config += (f"; {int(grew.sum())} created pages on the server (not modelled): "
                       f"+{extra} gets")
        out.append(dict(experiment=experiment, metric=f"{st} {tmpl} page gets",
                        config=config, reported=rep, simulated=sim, fitted=False, holds=good))
    return out + pool_rows(pools, experiment)
