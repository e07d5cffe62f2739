"""Tests of bufsim.policies."""
