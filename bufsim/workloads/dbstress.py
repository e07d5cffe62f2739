"""dbSTRESS (seed 003): OBJECT, SECTION, ZONE, HISTORY, STAT; SEL1, SEL2 #1-#9, UPDATE.

What 003_b6a2090efc999b5b.txt fixes, and what is assumed
---------------------------------------------------------
From the document's EXPLAIN output and text:

* SEL1 joins OBJECT, SECTION, ZONE, all ``const`` through unique keys
  ``object_ref_idx`` (key_len 10: ``REF char(10)`` latin1 NOT NULL),
  ``section_ref_idx`` and ``zone_ref_idx`` (key_len 2: ``smallint NOT NULL``).
* SEL2 reads HISTORY by ``history_ref_idx`` (``ref``, key_len 10: ``REF_OBJECT
  char(10)``, non-unique, 20 rows per object) and probes STAT by ``stat_ref_idx``
  (``eq_ref``, key_len 3: ``mediumint NOT NULL``).  ``count(*)`` by REF_OBJECT
  alone (#7) is index-only and fetching rows is not, so ``history_ref_idx`` is a
  secondary index and HISTORY rows are fetched from the clustered index.
* "ref_stat = 1" leaves exactly one of an object's 20 rows, so an object's rows
  carry 20 different REF_STAT values, one of them 1.

Assumed (the dbSTRESS kit is not in the document; every size is a parameter):

* OBJECT, SECTION, ZONE, STAT have no declared PRIMARY KEY: their unique NOT NULL
  ``*_ref_idx`` is promoted to the clustered index (that is how EXPLAIN can show
  ``const`` on ``object_ref_idx``).  Here it is the table's ``PRIMARY`` (same tree,
  other name).  HISTORY has no unique key: it is clustered on the hidden row id
  (``GEN_CLUST_INDEX``), loaded object by object, so an object's 20 rows are
  consecutive in both indexes.
* Columns (latin1 char, dates as ``char(12)``, a 100-byte note)::

      OBJECT  (REF char(10), NAME char(40), REF_SECTION smallint, BEGIN_DATE char(12),
               END_DATE char(12) NULL, NOTE char(100) NULL)     record 195 B, 78/leaf
      SECTION (REF smallint, NAME char(40), REF_ZONE smallint, NOTE char(100) NULL)
      ZONE    (REF smallint, NAME char(40), NOTE char(100) NULL)
      STAT    (REF mediumint, NAME char(40), NOTE char(100) NULL)
      HISTORY (REF_OBJECT char(10), HORDER int, REF_STAT mediumint, BEGIN_DATE char(12),
               END_DATE char(12) NULL, NOTE char(100) NULL)     record 166 B, 91/leaf

  (record = 5-byte header + 1-byte null bitmap + columns + 6 trx id + 7 roll
  pointer, + 6 row id for HISTORY; ``history_ref_idx`` records 21 B, 714/leaf).
  SECTION, ZONE and STAT records are 161-163 B: 93-94 per leaf.

* Sizes: :data:`N_OBJECTS` = 10,000,000 objects and 20 HISTORY rows each
  (200M rows: 2,197,803 clustered leaves, 33.6 GiB, plus 4.3 GiB of
  ``history_ref_idx``; OBJECT 128,206 leaves, 2.0 GiB): larger than the 16,000M
  pool, the document's "I/O-bound" case; an "in-memory" run draws objects from a
  smaller active range (``n_active``, e.g. 1M objects = 3.8 GiB of HISTORY, which fits
  16,000M but not the 1,600M pool the document also tried).  SECTION 100 rows,
  ZONE 10 rows, STAT 20 rows (one per REF_STAT value): small reference tables
  of one to three pages, all in the first extent of their tablespace, which is
  what makes single pages (and so single buffer-pool instances) hot.
* Object ``o`` (0-based) belongs to section ``o mod 100``, section ``s`` to zone
  ``s mod 10``; row ``h`` (0..19) of an object has ``HORDER = h + 1`` and
  ``REF_STAT = h + 1``.  Objects are drawn uniformly over ``0..n_active-1``.
* A READ transaction is SEL1 then SEL2 on the same ``$REF``; the WRITE
  transaction is ``UPDATE HISTORY SET NOTE=? WHERE REF_OBJECT='$REF'`` (the
  document: "UPDATE only statements by ref_object"): its 20 rows.

Plans (gets as in :mod:`bufsim.workloads.plans`)
------------------------------------------------
* SEL1: three unique lookups (OBJECT, SECTION, ZONE), each a root-to-leaf descent
  or with ``ahi=True`` one leaf get with FLAG_AHI; 3 rows.
* SEL2: a ``history_ref_idx`` range of 20 entries (descent, one get per entry and
  per leaf arrival, one entry past the end), each entry followed by:

  ===  =====================================================  ==========================  ====
  #    query                                                  per entry                   rows
  ===  =====================================================  ==========================  ====
  1-3  ``SELECT * / cols / count(*) FROM HISTORY, STAT ...``  row lookup + STAT probe     40
  4-5  ... ``AND ref_stat = 1``                               row lookup (STAT is const:  21
                                                              probed once, first)
  6    ``SELECT * FROM HISTORY WHERE ref_object=$REF``        row lookup                  20
  7    ``SELECT count(*) ...``                                nothing: index-only         20
  8-9  #6/#7 ``AND ref_stat = 1``                             row lookup (filter)         20
  ===  =====================================================  ==========================  ====

  Row lookups and STAT probes are descents, or single FLAG_AHI gets with ``ahi``.
* UPDATE: the same range with a row lookup per entry (X-locking read) and the
  ``row_upd_clust_step`` cursor restore of the row's leaf with FLAG_MODIFY; 20
  rows.  NOTE is in no index; undo and redo pages are not modelled.

:func:`page_frequency` computes the exact expected gets per page of a
transaction kind under the uniform object draw, without a trace.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from .._validation import check_int
from .geometry import Column, Index, Table
from .plans import CpuCost, Database, Operator
from .txn import (
    PageFrequency, add_descent_freq, descent_width, leaf_descents, freq_zero, stmt_key,
    leaf_weights_uniform, txn_operator,
)

__all__ = ["N_OBJECTS", "N_SECTIONS", "N_ZONES", "N_STATS", "HISTORY_PER_OBJECT",
           "dbstress_tables", "dbstress_database", "dbstress_stream", "expected",
           "page_frequency", "KINDS"]

N_OBJECTS = 10_000_000
N_SECTIONS = 100
N_ZONES = 10
N_STATS = 20
HISTORY_PER_OBJECT = 20
KINDS = ("sel1", "sel2", "read", "update")
C = Column


def dbstress_tables(n_objects: int = N_OBJECTS, *, n_sections: int = N_SECTIONS,
                    n_zones: int = N_ZONES, n_stats: int = N_STATS) -> list[Table]:
    """The five dbSTRESS tables (module docstring for every assumed size)."""
    if n_stats < HISTORY_PER_OBJECT:
        raise ValueError(f"n_stats={n_stats} is out of range; allowed: >= {HISTORY_PER_OBJECT} "
                         "(one STAT row per REF_STAT value)")
    obj = Table("OBJECT", [C("REF", "char(10)", False), C("NAME", "char(40)", False),
                           C("REF_SECTION", "smallint", False), C("BEGIN_DATE", "char(12)", False),
                           C("END_DATE", "char(12)"), C("NOTE", "char(100)")],
                int(n_objects), primary_key=("REF",))
    section = Table("SECTION", [C("REF", "smallint", False), C("NAME", "char(40)", False),
                                C("REF_ZONE", "smallint", False), C("NOTE", "char(100)")],
                    int(n_sections), primary_key=("REF",))
    zone = Table("ZONE", [C("REF", "smallint", False), C("NAME", "char(40)", False),
                          C("NOTE", "char(100)")], int(n_zones), primary_key=("REF",))
    history = Table("HISTORY", [C("REF_OBJECT", "char(10)", False), C("HORDER", "int", False),
                                C("REF_STAT", "mediumint", False),
                                C("BEGIN_DATE", "char(12)", False), C("END_DATE", "char(12)"),
                                C("NOTE", "char(100)")],
                    int(n_objects) * HISTORY_PER_OBJECT,
                    indexes=[Index("history_ref_idx", ("REF_OBJECT",), ordered=True)])
    stat = Table("STAT", [C("REF", "mediumint", False), C("NAME", "char(40)", False),
                          C("NOTE", "char(100)")], int(n_stats), primary_key=("REF",))
    return [obj, section, zone, history, stat]


def dbstress_database(n_objects: int = N_OBJECTS, *, seed: int = 0, **sizes) -> Database:
    """All five tables in one Database (at 10M objects about 2.9M pages: some
    seconds to lay out)."""
    return Database(dbstress_tables(n_objects, **sizes), seed=seed)


def _sizes(db: Database):
    return (db.index("OBJECT").geometry.rows, db.index("SECTION").geometry.rows,
            db.index("ZONE").geometry.rows)


def _check_kind(kind, variant):
    if kind not in KINDS:
        raise ValueError(f"kind={kind!r} is unknown; allowed: {', '.join(KINDS)}")
    if variant not in range(1, 10):
        raise ValueError(f"variant={variant!r} is out of range; allowed: 1..9")


# --------------------------------------------------------------------------------------
# statements
# --------------------------------------------------------------------------------------
def _sel1(ev, db, obj, txn, stmt, ahi):
    n_obj, n_sec, n_zone = _sizes(db)
    sec = obj % n_sec
    for j, (t, e) in enumerate((("OBJECT", obj), ("SECTION", sec), ("ZONE", sec % n_zone))):
        leaf_descents(ev, db, t, db.index(t), e, txn, stmt, j, ahi=ahi)


def _history_range(ev, db, obj, txn, stmt, *, lookup, covering, stat_probe, modify, ahi, j0=0):
    """history_ref_idx range of one object per statement, each entry followed by its
    row lookup (``lookup``) and its STAT probe (``stat_probe``)."""
    sec, cl = db.index("HISTORY", "history_ref_idx"), db.index("HISTORY")
    n = HISTORY_PER_OBJECT
    g = sec.geometry
    pl, total = g.per_leaf, g.rows
    first = obj * n
    extra = (first + n < total).astype(np.int64)
    t2 = np.asarray(txn, np.int64)[:, None]
    if sec.height > 1:
        up = db.dense("HISTORY", sec.paths(first // pl)[:, :-1])
        for lvl in range(sec.height - 1):
            ev.add(np.ones(first.shape, bool), txn, stmt_key(stmt, j0, lvl), up[:, lvl])
    q = np.arange(n + 1)[None, :]
    e = first[:, None] + q
    valid = q < n + extra[:, None]
    real = np.broadcast_to(q < n, valid.shape)
    e_ok = np.minimum(e, total - 1)
    pages = db.dense("HISTORY", sec.leaves[e_ok // pl])
    new = (q == 0) | (e % pl == 0)
    j = j0 + 1 + q
    ev.add(valid & new, t2, stmt_key(stmt, j, 0), pages)
    ev.add(valid, t2, stmt_key(stmt, j, 1), pages, 1, (real & covering).astype(np.int64))
    p = 2
    if lookup:
        leaf_descents(ev, db, "HISTORY", cl, e_ok, t2, stmt, j, p, ahi=ahi, modify=modify, mask=real)
        p += descent_width(cl, ahi, modify)
    if stat_probe:
        stat_entry = np.broadcast_to(np.minimum(q, n - 1), e.shape)   # REF_STAT = horder
        leaf_descents(ev, db, "STAT", db.index("STAT"), stat_entry, t2, stmt, j, p, ahi=ahi,
                  mask=real)


def _sel2(ev, db, obj, txn, stmt, variant, ahi):
    if variant in (4, 5):      # STAT is const (ref = ref_stat = 1): read once, at optimisation
        leaf_descents(ev, db, "STAT", db.index("STAT"), np.zeros_like(obj), txn, stmt, 0, ahi=ahi)
    _history_range(ev, db, obj, txn, stmt, lookup=variant != 7, covering=variant == 7,
                   stat_probe=variant in (1, 2, 3), modify=False, ahi=ahi, j0=1)


def _update(ev, db, obj, txn, stmt, ahi):
    _history_range(ev, db, obj, txn, stmt, lookup=True, covering=False, stat_probe=False,
                   modify=True, ahi=ahi)


def _counts(db, kind, variant, ahi, obj):
    """(rows, gets) of statements of ``kind`` on objects ``obj``, by plan arithmetic."""
    def w(t):
        return 1 if ahi else db.index(t).height
    rows = gets = 0
    if kind in ("sel1", "read"):
        rows += 3 * obj.size
        gets += obj.size * (w("OBJECT") + w("SECTION") + w("ZONE"))
    if kind in ("sel2", "read", "update"):
        sec, cl = db.index("HISTORY", "history_ref_idx"), db.index("HISTORY")
        n = HISTORY_PER_OBJECT
        first = obj * n
        extra = (first + n < sec.geometry.rows).astype(np.int64)
        pl = sec.geometry.per_leaf
        leaves = (first + n + extra - 1) // pl - first // pl + 1
        gets += int(((sec.height - 1) + n + extra + leaves).sum())
        if kind == "update":
            per_entry, r = descent_width(cl, ahi, True), n
        else:
            per_entry = 0 if variant == 7 else w("HISTORY")
            if variant in (1, 2, 3):
                per_entry += w("STAT")
            r = 2 * n if variant in (1, 2, 3) else n + (variant in (4, 5))
            gets += obj.size * (w("STAT") if variant in (4, 5) else 0)
        gets += obj.size * n * per_entry
        rows += obj.size * r
    return rows, gets


# --------------------------------------------------------------------------------------
# streams
# --------------------------------------------------------------------------------------
def dbstress_stream(db: Database, n_txn: int, *, pattern: Sequence[str] = ("read",),
                    variant: int = 1, ahi: bool = True, n_active: int | None = None,
                    refs=None, seed: int = 0, cpu: CpuCost = CpuCost(), query_ns: int = 0,
                    txn_ns: int = 0, batch: int = 4096) -> Operator:
    """``n_txn`` dbSTRESS transactions; transaction ``i`` is of kind
    ``pattern[i % len(pattern)]`` (``"sel1"``, ``"sel2"``, ``"read"`` = SEL1 + SEL2,
    ``"update"``), e.g. ``("read", "read", "update")`` for a read/write ratio of 2.

    ``variant`` picks the SEL2 query (1..9, module docstring); objects are drawn
    uniformly from ``0..n_active-1`` (default: all), seeded, or taken from
    ``refs`` (0-based object numbers, one per transaction) when given.  The
    Operator's ``rows`` and ``gets`` are exact for the drawn stream.
    """
    pattern = tuple(pattern)
    if not pattern:
        raise ValueError("pattern must name at least one transaction kind")
    for k in pattern:
        _check_kind(k, variant)
    n_obj = _sizes(db)[0]
    n_active = n_obj if n_active is None else n_active
    n_active = check_int("n_active", n_active, 1, n_obj)
    if refs is not None:
        refs = np.asarray(refs, dtype=np.int64)
        if refs.shape != (n_txn,) or (refs.size and (refs.min() < 0 or refs.max() >= n_obj)):
            raise ValueError(f"refs must hold {n_txn} object numbers in 0..{n_obj - 1}")
    kinds = np.array([KINDS.index(k) for k in pattern])

    def draw(rng, b, lo):
        if refs is not None:
            obj = refs[lo:lo + b]
        else:
            obj = rng.integers(0, n_active, b, dtype=np.int64)
        return obj, kinds[(lo + np.arange(b)) % len(kinds)]

    def build(ev, params):
        obj, kind = params
        txn = np.arange(obj.size)
        for code, name in enumerate(KINDS):
            m = kind == code
            if not m.any():
                continue
            o, t = obj[m], txn[m]
            if name == "sel1":
                _sel1(ev, db, o, t, 0, ahi)
            elif name == "sel2":
                _sel2(ev, db, o, t, 0, variant, ahi)
            elif name == "read":
                _sel1(ev, db, o, t, 0, ahi)
                _sel2(ev, db, o, t, 1, variant, ahi)
            else:
                _update(ev, db, o, t, 0, ahi)

    def count(params):
        obj, kind = params
        rows = gets = 0
        for code, name in enumerate(KINDS):
            m = kind == code
            if m.any():
                r, g = _counts(db, name, variant, ahi, obj[m])
                rows, gets = rows + r, gets + g
        return rows, gets

    return txn_operator(f"dbstress {'+'.join(pattern)} #{variant}", db, int(n_txn), batch, seed,
                         draw, build, count, cpu, query_ns, txn_ns)


def expected(db: Database, kind: str = "read", *, variant: int = 1, ahi: bool = True,
             n_active: int | None = None) -> dict:
    """Mean rows and gets of one transaction of ``kind`` (objects uniform over
    ``0..n_active-1``), by plan arithmetic over every object."""
    _check_kind(kind, variant)
    n_active = _sizes(db)[0] if n_active is None else int(n_active)
    rows = gets = 0
    for lo in range(0, n_active, 1 << 20):
        obj = np.arange(lo, min(n_active, lo + (1 << 20)), dtype=np.int64)
        r, g = _counts(db, kind, variant, ahi, obj)
        rows, gets = rows + r, gets + g
    return {"rows": rows / n_active, "gets": gets / n_active}


# --------------------------------------------------------------------------------------
# page frequencies
# --------------------------------------------------------------------------------------
def page_frequency(db: Database, kind: str = "read", *, variant: int = 1, ahi: bool = True,
                   n_active: int | None = None) -> PageFrequency:
    """Exact expected gets per dense page for one transaction of ``kind``.

    Objects are uniform over ``0..n_active-1``.  Unique lookups and row lookups
    add their leaf weights up the tree (:func:`~bufsim.workloads.rein.page_frequency`);
    the ``history_ref_idx`` range adds, per object, its descent above the leaves,
    one get per leaf it touches and one per entry (including the entry past the
    end), enumerated over the objects in blocks (no trace is expanded).
    ``freq.gets.sum()`` equals :func:`expected` ``["gets"]``.
    """
    _check_kind(kind, variant)
    n_obj, n_sec, n_zone = _sizes(db)
    A = n_obj if n_active is None else int(n_active)
    if not 1 <= A <= n_obj:
        raise ValueError(f"n_active={n_active!r} is out of range; allowed: 1..{n_obj}")
    freq = freq_zero(db, f"dbstress {kind} #{variant}")
    if kind in ("sel1", "read"):
        ox = db.index("OBJECT")
        add_descent_freq(freq, db, "OBJECT", ox, leaf_weights_uniform(ox, 0, A), ahi=ahi)
        per_sec = np.bincount(np.arange(A) % n_sec, minlength=n_sec) / A
        per_zone = np.bincount(np.arange(n_sec) % n_zone, weights=per_sec, minlength=n_zone)
        for t, w in (("SECTION", per_sec), ("ZONE", per_zone)):
            ix = db.index(t)
            lw = np.bincount(np.arange(w.size) // ix.geometry.per_leaf, weights=w,
                             minlength=ix.geometry.leaf_pages)
            add_descent_freq(freq, db, t, ix, lw, ahi=ahi)
    if kind == "sel1":
        return freq
    n = HISTORY_PER_OBJECT
    sec, cl, st = (db.index("HISTORY", "history_ref_idx"), db.index("HISTORY"),
                   db.index("STAT"))
    pl, total = sec.geometry.per_leaf, sec.geometry.rows
    desc_w = np.zeros(sec.geometry.leaf_pages)
    leaf_gets = np.zeros(sec.geometry.leaf_pages)
    for lo in range(0, A, 1 << 20):
        o = np.arange(lo, min(A, lo + (1 << 20)), dtype=np.int64)
        first = o * n
        end = first + n + (first + n < total)            # exclusive, with the past-end entry
        l0, l1 = first // pl, (end - 1) // pl
        desc_w += np.bincount(l0, minlength=desc_w.size)
        for d in range(int((l1 - l0).max()) + 1):
            lf = l0 + d
            ok = lf <= l1
            k = np.minimum(end, (lf + 1) * pl) - np.maximum(first, lf * pl)
            leaf_gets += np.bincount(lf[ok], weights=1 + k[ok], minlength=desc_w.size)
    add_descent_freq(freq, db, "HISTORY", sec, desc_w / A, leaf=False)
    np.add.at(freq.gets, db.dense("HISTORY", sec.leaves), leaf_gets / A)
    rows_w = leaf_weights_uniform(cl, 0, A * n) * n
    stat_w = leaf_weights_uniform(st, 0, n) * n
    if kind == "update":
        add_descent_freq(freq, db, "HISTORY", cl, rows_w, ahi=ahi, modify=True)
        return freq
    if variant != 7:
        add_descent_freq(freq, db, "HISTORY", cl, rows_w, ahi=ahi)
    if variant in (1, 2, 3):
        add_descent_freq(freq, db, "STAT", st, stat_w, ahi=ahi)
    if variant in (4, 5):
        add_descent_freq(freq, db, "STAT", st, leaf_weights_uniform(st, 0, 1), ahi=ahi)
    return freq
