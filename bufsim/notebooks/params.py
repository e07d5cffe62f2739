"""Notebook parameters: the rules that check them and :func:`setup`, which each notebook
calls right after its ``parameters`` cell (see :mod:`bufsim.notebooks`)."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from bufsim import paths
from bufsim import provenance as _prov

def _is_int(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) or type(v).__name__.startswith("int")


def _int(lo: int, hi: int) -> Callable[[str, object], object]:
    def check(name: str, v: object) -> object:
        if not _is_int(v) or not lo <= int(v) <= hi:  # type: ignore[arg-type]
            raise ValueError(f"parameter {name} must be an integer in [{lo}, {hi}], got {v!r}")
        return int(v)  # type: ignore[arg-type]
    check.allowed = f"an integer in [{lo}, {hi}]"  # type: ignore[attr-defined]
    return check


def _float(lo: float, hi: float) -> Callable[[str, object], object]:
    def check(name: str, v: object) -> object:
        ok = (_is_int(v) or isinstance(v, float)) and not isinstance(v, bool)
        if not ok or not lo <= float(v) <= hi:  # type: ignore[arg-type]
            raise ValueError(f"parameter {name} must be a number in [{lo}, {hi}], got {v!r}")
        return float(v)  # type: ignore[arg-type]
    return check


def _bool(name: str, v: object) -> object:
    if not isinstance(v, bool):
        raise ValueError(f"parameter {name} must be True or False, got {v!r}")
    return v


def _choice(options: Sequence[str]) -> Callable[[str, object], object]:
    def check(name: str, v: object) -> object:
        if v not in options:
            raise ValueError(f"parameter {name} must be one of {', '.join(map(repr, options))}, "
                             f"got {v!r}")
        return v
    return check


def _pool_size(name: str, v: object) -> object:
    from bufsim.config import pages_from_bytes

    if _is_int(v):
        pages = int(v)  # type: ignore[arg-type]
    elif isinstance(v, str):
        try:
            pages = pages_from_bytes(v)
        except ValueError:
            pages = -1
    else:
        pages = -1
    if not 320 <= pages <= 2**31:  # InnoDB's smallest pool: 5M = 320 pages of 16 KiB
        raise ValueError(f"parameter {name} must be a pool size: pages (an integer in "
                         f"[320, 2**31]) or bytes as '128M', '4G' (at least 5M), got {v!r}")
    return v


def _list_of(item: Callable[[str, object], object], *, max_len: int = 64,
             unique: bool = True) -> Callable[[str, object], object]:
    def check(name: str, v: object) -> object:
        if isinstance(v, str):  # papermill -p passes "[0, 250]" as a string
            import ast
            try:
                v = ast.literal_eval(v.strip())
            except (ValueError, SyntaxError):
                raise ValueError(f"parameter {name} must be a list such as [0, 250], "
                                 f"got {v!r}") from None
        if isinstance(v, (str, bytes)) or not isinstance(v, (list, tuple)) or not v:
            raise ValueError(f"parameter {name} must be a non-empty list, got {v!r}")
        if len(v) > max_len:
            raise ValueError(f"parameter {name} must have at most {max_len} values, got {len(v)}")
        out = [item(f"{name}[{i}]", x) for i, x in enumerate(v)]
        if unique and len(set(map(str, out))) != len(out):
            raise ValueError(f"parameter {name} must not repeat a value, got {v!r}")
        return out
    return check


def _output_dir(name: str, v: object) -> object:
    if v is None:
        return None
    if not isinstance(v, (str, os.PathLike)) or not str(v).strip():
        raise ValueError(f"parameter {name} must be None or a directory path, got {v!r}")
    p = Path(v).expanduser()
    if p.exists() and not p.is_dir():
        raise ValueError(f"parameter {name} must be a directory, but {p} is a file")
    return str(p)


def _presets() -> tuple[str, ...]:
    from bufsim.config import PRESETS
    return tuple(PRESETS)


def _devices() -> tuple[str, ...]:
    from bufsim.config import DEVICES
    return tuple(DEVICES)


def _preset(name: str, v: object) -> object:
    return _choice(_presets())(name, v)


def _device(name: str, v: object) -> object:
    return _choice(_devices())(name, v)


#: Rule builders for a notebook's own parameters (``setup(..., rules={...})``).
int_rule = _int
float_rule = _float
choice_rule = _choice
list_rule = _list_of

#: How :func:`setup` checks each parameter a notebook may take, by name. Each rule is
#: called as ``rule(name, value)`` and returns the value (normalised) or raises
#: ``ValueError`` naming the parameter and the allowed values.
PARAMETER_RULES: dict[str, Callable[[str, object], object]] = {
    "quick": _bool,
    "seed": _int(0, 2**32 - 1),
    "output_dir": _output_dir,
    "pool_size": _pool_size,
    "pool_sizes": _list_of(_pool_size),
    "old_blocks_time_ms": _list_of(_int(0, 2**32 - 1)),
    "old_blocks_pct": _int(5, 95),
    "old_blocks_pcts": _list_of(_int(5, 95)),
    "instances": _int(1, 64),
    "instances_list": _list_of(_int(1, 64)),
    "scale_factor": _float(0.001, 100.0),
    "scale": _int(1, 1024),
    "device": _device,
    "version": _preset,
    "versions": _list_of(_preset),
    "users": _list_of(_int(1, 4096)),
    "n_gets": _int(1_000, 10**10),
    "n_pages": _int(100, 10**9),
    "zipf_alpha": _float(0.0, 3.0),
    "transactions": _int(100, 10**7),
    "cores": _int(1, 1024),
}


def check_parameters(
    rules: Mapping[str, Callable[[str, object], object]] | None = None, /, **params: object
) -> dict[str, object]:
    """Check notebook parameters against their rules and return them normalised.

    Parameters
    ----------
    rules : mapping, optional
        Extra or overriding rules (``name -> rule(name, value)``) for this notebook.
    **params
        The parameters, by name.

    Returns
    -------
    dict
        The checked values, in the given order.

    Raises
    ------
    ValueError
        On the first bad value (the message names the parameter and the allowed range)
        or an unknown parameter name.
    """
    table = {**PARAMETER_RULES, **(rules or {})}
    out: dict[str, object] = {}
    for name, value in params.items():
        if name not in table:
            raise ValueError(
                f"parameter {name} has no rule; known: {', '.join(sorted(table))} "
                "(pass rules={name: check} to setup for a notebook's own parameter)"
            )
        out[name] = table[name](name, value)
    return out


#: First line of the cell papermill injects after the ``parameters`` cell
#: (``papermill.translators.PythonTranslator.codify``).
_INJECTED_MARK = "# Parameters"


def _assigned_names(source: str) -> list[str]:
    """Names assigned at the top level of a cell's source (empty if it does not parse)."""
    import ast
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    names: list[str] = []
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else \
            [node.target] if isinstance(node, ast.AnnAssign) else []
        for t in targets:
            for n in ast.walk(t):
                if isinstance(n, ast.Name) and n.id not in names:
                    names.append(n.id)
    return names


