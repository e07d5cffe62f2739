"""The tests, a package mirroring bufsim/ (see tests/README.md): files in different folders
may share a basename, and the shared helpers import as ``tests._live`` and ``tests._bench``."""
