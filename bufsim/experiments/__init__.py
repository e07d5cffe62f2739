"""Experiment drivers behind the notebooks, one module per notebook: the glue that
is more than glue.  They sit on top: they import the engine, the analytic models,
the contention models and the workloads; nothing below imports them.

* :mod:`bufsim.experiments.ssb` — notebook 01, the SSB ``innodb_old_blocks_time``
  regression (000_fe2813b876a91991.txt): Q1.1 counters, the cost-model fit on the
  four Q1.1 times, the 13-query response-time table, where the time goes.
* :mod:`bufsim.experiments.side_load` — notebook 02, mysqldump beside sysbench (001).
* :mod:`bufsim.experiments.contention` — notebook 03, dbSTRESS over 16/64 instances (003).
* :mod:`bufsim.experiments.instances` — notebook 04, rein hot/uniform and instance counts (004).
* :mod:`bufsim.experiments.dbt3` — notebook 05, DBT-3 MRR/BKA runs and claims (002).
* :mod:`bufsim.experiments.analytic_validation` — notebook 06, estimates against replays.
* :mod:`bufsim.experiments.explorer` — notebook 08, one synthetic workload under the sliders' settings.
"""
