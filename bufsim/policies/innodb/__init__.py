"""InnoDB's buffer pool: midpoint-insertion LRU, make-young rules, free blocks,
page cleaner and linear read-ahead, as jitted functions over the array state of
:mod:`bufsim.policies._state`, and the policy's replay kernel :func:`run`.

One module per part of InnoDB's buffer pool, each step named after the InnoDB function
it follows:

* ``lists``: the LRU list and its old sublist, make-young and its checks (buf0lru.cc);
* ``free``: free blocks, eviction, single-page flush, the page cleaner's LRU batch;
* ``read``: reading in, linear read-ahead (buf0rea.cc);
* ``get``: one page get (buf_page_get_gen and the adaptive hash index's paths);
* ``general``: the general event loop (every case);
* ``fast``: the fast loop (one stream, one instance, a FIFO device); its get and the
  get's parts in ``fast_get``, its list steps in ``fast_steps``;
* ``kernel``: :func:`run`, the kernel the engine calls (the contract of
  :mod:`bufsim.policies.loop`);
* ``twin``: the pure-Python twin's rules (plain Python, no numba), which
  :class:`bufsim.reference.ReferencePool` replays.

Each function cites the InnoDB function it follows; the semantics are those of
``docs/semantics.md`` (MySQL 5.5/5.6/5.7, MariaDB 10.5).  The
pure-Python twin is :mod:`bufsim.policies.innodb.twin` (``twin``); tests compare the
two event by event.

Simplifications, all documented in the README:

* dirty pages, the flush list and flush-list flushing are in
  :mod:`bufsim.policies.flush` (its docstring lists what of InnoDB's flushing is
  left out); a page under write is not I/O-fixed;
* the pending-read limit of read-ahead (``n_pend_reads > curr_size / 2``), random
  read-ahead, compressed pages (unzip_LRU) and 5.7's remembered LRU scan
  position are not modelled;
* ``NUMBER_PAGES_READ`` counts a read when it is issued, not when it completes.

State layout (see :mod:`bufsim._pool_state`): the lists link *frames* (rows of ``pst``,
one per buffer block, like ``buf_block_t``); a page is named by its id (its dense
page index, or a local id where the numbering is too large: "page ids" in
:mod:`bufsim.policies._state`), ``fmap[page]`` is its frame or -1 (InnoDB's
``page_hash``), ``pst[P_PAGE][frame]`` its page.  Free frames are a stack
``ffree[:glob[G_FTOP]]``.  A page's facts (space, page number, leaf links) come from
``dense_of``, ``page_no``, ``space_pos`` and ``leaf_links``.
"""
__all__ = [
    "add_block", "instance_of", "make_block_young", "now_ms", "old_adjust", "old_adjust_len",
    "old_bounds", "old_clamp", "old_init", "old_walk", "peek_if_too_old", "remove_block",
    "set_old", "background", "batch_lru_min", "cleaner_lru_batch", "evict_page",
    "flush_single_page", "free_from_common_lru", "get_free_block", "page_cleaner",
    "release_frame", "replaceable", "take_frame", "IBUF_BITMAP_PERIOD", "init_for_read",
    "is_ibuf_bitmap", "read_ahead_linear", "read_in", "get", "modify", "run_general",
    "fast_loop", "DEEP_FRAMES", "FRAME_AHEAD", "run",
]

from .lists import (  # noqa: F401  the policy's steps, re-exported
    add_block, instance_of, make_block_young, now_ms, old_adjust, old_adjust_len, old_bounds,
    old_clamp, old_init, old_walk, peek_if_too_old, remove_block, set_old,
)
from .free import (  # noqa: F401
    background, batch_lru_min, cleaner_lru_batch, evict_page, flush_single_page,
    free_from_common_lru, get_free_block, page_cleaner, release_frame, replaceable, take_frame,
)
from .read import IBUF_BITMAP_PERIOD, init_for_read, is_ibuf_bitmap, read_ahead_linear, read_in  # noqa: F401
from .get import get, modify  # noqa: F401
from .general import run_general  # noqa: F401
from .fast import fast_loop  # noqa: F401
from .fast_steps import DEEP_FRAMES, FRAME_AHEAD  # noqa: F401
from .kernel import run  # noqa: F401
