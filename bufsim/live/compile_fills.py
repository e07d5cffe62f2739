"""Join buffers laid out as MariaDB 10.11 lays them out, for BKA reads in several fills.

Where a Batched Key Access buffer takes more than one fill and its partial rows share keys,
which fill reads a key depends on where each fill ends, so :class:`FillsMixin` (mixed into
:class:`bufsim.live.compile.Compiler`, used on the compiler's second try) follows the
server's layout (MariaDB 10.11.18 source):

* the buffer's size, ``JOIN_CACHE::get_max_join_buffer_size`` (sql/sql_join_cache.cc:842),
  from the record layout of ``set_constants`` (:657) and the optimizer's partial join
  cardinality (sql/sql_select.cc:15152), refused unless it matches EXPLAIN's ``buffer_size``;
* each record as ``write_record_data`` writes it (:1295; the used columns' actual bytes,
  read by SQL), the buffer full by ``last_record`` (:1349) with each record's MRR
  reservation (:3978 ``aux_buffer_incr``);
* each fill read through DS-MRR (sql/multi_range_read.cc): the space after the records less
  the interruption buffer (:631), split between keys and row ids (:1453
  ``setup_buffer_sharing``), keys sorted and read once per key pass (:725), row ids sorted and
  fetched once per row-id pass (:885), the matches sent on pass by pass;
* the buffer linked after it (an incremental one) read after each fill
  (sql/sql_join_cache.cc:2225 ``next_cache``).

Measured on MariaDB 10.11 (DBT-3 SF 0.01, ``mrr_bka``): Q9 at the default
``join_buffer_size`` exact (40,993); at nine smaller sizes, 55 of 61 query runs exact and
the rest (Q5, Q9) within 0.51 % (``docs/guide-live-trace.md``).
"""
from __future__ import annotations

import re

from ..workloads.plans import FETCH_ROWS_PER_CALL, FETCH_ROWS_PER_CALL_ICP
from .compile_btree import quote_ident, unique_lookup
from .compile_plan import Unsupported

__all__ = ["FillsMixin"]


