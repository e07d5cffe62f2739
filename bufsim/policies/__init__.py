"""Buffer-pool policies: InnoDB's midpoint LRU and comparison policies.

One module per policy, each a set of jitted functions over the array state of
:mod:`bufsim.policies._state` plus a pure-Python twin used by the tests.
"""
