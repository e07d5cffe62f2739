"""Shadows the ``rfc3987-syntax`` package in the processes the tests start (first on their
``PYTHONPATH``, tests/conftest.py): importing it raises ImportError, as if it were not
installed.

Why: jsonschema imports it, when installed, to register its ``iri`` and ``iri-reference``
format checkers, and at that import it builds 38 lark grammars: 1.1 s of CPU in every
process that imports jsonschema (altair, nbformat, papermill, JupyterLab). The default tier
starts about 30 such processes (a notebook kernel each, papermill, the JupyterLab server), so
this is about 30 s of its CPU. Nothing bufsim, its notebooks or these tests use validates an
``iri`` format: the Vega-Lite schema has ``uri``, ``uri-reference`` and ``color-hex`` formats
only, nbformat validates without a format checker. jupyter-events needs the package
installed (``jsonschema[format-nongpl]``), so it stays installed; this folder is on the path
of the test processes only, never of ``make reproduce`` or a user's kernel.
"""
raise ImportError("rfc3987_syntax is shadowed in the test processes (tests/_imports)")
