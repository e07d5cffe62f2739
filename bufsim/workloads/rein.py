"""The 300M-row ``rein`` table of seed 004: PK SELECT and UPDATE, hot vs uniform.

Schema, as 004_6e932da445ffddef.txt gives it (latin1)::

    CREATE TABLE rein (id int(11) NOT NULL AUTO_INCREMENT, id2 int(11) NOT NULL,
      id3 int(11) DEFAULT NULL, PRIMARY KEY (id), KEY id2 (id2)) ENGINE=InnoDB

with 300,000,000 rows, ``id2`` uniform over 1..1,000,000 ("each value taken 300
times").  Geometry (COMPACT): a clustered record is 5 (header) + 1 (null bitmap:
``id3`` is nullable) + 4 + 6 (trx id) + 7 (roll ptr) + 4 + 4 = 31 bytes; node
records 13 bytes; ``id2`` records (id2, id) 13 bytes, filled in random key
order (``FILL_RANDOM`` = ln 2: 845 per leaf, 355,030 leaves).

Clustered fill (fitted, :data:`REIN_FILL`): the document reports ``rein.ibd`` at
22G.  At the key-order fill of 15/16 the two indexes would take 973,261 pages
(14.9 GiB); 22 GiB (1,441,792 pages) needs the clustered leaves about 53 % full:
at 0.53, 274 rows per leaf, 1,094,891 leaves + 959 node pages, and with ``id2``
1,451,285 pages = 22.1 GiB.  The table was loaded by 8 concurrent
mysqlslap connections with autocommit, so auto-increment ids arrive slightly out
of order and InnoDB's split heuristic (split at the insert point only when the
insert follows the page's last insert, in the middle otherwise) leaves many
half-full pages.  This is a fit to the reported file size, not a prediction;
pass ``fill=15/16`` for a perfectly ordered load.

Workloads (both a single autocommit statement per transaction; the document ran
100,000,000 SELECTs and 100,000 UPDATEs, 1..N concurrent connections):

* ``select``: ``SELECT id3 FROM rein WHERE id=@id``: a root-to-leaf descent of the
  clustered index (3 gets), or with ``ahi=True`` one leaf get with FLAG_AHI;
  1 row.
* ``update``: ``UPDATE rein SET id3=round(rand()*10000) WHERE id=@id``: the row is
  read by a descent (X-locking read, the AHI can answer it) and
  ``row_upd_clust_step`` then restores the cursor with an optimistic get of the
  same leaf, which it modifies (FLAG_MODIFY): height + 1 gets (2 with the AHI);
  1 row.  ``id3`` is in no index, so no secondary index is touched.  Its undo log
  (system tablespace, space 0) is added by ``page_frequency(..., undo=True)``
  (:func:`undo_gets`); redo pages are not modelled (the log is not in the buffer pool).

Distributions: ``hot``: ids uniform over the first :data:`HOT_ROWS` = 1,000,000
("der ersten Millionen Einträge"); ``uniform``: ids uniform over all rows.

:func:`page_frequency` gives the expected gets of every dense page per
transaction without expanding any trace (leaf weights from the id
distribution, summed up the tree level by level), for the contention models.
"""
from __future__ import annotations

import numpy as np

from .._validation import check_int
from ..pages import SpaceSpec, Tablespaces
from .geometry import Column, Index, Table
from .plans import CpuCost, Database, Operator
from .txn import (
    PageFrequency, add_descent_freq, descent_width, leaf_descents, freq_zero,
    leaf_weights_uniform, txn_operator,
)

__all__ = ["REIN_ROWS", "HOT_ROWS", "ID2_VALUES", "REIN_FILL", "rein_table", "rein_database",
           "rein_stream", "rein_expected", "page_frequency", "N_RSEGS", "UNDO_PAGE_GETS",
           "RSEG_HEADER_GETS", "undo_gets", "with_system_space"]

REIN_ROWS = 300_000_000
HOT_ROWS = 1_000_000
ID2_VALUES = 1_000_000
#: clustered-leaf fill fitted to the document's 22G rein.ibd (module docstring)
REIN_FILL = 0.53

