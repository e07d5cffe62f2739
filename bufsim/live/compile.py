"""From a statement to the page gets the server issues for it, over the live geometry.

For one statement :class:`Compiler` asks the server for its plan (``EXPLAIN
FORMAT=JSON`` with the optimizer trace on, :mod:`bufsim.live.compile_plan`), finds
the key-order rank of every key the plan looks up or bounds a range with (by SQL:
``COUNT(*)`` of the entries below the bound, ``ORDER BY`` the index's columns for
the rows of a range, so the ranks follow the server's own collation), and lays out
the page accesses of MariaDB 10.11's executor over the B-trees read from the
server's files (:mod:`bufsim.live.geometry`), following the rules the live tier
checks against the server (:mod:`bufsim.live.workload`, design spec §14):

* the optimiser's records-in-range estimates ("dives", one per range of every index
  it considered, none for an equality on a whole unique key): both borders' paths,
  a page once where they share it, up to 9 pages between them on a level;
* a ``const`` / ``eq_ref`` lookup on a unique key: a root-to-leaf descent, one more
  get where the key is the first record of a leaf (the search lands on the previous
  leaf and steps) or the last one (the cursor steps onto the next leaf);
* ``ref`` / ``range`` / ``index`` / ``ALL``: a descent to the first entry (landing on
  the previous leaf where the entry starts a leaf), a get per further leaf, the
  entry past the end of a bounded range; rows reach the SQL layer one per handler
  call for 4 rows, then 9 per call (8 under index condition pushdown or a rowid
  filter), and each call after the first re-latches the leaf of the stored cursor
  (``FLAG_RELATCH``: checked for make-young, not counted).  An exact-key read (a
  ``ref`` probe, an equality range, a BKA key: ``HA_READ_KEY_EXACT``) batches from
  its first row (``ROW_SEL_EXACT``: the ``exact`` reads of ``Compiler._segment``).
  A ``range`` without index condition pushdown reads past its end until the call's
  batch is full (InnoDB does not check the range
  end there; the SQL layer does): measured on MariaDB 10.11, 88 of 88 ranges ending
  near a leaf's end exact with it, 60 of 88 one get short without it.  A locking read
  (UPDATE, DELETE) fetches no batch;
* a non-covering secondary index: a clustered descent per entry;
* nested loops (:mod:`bufsim.live.compile_join`): the probes of a row follow it; an ``eq_ref`` probe whose key equals
  the previous probe's is skipped (the server keeps the last row); a FirstMatch semi-join's
  ``ref`` read stops at the first row whose condition passes, at the end of its handler call;
* UPDATE / DELETE: the plan's reads, the changed leaf carrying ``FLAG_MODIFY``;
* a GROUP BY / ORDER BY / DISTINCT sorted after the join in a temporary table (MEMORY or
  Aria: no InnoDB page), the join below it read whole;
* a range rowid filter on an inner ``ref``: built on the table's first probe by a covering
  scan of the filter index's ranges; an entry it rejects gets no clustered lookup and
  starts no handler call;
* Disk-Sweep MRR on the first table's range (row ids sorted, a unique search each) and
  Batched Key Access at any table of a join (its buffer read once the rows before it are
  in: keys sorted, each distinct key read once, row ids sorted, a rowid filter applied
  between the two; the matches sent on to the later tables; several fills where no two
  partial rows share a key, or else laid out as the server's: exact buffer sizes, records
  and MRR passes): :mod:`bufsim.live.compile_batched`;
* extended keys: a ``ref`` on a secondary index's columns followed by the primary key's.

Every access carries its kind (``FLAG_STEP`` a forward leaf step, ``FLAG_DESCENT`` a
search's leaf after its level-1 parent, ``FLAG_NO_RA`` anything else: the pages above a
leaf, re-latches, the dives' pages, ``open_leaf``'s leftmost leaf), for the replay's rule of
where MariaDB 10.11.7+ tries linear read-ahead (``read_ahead_sites`` "btr").

What the model does not follow is reported per statement (:class:`CompiledStatement`
``unsupported``: the statement, the plan node, the reason) and gives no events.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

import numpy as np

from ..trace import FLAG_MODIFY, FLAG_RELATCH, FLAG_STMT_END, Chunk
from ..workloads.plans import FETCH_CACHE_THRESHOLD, FETCH_ROWS_PER_CALL
from .compile_btree import (Events, IndexColumns, dive_pages, entry_starts,
                            leaf_of, path_of, quote_ident, search_leaf, unique_lookup,
                            with_undo_space)
from .compile_batched import BatchedMixin
from .compile_dml import DmlMixin
from .compile_fills import FillsMixin
from .compile_join import JoinMixin
from .compile_plan import Bound, Plan, TableAccess, Unsupported, parse_plan, parse_range, parse_tuple
from .errors import LiveError
from .geometry import LiveGeometry, LiveIndex

__all__ = ["Compiler", "CompiledStatement"]


@dataclass
class CompiledStatement:
    """One statement's page accesses (dense pages, flags) or why it was not compiled."""

    sql: str
    pages: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))
    flags: np.ndarray = field(default_factory=lambda: np.empty(0, np.uint8))
    plan: Plan | None = None
    unsupported: str | None = None

    @property
    def gets(self) -> int:
        """Counted page gets (re-latches excluded): the server's read-request delta."""
        return int(((self.flags & FLAG_RELATCH) == 0).sum())

    @property
    def ok(self) -> bool:
        return self.unsupported is None

    def chunk(self, stream: int = 0) -> Chunk:
        if self.pages.size == 0:
            return Chunk.empty()
        flags = self.flags.copy()
        flags[-1] |= FLAG_STMT_END
        return Chunk.from_arrays(self.pages, 1, 0, stream, flags)

    def line(self) -> str:
        """The one-line report of an unsupported statement."""
        s = " ".join(self.sql.split())
        return f"unsupported: {s[:100]!r}: {self.unsupported}"