def notebook_parameters(path: str | os.PathLike[str]) -> list[str]:
    """The names the ``parameters`` cell (the cell tagged ``parameters``, as papermill
    finds it) of the notebook at ``path`` assigns, in order; empty if it has none."""
    import json

    nb = json.loads(Path(path).read_text(encoding="utf-8"))
    for cell in nb.get("cells", []):
        if "parameters" in cell.get("metadata", {}).get("tags", []):
            src = cell.get("source", "")
            return _assigned_names(src if isinstance(src, str) else "".join(src))
    return []


def parse_parameter(text: str) -> object:
    """A command-line parameter value as the notebook's own cells would spell it: a Python
    literal (``1000``, ``0.5``, ``True``, ``None``, ``[0, 1000, 3000]``, ``"4G"``), else
    the text itself as a string (``4G``, ``mysql57``)."""
    import ast

    try:
        return ast.literal_eval(text.strip())
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return text


def check_run_parameters(notebooks: Sequence[str | os.PathLike[str]],
                         params: Mapping[str, object]) -> dict[str, object]:
    """Check parameters given to the batch runner (``bufsim notebooks run -p NAME VALUE``)
    before any notebook runs: each name must be a parameter of every notebook in
    ``notebooks`` (paths), and a value whose name has a rule in :data:`PARAMETER_RULES`
    must pass it (a notebook's own rules check the rest when its setup runs).

    Returns the parameters as given (the notebooks normalise them themselves).

    Raises
    ------
    ValueError
        Naming the parameter, the notebook that lacks it (with the closest name and its
        known parameters), or the allowed values.
    """
    import difflib

    if "quick" in params:
        raise ValueError("parameter quick is set by --quick (make reproduce QUICK=1), not -p")
    for nb in notebooks:
        known = notebook_parameters(nb)
        for name in params:
            if name not in known:
                close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
                hint = f"did you mean {close[0]!r}? " if close else ""
                raise ValueError(
                    f"parameter {name!r} is not a parameter of {Path(nb).stem}; {hint}"
                    f"its parameters: {', '.join(known) or 'none'} (NOTEBOOKS= selects "
                    "the notebooks a parameter is for)")
    for name, value in params.items():
        if name in PARAMETER_RULES and value is not None:
            PARAMETER_RULES[name](name, value)
    return dict(params)


