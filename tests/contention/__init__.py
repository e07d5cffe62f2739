"""Tests of bufsim.contention."""
