"""Nested-loop joins for the compiler: the driving table's segments and each row's probes.

MariaDB 10.11's executor reads a join table by table (sql/sql_select.cc ``sub_select``):
the first table's rows (a scan, a range, a ``ref`` by constants), and for each row that
passes its condition the next table's probe by ``eq_ref`` / ``ref`` (``join_read_key``,
``join_read_always_key``), depth first.  An ``eq_ref`` probe whose key equals the previous
probe's is skipped (the server keeps the last row).  Batched Key Access puts a table's
partial rows in its join buffer instead (``sub_select_cache``, sql/sql_select.cc:22813),
and once the rows before it are all in, reads the table for the whole buffer and sends each
match on to the tables after it (``JOIN_CACHE::join_records`` / ``join_matching_records``,
sql/sql_join_cache.cc:2162, 2318): a later table probed row by row is probed then, a later
BKA table's buffer fills then and is read after it (the end of records reaches the caches
in plan order: sql/sql_select.cc:22828-22833, sql/sql_join_cache.cc:2225 ``next_cache``)
(:meth:`bufsim.live.compile_batched.BatchedMixin._bka`).  Each buffer must take its rows in
one fill (:meth:`~bufsim.live.compile_batched.BatchedMixin._bka_fits`).

:class:`JoinMixin` is mixed into :class:`bufsim.live.compile.Compiler`; one statement's join
is a :class:`_Join` (its tables, the columns each hands on, the probes' state).
"""
from __future__ import annotations

import re

import numpy as np

from ..workloads.plans import FETCH_ROWS_PER_CALL, FETCH_ROWS_PER_CALL_ICP
from .compile_btree import TRX_UNDO_GETS, UNDO_PAGES, Events, IndexColumns, quote_ident
from .compile_plan import Bound, Plan, TableAccess, Unsupported

__all__ = ["JoinMixin"]


def as_sql(condition: str) -> str:
    """An attached condition as EXPLAIN prints it, as SQL: ``<cache>(expr)`` (a constant
    the executor evaluates once) is ``(expr)``."""
    return condition.replace("<cache>(", "(")


def _per_call(t: TableAccess) -> int:
    """Rows per prefetching handler call: 8 under index condition pushdown or a range rowid
    filter (InnoDB's ``prebuilt->idx_cond`` / ``prebuilt->pk_filter``: every row goes to
    the fetch cache, MariaDB 10.11.18 row/row0sel.cc:5655, ha_innodb.cc:7270), 9
    otherwise (:data:`bufsim.workloads.plans.FETCH_ROWS_PER_CALL`)."""
    return FETCH_ROWS_PER_CALL_ICP if (t.icp or t.rowid_filter) else FETCH_ROWS_PER_CALL