def check_injected_parameters(history: Sequence[str] | None = None) -> None:
    """Refuse a parameter that papermill injected but the notebook does not have.

    ``papermill nb.ipynb out.ipynb -p zipf_alpah 1.1`` adds a cell that assigns
    ``zipf_alpah`` after the ``parameters`` cell; papermill only warns, and the
    notebook would run to the end with its default ``zipf_alpha``.  :func:`setup`
    calls this first: the injected cell (the last executed cell whose first line is
    papermill's ``# Parameters``) may only assign names that the cell executed just
    before it (the notebook's ``parameters`` cell) assigns.

    Parameters
    ----------
    history : sequence of str, optional
        The sources of the cells executed so far, in order; by default the IPython
        kernel's input history (nothing is checked outside IPython).

    Raises
    ------
    ValueError
        Naming the unknown parameter, the closest known name and the known ones.
    """
    if history is None:
        try:
            from IPython import get_ipython
        except ImportError:
            return
        ip = get_ipython()
        if ip is None or getattr(ip, "history_manager", None) is None:
            return
        history = list(ip.history_manager.input_hist_raw)
    marks = [i for i, src in enumerate(history)
             if isinstance(src, str) and src.lstrip().startswith(_INJECTED_MARK + "\n")]
    if not marks or marks[-1] == 0:
        return
    i = marks[-1]
    known = _assigned_names(history[i - 1])
    if not known:   # the cell before is not a parameters cell: nothing to compare with
        return
    import difflib
    for name in _assigned_names(history[i]):
        if name not in known:
            close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
            hint = f"did you mean {close[0]!r}? " if close else ""
            raise ValueError(f"parameter {name!r} is not a parameter of this notebook "
                             f"(injected by papermill -p); {hint}known parameters: "
                             f"{', '.join(known)}")


def setup(
    notebook: str | None = None,
    /,
    *,
    quick: bool = False,
    seed: int | None = None,
    output_dir: str | os.PathLike[str] | None = None,
    rules: Mapping[str, Callable[[str, object], object]] | None = None,
    defaults: Mapping[str, tuple[object, object]] | None = None,
    **params: object,
) -> _prov.RunContext:
    """Check a notebook's parameters and direct its outputs; call it once, after the
    ``parameters`` cell.

    Parameters
    ----------
    notebook : str, optional
        The notebook's stem (recorded in every output).
    quick : bool
        Quick mode: small sizes; figure titles say so.
    seed : int, optional
        The notebook's seed, if it draws random numbers.
    output_dir : str or os.PathLike, optional
        Figures go to ``output_dir/figures``, result tables to ``output_dir/results``.
        None (the default): ``$BUFSIM_FIGURES_DIR`` and ``$BUFSIM_BUILD_DIR/results``
        when set (the batch runner sets them), else ``build/figures`` and
        ``build/results`` of the checkout. Never ``figures/`` unless
        ``$BUFSIM_FIGURES_DIR`` says so (``make reproduce``).
    rules : mapping, optional
        Rules for parameters not in :data:`PARAMETER_RULES`.
    defaults : mapping, optional
        ``name -> (full, quick)``: a parameter passed as None takes the full-run or the
        quick-mode value (then is checked like any other).
    **params
        Every other knob of the notebook, checked by its rule.

    Returns
    -------
    bufsim.provenance.RunContext
        The installed context: ``.figures_dir``, ``.results_dir``, ``.parameters``
        (the checked values, defaults filled in; also ``ctx["name"]``).

    Raises
    ------
    ValueError
        If a parameter is bad (the message names it) or has no rule.
    """
    check_injected_parameters()
    everything: dict[str, object] = {"quick": quick, "output_dir": output_dir}
    if seed is not None:
        everything["seed"] = seed
    everything.update(params)
    for name, (full, small) in (defaults or {}).items():
        if everything.get(name) is None:
            everything[name] = small if quick else full
    checked = check_parameters(rules, **everything)
    if checked["output_dir"] is not None:
        base = Path(str(checked["output_dir"])).resolve()
        figs, results = base / "figures", base / "results"
    else:
        figs, results = paths.figures_dir(), paths.results_dir()
    ctx = _prov.RunContext(notebook=notebook, quick=bool(quick), figures_dir=figs,
                           results_dir=results, parameters=checked)
    _prov.set_context(ctx)
    _prov.output_dirs()
    import altair as alt

    from bufsim import figures
    from bufsim.engine import compile_notice

    line = compile_notice(("innodb",))   # every notebook replays InnoDB; not all replay lru
    if line:  # under the setup cell, before the first replay's minute of silence
        print(line)
    figures._enable_theme()  # charts shown inline look like the saved figures
    # application/vnd.vegalite.v5+json: JupyterLab renders it itself, offline (the html
    # renderer would fetch vega from a CDN)
    alt.renderers.enable("mimetype")
    return ctx
