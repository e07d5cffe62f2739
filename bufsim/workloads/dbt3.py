"""DBT-3 (TPC-H) on InnoDB: the plan executor and the access patterns of 15 queries.

Reproduces the setting of 002_5c4a4fbcadbdca94.txt: DBT-3 scale 1 on MySQL 5.5 /
5.6.5, queries run with plain nested loops, with Disk-Sweep MRR, and with
``optimizer_switch='mrr_cost_based=off,batched_key_access=on'``.

The model is split in three modules; this one re-exports the public names of
the other two, so ``from bufsim.workloads.dbt3 import ...`` reaches all of them:

* :mod:`~bufsim.workloads.dbt3_schema`: the eight tables with DBT-3's indexes
  (:func:`dbt3_tables`), the seeded column values (:class:`Dbt3Data`) and the
  TPC-H constants;
* :mod:`~bufsim.workloads.dbt3_plans`: :data:`PLANS`, the join order and access
  type per table of every query in :data:`QUERIES`, as :class:`Step` records;
* this module: :class:`Dbt3`, which builds the layout and the data at a scale
  factor and executes a query's steps as page gets, under the variants ``plain``,
  ``mrr`` and ``bka`` (:data:`VARIANTS`; described in
  :mod:`~bufsim.workloads.dbt3_plans`).

Rows read (``Operator.rows``) and page gets (``Operator.gets``) are counted
from the plan without building pages (:meth:`Dbt3.expected`); the trace is
built from the same records plus the B-tree paths, so a test can compare both.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._validation import check_int
from .dbt3_plans import PLANS, QUERIES, Step
from .dbt3_schema import (  # noqa: F401  (re-exported: the names bufsim.workloads.dbt3 had)
    AMERICA, ANODIZED, ASIA, BRASS, CURRENT_DATE, DELIVER_IN_PERSON, ECONOMY, EUROPE, GERMANY,
    N_ORDER_DATES, NATION_REGION, SAUDI_ARABIA, SHIP_MODES, STEEL, Dbt3Data, day, dbt3_tables,
)
from ..trace import FLAG_STMT_END, Chunk
from .plans import CpuCost, Database, Operator, emit_chunk, range_scan, statement

__all__ = ["Dbt3", "Dbt3Data", "dbt3_database", "dbt3_tables", "PLANS", "QUERIES", "VARIANTS",
           "day", "CURRENT_DATE", "N_ORDER_DATES"]

VARIANTS = ("plain", "mrr", "bka")


# --------------------------------------------------------------------------------------
# access records
# --------------------------------------------------------------------------------------
@dataclass(eq=False)
class _Recs:
    """Records of one access in execution order: each is a group of consecutive gets
    (an optional descent above the leaf, 0-2 leaf gets, an optional clustered
    lookup) that reads at most one row and may pass one row on."""

    table: str
    index: str | None
    probe: np.ndarray      # incoming row of each record
    e: np.ndarray          # entry position in `index` (-1: a DS-MRR fetch record)
    upper: np.ndarray      # bool: descent from the root above the leaf
    leafreps: np.ndarray   # 0, 1 or 2 gets of the entry's leaf
    look: np.ndarray       # bool: clustered lookup of `row`
    row: np.ndarray        # clustered row read (-1: none)
    nrows: np.ndarray      # rows read (0/1)
    out: np.ndarray        # bool: passes a row on
    pcols: dict            # incoming rows' columns
    alias: str | None      # name of this table's row in passed-on rows (None: exists)
    gcount: np.ndarray = None
    parent: np.ndarray = None

    def __len__(self):
        return int(self.probe.size)

    def take(self, sl) -> _Recs:
        return _Recs(self.table, self.index, self.probe[sl], self.e[sl], self.upper[sl],
                     self.leafreps[sl], self.look[sl], self.row[sl], self.nrows[sl],
                     self.out[sl], self.pcols, self.alias, self.gcount[sl])

    def out_cols(self) -> dict:
        sel = np.flatnonzero(self.out)
        p = self.probe[sel]
        cols = {a: v[p] for a, v in self.pcols.items()}
        if self.alias is not None:
            cols[self.alias] = self.row[sel]
        return cols


def _n(cols: dict) -> int:
    return int(next(iter(cols.values())).size) if cols else 0


def _take(cols: dict, idx) -> dict:
    return {a: v[idx] for a, v in cols.items()}


def _cat(parts: list) -> dict:
    return {a: np.concatenate([p[a] for p in parts]) for a in parts[0]}


def _expand(start, k):
    """Per entry: (probe id, offset within the probe) for ``k[i]`` entries of probe i."""
    k = np.asarray(k, dtype=np.int64)
    pid = np.repeat(np.arange(k.size, dtype=np.int64), k)
    j = np.arange(pid.size, dtype=np.int64) - np.repeat(np.cumsum(k) - k, k)
    return pid, j


class Dbt3:
    """DBT-3 at a scale factor: layout, data, and the 15 queries' access patterns.

    Parameters
    ----------
    sf : float
        Scale factor, 0 < sf <= 10 (SF 0.01-0.05 for quick runs).
    seed : int
        Seeds the data (and the leaf order of randomly filled indexes).
    secondary_ordered : bool
        Secondary indexes built by merge sort after the load (DBT-3's scripts).
    join_buffer_size, read_rnd_buffer_size : int
        Bytes (MySQL 5.6.5 defaults 128K and 256K).

    Examples
    --------
    >>> d = Dbt3(0.01)
    >>> op = d.query(17, "bka")
    >>> op.gets == sum(c.n_gets for c in op.chunks())
    True
    """

    QUERIES = QUERIES
    VARIANTS = VARIANTS

    def __init__(self, sf: float = 1.0, *, seed: int = 0, secondary_ordered: bool = True,
                 join_buffer_size: int = 131072, read_rnd_buffer_size: int = 262144):
        if not (isinstance(sf, (int, float)) and 0 < sf <= 10):
            raise ValueError(f"sf = {sf!r} is out of range; allowed: 0 < sf <= 10")
        for f, v in (("join_buffer_size", join_buffer_size),
                     ("read_rnd_buffer_size", read_rnd_buffer_size)):
            check_int(f, v, 128)
        self.sf = float(sf)
        self.seed = seed
        self.data = Dbt3Data.generate(self.sf, seed)
        self.tables = dbt3_tables(self.sf, n_lineitem=self.data.n_lineitem,
                                  secondary_ordered=secondary_ordered)
        self.db = Database(self.tables, seed=seed)
        self.tablespaces = self.db.tablespaces
        self.join_buffer_size = join_buffer_size
        self.read_rnd_buffer_size = read_rnd_buffer_size
        self._ix = {}
        self._counts = {}   # (q, variant, buffers) -> work(): see _count

    # ---- secondary indexes: entry -> row, key -> first entry ---------------------------
    def _sec(self, table: str, index: str):
        """(rows in index order, first entry of every key value)."""
        if (table, index) not in self._ix:
            d = self.data
            col = {("lineitem", "i_l_partkey"): d.l_part, ("lineitem", "i_l_suppkey"): d.l_supp,
                   ("lineitem", "i_l_shipdate"): d.l_ship, ("orders", "i_o_orderdate"): d.o_date,
                   ("orders", "i_o_custkey"): d.o_cust, ("customer", "i_c_nationkey"): d.c_nation,
                   ("supplier", "i_s_nationkey"): d.s_nation,
                   ("partsupp", "i_ps_suppkey"): d.ps_supp,
                   ("nation", "i_n_regionkey"): d.n_region}[(table, index)]
            order = np.argsort(col, kind="stable").astype(np.int64)
            starts = np.searchsorted(col[order], np.arange(int(col.max()) + 2)).astype(np.int64)
            self._ix[(table, index)] = (order, starts)
        return self._ix[(table, index)]

    def _ref(self, table, index):
        """probe(keys) -> (first entry, count) on a secondary index."""
        def f(keys):
            _, starts = self._sec(table, index)
            keys = np.asarray(keys, dtype=np.int64)
            k = np.clip(keys, 0, starts.size - 2)
            s = starts[k]
            return s, np.where(keys == k, starts[k + 1] - s, 0)
        return f

    def _range(self, table, index, lo, hi):
        """A driving range: entries with key in [lo, hi)."""
        _, starts = self._sec(table, index)
        lo, hi = np.clip([lo, hi], 0, starts.size - 1)
        return int(starts[lo]), int(starts[hi] - starts[lo])

    def _rows_of(self, table, index):
        if index is None or (table, index) in (("lineitem", "i_l_orderkey"),
                                               ("lineitem", "i_l_orderkey_quantity"),
                                               ("partsupp", "i_ps_partkey")):
            return None                                 # entries in clustered order
        return self._sec(table, index)[0]

    # ---- records -------------------------------------------------------------------
    def _records(self, st: Step, cols: dict, *, mrr: bool, last_key: dict | None,
                 mrr_cap: int | None = None, work: dict | None = None) -> _Recs:
        db = self.db
        ix = db.index(st.table, st.index)
        g = ix.geometry
        total, pl = g.rows, g.per_leaf
        T = _n(cols)
        start, k = st.probe(cols)
        start = np.broadcast_to(np.asarray(start, dtype=np.int64), (T,))
        k = np.broadcast_to(np.asarray(k, dtype=np.int64), (T,))
        rowmap = self._rows_of(st.table, st.index)
        secondary = st.index is not None and not st.covering
        z = np.zeros(T, dtype=bool)
        if st.unique:
            skip = z.copy()
            if last_key is not None and T:
                prev = np.empty(T, dtype=np.int64)
                prev[0] = last_key.get(st.alias, -1)
                prev[1:] = start[:-1]
                skip = start == prev
                last_key[st.alias] = int(start[-1])
            row = start if rowmap is None else rowmap[start]
            r = _Recs(st.table, st.index, np.arange(T), start.copy(), ~skip,
                      (~skip).astype(np.int64), z & secondary, row.astype(np.int64),
                      (~skip).astype(np.int64), z, cols, st.alias)
            r.out = np.ones(T, dtype=bool) if st.filt is None else \
                np.asarray(st.filt({**cols, st.alias: r.row}), dtype=bool)
            return self._finish(r)
        passed = None
        if st.exists:
            pid, j = _expand(start, k)
            e = start[pid] + j
            rows_e = e if rowmap is None else rowmap[e]
            m = np.asarray(st.pred(_take(cols, pid), rows_e), dtype=bool)
            first = np.full(T, np.iinfo(np.int64).max)
            hit = np.flatnonzero(m)
            if hit.size:
                u, at = np.unique(pid[hit], return_index=True)
                first[u] = j[hit[at]]
            found = first < k
            kk = np.where(found, first + 1, k)
            past = ~found & (start + k < total)
            passed = found if st.exists > 0 else ~found
        else:
            kk = k
            past = start + k < total
        desc_only = (kk == 0) & ~past
        nrec = kk + past + desc_only
        pid, j = _expand(start, nrec)
        e = np.minimum(start[pid] + j, max(total - 1, 0))
        is_entry = j < kk[pid]
        first = j == 0
        new = first | (e % pl == 0)
        leafreps = 1 + new - desc_only[pid]
        row = np.where(is_entry, e if rowmap is None else rowmap[e], -1)
        look_inline = is_entry & secondary & (not mrr)
        out = np.zeros(pid.size, dtype=bool)
        if st.exists:
            last = np.cumsum(nrec) - 1
            out[last[passed]] = True
            r = _Recs(st.table, st.index, pid, e, first, leafreps, look_inline, row,
                      is_entry.astype(np.int64), out, cols, None)
            return self._finish(r)
        if not (secondary and mrr):
            cand = np.flatnonzero(is_entry)
            if st.filt is None:
                out[cand] = True
            else:
                out[cand] = np.asarray(st.filt({**_take(cols, pid[cand]), st.alias: row[cand]}),
                                       dtype=bool)
            r = _Recs(st.table, st.index, pid, e, first, leafreps, look_inline, row,
                      is_entry.astype(np.int64), out, cols, st.alias)
            return self._finish(r)
        # Disk-Sweep MRR: index records fill the row-id buffer, then sorted fetches.
        # A range scan's buffer is read_rnd_buffer_size of bare row ids
        # (HA_MRR_NO_ASSOCIATION); under BKA the caller passes the join buffer's
        # free tail, whose elements carry an association pointer (``mrr_cap``).
        cap = max(1, self.read_rnd_buffer_size // self.rowid_bytes(st.table)) \
            if mrr_cap is None else max(1, int(mrr_cap))
        cum = np.cumsum(is_entry)
        chunk = (cum - is_entry) // cap
        ent = np.flatnonzero(is_entry)
        if work is not None and ent.size:
            sizes = np.bincount(chunk[ent])
            sizes = sizes[sizes > 0].astype(np.float64)
            work["mrr_passes"] = work.get("mrr_passes", 0) + int(sizes.size)
            work["mrr_rowids"] = work.get("mrr_rowids", 0) + int(ent.size)
            if mrr_cap is not None:         # BKA: each fetched row finds its join-buffer record
                work["bka_rowids"] = work.get("bka_rowids", 0) + int(ent.size)
            work["sort_compares"] = work.get("sort_compares", 0.0) + \
                float((sizes * np.log2(np.maximum(sizes, 2))).sum())
        fr = row[ent]
        fo = np.lexsort((fr, chunk[ent]))
        ent = ent[fo]
        nf = ent.size
        f_out = np.ones(nf, dtype=bool) if st.filt is None else \
            np.asarray(st.filt({**_take(cols, pid[ent]), st.alias: row[ent]}), dtype=bool)
        n_i = pid.size
        key_chunk = np.concatenate([chunk, chunk[ent]])
        kind = np.concatenate([np.zeros(n_i, np.int8), np.ones(nf, np.int8)])
        seq = np.arange(n_i + nf)
        order = np.lexsort((seq, kind, key_chunk))
        fz = np.zeros(nf, dtype=bool)
        cat = lambda a, b: np.concatenate([a, b])[order]  # noqa: E731
        r = _Recs(st.table, st.index, cat(pid, pid[ent]), cat(e, np.full(nf, -1)),
                  cat(first, fz), cat(leafreps, np.zeros(nf, np.int64)), cat(out & False, ~fz),
                  cat(np.full(n_i, -1), row[ent]), cat(np.zeros(n_i, np.int64), np.ones(nf, np.int64)),
                  cat(out, f_out), cols, st.alias)
        return self._finish(r)

    def rowid_bytes(self, table: str) -> int:
        """Bytes of a row id of ``table`` (its primary key's columns; InnoDB's 6-byte
        DB_ROW_ID when there is none): the ``ref_length`` of DS-MRR and BKA buffers."""
        t = self.db.table(table).table
        return int(sum(t.column(c).bytes for c in t.primary_key)) or 6

    def _finish(self, r: _Recs) -> _Recs:
        h = self.db.index(r.table, r.index).height
        hc = self.db.index(r.table).height
        r.gcount = r.upper * (h - 1) + r.leafreps + r.look * hc
        return r

    def _pages(self, r: _Recs) -> tuple[np.ndarray, np.ndarray]:
        """Dense pages of every get of the records, and rows read per get."""
        db = self.db
        ix, cl = db.index(r.table, r.index), db.index(r.table)
        h, hc = ix.height, cl.height
        n = len(r)
        mat = np.full((n, h + 1 + hc), -1, dtype=np.int64)
        hasleaf = r.leafreps > 0
        if hasleaf.any():
            path = ix.paths(ix.leaf_of(r.e[hasleaf]))
            up = r.upper[hasleaf]
            sub = mat[hasleaf]
            sub[:, :h - 1] = np.where(up[:, None], path[:, :-1], -1)
            sub[:, h - 1] = path[:, -1]
            sub[:, h] = np.where(r.leafreps[hasleaf] == 2, path[:, -1], -1)
            mat[hasleaf] = sub
        if r.look.any():
            mat[r.look, h + 1:] = cl.paths(cl.leaf_of(r.row[r.look]))
        flat = mat.ravel()
        keep = flat >= 0
        pages = db.dense(r.table, flat[keep])
        rows = np.zeros(pages.size, dtype=np.int64)
        end = np.cumsum(r.gcount) - 1
        has = (r.gcount > 0) & (r.nrows > 0)
        rows[end[has]] = r.nrows[has]
        return pages, rows

    # ---- execution -------------------------------------------------------------------
    def _dfs(self, roots: _Recs, steps: list, last_key: dict, want_pages: bool):
        """Nested loops below ``roots``: yields (pages, rows) blocks or (gets, rows) counts."""
        block = 4096
        for lo in range(0, len(roots), block):
            r0 = roots.take(slice(lo, lo + block))
            levels = [r0]
            cols = r0.out_cols()
            parent = np.flatnonzero(r0.out)
            for st in steps:
                if parent.size == 0:
                    break
                r = self._records(st, cols, mrr=False, last_key=last_key)
                r.parent = parent[r.probe]
                levels.append(r)
                cols = r.out_cols()
                parent = np.flatnonzero(r.out)
            if not want_pages:
                yield (int(sum(int(lv.gcount.sum()) for lv in levels)),
                       int(sum(int(lv.nrows.sum()) for lv in levels)))
                continue
            yield self._dfs_order(levels)

    def _dfs_order(self, levels):
        sizes = [None] * len(levels)
        sizes[-1] = np.ones(len(levels[-1]), dtype=np.int64)
        for k in range(len(levels) - 1, 0, -1):
            sizes[k - 1] = 1 + np.bincount(levels[k].parent, weights=sizes[k],
                                           minlength=len(levels[k - 1])).astype(np.int64)
        pre = [np.cumsum(sizes[0]) - sizes[0]]
        for k in range(1, len(levels)):
            par = levels[k].parent
            ex = np.cumsum(sizes[k]) - sizes[k]
            firsts = np.searchsorted(par, par, side="left")
            pre.append(pre[k - 1][par] + 1 + ex - ex[firsts])
        pages, rows, goff, gcnt = [], [], [], []
        base = 0
        for lv in levels:
            p, rw = self._pages(lv)
            pages.append(p)
            rows.append(rw)
            goff.append(base + np.cumsum(lv.gcount) - lv.gcount)
            gcnt.append(lv.gcount)
            base += p.size
        order = np.argsort(np.concatenate(pre), kind="stable")
        goff = np.concatenate(goff)[order]
        gcnt = np.concatenate(gcnt)[order]
        idx = np.repeat(goff - (np.cumsum(gcnt) - gcnt), gcnt) + np.arange(int(gcnt.sum()))
        return np.concatenate(pages)[idx], np.concatenate(rows)[idx]

    def rec_per_key(self, table: str, index: str) -> int:
        """rec_per_key of a secondary index's key (rows / distinct values), as the
        exact persistent statistics of the document's setup would give it."""
        _, starts = self._sec(table, index)
        distinct = int((np.diff(starts) > 0).sum())
        return max(1, int(round(int(starts[-1]) / max(distinct, 1))))

    @staticmethod
    def batched(st: Step) -> bool:
        """Whether ``batched_key_access=on`` gives ``st`` a BKA join buffer in MySQL 5.6.

        ``setup_join_buffering`` refuses BKA when the MRR implementation chosen is
        the default one, and ``DsMrr_impl::choose_mrr_impl`` picks the default for
        lookups on InnoDB's clustered primary key and for index-only (covering)
        access: only non-covering secondary-index ``ref`` steps are batched.
        Dependent subqueries (``st.bka`` False) are never batched.
        """
        return bool(st.bka and st.index is not None and not st.covering)

    def _run(self, plan: dict, variant: str, want_pages: bool, work: dict | None = None):
        """Yields (pages, rows) blocks in execution order, or (gets, rows) counts.

        ``work`` (a dict, optional) accumulates the executor work that is not a page
        get: ``buffer_records`` written to BKA join buffers, ``mrr_passes``,
        ``mrr_rowids`` and ``sort_compares`` (sum of m log2 m over DS-MRR passes).
        """
        steps = plan["steps"](self)
        drive = plan["drive"](self)
        bka = variant == "bka"
        n_stages = 0
        if bka:
            for i, st in enumerate(steps):
                if self.batched(st):
                    n_stages = i + 1
        stages, tail = steps[:n_stages], steps[n_stages:]
        is_batched = [self.batched(st) for st in stages]
        J = self.join_buffer_size
        # JOIN_CACHE_BKA: every record reserves aux_buffer_incr() = rec_per_key x
        # (ref_length + sizeof(void*)) bytes of MRR buffer (mrr_length_per_rec)
        elem = [self.rowid_bytes(st.table) + 8 for st in stages]
        incr = [self.rec_per_key(st.table, st.index) * e if b else 0
                for st, e, b in zip(stages, elem, is_batched)]
        cap = [max(1, J // (st.buf + a)) for st, a in zip(stages, incr)]
        pending = [[] for _ in stages]
        npend = [0] * len(stages)
        last_key: dict = {}

        def emit(r: _Recs):
            if len(r) == 0:
                return
            if want_pages:
                yield self._pages(r)
            else:
                yield int(r.gcount.sum()), int(r.nrows.sum())

        def forward(r: _Recs, s: int):
            """Emit r's gets and pass its rows to stage s, flushing when its buffer fills."""
            if s == len(stages):
                yield from self._dfs(r, tail, last_key, want_pages)
                return
            if not is_batched[s]:
                # a nested-loop step between batched ones (Q11's covering supplier
                # lookup): its probes follow r's gets; exact when r passes one row
                yield from emit(r)
                if r.out.any():
                    nxt = self._records(stages[s], r.out_cols(), mrr=False, last_key=last_key)
                    yield from forward(nxt, s + 1)
                return
            out = np.flatnonzero(r.out)
            cols = r.out_cols()
            pos = opos = 0
            b = cap[s] - npend[s]
            while b <= out.size:
                end = int(out[b - 1]) + 1
                yield from emit(r.take(slice(pos, end)))
                yield from feed(s, _take(cols, slice(opos, b)))
                pos, opos = end, b
                b += cap[s]
            yield from emit(r.take(slice(pos, len(r))))
            if opos < out.size:
                yield from feed(s, _take(cols, slice(opos, out.size)))

        def feed(s, cols):
            pending[s].append(cols)
            npend[s] += _n(cols)
            if npend[s] >= cap[s]:
                yield from flush(s)

        def flush(s):
            if npend[s] == 0:
                return
            cols = _cat(pending[s])
            n = npend[s]
            pending[s].clear()
            npend[s] = 0
            st = stages[s]
            if work is not None:
                work["buffer_records"] = work.get("buffer_records", 0) + n
            # keys are probed in join-buffer order (5.6's DS-MRR sorts row ids only);
            # the row-id buffer is the rest of the join buffer
            mcap = max(1, (J - n * st.buf) // elem[s])
            r = self._records(st, cols, mrr=True, last_key=None, mrr_cap=mcap, work=work)
            yield from forward(r, s + 1)

        d = self._records(drive, {"_": np.zeros(1, dtype=np.int64)}, mrr=variant != "plain",
                          last_key=None, work=work)
        yield from forward(d, 0)
        for s in range(len(stages)):
            if is_batched[s]:
                yield from flush(s)

    # ---- public ----------------------------------------------------------------------
    def _check(self, q, variant):
        if q not in PLANS:
            raise ValueError(f"q = {q!r} is not a modelled DBT-3 query; allowed: "
                             f"{', '.join(map(str, QUERIES))}")
        if variant not in VARIANTS:
            raise ValueError(f"variant = {variant!r} is unknown; allowed: {', '.join(VARIANTS)}")

    def work(self, q: int, variant: str = "plain") -> dict:
        """Executor work of query ``q`` that is not a page get (see :meth:`_run`):
        ``rows``, ``gets``, ``buffer_records``, ``mrr_passes``, ``mrr_rowids``,
        ``bka_rowids`` (the DS-MRR row ids of BKA steps), ``sort_compares``; counted
        from the plan without building pages."""
        self._check(q, variant)
        return dict(self._count(q, variant))

    def expected(self, q: int, variant: str = "plain") -> tuple[int, int]:
        """(rows read, page gets) of query ``q`` under ``variant``, counted from the plan."""
        self._check(q, variant)
        w = self._count(q, variant)
        return w["rows"], w["gets"]

    def _count(self, q: int, variant: str) -> dict:
        """One pass of the plan without pages for :meth:`work` and :meth:`expected` (the
        ``work`` dict only gathers counts beside the (gets, rows) blocks, which are the
        same with or without it), kept per query, variant and buffer sizes: the plan
        depends on nothing else that can change after ``__init__``.  :meth:`query` calls
        :meth:`expected`, and notebook 05 asks for the work of each query it replays, many
        of them again in its later sections."""
        key = (q, variant, self.join_buffer_size, self.read_rnd_buffer_size)
        w = self._counts.get(key)
        if w is None:
            w = dict(rows=0, gets=0, buffer_records=0, mrr_passes=0, mrr_rowids=0,
                     bka_rowids=0, sort_compares=0.0)
            for part in PLANS[q]["parts"]:
                if part == "li_covering_scan":
                    op = self._covering_scan(CpuCost())
                    w["rows"] += op.rows
                    w["gets"] += op.gets
                    continue
                for g, r in self._run(part, variant, want_pages=False, work=w):
                    w["gets"] += g
                    w["rows"] += r
            self._counts[key] = w
        return w

    def _covering_scan(self, cpu):
        ix = self.db.index("lineitem", "i_l_orderkey_quantity")
        return range_scan(self.db, "lineitem", 0, ix.geometry.rows, index="i_l_orderkey_quantity",
                          cpu=cpu)

    def query(self, q: int, variant: str = "plain", *, cpu: CpuCost = CpuCost()) -> Operator:
        """The access pattern of DBT-3 query ``q`` under ``variant`` as an Operator.

        ``q`` in :data:`QUERIES`; ``variant`` ``'plain'``, ``'mrr'`` or ``'bka'``
        (:mod:`~bufsim.workloads.dbt3_plans`).  ``.rows`` and ``.gets`` come from :meth:`expected`.
        The query is one statement (its subqueries, correlated or not, are part
        of it): only its last event carries :data:`bufsim.FLAG_STMT_END`.
        """
        self._check(q, variant)
        rows, gets = self.expected(q, variant)

        def chunks(stream):
            for part in PLANS[q]["parts"]:
                if part == "li_covering_scan":
                    yield from self._covering_scan(cpu).factory(stream)
                    continue
                for pages, rws in self._run(part, variant, want_pages=True):
                    for lo in range(0, pages.size, 1 << 20):
                        yield emit_chunk(pages[lo:lo + (1 << 20)], rws[lo:lo + (1 << 20)], cpu,
                                    stream, 0)

        return statement(Operator(f"DBT-3 Q{q} {variant}", chunks, rows, gets,
                                  self.tablespaces))

    def query_chunk(self, q: int, variant: str = "plain", *, cpu: CpuCost = CpuCost(),
                    stream: int = 0) -> Chunk:
        """Every event of :meth:`query` (``q``, ``variant``, ``cpu``) as one chunk: the same
        events as ``Chunk.concat(list(self.query(q, variant, cpu=cpu).chunks(stream)))``.

        :meth:`query` makes a :class:`~bufsim.trace.Chunk` per block of its plan passes (a
        few thousand per query at SF1, each checked on construction) and a caller that
        wants them in one piece copies them all again; here each block is cut into runs
        as :func:`~bufsim.workloads.plans.emit_chunk` cuts it (at most 2**20 gets at a
        time, no run across two) and the runs' columns are joined once.

        The pass also gathers the plan's work (:meth:`work`: the same ``_run`` calls in
        the same order, with the gets and rows of the blocks it yields) and keeps it where
        :meth:`work` and :meth:`expected` look first, so a caller that asks for both
        makes one plan pass instead of two."""
        self._check(q, variant)
        cols = []                                       # (page, count, cpu_ns, flags) pieces
        w = dict(rows=0, gets=0, buffer_records=0, mrr_passes=0, mrr_rowids=0,
                 bka_rowids=0, sort_compares=0.0)
        for part in PLANS[q]["parts"]:
            if part == "li_covering_scan":
                op = self._covering_scan(cpu)
                w["rows"] += op.rows
                w["gets"] += op.gets
                cols.extend((c.page, c.count, c.cpu_ns, c.flags)
                            for c in op.factory(stream) if len(c))
                continue
            for pg, rw in self._run(part, variant, want_pages=True, work=w):
                w["gets"] += int(pg.size)
                w["rows"] += int(rw.sum())
                for lo in range(0, pg.size, 1 << 20):
                    p, r = pg[lo:lo + (1 << 20)], rw[lo:lo + (1 << 20)]
                    start = np.ones(p.size, dtype=bool)
                    start[1:] = p[1:] != p[:-1]
                    idx = np.flatnonzero(start)
                    count = np.diff(np.append(idx, p.size))
                    runs = np.add.reduceat(r, idx)
                    cols.append((p[idx], count, cpu.get_ns + (runs * cpu.row_ns) // count, None))
        self._counts.setdefault((q, variant, self.join_buffer_size, self.read_rnd_buffer_size), w)
        if not cols:
            return Chunk.empty()
        page, count, cpu_ns = (np.concatenate([c[j] for c in cols]).astype(np.int64, copy=False)
                               for j in range(3))
        flags = np.concatenate([np.zeros(c[0].size, np.uint8) if c[3] is None else c[3]
                                for c in cols])
        flags[-1] |= FLAG_STMT_END
        return Chunk(page, count, cpu_ns, np.full(page.size, stream, dtype=np.int64), flags)

    def distinct_pages(self, q: int, variant: str = "plain") -> int:
        """Distinct pages the query touches (from its trace)."""
        seen = np.zeros(self.tablespaces.n_pages, dtype=bool)
        for c in self.query(q, variant).chunks():
            seen[c.page] = True
        return int(seen.sum())

    def plan_table(self):
        """:data:`PLANS` as a DataFrame: query, step, table, access, BKA-batched."""
        import pandas as pd
        rows = []
        for q in QUERIES:
            for p, part in enumerate(PLANS[q]["parts"]):
                if part == "li_covering_scan":
                    rows.append(dict(query=q, part=p, step=0, alias="l", table="lineitem",
                                     access="index (covering full scan i_l_orderkey_quantity)",
                                     bka=False))
                    continue
                for i, st in enumerate([part["drive"](self)] + part["steps"](self)):
                    rows.append(dict(query=q, part=p, step=i, alias=st.alias, table=st.table,
                                     access=st.access, bka=bool(i and self.batched(st))))
        return pd.DataFrame(rows)


def dbt3_database(sf: float = 1.0, seed: int = 0, **kw) -> Dbt3:
    """A :class:`Dbt3` at scale factor ``sf``."""
    return Dbt3(sf, seed=seed, **kw)