# ---- the UPDATE's undo log (MySQL 5.5, system tablespace = space 0) ----------------------
#: rollback segments: TRX_SYS_N_RSEGS (5.5 ``include/trx0sys.h``); 5.5 creates all 128 at
#: startup (``trx_sys_create_rsegs(TRX_SYS_N_RSEGS - 1)``, ``srv/srv0start.c``) and a
#: transaction takes the next one round-robin (``trx_assign_rseg``, ``trx/trx0trx.c``)
N_RSEGS = 128
#: gets of the transaction's update undo page per UPDATE (5.5 ``trx/trx0undo.c``,
#: ``trx/trx0rec.c``): ``trx_undo_assign_undo`` -> ``trx_undo_reuse_cached`` (the cached undo
#: log's header page, a new log header written on it, under ``rseg->mutex``),
#: ``trx_undo_report_row_operation`` (``buf_page_get_gen`` of the undo page, the undo record
#: written) and at commit ``trx_undo_set_state_at_finish``: 3, each modifying the page
UNDO_PAGE_GETS = 3
#: gets of the rollback segment's header page per UPDATE: at commit
#: ``trx_undo_update_cleanup`` -> ``trx_purge_add_update_undo_to_history`` (``trx_rsegf_get``,
#: the log added to the history list, under ``rseg->mutex``)
RSEG_HEADER_GETS = 1
#: the TRX_SYS page's get: ``trx_sys_flush_max_trx_id`` once per TRX_SYS_TRX_ID_WRITE_MARGIN
#: = 256 transaction ids (``include/trx0sys.ic``, ``trx_sys_get_new_trx_id``)
TRX_SYS_GETS = 1 / 256
#: page numbers in space 0 (a fresh 5.5 system tablespace): FSP_TRX_SYS_PAGE_NO 5,
#: FSP_FIRST_RSEG_PAGE_NO 6 (rseg 0, ``include/fsp0types.h``); the doublewrite buffer's two
#: 64-page blocks fill pages 64-191 (TRX_SYS_DOUBLEWRITE_BLOCK_SIZE = FSP_EXTENT_SIZE, created
#: before the 127 other rsegs, ``srv0start.c``), and ``fseg_create`` takes each new segment's
#: first page in page order (``fsp_alloc_free_page``), so rsegs 1-127 are assumed on pages
#: 192-318 and each rseg's update undo segment, created at its first UPDATE, on 319-446.
#: An assumption (the first extent's last free pages may hold a few of them; purge frees
#: and reuses undo pages elsewhere); what it decides is only that the undo pages span a
#: few 64-page areas, so several instances share them.
TRX_SYS_PAGE, FIRST_RSEG_PAGE, SYSTEM_FREE_PAGE = 5, 6, 192


def undo_gets(n_rsegs: int = N_RSEGS) -> tuple[np.ndarray, np.ndarray, int]:
    """The system tablespace's expected gets per UPDATE: ``(page_no, gets, n_pages)``.

    Each rollback segment serves 1/``n_rsegs`` of the UPDATEs (round-robin): its
    update undo page :data:`UNDO_PAGE_GETS` times, its header page
    :data:`RSEG_HEADER_GETS` times; the TRX_SYS page :data:`TRX_SYS_GETS`.  Page
    numbers as :data:`SYSTEM_FREE_PAGE` says.  Every get is a ``buf_page_get_gen``
    (under 5.5's ``buf_pool->mutex``) that modifies its page.
    """
    n = check_int("n_rsegs", n_rsegs, 1, N_RSEGS)
    k = np.arange(n)
    header = np.where(k == 0, FIRST_RSEG_PAGE, SYSTEM_FREE_PAGE + k - 1)
    undo = SYSTEM_FREE_PAGE + (n - 1) + k
    pages = np.concatenate([[TRX_SYS_PAGE], header, undo]).astype(np.int64)
    gets = np.concatenate([[TRX_SYS_GETS], np.full(n, RSEG_HEADER_GETS / n),
                           np.full(n, UNDO_PAGE_GETS / n)])
    return pages, gets, int(undo.max()) + 1


def with_system_space(db: Database, n_pages: int) -> Tablespaces:
    """``db``'s tablespaces with the system tablespace (space 0, ``n_pages``) first."""
    specs = [SpaceSpec(0, int(n_pages), "system")]
    specs += [lay.space_spec() for lay in db.layouts.values()]
    return Tablespaces(specs)


KINDS = ("select", "update")
DISTS = ("hot", "uniform")


def rein_table(rows: int = REIN_ROWS, *, fill: float = REIN_FILL, name: str = "rein") -> Table:
    """The ``rein`` table of seed 004 with ``rows`` rows (module docstring)."""
    return Table(name, [Column("id", "int", False), Column("id2", "int", False),
                        Column("id3", "int", True)], int(rows), primary_key=("id",),
                 indexes=[Index("id2", ("id2",))], fill=fill)


