"""Disk-Sweep MRR, range rowid filters and Batched Key Access for the compiler.

The batched reads of MariaDB 10.11's executor over the live geometry (mixed into
:class:`bufsim.live.compile.Compiler`):

* a range read by Disk-Sweep MRR (``mrr_type`` "Rowid-ordered scan",
  sql/multi_range_read.cc): the index range read as a covering scan collecting row ids,
  then the rows fetched in row-id order, each a unique search of the clustered index;
* a range rowid filter on an inner ``ref`` (sql/rowid_filter.cc,
  ``Range_rowid_filter::fill``): built on the table's first probe by a covering scan of the
  filter index's ranges;
* Batched Key Access of any table of a join whose join buffer takes its partial rows in
  one fill (keys sorted, each distinct key read once, row ids sorted and fetched by unique
  searches, a rowid filter applied between the two), the matches sent on to the tables
  after it: :meth:`BatchedMixin._bka`.
"""
from __future__ import annotations

import re

from ..workloads.plans import FETCH_ROWS_PER_CALL, FETCH_ROWS_PER_CALL_ICP
from .compile_btree import Events, quote_ident, unique_lookup
from .compile_plan import Bound, Plan, TableAccess, Unsupported
from .geometry import LiveIndex

__all__ = ["BatchedMixin"]


