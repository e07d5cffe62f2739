"""Buffer-pool policies: InnoDB's midpoint LRU and comparison policies.

One module per policy, each a set of jitted functions over the array state of
:mod:`bufsim.policies._state` plus a pure-Python twin used by the tests.
"""

from ._state import (  # noqa: E402,F401  the trace's flag bits, defined beside the kernels
    FLAG_AHI, FLAG_DESCENT, FLAG_KIND, FLAG_MASK, FLAG_MODIFY, FLAG_NO_RA, FLAG_RELATCH,
    FLAG_SHORTCUT, FLAG_STEP, FLAG_STMT_END, FLAG_TEMP,
)