class Compiler(JoinMixin, BatchedMixin, FillsMixin, DmlMixin):
    """Compile statements against one schema of a live server (only read).

    Parameters
    ----------
    conn : bufsim.live.Connection
    schema : str
    geometry : LiveGeometry, optional
        Read from the server (:func:`bufsim.live.geometry.read_geometry`) if omitted.
    rows : dict, optional
        The index entries read by SQL (:meth:`_rows`: the rows a join drives and probes),
        kept for the compilers given the same dict, by the schema, its tables' space ids
        and pages and the SQL: for compilers over data that no statement changes in
        between (notebook 09's DBT-3 queries, compiled per session setting in
        :func:`bufsim.live.compile_dbt3.statement_check` and again in its
        ``pool_check``).  A reloaded table has a new space id, so its rows are read again;
        the optimizer's statistics are not kept (they can differ after a restart).
    """

    def __init__(self, conn, schema: str, geometry: LiveGeometry | None = None,
                 rows: dict | None = None):
        self.conn = conn
        self.schema = schema
        self.geo = geometry if geometry is not None else conn.geometry(schema)
        if rows is not None and not isinstance(rows, dict):
            raise ValueError(f"rows must be a dict or None, got {type(rows).__name__}")
        self._rows_memo = {} if rows is None else rows
        self._data_key = (schema, tuple((t.name, t.space_id, t.n_pages)
                                        for t in self.geo.tables.values()))
        self.tablespaces = with_undo_space(self.geo.tablespaces)
        self._undo_base = int(self.tablespaces.space_base[-1])
        self._indexes: dict = {}
        self._rank_cache: dict = {}
        self._pk_rank: dict = {}
        conn.execute(f"USE {quote_ident(schema)}", doing=f"selecting schema {schema!r}")
        rows = conn.query(
            "SELECT TABLE_NAME, INDEX_NAME, SEQ_IN_INDEX, COLUMN_NAME, NON_UNIQUE, SUB_PART "
            "FROM INFORMATION_SCHEMA.STATISTICS WHERE TABLE_SCHEMA = %s "
            "ORDER BY TABLE_NAME, INDEX_NAME, SEQ_IN_INDEX", (schema,),
            doing="reading INFORMATION_SCHEMA.STATISTICS")
        cols: dict = {}
        for t, i, _, c, nu, sub in rows:
            cols.setdefault((t, i), dict(cols=[], unique=not int(nu), prefix=False))
            cols[(t, i)]["cols"].append(c)
            cols[(t, i)]["prefix"] |= sub is not None
        for (t, i), d in cols.items():
            self._indexes.setdefault(t, {})[i] = (IndexColumns(i, tuple(d["cols"]), d["unique"]),
                                                  d["prefix"])

    # ---- metadata ----------------------------------------------------------------------
    def _index(self, table: str, name: str, node: str) -> IndexColumns:
        ixs = self._indexes.get(table, {})
        if "PRIMARY" not in ixs:
            raise Unsupported(node, f"table {table} has no PRIMARY KEY (rows ordered by a "
                                    "hidden row id are not modelled)")
        if name not in ixs:
            raise Unsupported(node, f"index {name!r} of {table} is not in "
                                    "INFORMATION_SCHEMA.STATISTICS")
        ix, prefix = ixs[name]
        if prefix:
            raise Unsupported(node, f"index {table}.{name} has a column prefix")
        return ix

    def _order(self, table: str, ix: IndexColumns) -> tuple:
        """The columns that order ``ix``'s entries: its own, then the primary key's."""
        pk = self._indexes[table]["PRIMARY"][0].columns
        return ix.columns + tuple(c for c in pk if c not in ix.columns)

    # ---- ranks by SQL --------------------------------------------------------------------
    def _count(self, table: str, ix: IndexColumns, where: str, args) -> int:
        sql = (f"SELECT COUNT(*) FROM {quote_ident(table)} FORCE INDEX ({quote_ident(ix.name)})"
               + (f" WHERE {where}" if where else ""))
        key = (sql, tuple(args))
        if key not in self._rank_cache:
            self._rank_cache[key] = int(self.conn.query(sql, tuple(args),
                                                        doing=f"ranking keys of {table}.{ix.name}")[0][0])
        return self._rank_cache[key]

    def _below(self, table: str, ix: IndexColumns, cols: tuple, bound: Bound, lower: bool) -> int:
        """Entries of ``ix`` before the bound: the rank where a range from (``lower``) or
        up to the bound starts or ends."""
        vals = bound.values
        if len(vals) > len(cols):         # an extended key: the primary key's columns follow
            cols = self._order(table, ix)
        cols = cols[:len(vals)]
        if any(v is None for v in vals):
            if len(vals) != 1:
                raise Unsupported(f"{table}.{ix.name}", "a NULL in a multi-part range bound")
            # NULLs sort first; "(NULL) < (c)" starts after them, "(c) < (NULL)" is empty
            nulls = self._count(table, ix, f"{quote_ident(cols[0])} IS NULL", ())
            return nulls if (lower != bound.inclusive) or not lower else 0
        lhs = "(" + ", ".join(quote_ident(c) for c in cols) + ")"
        rhs = "(" + ", ".join(["%s"] * len(vals)) + ")"
        # a lower bound "v <= c" starts at the first entry >= v: count entries < v;
        # "v < c" starts after the entries <= v; an upper bound "c <= v" ends after
        # the entries <= v, "c < v" before the first >= v
        op = "<" if (lower and bound.inclusive) or (not lower and not bound.inclusive) else "<="
        nn = " AND ".join(f"{quote_ident(c)} IS NOT NULL" for c in cols)
        nulls = self._count(table, ix, " OR ".join(f"{quote_ident(c)} IS NULL" for c in cols), ())
        return nulls + self._count(table, ix, f"{nn} AND {lhs} {op} {rhs}", vals)

    def _range_entries(self, table: str, ix: IndexColumns, rng: str, node: str):
        try:
            lo, hi, cols = parse_range(rng)
        except ValueError as exc:
            raise Unsupported(node, f"cannot read the range {rng!r} ({exc})") from None
        want = tuple(c.lower() for c in cols)
        have = tuple(c.lower() for c in self._order(table, ix)[:len(cols)])
        if want != have:
            raise Unsupported(node, f"range {rng!r} is not on the leading columns of "
                                    f"{table}.{ix.name} {ix.columns}")
        total = self._count(table, ix, "", ())
        first = self._below(table, ix, ix.columns, lo, True) if lo is not None else 0
        end = self._below(table, ix, ix.columns, hi, False) if hi is not None else total
        # a whole-key equality on a unique index: a unique search
        unique_eq = (lo is not None and hi is not None and ix.unique
                     and len(lo.values) == len(ix.columns) and lo.inclusive and hi.inclusive
                     and lo.values == hi.values and None not in lo.values)
        return first, max(end, first), hi is not None, unique_eq, total

    @staticmethod
    def _eq_range(rng: str) -> bool:
        """Whether a range of the optimizer trace is an equality (both bounds the same
        values, both included): the server flags it EQ_RANGE and reads it with
        HA_READ_KEY_EXACT (MariaDB 10.11.18 sql/opt_range.cc get_quick_keys,
        sql/opt_range.h QUICK_RANGE::make_min_endpoint)."""
        try:
            lo, hi, _ = parse_range(rng)
        except ValueError:
            return False
        return (lo is not None and hi is not None and lo.inclusive and hi.inclusive
                and lo.values == hi.values)

    def _pk_ranks(self, table: str) -> dict:
        """Primary key value (tuple) -> clustered rank, for the clustered lookups of rows."""
        if table not in self._pk_rank:
            pk = self._indexes[table]["PRIMARY"][0].columns
            rows = self.conn.query(f"SELECT {', '.join(quote_ident(c) for c in pk)} FROM {quote_ident(table)} "
                                   f"FORCE INDEX (PRIMARY) ORDER BY {', '.join(quote_ident(c) for c in pk)}",
                                   doing=f"reading the primary keys of {table}")
            self._pk_rank[table] = {tuple(r): k for k, r in enumerate(rows)}
        return self._pk_rank[table]

    def _rows(self, table: str, alias: str, ix: IndexColumns, first: int, n: int, extra=()):
        """The ``n`` entries of ``ix`` from rank ``first``, in index order: primary key
        tuples and the values of the ``extra`` SQL expressions (over ``alias``)."""
        pk = self._indexes[table]["PRIMARY"][0].columns
        order = self._order(table, ix)
        sel = [f"{quote_ident(alias)}.{quote_ident(c)}" for c in pk] + [f"({e})".replace("%", "%%") for e in extra]
        sql = (f"SELECT {', '.join(sel)} FROM {quote_ident(table)} AS {quote_ident(alias)} FORCE INDEX ({quote_ident(ix.name)}) "
               f"ORDER BY {', '.join(f'{quote_ident(alias)}.{quote_ident(c)}' for c in order)} LIMIT %s OFFSET %s")
        key = (self._data_key, sql, int(n), int(first))
        if key not in self._rows_memo:
            rows = self.conn.query(sql, (int(n), int(first)),
                                   doing=f"reading entries of {table}.{ix.name}")
            k = len(pk)
            self._rows_memo[key] = ([tuple(r[:k]) for r in rows], [tuple(r[k:]) for r in rows])
        pks, xs = self._rows_memo[key]
        return list(pks), list(xs)

    # ---- one statement -------------------------------------------------------------------
    def explain(self, sql: str):
        """(EXPLAIN FORMAT=JSON, optimizer trace) of ``sql`` as dicts."""
        self.conn.execute("SET SESSION optimizer_trace = 'enabled=on'",
                          doing="turning the optimizer trace on")
        try:
            doc = self.conn.query("EXPLAIN FORMAT=JSON " + sql, doing="EXPLAIN FORMAT=JSON")[0][0]
            tr = self.conn.query("SELECT TRACE FROM INFORMATION_SCHEMA.OPTIMIZER_TRACE",
                                 doing="reading the optimizer trace")
        finally:
            self.conn.execute("SET SESSION optimizer_trace = 'enabled=off'",
                              doing="turning the optimizer trace off")
        return json.loads(doc), (json.loads(tr[0][0]) if tr and tr[0][0] else {})

    def compile(self, sql: str) -> CompiledStatement:
        """The page accesses of ``sql`` (or the reason it is not modelled)."""
        out = CompiledStatement(sql)
        self._sql = sql
        try:
            doc, tr = self.explain(sql)
            plan = parse_plan(doc, tr, sql)
            out.plan = plan
            # a temporary table, DISTINCT, GROUP BY or ORDER BY puts every table's primary
            # key into its read set before the join buffers are laid out (MariaDB 10.11.18
            # sql/sql_select.cc:3332 prepare_for_position, :3489 init_join_cache_and_keyread)
            self._position_all = bool(plan.after) or bool(re.search(
                r"\b(?:group|order)\s+by\b|\bdistinct\b", sql, re.I))
            self._exact_fills = False
            try:
                ev = Events(self.geo, self._undo_base)
                self._ev = ev
                self._emit(plan, ev)
            except Unsupported as exc:
                if not exc.reason.endswith(BatchedMixin.SHARED_KEYS):
                    raise
                # a BKA buffer read in several fills whose partial rows share keys: which
                # fill reads a key depends on the buffers' exact sizes; again with them
                self._exact_fills = True
                ev = Events(self.geo, self._undo_base)
                self._ev = ev
                self._emit(plan, ev)
            out.pages, out.flags = ev.arrays()
        except Unsupported as exc:
            out.unsupported = f"{exc.node}: {exc.reason}"
        except LiveError as exc:
            if "1064" in str(exc) or "1146" in str(exc) or "1054" in str(exc):
                out.unsupported = f"statement: the server refuses it ({exc})"
            else:
                raise
        return out

    def _table_of(self, plan: Plan, alias: str) -> str:
        """The schema's table a plan's ``alias`` names (the optimizer trace's expanded
        query maps aliases to tables)."""
        name = plan.aliases.get(alias, alias)
        if "." in name:
            db, name = name.split(".", 1)
            if db != self.schema:
                raise Unsupported(f"table {alias}", f"table {db}.{name} is outside the schema "
                                                    f"{self.schema}")
        if name not in self.geo.tables:
            raise Unsupported(f"table {alias}", f"{name} is not an InnoDB table of {self.schema}")
        return name

    def _alias_tables(self, plan: Plan) -> dict:
        """alias -> table name of every table of the plan."""
        return {t.alias: self._table_of(plan, t.alias) for t in plan.tables}

    def _emit(self, plan: Plan, ev: Events) -> None:
        if plan.kind == "insert":
            self._insert(plan, ev)
            return
        if plan.impossible:
            for alias in plan.const_tables:
                self._const(plan, self._table_of(plan, alias), self._const_access(plan, alias),
                            ev, False)
            for d in plan.dives:
                self._dive(plan, d, ev)
            return
        names = self._alias_tables(plan)
        # const tables are read while optimising, before the other tables' dives
        for t in plan.tables:
            if t.access == "const":
                self._const(plan, names[t.alias], t, ev, plan.kind != "select")
        for d in plan.dives:
            self._dive(plan, d, ev)
        rest = [t for t in plan.tables if t.access != "const"]
        if not rest:
            return
        self._nested_loop(plan, [names[t.alias] for t in rest], rest, ev)

    def _dive(self, plan: Plan, d, ev: Events) -> None:
        table = self._table_of(plan, d.table)
        ix = self._index(table, d.index, f"table {table} dive")
        gix = self.geo.table(table).index(d.index)
        for rng in d.ranges:
            first, end, _, unique_eq, _ = self._range_entries(table, ix, rng,
                                                                f"table {table} range {d.index}")
            if unique_eq:
                continue                       # no records-in-range estimate for it
            ev.other(table, dive_pages(gix, search_leaf(gix, first), search_leaf(gix, end)))

    # ---- const: a unique lookup read while optimising ---------------------------------------
    def _key_values(self, plan: Plan, t: TableAccess, node: str) -> tuple:
        uses = [u for u in plan.key_uses if u[0] == t.alias and u[1] == t.key]
        by_field = {}
        for _, _, f, eq in uses:
            by_field.setdefault(f.lower(), eq)
        out = []
        for part in t.used_key_parts:
            eq = by_field.get(part.lower())
            if eq is None:
                raise Unsupported(node, f"no constant for key part {part} in the optimizer trace")
            try:
                vals = parse_tuple("(" + eq + ")")
            except ValueError:
                raise Unsupported(node, f"key part {part} = {eq}: not a constant") from None
            out.append(vals[0])
        return tuple(out)

    def _const_access(self, plan: Plan, alias: str) -> TableAccess:
        """The const access of a table the plan does not list (an impossible WHERE found
        after reading it): the first unique index whose every column has a constant."""
        node = f"table {alias} const"
        table = self._table_of(plan, alias)
        have = {(u[1], str(u[2]).lower()) for u in plan.key_uses if u[0] == alias}
        ixs = sorted(self._indexes.get(table, {}).values(), key=lambda v: v[0].name != "PRIMARY")
        for ix, _ in ixs:
            if ix.unique and all((ix.name, c.lower()) in have for c in ix.columns):
                return TableAccess(alias=alias, access="const", key=ix.name,
                                   used_key_parts=ix.columns, ref=("const",) * len(ix.columns))
        raise Unsupported(node, "no unique index with a constant for every column in the trace")

    def _const(self, plan: Plan, table: str, t: TableAccess, ev: Events, modify: bool) -> None:
        node = f"table {t.alias} const"
        ix = self._index(table, t.key, node)
        vals = self._key_values(plan, t, node)
        b = Bound(vals, True)
        first = self._below(table, ix, ix.columns, b, True)
        end = self._below(table, ix, ix.columns, b, False)
        gix = self.geo.table(table).index(t.key)
        if end <= first:                 # no such row: the search lands where it would be
            self._segment(ev, table, gix, first, first, past_end=True, from_start=False,
                          per_call=FETCH_ROWS_PER_CALL)
            return
        self._unique(ev, table, ix, gix, first, t.covering, modify)

    def _unique(self, ev: Events, table: str, ix: IndexColumns, gix: LiveIndex, entry: int,
                covering: bool, modify: bool, pk=None) -> None:
        pages, kinds = unique_lookup(gix, entry, step_past=not modify)
        if ix.name == "PRIMARY" or covering:
            if modify and ix.name == "PRIMARY":
                kinds = kinds | np.where(pages == gix.leaves[leaf_of(gix, entry)],
                                         np.uint8(FLAG_MODIFY), np.uint8(0))
            ev.lookup(table, (pages, kinds))
            return
        ev.lookup(table, (pages, kinds))
        if pk is None:
            pk = self._rows(table, table, ix, entry, 1)[0][0]
        self._clustered(ev, table, [pk], modify)

    def _clustered(self, ev: Events, table: str, pks, modify: bool = False) -> None:
        ranks = self._pk_ranks(table)
        cl = self.geo.table(table).clustered
        for pk in pks:
            ev.descent(table, path_of(cl, leaf_of(cl, ranks[tuple(pk)])),
                       FLAG_MODIFY if modify else 0)

    # ---- a scan of entries [first, end) of one index ----------------------------------------
    def _segment(self, ev: Events, table: str, gix: LiveIndex, first: int, end: int, *,
                 past_end: bool, from_start: bool, per_call: int, pks=None, on_row=None,
                 modify: bool = False, stop_row: int | None = None,
                 window: bool = False, exact: bool = False) -> bool:
        """A descent to ``first`` (to the leftmost leaf when ``from_start``), the entries up to
        ``end``, the entry past the end when ``past_end``; per entry the clustered lookup
        of ``pks[j]`` (None: covering) and ``on_row(j)`` (the join's probes).

        ``exact``: the read is an exact-key search (``HA_READ_KEY_EXACT``: a ``ref``
        probe, ``join_read_always_key`` / ``index_next_same``, an equality range, a BKA
        key), which InnoDB runs with ``match_mode == ROW_SEL_EXACT`` and prefetches from
        its first row, with no single-row calls first: row_search_mvcc's "Decide whether to
        prefetch extra rows" tests ``match_mode == ROW_SEL_EXACT || n_rows_fetched >=
        MYSQL_FETCH_CACHE_THRESHOLD`` (MariaDB 10.11.18 row/row0sel.cc:5634;
        ha_innodb.cc:8831 sets ROW_SEL_EXACT for HA_READ_KEY_EXACT).  So the handler calls,
        and the cursor restores between them (re-latches), are those of ``per_call`` rows
        from the first row on; InnoDB finds the end of the key itself (the first record
        that does not match), so no ``window`` applies.

        ``stop_row``: the SQL layer stops after the ``stop_row``-th entry (a LIMIT met);
        InnoDB has read to the end of that row's handler call (its prefetch).  Returns
        True when the scan stopped there."""
        st = entry_starts(gix)
        total = int(st[-1])
        cur = 0 if from_start else search_leaf(gix, first)
        if from_start:
            # btr_cur_t::open_leaf: its read-ahead is tried on the leftmost leaf, whose
            # FIL_PAGE_PREV is FIL_NULL, which buf_read_ahead_linear refuses (MariaDB
            # 10.11.18 btr/btr0cur.cc:2155, buf/buf0rea.cc): never a read-ahead site
            ev.other(table, path_of(gix, cur))
        else:
            ev.descent(table, path_of(gix, cur))
        relatch = FLAG_RELATCH
        thr = 0 if exact else FETCH_CACHE_THRESHOLD
        n = end - first
        stopped = False
        if stop_row is not None and stop_row < n:
            j = stop_row
            last = j if j < thr else min(n - 1, thr + ((j - thr) // per_call + 1) * per_call - 1)
            if last < n - 1 or not past_end:
                n, end, stopped = last + 1, first + last + 1, True
        mflag = FLAG_MODIFY if modify and gix.index_id == self.geo.table(table).clustered.index_id else 0

        def step_to(lf):
            nonlocal cur
            while cur < lf:
                cur += 1
                ev.step(table, gix.leaves[cur:cur + 1], mflag)

        # handler calls count the rows InnoDB returns: an entry a rowid filter rejects
        # (pks[j] None) is skipped inside the call, so it starts no call of its own; a new
        # call re-latches the leaf of the last returned row before it steps on
        rows = 0                       # rows returned so far
        pending = False                # the next entry starts a new handler call
        consumed = False               # a call started after the last returned row
        for j in range(n):
            r = first + j
            if pending:
                ev.other(table, gix.leaves[cur:cur + 1], relatch)
                pending, consumed = False, True
            step_to(leaf_of(gix, r))
            rejected = pks is not None and pks[j] is None
            if not rejected:
                rows += 1
                pending = rows < thr or (rows - thr) % per_call == 0
                consumed = False
                if pks is not None:
                    self._clustered(ev, table, [pks[j]], modify)
            if on_row is not None:
                on_row(j)
        if stopped:
            return True
        full = bool(rows) and pending
        if full:
            ev.other(table, gix.leaves[cur:cur + 1], relatch)
        if past_end and end < total:
            last = end
            if window and not exact and n >= thr:
                # the call that reads the past-the-end entry fills its batch: InnoDB checks
                # no range end outside index condition pushdown (the SQL layer does)
                call = thr + ((n - thr) // per_call) * per_call
                last = min(total - 1, first + call + per_call - 1)
            step_to(leaf_of(gix, last))
        if rows and not full and not consumed:
            ev.other(table, gix.leaves[cur:cur + 1], relatch)
        return False

    # ---- Disk-Sweep MRR on the first table's range -----------------------------------------