class BatchedMixin:
    """The compiler's DS-MRR, rowid-filter and BKA methods (mixed into
    :class:`bufsim.live.compile.Compiler`)."""

    #: the end of the reason :meth:`_bka` gives where fills decide which keys are read
    SHARED_KEYS = "partial rows share keys (which fill reads a key is not modelled)"


    def _read_key(self, ev, t, table, gix, ix, key, hit, per_call) -> bool:
        """One distinct key of a batched read of ``t``'s index ``ix``: a unique lookup where
        an ``eq_ref`` key finds one entry, else an exact-key read of its entries
        (Key_value_records_iterator: HA_READ_KEY_EXACT, then index_next_same), or of the
        place it would be for a key with none (``hit`` None: returns False)."""
        if hit is None:
            first = self._below(table, ix, ix.columns, Bound(key, True), True)
            self._segment(ev, table, gix, first, first, past_end=True, from_start=False,
                          per_call=per_call, exact=True)
            return False
        first, n = hit
        if t.access == "eq_ref" and n == 1 and ix.unique and len(key) == len(ix.columns):
            ev.lookup(table, unique_lookup(gix, first))
        else:
            self._segment(ev, table, gix, first, first + n, past_end=True, from_start=False,
                          per_call=per_call, exact=True)
        return True
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
    def _columns(self, table: str) -> list:
        """(column, data type, octets, precision, scale, nullable) of ``table``, in order."""
        key = ("columns", table)
        if key not in self._rank_cache:
            self._rank_cache[key] = [
                (str(r[0]), str(r[1]).lower(), r[2], r[3], r[4], str(r[5]).upper() == "YES")
                for r in self.conn.query(
                    "SELECT COLUMN_NAME, DATA_TYPE, CHARACTER_OCTET_LENGTH, NUMERIC_PRECISION, "
                    "NUMERIC_SCALE, IS_NULLABLE FROM INFORMATION_SCHEMA.COLUMNS WHERE TABLE_SCHEMA = %s "
                    "AND TABLE_NAME = %s ORDER BY ORDINAL_POSITION", (self.schema, table),
                    doing=f"reading the columns of {table}")]
        return self._rank_cache[key]

    @staticmethod
    def _column_bytes(dtype: str, octets, prec, scale, node: str) -> tuple:
        """(bytes at most, variable length) of a column in a join buffer record: its pack
        length (a DECIMAL's binary size, sql/my_decimal.h ``decimal_bin_size``); a CHAR or
        VARCHAR at its longest with 2 length bytes (stored stripped / packed,
        sql/field.cc:2488 ``Field::fill_cache_field``)."""
        fixed = {"tinyint": 1, "smallint": 2, "mediumint": 3, "int": 4, "bigint": 8,
                 "float": 4, "double": 8, "date": 3, "year": 1, "time": 6, "datetime": 8,
                 "timestamp": 7, "bit": 8}
        if dtype in fixed:
            return fixed[dtype], False
        if dtype == "decimal":
            dig = (0, 1, 1, 2, 2, 3, 3, 4, 4, 4)
            p, sc = int(prec if prec is not None else 65), int(scale or 0)
            i, f = p - sc, sc
            return i // 9 * 4 + dig[i % 9] + f // 9 * 4 + dig[f % 9], False
        if dtype in ("char", "binary", "varchar", "varbinary"):
            return int(octets) + 2, True
        raise Unsupported(node, f"a {dtype} column in a join buffer (blobs are stored apart)")

    @staticmethod
    def _names_column(sql: str, name: str, quals: set) -> bool:
        """Whether ``sql`` names column ``name`` for a table known as one of ``quals``: unqualified,
        or qualified by one of them (``n2.n_name`` is not ``n1``'s)."""
        for m in re.finditer(rf"(?<![\w`]){re.escape(name)}(?![\w`])", sql, re.I):
            q = re.search(r"`?(\w+)`?\s*\.\s*`?$", sql[:m.start()])
            if q is None or q.group(1).lower() in quals:
                return True
        return False

    def _used_bytes(self, table: str, node: str, alias: str | None = None) -> tuple:
        """(bytes at most, has variable-length fields) of a row of ``table`` in a join
        buffer record: the columns the statement names (the server stores the columns of
        the table's read_set, MariaDB 10.11.18 sql/sql_join_cache.cc:123
        ``add_table_data_fields_to_join_cache``; a column named anywhere in the statement
        (unqualified, or qualified by the table's alias) over-approximates it, every column for
        ``*``) and, where the table has nullable
        columns, its null bitmap and null-row flag (:375 ``create_flag_fields``).  A CHAR
        of 4 to 255 bytes is stored without its end spaces after 2 length bytes, a VARCHAR
        as its length bytes and value (sql/field.cc:2488 ``Field::fill_cache_field``): their
        longest value in the table, by SQL."""
        sql = self._sql or ""
        star = re.search(r"(?:\bselect\b|,)\s*(?:[`\w]+\.)?\*", sql, re.I) is not None
        cols = self._columns(table)
        total, varlen, exprs = 0, False, []
        pk = ({c.lower() for c in self._indexes[table]["PRIMARY"][0].columns}
              if getattr(self, "_position_all", False) else set())
        for name, dtype, octets, prec, scale, _ in cols:
            if not (star or name.lower() in pk
                    or self._names_column(sql, name, {table.lower(), (alias or table).lower()})):
                continue
            b, v = self._column_bytes(dtype, octets, prec, scale, node)
            if dtype in ("char", "binary") and 4 <= int(octets) < 256:
                exprs.append(f"2 + OCTET_LENGTH(RTRIM({quote_ident(name)}))")
            elif dtype in ("varchar", "varbinary"):
                exprs.append(f"{1 if int(octets) < 256 else 2} + OCTET_LENGTH({quote_ident(name)})")
            else:
                total += int(octets) if dtype in ("char", "binary") else b
                continue
            varlen = True
        if exprs:
            key = ("longest", table, tuple(exprs))
            if key not in self._rank_cache:
                row = self.conn.query(
                    f"SELECT {', '.join(f'MAX({e})' for e in exprs)} FROM {quote_ident(table)}",
                    doing=f"reading the longest values of {table}")[0]
                self._rank_cache[key] = sum(int(x or 0) for x in row)
            total += self._rank_cache[key]
        nullable = sum(1 for c in cols if c[5])
        return total + ((nullable + 7) // 8 + 1 if nullable else 0), varlen

    def _rec_per_key(self, table: str, index: str, parts: int) -> int:
        """The optimizer's rows per key of ``index``'s first ``parts`` columns, at least 1:
        InnoDB's table rows / distinct prefixes, truncated (MariaDB 10.11.18
        storage/innobase/handler/ha_innodb.cc:14615 ``innodb_rec_per_key``, :15047), which
        SHOW INDEX prints back as rows / rec_per_key (``CARDINALITY``).  The in-memory
        statistics can differ from ``mysql.innodb_index_stats`` (DBT-3 SF 0.01:
        i_o_custkey's cardinality 2,142, rec_per_key 7, where the table holds 1,000
        distinct prefixes), so they are read from INFORMATION_SCHEMA.STATISTICS.  An
        extended key's parts (the primary key's columns after a secondary index's) are not
        listed there: for them the data's own rows per distinct prefix, by SQL."""
        key = ("rec_per_key", table, index, parts)
        if key not in self._rank_cache:
            card = [int(r[0] or 0) for r in self.conn.query(
                "SELECT CARDINALITY FROM INFORMATION_SCHEMA.STATISTICS WHERE "
                "TABLE_SCHEMA = %s AND TABLE_NAME = %s AND INDEX_NAME = %s ORDER BY SEQ_IN_INDEX",
                (self.schema, table, index), doing=f"reading the cardinality of {table}.{index}")]
            rows = self.conn.query(
                "SELECT TABLE_ROWS FROM INFORMATION_SCHEMA.TABLES WHERE TABLE_SCHEMA = %s AND "
                "TABLE_NAME = %s", (self.schema, table), doing=f"reading the rows of {table}")
            n = int(rows[0][0] or 0) if rows else 0
            if 0 < parts <= len(card):
                c = card[parts - 1]
                rpc = n // c if c else n
            else:
                ix = self._index(table, index, f"table {table} index {index}")
                cols = ", ".join(quote_ident(c) for c in self._order(table, ix)[:parts])
                total, distinct = self.conn.query(
                    f"SELECT COUNT(*), COUNT(DISTINCT {cols}) FROM {quote_ident(table)}",
                    doing=f"counting the key prefixes of {table}.{index}")[0]
                rpc = int(total) // int(distinct) if distinct else int(total)
            self._rank_cache[key] = max(1, rpc)
        return self._rank_cache[key]

    def _bka_fits(self, join, j: int, n_records: int, n_pairs: int, key_bytes: int,
                  rowid_step: bool) -> str | None:
        """None where table ``j``'s join buffer takes its ``n_records`` partial rows, and its
        multi-range read its keys and row ids, in one fill and one pass; otherwise why it
        may not (:meth:`_bka` decides whether that changes the page gets).

        Bounds used (MariaDB 10.11.18): a record holds the used columns of the tables before
        the table (``flat``) or of the table before it only, with a link to that table's
        buffer record (``incremental``), its length and flags (sql/sql_join_cache.cc:1295
        ``write_record_data``), and the key when it is not embedded; the buffer is full
        when the next record may not fit (:1349 ``last_record``).  Each record reserves
        (ref_length + 8) x rec_per_key bytes for the MRR buffer (:3978
        ``JOIN_TAB_SCAN_MRR::aux_buffer_incr``), which gets the buffer's space after the
        records (sql/sql_join_cache.h:1305 ``setup_aux_buffer``); DS-MRR takes an
        interruption buffer from it (sql/multi_range_read.cc:631) and splits the rest
        between the sorted keys and the row ids by rec_per_key (:1453
        ``setup_buffer_sharing``); a Key-ordered scan of the clustered index or a covering
        one gives it all to the keys (:1167).  The buffer's size is EXPLAIN's (rounded
        down); rec_per_key is the server's statistics, as its own sizing uses."""
        t, table = join.acc[j], join.names[j]
        node = f"table {t.alias} {t.access} BKA ({t.buffer_type} buffer)"
        cap = t.buffer_bytes
        if cap is None or t.buffer_type not in ("flat", "incremental"):
            raise Unsupported(node, "a join buffer whose type and size EXPLAIN does not give")
        if t.buffer_type == "flat":
            before = range(0, j)
        else:
            if join.acc[j - 1].join_buffer is None:
                raise Unsupported(node, "an incremental buffer after a table without one")
            before = range(j - 1, j)
        used = [self._used_bytes(join.names[i], node, join.aliases[i]) for i in before]
        varlen = any(v for _, v in used)
        # offsets of the fields a later buffer's key reads from this record (:742
        # get_record_max_affix_length), 4 bytes at most each
        mine = {join.aliases[i] for i in before}
        refs = {(a, c) for k in range(j + 1, len(join.acc)) if join.acc[k].join_buffer
                for a, c in join.refs[k] if a in mine}
        # the key is stored beside the record unless embedded in it: every part a fixed-length,
        # non-null column of this record, defined as the key's column (:1144
        # check_emb_key_usage)
        if not self._key_embedded(join, j, mine):
            rec_key = key_bytes
        else:
            rec_key = 0
        # the record's length (if it has variable-length fields) and link to the previous
        # buffer's record (incremental), 4 bytes at most each
        rec = (sum(b for b, _ in used) + (4 if varlen else 0)
               + (4 if t.buffer_type == "incremental" else 0) + 4 * len(refs) + rec_key
               + (1 if t.first_match is not None else 0))      # the match flag
        ref = self._ref_length(table)
        parts = len(t.ref)
        rpc = self._rec_per_key(table, t.key, parts)
        aux = (ref + 8) * rpc
        first = key_bytes + ref
        usable = cap
        if (n_records + 1) * (rec + aux) + first > usable:
            return (f"{n_records} partial rows may take more than one fill of the {cap}-byte "
                    f"join buffer (up to {rec + aux} bytes each)")
        avail = usable - n_records * rec
        kes = max(key_bytes, 8) + 8
        if rowid_step:
            pk_bytes = self._ref_length(table)
            avail -= ref + key_bytes + pk_bytes
            rps = (ref + 8) * rpc
            rowid_space = avail * rps / (rps + kes)
            if n_pairs * (ref + 8) > rowid_space or n_records * kes > avail - rowid_space:
                return (f"{n_records} keys and {n_pairs} row ids may take more than one pass "
                        "of the multi-range read's buffer")
        elif n_records * kes > avail:
            return f"{n_records} keys may take more than one pass of the multi-range read's buffer"
        return None

    def _key_embedded(self, join, j: int, mine: set) -> bool:
        """Whether table ``j``'s key is embedded in its join buffer's records
        (JOIN_CACHE::check_emb_key_usage, MariaDB 10.11.18 sql/sql_join_cache.cc:1144)."""
        t, table = join.acc[j], join.names[j]
        ix = self._index(table, t.key, f"table {t.alias}")
        order = self._order(table, ix)
        mycols = {c[0].lower(): c for c in self._columns(table)}
        for (a, c), kc in zip(join.refs[j], order):
            if a not in mine:
                return False
            other = join.names[join.aliases.index(a)]
            oc = {x[0].lower(): x for x in self._columns(other)}.get(c.lower())
            kcol = mycols.get(kc.lower())
            if oc is None or kcol is None or oc[1:5] != kcol[1:5] or oc[5] or kcol[5]:
                return False
            if oc[1] in ("char", "binary", "varchar", "varbinary"):
                return False
        return True

    def _key_bytes(self, table: str, ix, parts: int, node: str) -> int:
        """An upper bound of a key's bytes (its columns, a null byte each)."""
        cols = {c[0].lower(): c for c in self._columns(table)}
        total = 0
        for name in self._order(table, ix)[:parts]:
            _, dtype, octets, prec, scale, _ = cols[name.lower()]
            total += self._column_bytes(dtype, octets, prec, scale, node)[0] + 1
        return total

    def _bka(self, join, j: int) -> None:
        """Table ``j`` of a join read by Batched Key Access (join_cache_level 5-8) for the
        partial rows of its join buffer, each match sent on to the tables after it.

        The buffer's keys go to the multi-range read sorted (``mrr_sort_keys``: the
        "Key-ordered" scans; MariaDB 10.11.18 sql/multi_range_read.cc:725
        ``Mrr_ordered_index_reader::refill_buffer``), identical keys grouped, so each
        distinct key is read once (:584 ``get_next`` over groups of identical keys; a unique
        search for ``eq_ref``, a ``ref`` read with HA_READ_KEY_EXACT then
        ``index_next_same`` otherwise) and its rows go to every partial row with that key.
        With a non-covering secondary index ("Key-ordered Rowid-ordered scan") the (row id,
        partial row) pairs are collected, sorted by row id and each distinct row id
        fetched once by ``rnd_pos`` (a unique search of the clustered index; :956
        ``Mrr_ordered_rndpos_reader::get_next``, :885 ``refill_from_index_reader``).  A range
        rowid filter on the table is built at its first buffer read, before the keys are
        read (sql/sql_join_cache.cc:2349), and, not pushed to InnoDB under DS-MRR
        (sql/multi_range_read.cc:1112-1125), it drops row ids after the index read, before
        the sort (:917): a rejected row id gets no ``rnd_pos``.  The matches reach the
        tables after this one in that order (key order, or row-id order).  String keys
        (sorted in the server's collation) are not modelled."""
        t, table, ev, plan = join.acc[j], join.names[j], join.ev, join.plan
        records = join.buffers.get(j, [])
        node = f"table {t.alias} {t.access} BKA ({t.mrr})"
        if not t.mrr or not t.mrr.startswith("Key-ordered"):
            raise Unsupported(node, "Batched Key Access without key ordering (mrr_sort_keys)")
        if not records:
            return                          # join_matching_records returns at once (:2327)
        if any(isinstance(v, (str, bytes)) for k, _ in records for v in k):
            raise Unsupported(node, "string keys (sorted in the server's collation) are not "
                                    "modelled in a key-ordered scan")
        ix = self._index(table, t.key, node)
        gix = self.geo.table(table).index(t.key)
        secondary = ix.name != "PRIMARY" and not t.covering
        last = j == len(join.acc) - 1
        by_key: dict = {}
        for r, (key, _) in enumerate(records):
            if None not in key:
                by_key.setdefault(key, []).append(r)
        keys = sorted(by_key)
        rows_pk, rows_x = (self._all_rows(table, t.alias, ix, join.extra[j])
                           if (secondary or not last or t.first_match) else (None, None))
        keep = self._rowid_filter(plan, ev, table, t) if t.rowid_filter else None
        ranks_of = self._key_ranks
        # the sizes first: refuse before any get of this table's batch
        hits = {key: ranks_of(table, ix, len(key)).get(key) for key in keys}
        pairs = 0
        if secondary:
            for key, hit in hits.items():
                if hit is not None:
                    first, n = hit
                    ok = n if keep is None else sum(tuple(p) in keep
                                                    for p in rows_pk[first:first + n])
                    pairs += ok * len(by_key[key])
        split = self._bka_fits(join, j, len(records), pairs,
                               self._key_bytes(table, ix, len(records[0][0]), node), secondary)
        # More than one fill (or MRR pass) reads each fill's distinct keys, keys and row ids
        # sorted per pass (sql/sql_select.cc:22852, sql/multi_range_read.cc:766, 940): where no two
        # partial rows share a key, each key, entry and row id is read once whatever the
        # fills, so the gets are those of one fill; but a later table's rows then come in
        # another order (the last-key rule of an eq_ref probe depends on it), and a later
        # linked buffer is read once per fill (sql/sql_join_cache.cc:2225), so every later
        # BKA table must have distinct keys too and no eq_ref probe may follow.
        distinct = sum(len(v) for v in by_key.values()) == len(by_key)
        if split is not None or join.split:
            why = split or f"after {join.split}"
            if not distinct:
                raise Unsupported(node, f"{why}, and {self.SHARED_KEYS}")
            if any(join.acc[k].join_buffer is None and join.acc[k].access == "eq_ref"
                   for k in range(j + 1, len(join.acc))):
                raise Unsupported(node, f"{why}, with an eq_ref probe after it (its rows' "
                                        "order over the fills is not modelled)")
            if split is not None and not join.split:
                join.split = f"table {t.alias}'s fills"
        per_call = FETCH_ROWS_PER_CALL_ICP if t.icp else FETCH_ROWS_PER_CALL
        out = []                            # (entry, record) in the order rows come out
        for key in keys:
            hit = hits[key]
            if not self._read_key(ev, t, table, gix, ix, key, hit, per_call):
                continue
            first, n = hit
            for e in range(first, first + n):
                if keep is not None and tuple(rows_pk[e]) not in keep:
                    continue
                out.extend((e, r) for r in by_key[key])
        if secondary:
            ranks = self._pk_ranks(table)
            cl = self.geo.table(table).clustered
            out.sort(key=lambda er: ranks[tuple(rows_pk[er[0]])])     # stable: key order kept
            # FirstMatch beside BKA: a row id whose partial row has its match already is
            # skipped before its rnd_pos (the MRR's skip_record callback,
            # sql/sql_join_cache.cc:4191 bka_range_seq_skip_record, set for
            # check_only_first_match at :4381; sql/multi_range_read.cc:997)
            cond = t.first_match is not None and len(join.extra[j]) > len(join.cols[t.alias])
            matched: set = set()
            done = None
            for e, r in out:
                if t.first_match is not None and r in matched:
                    continue
                rk = ranks[tuple(rows_pk[e])]
                if rk != done:              # one rnd_pos per distinct row id
                    ev.lookup(table, unique_lookup(cl, rk))
                    done = rk
                if t.first_match is not None and (not cond or bool(rows_x[e][-1])):
                    matched.add(r)
        if last:
            return
        for e, r in out:
            join.ctx = dict(records[r][1])
            if join.hand_on(j, rows_x[e]):
                join.probe(j + 1)
