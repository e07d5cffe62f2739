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
  call for 4 rows, then 9 per call (8 under index condition pushdown), and each
  call after the first re-latches the leaf of the stored cursor (``FLAG_RELATCH``:
  checked for make-young, not counted).  A ``range`` without index condition pushdown
  reads past its end until the call's batch is full (InnoDB does not check the range
  end there; the SQL layer does): measured on MariaDB 10.11, 88 of 88 ranges ending
  near a leaf's end exact with it, 60 of 88 one get short without it.  A locking read
  (UPDATE, DELETE) fetches no batch;
* a non-covering secondary index: a clustered descent per entry;
* nested loops: the probes of a row follow it; an ``eq_ref`` probe whose key equals
  the previous probe's is skipped (the server keeps the last row);
* UPDATE / DELETE: the plan's reads, the changed leaf carrying ``FLAG_MODIFY``;
* a GROUP BY / ORDER BY / DISTINCT sorted after the join in a temporary table (MEMORY or
  Aria: no InnoDB page), the join below it read whole;
* a range rowid filter on an inner ``ref``: built on the table's first probe by a covering
  scan of the filter index's ranges; an entry it rejects gets no clustered lookup and
  starts no handler call;
* Disk-Sweep MRR on the first table's range (row ids sorted, a unique search each) and
  Batched Key Access of a two-table join in one join buffer (keys sorted, each distinct
  key read once, row ids sorted): :meth:`Compiler._mrr_range`, :meth:`Compiler._bka`;
* extended keys: a ``ref`` on a secondary index's columns followed by the primary key's.

What the model does not follow is reported per statement (:class:`CompiledStatement`
``unsupported``: the statement, the plan node, the reason) and gives no events.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field

import numpy as np

from ..trace import FLAG_MODIFY, FLAG_RELATCH, FLAG_STMT_END, Chunk
from ..workloads.plans import FETCH_CACHE_THRESHOLD, FETCH_ROWS_PER_CALL, FETCH_ROWS_PER_CALL_ICP
from .compile_btree import (TRX_UNDO_GETS, UNDO_PAGES, Events, IndexColumns, dive_pages, entry_starts,
                            leaf_of, path_of, quote_ident, search_leaf, unique_lookup_pages,
                            with_undo_space)
from .compile_dml import DmlMixin
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



def _as_sql(condition: str) -> str:
    """An attached condition as EXPLAIN prints it, as SQL: ``<cache>(expr)`` (a constant
    the executor evaluates once) is ``(expr)``."""
    return condition.replace("<cache>(", "(")


