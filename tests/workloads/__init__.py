"""Tests of bufsim.workloads."""
