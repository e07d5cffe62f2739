"""Analytic models beside the replay: miss-ratio curves, Che-type estimates, MVA.

* :mod:`~bufsim.analytic.mrc`: exact LRU miss-ratio curves from Mattson stack
  distances (chunked, ``O(n_pages)`` memory); :mod:`~bufsim.analytic.shards`: SHARDS
  sampled curves; :mod:`~bufsim.analytic.mrc_base`: what both share (the Fenwick tree,
  events as arrays).
* :mod:`~bufsim.analytic.che`: characteristic-time estimates under the
  independent reference model for LRU, FIFO/RANDOM, segmented LRU with ``h``
  lists and InnoDB's midpoint LRU as two lists.
* :mod:`~bufsim.analytic.midpoint`: InnoDB's midpoint LRU with ``innodb_old_blocks_time``,
  for an independent-reference hot set mixed with a scan (the side-load experiment); its
  per-page quantities in :mod:`~bufsim.analytic.midpoint_terms`.
* :mod:`~bufsim.analytic.mva`: exact and Bard-Schweitzer MVA of closed
  networks with delay, queueing, multi-server and load-dependent stations;
  asymptotic bounds; Universal Scalability Law fits.
* :mod:`~bufsim.analytic.solve`: the one root finder for monotone functions (Brent).
"""
from . import che, midpoint, mrc, mva, solve
from .che import (
    CheResult, che_lru, fifo_random, innodb_lru_t0, innodb_midpoint_lru, rates_from_trace,
    segmented_lru,
)
from .midpoint import MidpointResult, ScanClass, midpoint_lru, old_capacity
from .mrc import (
    ShardsCounter, StackDistanceCounter, exact_mrc, mrc_error, page_hash, shards_mrc,
    stack_distances,
)
from .mva import (MVAResult, USLFit, asymptotic_bounds, exact_mva, exact_mva_throughput,
                  schweitzer_mva, usl_fit)
from .solve import solve_monotone

__all__ = [
    "che", "midpoint", "mrc", "mva", "solve", "solve_monotone", "MidpointResult", "ScanClass", "midpoint_lru", "old_capacity",
    "CheResult", "che_lru", "fifo_random", "innodb_lru_t0", "innodb_midpoint_lru", "rates_from_trace",
    "segmented_lru",
    "ShardsCounter", "StackDistanceCounter", "exact_mrc", "mrc_error", "page_hash",
    "shards_mrc", "stack_distances",
    "MVAResult", "USLFit", "asymptotic_bounds", "exact_mva", "exact_mva_throughput",
    "schweitzer_mva", "usl_fit",
]