class Compiler(DmlMixin):
    """Compile statements against one schema of a live server (only read).

    Parameters
    ----------
    conn : bufsim.live.Connection
    schema : str
    geometry : LiveGeometry, optional
        Read from the server (:func:`bufsim.live.geometry.read_geometry`) if omitted.
    """

    def __init__(self, conn, schema: str, geometry: LiveGeometry | None = None):
        self.conn = conn
        self.schema = schema
        self.geo = geometry if geometry is not None else conn.geometry(schema)
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
        rows = self.conn.query(sql, (int(n), int(first)), doing=f"reading entries of {table}.{ix.name}")
        k = len(pk)
        return [tuple(r[:k]) for r in rows], [tuple(r[k:]) for r in rows]

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
            ev.add(table, dive_pages(gix, search_leaf(gix, first), search_leaf(gix, end)))

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
        pages = unique_lookup_pages(gix, entry, step_past=not modify)
        if ix.name == "PRIMARY" or covering:
            flags = np.zeros(pages.size, np.uint8)
            if modify and ix.name == "PRIMARY":
                flags[pages == gix.leaves[leaf_of(gix, entry)]] = FLAG_MODIFY
            for p, f in zip(pages, flags):
                ev.add(table, [p], int(f))
            return
        ev.add(table, pages)
        if pk is None:
            pk = self._rows(table, table, ix, entry, 1)[0][0]
        self._clustered(ev, table, [pk], modify)

    def _clustered(self, ev: Events, table: str, pks, modify: bool = False) -> None:
        ranks = self._pk_ranks(table)
        cl = self.geo.table(table).clustered
        for pk in pks:
            path = path_of(cl, leaf_of(cl, ranks[tuple(pk)]))
            ev.add(table, path[:-1])
            ev.add(table, path[-1:], FLAG_MODIFY if modify else 0)

    # ---- a scan of entries [first, end) of one index ----------------------------------------
    def _segment(self, ev: Events, table: str, gix: LiveIndex, first: int, end: int, *,
                 past_end: bool, from_start: bool, per_call: int, pks=None, on_row=None,
                 modify: bool = False, stop_row: int | None = None,
                 window: bool = False) -> bool:
        """A descent to ``first`` (to the leftmost leaf when ``from_start``), the entries up to
        ``end``, the entry past the end when ``past_end``; per entry the clustered lookup
        of ``pks[j]`` (None: covering) and ``on_row(j)`` (the join's probes).

        ``stop_row``: the SQL layer stops after the ``stop_row``-th entry (a LIMIT met);
        InnoDB has read to the end of that row's handler call (its prefetch).  Returns
        True when the scan stopped there."""
        st = entry_starts(gix)
        total = int(st[-1])
        cur = 0 if from_start else search_leaf(gix, first)
        ev.add(table, path_of(gix, cur))
        relatch = FLAG_RELATCH
        thr = FETCH_CACHE_THRESHOLD
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
                ev.add(table, gix.leaves[cur:cur + 1], mflag)

        # handler calls count the rows InnoDB returns: an entry a rowid filter rejects
        # (pks[j] None) is skipped inside the call, so it starts no call of its own; a new
        # call re-latches the leaf of the last returned row before it steps on
        rows = 0                       # rows returned so far
        pending = False                # the next entry starts a new handler call
        consumed = False               # a call started after the last returned row
        for j in range(n):
            r = first + j
            if pending:
                ev.add(table, gix.leaves[cur:cur + 1], relatch)
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
            ev.add(table, gix.leaves[cur:cur + 1], relatch)
        if past_end and end < total:
            last = end
            if window and n >= thr:
                # the call that reads the past-the-end entry fills its batch: InnoDB checks
                # no range end outside index condition pushdown (the SQL layer does)
                call = thr + ((n - thr) // per_call) * per_call
                last = min(total - 1, first + call + per_call - 1)
            step_to(leaf_of(gix, last))
        if rows and not full and not consumed:
            ev.add(table, gix.leaves[cur:cur + 1], relatch)
        return False

    # ---- Disk-Sweep MRR on the first table's range -----------------------------------------
    def _ref_length(self, table: str) -> int:
        """Bytes of a row id of ``table`` (its primary key's columns, as handler::ref_length)."""
        key = ("ref_length", table)
        if key not in self._rank_cache:
            size = {"tinyint": 1, "smallint": 2, "mediumint": 3, "int": 4, "bigint": 8,
                    "date": 3, "year": 1, "time": 3, "datetime": 5, "timestamp": 4}
            pk = self._indexes[table]["PRIMARY"][0].columns
            rows = self.conn.query(
                "SELECT COLUMN_NAME, DATA_TYPE, CHARACTER_OCTET_LENGTH FROM "
                "INFORMATION_SCHEMA.COLUMNS WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s",
                (self.schema, table), doing=f"reading the columns of {table}")
            by = {r[0].lower(): (str(r[1]).lower(), r[2]) for r in rows}
            total = 0
            for c in pk:
                t, octets = by[c.lower()]
                if t in size:
                    total += size[t]
                elif t in ("char", "binary"):
                    total += int(octets)
                elif t in ("varchar", "varbinary"):
                    total += int(octets) + 2
                else:
                    raise Unsupported(f"table {table} PRIMARY", f"row id of a {t} key column")
            self._rank_cache[key] = total
        return self._rank_cache[key]

    def _mrr_range(self, ev: Events, plan: Plan, table: str, t: TableAccess, gix: LiveIndex,
                   first: int, end: int, past: bool, pks, on_row, secondary: bool, stop) -> None:
        """A range read by Disk-Sweep MRR (``mrr_type`` "Rowid-ordered scan"): the index
        range read as a covering scan collecting row ids, then the rows fetched in row-id
        order, each by ``rnd_pos``: a unique search of the clustered index (the const rules:
        one more get where the row is the first record of a leaf or its last).  Measured on
        MariaDB 10.11 (DBT-3 Q6, Q14's range at SF 0.01): exact.  The row ids must fit the
        MRR buffer in one pass (``mrr_buffer_size``); more passes are not modelled."""
        node = f"table {t.alias} range (mrr: {t.mrr})"
        if t.mrr != "Rowid-ordered scan" or not secondary:
            raise Unsupported(node, "only a Rowid-ordered scan of a secondary index is modelled")
        if stop is not None or plan.limit is not None:
            raise Unsupported(node, "a LIMIT over a multi-range read")
        n = end - first
        buf = int(self.conn.query("SELECT @@mrr_buffer_size", doing="reading mrr_buffer_size")[0][0])
        need = n * (self._ref_length(table) + 8)     # a row id and, at most, a range pointer
        if need > buf:
            raise Unsupported(node, f"{n} row ids may take more than one pass of the MRR buffer "
                                    f"(up to {need} of mrr_buffer_size {buf} bytes)")
        self._segment(ev, table, gix, first, end, past_end=past, from_start=False,
                      per_call=FETCH_ROWS_PER_CALL_ICP if t.icp else FETCH_ROWS_PER_CALL,
                      window=not t.icp)
        ranks = self._pk_ranks(table)
        cl = self.geo.table(table).clustered
        order = sorted(range(n), key=lambda k: ranks[tuple(pks[k])])
        for k in order:
            ev.add(table, unique_lookup_pages(cl, ranks[tuple(pks[k])]))
            on_row(k)

    # ---- rowid filters ------------------------------------------------------------------------
    def _rowid_filter(self, plan: Plan, ev: Events, table: str, t: TableAccess) -> set:
        """The row ids a range rowid filter keeps; built on the table's first probe by a
        covering scan of the filter index's ranges (the optimizer trace's ranges of that
        index), whose pages it reads then (Range_rowid_filter::build, MariaDB 10.11)."""
        if t.alias in self._filters:
            return self._filters[t.alias]
        node = f"table {t.alias} rowid filter {t.rowid_filter}"
        ranges = next((d.ranges for d in plan.dives
                       if d.index == t.rowid_filter and d.table in (t.alias, table)), None)
        if not ranges:
            raise Unsupported(node, "no ranges of the filter's index in the optimizer trace")
        fix = self._index(table, t.rowid_filter, node)
        fgix = self.geo.table(table).index(t.rowid_filter)
        keep: set = set()
        for rng in ranges:
            first, end, past, _, _ = self._range_entries(table, fix, rng, node)
            self._segment(ev, table, fgix, first, end, past_end=past, from_start=False,
                          per_call=FETCH_ROWS_PER_CALL, window=False)
            if end > first:
                pks, _ = self._rows(table, t.alias, fix, first, end - first)
                keep.update(tuple(p) for p in pks)
        self._filters[t.alias] = keep
        return keep

    # ---- Batched Key Access -----------------------------------------------------------------
    def _row_bytes(self, table: str) -> int:
        """An upper bound of a row's bytes: every column at its longest (8 for a number or
        a date), for the join buffer's capacity."""
        key = ("row_bytes", table)
        if key not in self._rank_cache:
            rows = self.conn.query(
                "SELECT DATA_TYPE, CHARACTER_OCTET_LENGTH, NUMERIC_PRECISION FROM "
                "INFORMATION_SCHEMA.COLUMNS WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s",
                (self.schema, table), doing=f"reading the columns of {table}")
            total = 0
            for t, octets, prec in rows:
                total += int(octets) + 2 if octets is not None else max(8, int(prec or 0) // 2 + 1)
            self._rank_cache[key] = total
        return self._rank_cache[key]

    def _bka(self, ev: Events, t: TableAccess, table: str, keys: list, outer_tables: list,
             outer: list) -> None:
        """The inner table of a Batched Key Access join (join_cache_level 5/6), one buffer:
        the outer rows' keys sorted (``mrr_sort_keys``: "Key-ordered scan"), each distinct
        key read once (a unique search for ``eq_ref``, a ``ref`` scan otherwise), and for a
        non-covering secondary index ("Key-ordered Rowid-ordered scan") the row ids of
        every key collected, sorted and fetched by ``rnd_pos`` (a unique search of the
        clustered index each).  More than one buffer (``join_buffer_size``) is not modelled:
        the outer rows must fit with every column at its longest."""
        node = f"table {t.alias} {t.access} BKA ({t.mrr})"
        if not t.mrr or not t.mrr.startswith("Key-ordered"):
            raise Unsupported(node, "Batched Key Access without key ordering (mrr_sort_keys)")
        buf = int(self.conn.query("SELECT @@join_buffer_size", doing="reading join_buffer_size")[0][0])
        ix = self._index(table, t.key, node)
        gix = self.geo.table(table).index(t.key)
        per_row = sum(self._row_bytes(x) for x in outer_tables) + 16 + 8 * len(keys[0] if keys else ())
        secondary = ix.name != "PRIMARY" and not t.covering
        need = len(keys) * per_row
        if need > buf:
            raise Unsupported(node, f"{len(keys)} outer rows may take more than one join buffer "
                                    f"(up to {need} of join_buffer_size {buf} bytes)")
        if any(isinstance(v, (str, bytes)) for k in keys for v in k):
            raise Unsupported(node, "string keys (sorted in the server's collation) are not "
                                    "modelled in a key-ordered scan")
        distinct = sorted({k for k in keys if None not in k})
        per_call = FETCH_ROWS_PER_CALL_ICP if t.icp else FETCH_ROWS_PER_CALL
        rowids = []
        for key in distinct:
            ranks = self._key_ranks(table, ix, len(key))
            hit = ranks.get(key)
            if hit is None:
                first = self._below(table, ix, ix.columns, Bound(key, True), True)
                self._segment(ev, table, gix, first, first, past_end=True, from_start=False,
                              per_call=per_call)
                continue
            first, n = hit
            if t.access == "eq_ref" and n == 1 and ix.unique and len(key) == len(ix.columns):
                ev.add(table, unique_lookup_pages(gix, first))
            else:
                self._segment(ev, table, gix, first, first + n, past_end=True,
                              from_start=False, per_call=per_call)
            if secondary:
                rows_pk, _ = self._all_rows(table, t.alias, ix, ())
                rowids.extend(rows_pk[first:first + n])
        if rowids:
            if (len(keys) * per_row + len(rowids) * (self._ref_length(table) + 8)) > buf:
                raise Unsupported(node, f"{len(rowids)} row ids may not fit the join buffer's "
                                        f"MRR part beside {len(keys)} outer rows")
            ranks = self._pk_ranks(table)
            cl = self.geo.table(table).clustered
            for r in sorted(ranks[tuple(pk)] for pk in rowids):
                ev.add(table, unique_lookup_pages(cl, r))

    # ---- the nested loop ---------------------------------------------------------------------
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
        import re
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
        """Segments of the driving table: (index, first, end, past_end, from_start, unique)."""
        node = f"table {t.alias} {t.access}"
        if t.access == "ALL":
            ix = self._index(table, "PRIMARY", node)
            return [(ix, 0, self._count(table, ix, "", ()), False, True, False)]
        ix = self._index(table, t.key, node)
        if t.access == "index":
            return [(ix, 0, self._count(table, ix, "", ()), False, True, False)]
        if t.access == "range":
            segs = []
            for rng in t.ranges:
                first, end, past, unique_eq, _ = self._range_entries(table, ix, rng, node)
                segs.append((ix, first, end, past, False, unique_eq))
            return segs
        # ref / eq_ref by constants
        if any(r != "const" for r in t.ref):
            raise Unsupported(node, f"first table looked up by {t.ref}")
        vals = self._key_values(plan, t, node)
        b = Bound(vals, True)
        first = self._below(table, ix, ix.columns, b, True)
        end = self._below(table, ix, ix.columns, b, False)
        unique_eq = ix.unique and len(vals) == len(ix.columns)
        return [(ix, first, end, True, False, unique_eq)]

    def _nested_loop(self, plan: Plan, names: list, acc: list, ev: Events) -> None:
        aliases = [t.alias for t in acc]
        modify = plan.kind in ("update", "delete")
        self._filters = {}
        for j, t in enumerate(acc):
            if t.rowid_filter is not None and (j == 0 or t.access != "ref" or t.covering
                                               or t.join_buffer or modify):
                raise Unsupported(f"table {t.alias} {t.access} rowid filter",
                                  "a rowid filter other than on an inner ref access with "
                                  "clustered lookups")
            if j and t.access not in ("eq_ref", "ref"):
                raise Unsupported(f"table {t.alias} {t.access}", "an inner table read other than "
                                  "by eq_ref/ref (a scan per outer row is not modelled)")
            if t.first_match is not None:
                # tried as a LIMIT-like stop at the first row whose condition passes: DBT-3
                # Q4 at SF 0.01 compiled to 2,155 gets where MariaDB 10.11 counted 2,169,
                # and 300 orders by EXISTS 635 / 645; not explained yet
                raise Unsupported(f"table {t.alias} first_match", "a FirstMatch semi-join "
                                  "(EXISTS / IN stopped at the first match) is not modelled")
            if j < len(acc) - 1:
                self._check_condition(t, aliases, f"table {t.alias} condition")
            if t.join_buffer is not None and (j != len(acc) - 1 or j != 1 or modify):
                raise Unsupported(f"table {t.alias} {t.access} BKA", "Batched Key Access other "
                                  "than the second and last table of a SELECT's join")
            if t.mrr is not None and (j or t.access != "range") and t.join_buffer is None:
                raise Unsupported(f"table {t.alias} {t.access}", f"multi-range read "
                                  f"({t.mrr}) other than on the first table's range")
        if acc[0].join_buffer:
            raise Unsupported(f"table {acc[0].alias}", "join buffer on the first table")
        refs = [self._refs(t, aliases[:j], f"table {t.alias} {t.access}") if j else []
                for j, t in enumerate(acc)]
        # the columns each table's rows hand on to later tables, and its condition
        need = {a: [] for a in aliases}
        for j in range(1, len(acc)):
            for a, c in refs[j]:
                if a != "const" and c not in need[a]:
                    need[a].append(c)
        extra = []
        for j, t in enumerate(acc):
            e = tuple(f"{quote_ident(t.alias)}.{quote_ident(c)}" for c in need[t.alias])
            cond = _as_sql(t.condition) if (t.condition and j < len(acc) - 1) else None
            extra.append(e + ((f"COALESCE(({cond}), 0) <> 0",) if cond else ()))
        consts = {j: self._key_values(plan, t, f"table {t.alias}") if j and "const" in t.ref else ()
                  for j, t in enumerate(acc)}
        last_key: dict = {}
        ctx: dict = {}

        def per_call(t):
            return FETCH_ROWS_PER_CALL_ICP if t.icp else FETCH_ROWS_PER_CALL

        def hand_on(j, vals):
            """Store row values of table j; False if its condition rejects the row."""
            t = acc[j]
            ctx[t.alias] = dict(zip(need[t.alias], vals))
            if len(vals) > len(need[t.alias]):
                return bool(vals[-1])
            return True

        bka_keys: list = []

        def probe(j):
            if j >= len(acc):
                return
            if acc[j].join_buffer is not None:            # BKA: the key goes into the buffer
                ci = iter(consts[j])
                bka_keys.append(tuple(next(ci) if a == "const" else ctx[a][c]
                                      for a, c in refs[j]))
                return
            t, table = acc[j], names[j]
            node = f"table {t.alias} {t.access}"
            ix = self._index(table, t.key, node)
            gix = self.geo.table(table).index(t.key)
            ci = iter(consts[j])
            key = tuple(next(ci) if a == "const" else ctx[a][c] for a, c in refs[j])
            if any(v is None for v in key):
                return                                   # a NULL key matches nothing
            if t.access == "eq_ref" and last_key.get(j, object()) == key:
                if ctx.get(("found", j)):
                    probe(j + 1)                         # the kept row goes on
                return
            last_key[j] = key
            ranks = self._key_ranks(table, ix, len(key))
            hit = ranks.get(key)
            rows_pk, rows_x = (self._all_rows(table, t.alias, ix, extra[j])
                               if (j < len(acc) - 1 or (ix.name != "PRIMARY" and not t.covering))
                               else (None, None))
            if hit is None:
                # a key that is not there: the search lands where it would be
                first = self._below(table, ix, ix.columns, Bound(key, True), True)
                self._segment(ev, table, gix, first, first, past_end=True, from_start=False,
                              per_call=per_call(t))
                ctx[("found", j)] = False
                return
            first, n = hit
            ctx[("found", j)] = True
            pks = None
            if ix.name != "PRIMARY" and not t.covering:
                pks = rows_pk[first:first + n]
                if t.rowid_filter is not None:
                    keep = self._rowid_filter(plan, ev, table, t)
                    pks = [pk if tuple(pk) in keep else None for pk in pks]
            if t.access == "eq_ref" and n == 1 and ix.unique and len(key) == len(ix.columns):
                self._unique(ev, table, ix, gix, first, t.covering, modify,
                             pk=pks[0] if pks else None)
                # the kept row goes on to the next probe with the same key only if its
                # condition passed (join_read_key re-evaluates it on the cached row)
                passed = rows_x is not None and hand_on(j, rows_x[first])
                ctx[("found", j)] = passed
                if passed:
                    probe(j + 1)
                return

            def on_row(k):
                if rows_x is not None and hand_on(j, rows_x[first + k]):
                    probe(j + 1)

            self._segment(ev, table, gix, first, first + n, past_end=True, from_start=False,
                          per_call=per_call(t), pks=pks, on_row=on_row)

        t0, table0 = acc[0], names[0]
        dml = self._dml_setup(plan, table0, t0, extra) if modify else None
        want_rows = None
        if plan.limit is not None:
            if len(acc) > 1:
                raise Unsupported("statement LIMIT", "a LIMIT over a join (rows counted after "
                                                     "the join) is not modelled")
            want_rows = plan.limit[0] + plan.limit[1]
            if t0.condition:
                extra[0] = extra[0] + (f"COALESCE(({_as_sql(t0.condition)}), 0) <> 0",)
        sent = 0
        for ix, first, end, past, from_start, unique_eq in self._driving(plan, table0, t0):
            if want_rows is not None and sent >= want_rows:
                break
            gix = self.geo.table(table0).index(ix.name)
            secondary = ix.name != "PRIMARY" and not t0.covering
            want = (secondary or len(acc) > 1 or (want_rows is not None and t0.condition)
                    or dml is not None)
            pks, xs = (self._rows(table0, t0.alias, ix, first, end - first, extra[0])
                       if want and end > first else (None, None))
            if unique_eq:
                if end > first:
                    self._unique(ev, table0, ix, gix, first, t0.covering, modify,
                                 pk=pks[0] if pks else None)
                    if len(acc) > 1 and hand_on(0, xs[0]):
                        probe(1)
                    if dml is not None:
                        dml(pks[0], xs[0])
                else:
                    self._segment(ev, table0, gix, first, first, past_end=True, from_start=False,
                                  per_call=per_call(t0))
                continue

            def on_row(k, xs=xs, pks=pks):
                if len(acc) > 1 and hand_on(0, xs[k]):
                    probe(1)
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
                                secondary, stop)
                continue
            self._segment(ev, table0, gix, first, end, past_end=past, from_start=from_start,
                          per_call=1 if modify else per_call(t0),   # a locking read: no prefetch
                          pks=pks if secondary else None, on_row=on_row, modify=modify, stop_row=stop,
                          window=t0.access == "range" and not t0.icp and not modify)
        if bka_keys or (len(acc) > 1 and acc[-1].join_buffer is not None):
            self._bka(ev, acc[-1], names[-1], bka_keys, [names[0]], acc[:1])
        if dml is not None and dml.changed:
            ev.undo(np.arange(TRX_UNDO_GETS) % (UNDO_PAGES - 1))     # commit

    # ---- UPDATE / DELETE / INSERT -----------------------------------------------------------