class FillsMixin:
    """The compiler's exact join buffer fills (mixed into
    :class:`bufsim.live.compile.Compiler`, beside
    :class:`bufsim.live.compile_batched.BatchedMixin`)."""

    @staticmethod
    def _offset_size(n: int) -> int:
        """JOIN_CACHE::offset_size (sql/sql_join_cache.h:110): bytes of an offset below n."""
        return 1 if n < 256 else 2 if n < 65536 else 4

    def _pack(self, table: str, name: str, node: str) -> tuple:
        """(pack_length, join-cache length at most, kind) of a column: kind "fixed",
        "stripped" (a CHAR of 4-255 bytes, stored without end spaces after 2 length bytes)
        or "varstr" (a VARCHAR: its length bytes and value); sql/field.cc:2488."""
        col = {c[0].lower(): c for c in self._columns(table)}[name.lower()]
        _, dtype, octets, prec, scale, nullable = col
        if nullable:
            raise Unsupported(node, f"nullable column {table}.{name} in a join buffer")
        b, _ = self._column_bytes(dtype, octets, prec, scale, node)
        if dtype in ("char", "binary"):
            n = int(octets)
            return (n, n + 2, "stripped") if 4 <= n < 256 else (n, n, "fixed")
        if dtype in ("varchar", "varbinary"):
            n = int(octets) + (1 if int(octets) < 256 else 2)
            return n, n, "varstr"
        return b, b, "fixed"

    def _used_columns(self, table: str, alias: str) -> list:
        """The columns of ``table`` (as ``alias``) the statement names, in table order (the
        read_set, see :meth:`_used_bytes`)."""
        sql = self._sql or ""
        if re.search(r"(?:\bselect\b|,)\s*(?:[`\w]+\.)?\*", sql, re.I):
            return [c[0] for c in self._columns(table)]
        pk = ({c.lower() for c in self._indexes[table]["PRIMARY"][0].columns}
              if getattr(self, "_position_all", False) else set())
        return [c[0] for c in self._columns(table)
                if c[0].lower() in pk or self._names_column(sql, c[0], {table.lower(),
                                                                       alias.lower()})]

    def _bytes_expr(self, table: str, alias: str, node: str) -> str:
        """SQL over ``alias`` giving the bytes a row's used columns take in a join buffer
        record (JOIN_CACHE::write_record_data, sql/sql_join_cache.cc:1295)."""
        parts, fixed = [], 0
        for name in self._used_columns(table, alias):
            _, _, kind = self._pack(table, name, node)
            q = f"{quote_ident(alias)}.{quote_ident(name)}"
            if kind == "stripped":
                parts.append(f"2 + OCTET_LENGTH(RTRIM({q}))")
            elif kind == "varstr":
                col = {c[0].lower(): c for c in self._columns(table)}[name.lower()]
                parts.append(f"{1 if int(col[2]) < 256 else 2} + OCTET_LENGTH({q})")
            else:
                fixed += self._pack(table, name, node)[0]
        return " + ".join([str(fixed)] + parts)

    def _mean_rec_length(self, table: str) -> int:
        key = ("mean_rec_length", table)
        if key not in self._rank_cache:
            r = self.conn.query("SELECT AVG_ROW_LENGTH FROM INFORMATION_SCHEMA.TABLES WHERE "
                                "TABLE_SCHEMA = %s AND TABLE_NAME = %s", (self.schema, table),
                                doing=f"reading the mean row length of {table}")
            self._rank_cache[key] = int(r[0][0] or 0) if r else 0
        return self._rank_cache[key]

    def _key_store_length(self, table: str, cols) -> int:
        """A key's length over ``cols`` (KEY_PART_INFO::store_length: NOT NULL fixed columns)."""
        total = 0
        for c in cols:
            pack, _, kind = self._pack(table, c, f"table {table} key")
            if kind != "fixed":
                raise Unsupported(f"table {table} key", f"a string key part {c}")
            total += pack
        return total

    def _bka_layout(self, join, j: int) -> dict:
        """Table ``j``'s join buffer as MariaDB 10.11.18 lays it out: its exact size
        (JOIN_CACHE::get_max_join_buffer_size, sql/sql_join_cache.cc:842, from the record
        layout of :657 ``set_constants`` and the optimizer's partial join cardinality,
        sql/sql_select.cc:15152), checked against EXPLAIN's ``buffer_size`` (whole KiB),
        the record's fixed parts, its stored tables and the MRR parameters."""
        t, table = join.acc[j], join.names[j]
        node = f"table {t.alias} {t.access} BKA ({t.buffer_type} buffer)"
        if t.buffer_type == "flat":
            stored = list(range(0, j))
            prev_ofs = 0
        else:
            if join.acc[j - 1].join_buffer is None:
                raise Unsupported(node, "an incremental buffer after a table without one")
            stored = [j - 1]
            limit_prev = int(self.conn.query("SELECT @@join_buffer_size")[0][0])
            prev_ofs = self._offset_size(limit_prev)      # set_constants: before alloc
        limit = int(self.conn.query("SELECT @@join_buffer_size")[0][0])
        fields, length, used_len, max_used = 0, 0, 0, 0
        for i in stored:
            tb, al = join.names[i], join.aliases[i]
            cols = self._used_columns(tb, al)
            rec = 0
            for c in cols:
                pack, cache_len, _ = self._pack(tb, c, node)
                fields += 1
                length += cache_len
                rec += pack
            max_used += rec
            mean = self._mean_rec_length(tb)
            used_len += min(rec, mean) if mean else rec
        match_flag = 1 if t.first_match is not None else 0
        length += match_flag
        size_of_rec_len = self._offset_size(length + fields * 4 + prev_ofs + 8)
        fld_ofs = size_of_rec_len
        prefix = size_of_rec_len + prev_ofs
        ix = self._index(table, t.key, node)
        parts = len(t.ref)
        order = self._order(table, ix)
        key_len = self._key_store_length(table, order[:parts])
        ref_len = self._ref_length(table)
        rpc = self._rec_per_key(table, t.key, parts)
        mrr_per_rec = ref_len + 8          # ha_innodb.cc:14916 stats.mrr_length_per_rec
        aux1 = key_len + ref_len + mrr_per_rec * rpc
        affix = prefix + match_flag + fld_ofs * fields
        space_per_record = used_len + affix + aux1
        pjc = 1.0
        for i in range(0, j):
            r = join.acc[i].rows_estimate
            if r is None:
                raise Unsupported(node, "no row estimate in EXPLAIN for the buffer's size")
            pjc *= float(r)
        # get_min_join_buffer_size (second call in set_constants: pack_length still with
        # 4-byte offsets and a uint per field)
        pack_old = 4 + prev_ofs + length + fields * 4
        min_sz = max(1, used_len + affix + pack_old + aux1)
        max_records = float(limit // max(space_per_record, 1))
        max_records = max(min(max_records, pjc), 10.0)
        pack_alloc = prefix + length                  # no referenced fields yet at alloc
        if int(limit / max_records) > space_per_record:
            size = space_per_record * int(max_records)
        else:
            size = limit
        size = max(min(size + pack_alloc, limit), min_sz)
        shown = t.buffer_bytes
        if shown is None or (size // 1024 * 1024 if size >= 1024 else size) != shown:
            raise Unsupported(node, f"the join buffer's size computed as {size} bytes where "
                                    f"EXPLAIN shows {shown}")
        # fields of this buffer a later buffer's key reads through it (external key args,
        # sql/sql_join_cache.cc:460 create_key_arg_fields): an offset each in the record
        mine = {join.aliases[i] for i in stored}
        referenced = set()
        for k in range(j + 1, len(join.acc)):
            tk = join.acc[k]
            if tk.join_buffer is None:
                break
            if tk.buffer_type != "incremental":
                break
            local = {join.aliases[k - 1]}
            for a, c in join.refs[k]:
                if a != "const" and a not in local and a in mine:
                    referenced.add((a, c.lower()))
        emb = self._key_embedded(join, j, mine)
        return dict(size=size, prefix=prefix + match_flag, fld_ofs=fld_ofs,
                    referenced=len(referenced),
                    pack=prefix + length + fld_ofs * len(referenced), stored=stored,
                    base_prefix=prefix,
                    key_len=key_len, ref_len=ref_len, aux_rpc=rpc, mrr_per_rec=mrr_per_rec,
                    emb=emb, used_key_len=self._key_store_length(table, ix.columns),
                    pk_len=self._key_store_length(
                        table, self._indexes[table]["PRIMARY"][0].columns),
                    records=0, pos=0, aux=0)

    def _put_record(self, join, j: int) -> bool:
        """Write the current partial row into table ``j``'s buffer (JOIN_CACHE::
        write_record_data, sql/sql_join_cache.cc:1295); True if the buffer is full after it
        (:1349 ``last_record``)."""
        L = join.layouts[j]
        L["records"] += 1
        ln = L["pack"]
        incr = (L["key_len"] + L["ref_len"] if L["records"] == 1 else 0) \
            + L["mrr_per_rec"] * L["aux_rpc"]            # :3978 aux_buffer_incr
        rem = L["size"] - L["pos"] - L["aux"]
        L["aux"] += incr if ln + incr < rem else rem
        last = ln + L["pack"] > L["size"] - L["pos"] - L["aux"]
        actual = L["prefix"] + L["fld_ofs"] * L["referenced"] + sum(
            int(join.ctx[join.aliases[i]]["__bytes"]) for i in L["stored"])
        L["pos"] += actual
        return last

    def _join_records(self, join, j: int) -> None:
        """JOIN_CACHE::join_records (sql/sql_join_cache.cc:2162) of table ``j``'s buffer in
        the exact-fill mode: its matches, then the buffer linked after it (``next_cache``,
        :2225), then the buffer emptied."""
        L = join.layouts[j]
        records = join.buffers.pop(j, [])
        pos = L["pos"]
        L.update(records=0, pos=0, aux=0)
        if records:
            self._bka_passes(join, j, records, pos)
        k = j + 1
        if (k < len(join.acc) and join.acc[k].join_buffer is not None
                and join.acc[k].buffer_type == "incremental"):
            self._join_records(join, k)

    def _bka_passes(self, join, j: int, records: list, pos: int) -> None:
        """One buffer read of table ``j`` through DS-MRR's buffer, pass by pass: the
        buffer's space after its records (sql/sql_join_cache.h:1305), less the
        interruption buffer (sql/multi_range_read.cc:631), split between keys and row ids
        (:1453 ``setup_buffer_sharing``: rec_per_key row ids of ref_length + 8 bytes per key
        of key pointer + 8) or, without a row-id step, all keys (:1167); the keys in
        buffer order fill the key buffer (:725, its ``can_write``: sql/sql_lifo_buffer.h),
        are sorted and read each once, distinct, per key pass; their row ids fill the row-id
        buffer (:885), are sorted and fetched, distinct, per row-id pass; the matches go on
        to the later tables pass by pass."""
        t, table, ev, plan = join.acc[j], join.names[j], join.ev, join.plan
        L = join.layouts[j]
        node = f"table {t.alias} {t.access} BKA ({t.mrr})"
        if not t.mrr or not t.mrr.startswith("Key-ordered"):
            raise Unsupported(node, "Batched Key Access without key ordering (mrr_sort_keys)")
        if any(v is None or isinstance(v, (str, bytes)) for k, _ in records for v in k):
            raise Unsupported(node, "NULL or string keys in an exact-fill read")
        ix = self._index(table, t.key, node)
        gix = self.geo.table(table).index(t.key)
        secondary = ix.name != "PRIMARY" and not t.covering
        last = j == len(join.acc) - 1
        rows_pk, rows_x = (self._all_rows(table, t.alias, ix, join.extra[j])
                           if (secondary or not last or t.first_match) else (None, None))
        keep = self._rowid_filter(plan, ev, table, t) if t.rowid_filter else None
        free = L["size"] - pos
        kes = (8 if L["emb"] else L["key_len"]) + 8
        if secondary:
            free -= L["ref_len"] + L["used_key_len"] + L["pk_len"]
            res = L["ref_len"] + 8
            rpc = self._rec_per_key(table, t.key, len(t.ref))
            rs = res * rpc
            for_rowids = int(0.5 + rs / (rs + kes) * free)
            for_keys = free - for_rowids
            if for_keys < kes + 1 or for_rowids < res + 1:
                raise Unsupported(node, "an MRR buffer too small (the default MRR is not "
                                        "modelled)")
            kcap = for_keys // kes                      # Backward_lifo_buffer: pos - n >= start
            rcap = (for_rowids - 1) // res              # Forward_lifo_buffer: pos + n < end
        else:
            kcap = (free - 1) // kes
            rcap = None
        if kcap < 1:
            raise Unsupported(node, "an MRR key buffer of no key")
        per_call = FETCH_ROWS_PER_CALL_ICP if t.icp else FETCH_ROWS_PER_CALL
        ranks = self._pk_ranks(table) if secondary else None
        cl = self.geo.table(table).clustered
        cond = t.first_match is not None and len(join.extra[j]) > len(join.cols[t.alias])
        matched: set = set()

        def send(e, r):
            if t.first_match is not None:
                if r in matched:
                    return
                if not cond or bool(rows_x[e][-1]):
                    matched.add(r)
                return
            if last:
                return
            join.ctx = dict(records[r][1])
            if join.hand_on(j, rows_x[e]):
                join.probe(j + 1)

        def rowid_pass(pairs):
            pairs.sort(key=lambda er: ranks[tuple(rows_pk[er[0]])])
            done = None
            for e, r in pairs:
                if t.first_match is not None and r in matched:
                    continue
                rk = ranks[tuple(rows_pk[e])]
                if rk != done:
                    ev.lookup(table, unique_lookup(cl, rk))
                    done = rk
                send(e, r)

        for start in range(0, len(records), kcap):
            by_key: dict = {}
            for r in range(start, min(start + kcap, len(records))):
                by_key.setdefault(records[r][0], []).append(r)
            pairs: list = []
            for key in sorted(by_key):
                hit = self._key_ranks(table, ix, len(key)).get(key)
                if not self._read_key(ev, t, table, gix, ix, key, hit, per_call):
                    continue
                first, n = hit
                for e in range(first, first + n):
                    for r in by_key[key]:
                        if not secondary:
                            send(e, r)
                            continue
                        if t.first_match is not None and r in matched:
                            continue                     # skip_record at the index tuple
                        if keep is not None and tuple(rows_pk[e]) not in keep:
                            continue
                        pairs.append((e, r))
                        if len(pairs) == rcap:            # the row-id buffer is full
                            rowid_pass(pairs)
                            pairs = []
            if secondary and pairs:
                rowid_pass(pairs)