class _Join:
    """One statement's join: its tables in plan order and the state of the probes."""

    def __init__(self, comp, plan: Plan, names: list, acc: list, ev: Events):
        self.comp, self.plan, self.names, self.acc, self.ev = comp, plan, names, acc, ev
        self.aliases = [t.alias for t in acc]
        self.modify = plan.kind in ("update", "delete")
        self.refs = [comp._refs(t, self.aliases[:j], f"table {t.alias} {t.access}") if j else []
                     for j, t in enumerate(acc)]
        # the columns each table's rows hand on to later tables, and its condition
        self.need = {a: [] for a in self.aliases}
        for j in range(1, len(acc)):
            for a, c in self.refs[j]:
                if a != "const" and c not in self.need[a]:
                    self.need[a].append(c)
        # exact join buffer fills (the compiler's second try, see Compiler.compile): each
        # stored row's bytes in its buffer record, by SQL
        self.layouts: dict = {}
        sized = set()
        if getattr(comp, "_exact_fills", False):
            for j, t in enumerate(acc):
                if j and t.join_buffer is not None:
                    self.layouts[j] = comp._bka_layout(self, j)
                    sized.update(self.layouts[j]["stored"])
        self.cols = {t.alias: self.need[t.alias] + (["__bytes"] if j in sized else [])
                     for j, t in enumerate(acc)}
        self.extra = []
        for j, t in enumerate(acc):
            e = tuple(f"{quote_ident(t.alias)}.{quote_ident(c)}" for c in self.need[t.alias])
            if j in sized:
                e = e + (comp._bytes_expr(names[j], t.alias, f"table {t.alias}"),)
            cond = (as_sql(t.condition) if (t.condition and (j < len(acc) - 1 or t.first_match))
                    else None)
            self.extra.append(e + ((f"COALESCE(({cond}), 0) <> 0",) if cond else ()))
        self.consts = {j: comp._key_values(plan, t, f"table {t.alias}")
                       if j and "const" in t.ref else () for j, t in enumerate(acc)}
        self.last_key: dict = {}
        self.ctx: dict = {}
        self.buffers: dict = {}          # BKA table -> [(key, the partial row's context)]
        self.split: str | None = None    # a BKA table read in more than one fill, if any

    def hand_on(self, j: int, vals) -> bool:
        """Store row values of table j; False if its condition rejects the row."""
        t = self.acc[j]
        self.ctx[t.alias] = dict(zip(self.cols[t.alias], vals))
        if len(vals) > len(self.cols[t.alias]):
            return bool(vals[-1])
        return True

    def _key(self, j: int) -> tuple:
        ci = iter(self.consts[j])
        return tuple(next(ci) if a == "const" else self.ctx[a][c] for a, c in self.refs[j])

    def probe(self, j: int) -> None:
        """Table j's probe for the current rows of the tables before it, and on."""
        acc, comp, ev = self.acc, self.comp, self.ev
        if j >= len(acc):
            return
        if acc[j].join_buffer is not None:
            # BKA: the partial row goes into table j's join buffer (sub_select_cache ->
            # JOIN_CACHE::put_record, MariaDB 10.11.18 sql/sql_select.cc:22845), read when
            # the rows before it are all in (sql/sql_join_cache.cc:2162 join_records)
            self.buffers.setdefault(j, []).append((self._key(j), dict(self.ctx)))
            if self.layouts and self.comp._put_record(self, j):
                self.comp._join_records(self, j)        # full: read it now (:22852)
            return
        t, table = acc[j], self.names[j]
        ix = comp._index(table, t.key, f"table {t.alias} {t.access}")
        gix = comp.geo.table(table).index(t.key)
        key = self._key(j)
        if any(v is None for v in key):
            return                                   # a NULL key matches nothing
        if t.access == "eq_ref" and self.last_key.get(j, object()) == key:
            if self.ctx.get(("found", j)):
                self.probe(j + 1)                    # the kept row goes on
            return
        self.last_key[j] = key
        hit = comp._key_ranks(table, ix, len(key)).get(key)
        rows_pk, rows_x = (comp._all_rows(table, t.alias, ix, self.extra[j])
                           if (j < len(acc) - 1 or (ix.name != "PRIMARY" and not t.covering)
                               or t.first_match is not None)
                           else (None, None))
        if hit is None:
            # a key that is not there: the search lands where it would be
            first = comp._below(table, ix, ix.columns, Bound(key, True), True)
            comp._segment(ev, table, gix, first, first, past_end=True, from_start=False,
                          per_call=_per_call(t), exact=True)
            self.ctx[("found", j)] = False
            return
        first, n = hit
        self.ctx[("found", j)] = True
        pks = None
        if ix.name != "PRIMARY" and not t.covering:
            pks = rows_pk[first:first + n]
            if t.rowid_filter is not None:
                keep = comp._rowid_filter(self.plan, ev, table, t)
                pks = [pk if tuple(pk) in keep else None for pk in pks]
        if t.access == "eq_ref" and n == 1 and ix.unique and len(key) == len(ix.columns):
            comp._unique(ev, table, ix, gix, first, t.covering, self.modify,
                         pk=pks[0] if pks else None)
            # the kept row goes on to the next probe with the same key only if its
            # condition passed (join_read_key re-evaluates it on the cached row)
            passed = rows_x is not None and self.hand_on(j, rows_x[first])
            self.ctx[("found", j)] = passed
            if passed:
                self.probe(j + 1)
            return

        stop = None
        if t.first_match is not None:
            # FirstMatch: the semi-join's inner table is left at its first row whose
            # condition passes (MariaDB 10.11.18 sql/sql_select.cc:23285-23291,
            # evaluate_join_record sets ``return_tab= join_tab->do_firstmatch``, and :23318
            # returns to the outer table's next row); InnoDB has fetched that row's whole
            # handler call (its prefetch, each row's clustered lookup with it)
            cond = len(self.extra[j]) > len(self.cols[t.alias])
            stop = next((k for k in range(n) if not cond or bool(rows_x[first + k][-1])), None)

        def on_row(k):
            if stop is not None and k != stop:
                return
            if rows_x is not None and self.hand_on(j, rows_x[first + k]):
                self.probe(j + 1)

        # join_read_always_key / join_read_next_same: HA_READ_KEY_EXACT, index_next_same
        comp._segment(ev, table, gix, first, first + n, past_end=True, from_start=False,
                      per_call=_per_call(t), pks=pks, on_row=on_row, exact=True, stop_row=stop)


