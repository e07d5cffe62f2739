"""Experiment drivers behind the notebooks: the glue that is more than glue.

* :mod:`bufsim.experiments.ssb` — notebook 01, the SSB ``innodb_old_blocks_time``
  regression (000_fe2813b876a91991.txt): Q1.1 counters, the cost-model fit on the
  four Q1.1 times, the 13-query response-time table, where the time goes.
"""
