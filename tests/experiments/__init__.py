"""Tests of bufsim.experiments."""
