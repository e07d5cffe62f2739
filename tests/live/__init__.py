"""Tests of bufsim.live."""
