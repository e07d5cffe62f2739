"""Mutex contention of buffer-pool instances: demand, MVA networks, simulation.

* :mod:`~bufsim.contention.demand`: per-instance and global-latch mutex
  demand of a trace or page-frequency vector, by MySQL version
  (:func:`instance_demand`, :class:`HoldTimes`), and the closed network it
  implies (:func:`network`, :class:`Network`) for
  :func:`bufsim.analytic.mva.exact_mva`; the gets it counts per page, per instance
  and per AHI part are :mod:`~bufsim.contention.counting`'s.
* :mod:`~bufsim.contention.des`: a compiled discrete-event simulation of
  threads contending for cores and mutexes (:func:`simulate`), with a
  pure-Python twin (:func:`simulate_reference`); its compiled event loop is in
  :mod:`~bufsim.contention.des_kernel`.
"""
from . import demand, des, instances
from .demand import (
    VERSIONS, ContentionDemand, HoldTimes, MutexHolds, Network, PageCounts, instance_demand,
    network,
)
from .des import SimResult, simulate, simulate_reference, simulate_waits
from .instances import (
    Costs, fit_costs, instance_map, instances_for_fraction, max_throughput, wait_shares,
    workload_demand, workload_network,
)

__all__ = [
    "demand", "des",
    "VERSIONS", "ContentionDemand", "HoldTimes", "MutexHolds", "Network", "instance_demand",
    "network",
    "SimResult", "simulate", "simulate_reference", "simulate_waits", "instances",
    "Costs", "PageCounts", "fit_costs", "instance_map", "instances_for_fraction", "max_throughput",
    "wait_shares", "workload_demand", "workload_network",
]
