"""Tests of bufsim.analytic."""