def rein_database(rows: int = REIN_ROWS, *, fill: float = REIN_FILL, seed: int = 0) -> Database:
    """A Database holding only ``rein`` (at 300M rows: about 1.45M pages, a few
    seconds to lay out)."""
    return Database([rein_table(rows, fill=fill)], seed=seed)


def _check(kind, dist, hot_rows, n_rows):
    if kind not in KINDS:
        raise ValueError(f"kind={kind!r} is unknown; allowed: {', '.join(KINDS)}")
    if dist not in DISTS:
        raise ValueError(f"dist={dist!r} is unknown; allowed: {', '.join(DISTS)}")
    check_int("hot_rows", hot_rows, 1, n_rows)
    return n_rows if dist == "uniform" else int(hot_rows)


def rein_stream(db: Database, n_txn: int, *, kind: str = "select", dist: str = "hot",
                hot_rows: int = HOT_ROWS, seed: int = 0, ahi: bool = False,
                cpu: CpuCost = CpuCost(), txn_ns: int = 0, table: str = "rein",
                batch: int = 1 << 16) -> Operator:
    """``n_txn`` single-statement transactions (``kind`` select or update) with ids
    drawn (seeded) from ``dist``.  ``txn_ns`` is charged once per transaction
    (statement overhead, think time).  ``rows`` and ``gets`` of the Operator are
    ``n_txn`` and ``n_txn x`` :func:`rein_expected` ``["gets"]``."""
    ix = db.index(table)
    span = _check(kind, dist, hot_rows, ix.geometry.rows)
    modify = kind == "update"
    width = descent_width(ix, ahi, modify)

    def draw(rng, b, lo):
        return rng.integers(0, span, size=b, dtype=np.int64)    # entry = id - 1

    def build(ev, entries):
        leaf_descents(ev, db, table, ix, entries, np.arange(entries.size), 0, ahi=ahi, modify=modify)

    def count(entries):
        return entries.size, entries.size * width

    return txn_operator(f"rein {kind} {dist}", db, int(n_txn), batch, seed, draw, build, count,
                         cpu, 0, txn_ns)


def rein_expected(db: Database, *, kind: str = "select", ahi: bool = False,
                  table: str = "rein") -> dict:
    """Rows and page gets of one transaction (both constant)."""
    ix = db.index(table)
    _check(kind, "uniform", 1, ix.geometry.rows)
    return {"rows": 1, "gets": descent_width(ix, ahi, kind == "update")}


def page_frequency(db: Database, *, kind: str = "select", dist: str = "hot",
                   hot_rows: int = HOT_ROWS, ahi: bool = False,
                   table: str = "rein", undo: bool = False) -> PageFrequency:
    """Expected gets per dense page for one transaction (no trace is expanded).

    A leaf's weight is the share of the drawn ids it holds; each level above
    sums its children's weights (a descent passes through the ancestors of its
    leaf), the root gets 1 per transaction.  With ``ahi`` only leaves are
    touched, as FLAG_AHI lookups; an update adds one (non-AHI) restore get of
    the leaf.  ``freq.gets.sum()`` equals :func:`rein_expected` ``["gets"]``.

    With ``undo`` (updates only) the frequencies are over :func:`with_system_space`
    (space 0 first) and an UPDATE adds its undo-log gets (:func:`undo_gets`).
    """
    ix = db.index(table)
    span = _check(kind, dist, hot_rows, ix.geometry.rows)
    freq = freq_zero(db, f"rein {kind} {dist}")
    add_descent_freq(freq, db, table, ix, leaf_weights_uniform(ix, 0, span), ahi=ahi,
                      modify=kind == "update")
    if not undo:
        return freq
    if kind != "update":
        raise ValueError(f"undo=True is for kind='update', not {kind!r}")
    pages, gets, n_sys = undo_gets()
    sys_gets = np.zeros(n_sys)
    np.add.at(sys_gets, pages, gets)
    return PageFrequency(np.concatenate([sys_gets, freq.gets]),
                         np.concatenate([np.zeros(n_sys), freq.ahi_lookups]),
                         with_system_space(db, n_sys), freq.name + " with undo",
                         np.concatenate([np.zeros(n_sys), freq.optimistic]))
