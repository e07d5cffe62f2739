"""UPDATE, DELETE and INSERT for the compiler: the rows' B-tree changes and undo gets.

An UPDATE or DELETE reads its rows as a SELECT would (:mod:`bufsim.live.compile`); per row
it changes, one get of the undo page its undo record goes to (:data:`ROW_UNDO_GETS`), and
for every secondary index whose key it changes a descent to the old entry (delete-marked)
and, for an UPDATE, one to where the new entry goes.  A row whose new values equal its old
ones is not written.  An INSERT descends the clustered index and every secondary index to
where the row goes.  A statement that wrote a row ends with the transaction's undo-log
gets (:data:`TRX_UNDO_GETS`, on the modelled undo tablespace).
"""
from __future__ import annotations

import re

import numpy as np

from ..trace import FLAG_MODIFY
from .compile_btree import (ROW_UNDO_GETS, TRX_UNDO_GETS, UNDO_PAGES, Events, IndexColumns,
                            leaf_of, path_of, quote_ident, search_leaf)
from .compile_plan import Bound, Plan, TableAccess, Unsupported

__all__ = ["DmlMixin", "split_top"]


class DmlMixin:
    """The compiler's UPDATE/DELETE/INSERT methods (mixed into :class:`Compiler`)."""

    def _secondaries(self, table: str) -> list:
        out = []
        for name, (ix, prefix) in self._indexes[table].items():
            if name == "PRIMARY":
                continue
            if prefix:
                raise Unsupported(f"table {table} index {name}", "a column-prefix index")
            out.append(ix)
        return out

    def _entry_leaf_path(self, table: str, ix: IndexColumns, values: tuple, search: bool) -> np.ndarray:
        """The root-to-leaf path to the entry (index columns + primary key) ``values``:
        its own leaf, or where a new entry goes (``search``: the leaf of the entry before it)."""
        gix = self.geo.table(table).index(ix.name)
        cols = self._order(table, ix)
        rank = self._below(table, ix, cols, Bound(tuple(values), True), True)
        lf = search_leaf(gix, rank) if search else leaf_of(gix, rank)
        return path_of(gix, lf)

    def _dml_setup(self, plan: Plan, table: str, t: TableAccess, extra: list):
        """The per-row work of an UPDATE/DELETE (the callable gets the row's primary key and
        its extra values): the undo record's get, the secondary-index changes."""
        sql = self._sql
        node = f"statement {plan.kind.upper()}"
        pk_cols = self._indexes[table]["PRIMARY"][0].columns
        sets = {}
        if plan.kind == "update":
            m = re.match(r"\s*update\s+\S+\s+set\s+(.*?)(?:\s+where\s+.*)?$", sql, re.I | re.S)
            if not m:
                raise Unsupported(node, "cannot read the SET clause")
            for a in split_top(m.group(1)):
                col, _, expr = a.partition("=")
                col = col.strip().strip("`").split(".")[-1].strip("`")
                if not expr.strip():
                    raise Unsupported(node, f"cannot read the assignment {a!r}")
                sets[col.lower()] = expr.strip()
            if any(c.lower() in sets for c in pk_cols):
                raise Unsupported(node, "an UPDATE of the primary key (a delete and an insert)")
        secs = self._secondaries(table)
        touched = [ix for ix in secs
                   if plan.kind == "delete" or any(c.lower() in sets for c in ix.columns)]
        cols = []
        for ix in touched:
            for c in ix.columns:
                cols.append(f"{quote_ident(t.alias)}.{quote_ident(c)}")
                if plan.kind == "update":
                    cols.append(sets.get(c.lower(), f"{quote_ident(t.alias)}.{quote_ident(c)}"))
        cond = (f"COALESCE(({t.condition}), 0) <> 0",) if t.condition else ()
        if sets:
            # a row whose new values equal its old ones is not written (no undo record)
            cond = cond + (" OR ".join(f"NOT ({quote_ident(t.alias)}.{quote_ident(c)} <=> ({e}))"
                                       for c, e in sets.items()),)
        base = len(extra[0])
        extra[0] = extra[0] + tuple(cols) + cond
        state = _DmlState()

        def row(pk, xs):
            vals = xs[base:]
            if any(not v for v in vals[len(vals) - len(cond):]) if cond else False:
                return
            state.changed += 1
            ev.undo([UNDO_PAGES - 1] * ROW_UNDO_GETS)
            at = 0
            for ix in touched:
                k = len(ix.columns)
                if plan.kind == "update":
                    old = vals[at:at + 2 * k:2]
                    new = vals[at + 1:at + 2 * k:2]
                    at += 2 * k
                    if tuple(old) == tuple(new):
                        continue                      # the index's key is unchanged
                    ev.descent(table, self._entry_leaf_path(table, ix, tuple(old) + tuple(pk),
                                                            False), FLAG_MODIFY)
                    path = self._entry_leaf_path(table, ix, tuple(new) + tuple(pk), True)
                else:
                    old = vals[at:at + k]
                    at += k
                    path = self._entry_leaf_path(table, ix, tuple(old) + tuple(pk), False)
                ev.descent(table, path, FLAG_MODIFY)

        ev = self._ev
        return _DmlCall(state, row)

    def _insert(self, plan: Plan, ev: Events) -> None:
        """INSERT ... VALUES: per row a descent of the clustered index to where the row goes
        and one of every secondary index, the undo record's get; the transaction's."""
        sql = self._sql
        node = "statement INSERT"
        m = re.match(r"\s*insert\s+(?:into\s+)?`?(\w+)`?\s*\(([^)]*)\)\s*values\s*(.*?)\s*;?\s*$",
                     sql, re.I | re.S)
        if not m or re.search(r"\bon\s+duplicate\b|\bselect\b", sql, re.I):
            raise Unsupported(node, "only INSERT INTO t (columns) VALUES (...), ... is modelled")
        table, cols, values = m.group(1), [c.strip(" `") for c in m.group(2).split(",")], m.group(3)
        if table not in self.geo.tables:
            raise Unsupported(node, f"table {table} is not in the schema")
        pk_cols = self._indexes[table]["PRIMARY"][0].columns if "PRIMARY" in self._indexes.get(
            table, {}) else None
        if pk_cols is None:
            raise Unsupported(node, f"table {table} has no PRIMARY KEY")
        secs = self._secondaries(table)
        if any(ix.unique for ix in secs):
            raise Unsupported(node, "a unique secondary index (its duplicate check is not modelled)")
        lower = [c.lower() for c in cols]
        need = list(pk_cols) + [c for ix in secs for c in ix.columns]
        missing = [c for c in need if c.lower() not in lower]
        if missing:
            raise Unsupported(node, f"columns {missing} take defaults (not modelled)")
        rows = self.conn.query(f"SELECT * FROM (VALUES {values}) AS v".replace("%", "%%"),
                               doing="reading the INSERT's rows")
        cl = self.geo.table(table).clustered
        pk_ix = self._indexes[table]["PRIMARY"][0]
        for r in rows:
            val = {c: r[i] for i, c in enumerate(lower)}
            pk = tuple(val[c.lower()] for c in pk_cols)
            rank = self._below(table, pk_ix, pk_cols, Bound(pk, True), True)
            ev.descent(table, path_of(cl, search_leaf(cl, rank)), FLAG_MODIFY)
            for ix in secs:
                p = self._entry_leaf_path(table, ix, tuple(val[c.lower()] for c in ix.columns) + pk,
                                          True)
                ev.descent(table, p, FLAG_MODIFY)
            ev.undo([UNDO_PAGES - 1] * ROW_UNDO_GETS)
        if rows:
            ev.undo(np.arange(TRX_UNDO_GETS) % (UNDO_PAGES - 1))


class _DmlState:
    def __init__(self):
        self.changed = 0


class _DmlCall:
    def __init__(self, state, fn):
        self.state = state
        self.fn = fn

    @property
    def changed(self):
        return self.state.changed

    def __call__(self, pk, xs):
        self.fn(pk, xs)


def split_top(text: str) -> list:
    """``text`` split at commas outside quotes and parentheses."""
    out, depth, quote, cur = [], 0, None, []
    for ch in text:
        if quote:
            cur.append(ch)
            if ch == quote:
                quote = None
            continue
        if ch in "'\"":
            quote = ch
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "," and depth == 0:
            out.append("".join(cur))
            cur = []
            continue
        cur.append(ch)
    out.append("".join(cur))
    return [x.strip() for x in out if x.strip()]
