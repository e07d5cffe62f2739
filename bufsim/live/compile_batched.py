"""Disk-Sweep MRR, range rowid filters and Batched Key Access for the compiler.

The batched reads of MariaDB 10.11's executor over the live geometry (mixed into
:class:`bufsim.live.compile.Compiler`):

* a range read by Disk-Sweep MRR (``mrr_type`` "Rowid-ordered scan",
  sql/multi_range_read.cc): the index range read as a covering scan collecting row ids,
  then the rows fetched in row-id order, each a unique search of the clustered index;
* a range rowid filter on an inner ``ref`` (sql/rowid_filter.cc,
  ``Range_rowid_filter::fill``): built on the table's first probe by a covering scan of the
  filter index's ranges;
* Batched Key Access of a two-table join in one join buffer (keys sorted, each distinct key
  read once, row ids sorted and fetched by unique searches).
"""
from __future__ import annotations

from ..workloads.plans import FETCH_ROWS_PER_CALL, FETCH_ROWS_PER_CALL_ICP
from .compile_btree import Events, unique_lookup
from .compile_plan import Bound, Plan, TableAccess, Unsupported
from .geometry import LiveIndex

__all__ = ["BatchedMixin"]


class BatchedMixin:
    """The compiler's DS-MRR, rowid-filter and BKA methods (mixed into
    :class:`bufsim.live.compile.Compiler`)."""

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
                   first: int, end: int, past: bool, pks, on_row, secondary: bool, stop,
                   exact: bool = False) -> None:
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
                      window=not t.icp, exact=exact)
        ranks = self._pk_ranks(table)
        cl = self.geo.table(table).clustered
        order = sorted(range(n), key=lambda k: ranks[tuple(pks[k])])
        for k in order:
            ev.lookup(table, unique_lookup(cl, ranks[tuple(pks[k])]))
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
                          per_call=FETCH_ROWS_PER_CALL, window=False, exact=self._eq_range(rng))
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
                              per_call=per_call, exact=True)
                continue
            first, n = hit
            if t.access == "eq_ref" and n == 1 and ix.unique and len(key) == len(ix.columns):
                ev.lookup(table, unique_lookup(gix, first))
            else:
                # Key_value_records_iterator: HA_READ_KEY_EXACT, then index_next_same
                self._segment(ev, table, gix, first, first + n, past_end=True,
                              from_start=False, per_call=per_call, exact=True)
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
                ev.lookup(table, unique_lookup(cl, r))