class JoinMixin:
    """The compiler's nested-loop methods (mixed into :class:`bufsim.live.compile.Compiler`)."""

    def _refs(self, t: TableAccess, aliases: list, node: str) -> list:
        """Per key part: ("const", None) or (alias, column) of an earlier table."""
        out = []
        for r in t.ref:
            if r == "const":
                out.append(("const", None))
                continue
            parts = [p.strip("`") for p in str(r).split(".")]
            if len(parts) < 2 or parts[-2] not in aliases:
                raise Unsupported(node, f"key part compared with {r!r} (modelled: a constant or "
                                        "a column of an earlier table)")
            out.append((parts[-2], parts[-1]))
        return out

    def _check_condition(self, t: TableAccess, aliases: list, node: str) -> None:
        cond = t.condition or ""
        for a in aliases:
            if a != t.alias and re.search(rf"(?<![\w`]){re.escape(a)}\.", cond):
                raise Unsupported(node, f"condition on {t.alias} refers to table {a} "
                                        "(only a table's own columns are evaluated)")

    def _key_ranks(self, table: str, ix: IndexColumns, nparts: int) -> dict:
        """Key prefix (tuple) -> (first rank, entries) over ``ix``'s first ``nparts`` columns."""
        key = ("keyranks", table, ix.name, nparts)
        if key not in self._rank_cache:
            # more parts than the index has: MariaDB's extended keys (use_index_extensions)
            # look up the primary key's columns that follow a secondary index's own
            cols = ", ".join(quote_ident(c) for c in self._order(table, ix)[:nparts])
            rows = self.conn.query(f"SELECT {cols}, COUNT(*) FROM {quote_ident(table)} FORCE INDEX "
                                   f"({quote_ident(ix.name)}) GROUP BY {cols} ORDER BY {cols}",
                                   doing=f"counting the keys of {table}.{ix.name}")
            out, at = {}, 0
            for r in rows:
                out[tuple(r[:nparts])] = (at, int(r[nparts]))
                at += int(r[nparts])
            self._rank_cache[key] = out
        return self._rank_cache[key]

    def _all_rows(self, table: str, alias: str, ix: IndexColumns, extra: tuple):
        key = ("rows", table, alias, ix.name, extra)
        if key not in self._rank_cache:
            self._rank_cache[key] = self._rows(table, alias, ix, 0, self._count(table, ix, "", ()),
                                               extra)
        return self._rank_cache[key]

    def _driving(self, plan: Plan, table: str, t: TableAccess) -> list:
        """Segments of the driving table: (index, first, end, past_end, from_start, unique,
        exact: read with HA_READ_KEY_EXACT, see :meth:`_segment`)."""
        node = f"table {t.alias} {t.access}"
        if t.access == "ALL":
            ix = self._index(table, "PRIMARY", node)
            return [(ix, 0, self._count(table, ix, "", ()), False, True, False, False)]
        ix = self._index(table, t.key, node)
        if t.access == "index":
            return [(ix, 0, self._count(table, ix, "", ()), False, True, False, False)]
        if t.access == "range":
            segs = []
            for rng in t.ranges:
                first, end, past, unique_eq, _ = self._range_entries(table, ix, rng, node)
                segs.append((ix, first, end, past, False, unique_eq, self._eq_range(rng)))
            return segs
        # ref / eq_ref by constants
        if any(r != "const" for r in t.ref):
            raise Unsupported(node, f"first table looked up by {t.ref}")
        vals = self._key_values(plan, t, node)
        b = Bound(vals, True)
        first = self._below(table, ix, ix.columns, b, True)
        end = self._below(table, ix, ix.columns, b, False)
        unique_eq = ix.unique and len(vals) == len(ix.columns)
        return [(ix, first, end, True, False, unique_eq, True)]

    def _check_join(self, acc: list, modify: bool) -> None:
        """Refuse, before any get, a join whose plan the compiler does not follow."""
        aliases = [t.alias for t in acc]
        for j, t in enumerate(acc):
            if t.rowid_filter is not None and (j == 0 or t.access != "ref" or t.covering
                                               or modify):
                raise Unsupported(f"table {t.alias} {t.access} rowid filter",
                                  "a rowid filter other than on an inner ref access with "
                                  "clustered lookups")
            if j and t.access not in ("eq_ref", "ref"):
                raise Unsupported(f"table {t.alias} {t.access}", "an inner table read other than "
                                  "by eq_ref/ref (a scan per outer row is not modelled)")
            if t.first_match is not None and (
                    j != len(acc) - 1 or t.access != "ref" or t.rowid_filter is not None
                    or t.first_match != acc[j - 1].alias or modify):
                raise Unsupported(f"table {t.alias} first_match", "a FirstMatch semi-join "
                                  "other than a ref read of the last table, back to the table "
                                  "before it, without a rowid filter")
            if t.first_match is not None:
                self._check_condition(t, aliases, f"table {t.alias} condition")
            if j < len(acc) - 1:
                self._check_condition(t, aliases, f"table {t.alias} condition")
            if t.join_buffer is not None and modify:
                raise Unsupported(f"table {t.alias} {t.access} BKA", "Batched Key Access in "
                                  "an UPDATE or DELETE")
            if t.mrr is not None and (j or t.access != "range") and t.join_buffer is None:
                raise Unsupported(f"table {t.alias} {t.access}", f"multi-range read "
                                  f"({t.mrr}) other than on the first table's range")
        if acc[0].join_buffer:
            raise Unsupported(f"table {acc[0].alias}", "join buffer on the first table")

    def _nested_loop(self, plan: Plan, names: list, acc: list, ev: Events) -> None:
        """The join's page gets: the first table's segments (:meth:`_drive`), each row's
        probes of the later tables, then a BKA table's batch and a write's commit."""
        modify = plan.kind in ("update", "delete")
        self._filters = {}
        self._check_join(acc, modify)
        join = _Join(self, plan, names, acc, ev)
        dml = self._dml_setup(plan, names[0], acc[0], join.extra) if modify else None
        self._drive(join, dml)
        for j in range(1, len(acc)):       # the end of records reaches the caches in order
            if acc[j].join_buffer is not None:
                if join.layouts:
                    self._join_records(join, j)
                else:
                    self._bka(join, j)
        if dml is not None and dml.changed:
            ev.undo(np.arange(TRX_UNDO_GETS) % (UNDO_PAGES - 1))     # commit

    def _drive(self, join: _Join, dml) -> None:
        """The first table's segments, in plan order, each row handed to the probes (and to
        an UPDATE/DELETE's per-row work); a LIMIT stops the read."""
        plan, acc, ev, modify = join.plan, join.acc, join.ev, join.modify
        t0, table0 = acc[0], join.names[0]
        want_rows = None
        if plan.limit is not None:
            if len(acc) > 1:
                raise Unsupported("statement LIMIT", "a LIMIT over a join (rows counted after "
                                                     "the join) is not modelled")
            want_rows = plan.limit[0] + plan.limit[1]
            if t0.condition:
                join.extra[0] = join.extra[0] + (f"COALESCE(({as_sql(t0.condition)}), 0) <> 0",)
        sent = 0
        for ix, first, end, past, from_start, unique_eq, exact in self._driving(plan, table0, t0):
            if want_rows is not None and sent >= want_rows:
                break
            gix = self.geo.table(table0).index(ix.name)
            secondary = ix.name != "PRIMARY" and not t0.covering
            want = (secondary or len(acc) > 1 or (want_rows is not None and t0.condition)
                    or dml is not None)
            pks, xs = (self._rows(table0, t0.alias, ix, first, end - first, join.extra[0])
                       if want and end > first else (None, None))
            if unique_eq:
                if end > first:
                    self._unique(ev, table0, ix, gix, first, t0.covering, modify,
                                 pk=pks[0] if pks else None)
                    if len(acc) > 1 and join.hand_on(0, xs[0]):
                        join.probe(1)
                    if dml is not None:
                        dml(pks[0], xs[0])
                else:
                    self._segment(ev, table0, gix, first, first, past_end=True, from_start=False,
                                  per_call=_per_call(t0))
                continue

            def on_row(k, xs=xs, pks=pks):
                if len(acc) > 1 and join.hand_on(0, xs[k]):
                    join.probe(1)
                if dml is not None:
                    dml(pks[k], xs[k])

            stop = None
            if want_rows is not None:
                ok = (np.array([bool(x[-1]) for x in xs], dtype=bool) if t0.condition
                      else np.ones(end - first, dtype=bool))
                passed = np.cumsum(ok) + sent
                hit = np.flatnonzero(passed >= want_rows)
                stop = int(hit[0]) if hit.size else None
                sent = int(passed[-1]) if passed.size else sent
                if want_rows == 0:
                    raise Unsupported("statement LIMIT 0", "reads no row")
            if t0.mrr is not None:
                self._mrr_range(ev, plan, table0, t0, gix, first, end, past, pks, on_row,
                                secondary, stop, exact)
                continue
            self._segment(ev, table0, gix, first, end, past_end=past, from_start=from_start,
                          per_call=1 if modify else _per_call(t0),   # a locking read: no prefetch
                          pks=pks if secondary else None, on_row=on_row, modify=modify,
                          stop_row=stop, window=t0.access == "range" and not t0.icp and not modify,
                          exact=exact and not modify)
