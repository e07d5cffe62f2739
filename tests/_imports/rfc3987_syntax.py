"""Shadows the ``rfc3987-syntax`` package in the test processes and the processes they start
(this folder follows the checkout on their ``PYTHONPATH`` and comes first on the workers'
``sys.path``, tests/conftest.py): importing it raises ImportError, as if it were not
installed.

Why: jsonschema imports it, when installed, to register its ``iri`` and ``iri-reference``
format checkers, and at that import it builds 38 lark grammars: 1.1 s of CPU in every
process that imports jsonschema (altair, nbformat, papermill, JupyterLab), and the default
tier starts more than twenty (a kernel per notebook run, papermill, the JupyterLab server;
a notebook test whose kernel stops at its parameters: 3.6 -> 2.1 s of CPU, a kernel that
imports altair, pandas and bufsim: 3.1 -> 1.5 s). Nothing bufsim, its notebooks or these
tests use validates an ``iri`` format: the Vega-Lite schema has ``uri``, ``uri-reference``
and ``color-hex`` formats only, nbformat validates without a format checker. jupyter-events
requires the package (``jsonschema[format-nongpl]``), so it stays installed; this folder is
on the path of the test processes only, never of ``make reproduce`` or a user's kernel.
"""
raise ImportError("rfc3987_syntax is shadowed in the test processes (tests/_imports)")
