"""``python -m bufsim``: the same as the ``bufsim`` console script (:mod:`bufsim.cli`)."""
import sys

from bufsim.cli import main

__all__ = ["main"]

if __name__ == "__main__":
    sys.exit(main())
