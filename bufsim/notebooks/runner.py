"""Execute notebooks with papermill, side by side, longest first (see
:mod:`bufsim.notebooks`), and check that the live notebooks' server can start."""

from __future__ import annotations

import math
import os
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from tqdm.auto import tqdm

from bufsim import paths
from bufsim._cores import JOBS_ENV
from bufsim.paths import atomic_path

#: modules the runner's kernels and workers import as if they were not installed (see
#: :func:`_shadow_folder`): ``rfc3987_syntax`` builds 38 Lark grammars when jsonschema
#: imports it (altair, nbformat and papermill import jsonschema), 1.1 s of CPU per process
SHADOWED = ("rfc3987_syntax",)


def _shadow_folder(folder: str) -> str:
    """Make ``folder`` and write into it a module per :data:`SHADOWED` that raises ImportError, and
    return ``folder``: first on a kernel's ``PYTHONPATH``, it makes ``import
    rfc3987_syntax`` fail as if the package were not installed.

    Why this changes no result: jsonschema imports ``rfc3987_syntax`` only to register
    format checkers for the ``iri`` and ``iri-reference`` formats (``jsonschema/_format.py``);
    without it those two formats go unchecked, every other checker stays. Altair validates
    a chart with the draft's format checker against the Vega-Lite schema, whose formats are
    ``uri``, ``uri-reference`` and ``color-hex`` only (``tests/test_notebooks_runner.py``
    checks the shipped schema); nbformat validates without format checker; nothing in
    bufsim or its notebooks validates an IRI. jupyter-events requires the package
    (``jsonschema[format-nongpl]``), so it stays installed for JupyterLab and a user's own
    kernels; only the kernels this runner starts skip it (the test suite's processes do the
    same, ``tests/_imports``)."""
    os.mkdir(folder)
    for name in SHADOWED:
        Path(folder, name + ".py").write_text(
            f"raise ImportError({name!r} + ' is shadowed in the kernels of "
            f"bufsim.notebooks.runner (only iri formats need it)')\n")
    return folder


#: niceness of a kernel whose notebook runs beside a live one (:data:`LIVE_NOTEBOOKS`)
BACKGROUND_NICE = 10


def lower_priority(pid: int, nice: int) -> None:
    """Run process ``pid`` (a kernel just started) at niceness ``nice``, where the system
    lets us (raising one's own niceness needs no privilege; a failure changes nothing).

    Why: notebooks 07 and 09 compare a server's counters with the replay, and some of
    those counts depend on real time (``innodb_old_blocks_time`` is milliseconds of the
    server's clock; the page cleaner races the user thread: docs/cleaner-race.md), and
    07 is the longest notebook, so a run beside it gives it and its server the CPU they
    ask for and takes what they leave.  Linux's autogroups share the CPU between
    sessions before niceness counts within one, and a kernel starts in a session of
    its own, so its autogroup takes the niceness too (``/proc/PID/autogroup``)."""
    try:
        os.setpriority(os.PRIO_PROCESS, pid, nice)
    except OSError:
        return
    try:
        Path(f"/proc/{pid}/autogroup").write_text(f"{nice}\n")
    except OSError:     # no autogroups (or not Linux): the process's niceness is what counts
        pass


def _ipc_kernel_manager(folder: str, shadow: str | None = None, nice: int = 0) -> type:
    """A kernel manager whose kernel talks over unix sockets in ``folder`` (an
    absolute path: the kernel resolves a relative one against its own working folder),
    not loopback TCP: runner and kernel are on one machine, nothing listens on a port,
    and ipykernel >= 7.3 no longer warns at every start that its TCP is unencrypted.
    With ``shadow`` (a folder of :func:`_shadow_folder`), that folder goes first on the
    kernel's ``PYTHONPATH``; with ``nice`` > 0 the kernel runs at that niceness
    (:func:`lower_priority`)."""
    from jupyter_client import AsyncKernelManager

    class IPCKernelManager(AsyncKernelManager):
        def __init__(self, **kwargs):
            super().__init__(transport="ipc", ip=os.path.join(folder, "kernel"), **kwargs)

        async def _async_launch_kernel(self, kernel_cmd, **kw):
            await super()._async_launch_kernel(kernel_cmd, **kw)
            if nice > 0 and getattr(self.provisioner, "pid", None):
                lower_priority(self.provisioner.pid, nice)

        async def _async_pre_start_kernel(self, **kw):
            if shadow is not None:
                env = dict(kw.pop("env", None) or os.environ)
                rest = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and p != shadow]
                env["PYTHONPATH"] = os.pathsep.join([shadow, *rest])
                kw["env"] = env
            return await super()._async_pre_start_kernel(**kw)

    return IPCKernelManager


@dataclass(frozen=True)
class NotebookRun:
    """Outcome of executing one notebook.

    Attributes
    ----------
    name : str
        Notebook stem, e.g. ``"00_quickstart"``.
    source : pathlib.Path
        The notebook that was executed.
    output : pathlib.Path or None
        The executed notebook, written also when a cell failed; None when
        papermill wrote nothing (e.g. the kernel did not start).
    ok : bool
        True when every cell ran without error.
    seconds : float
        Wall-clock time of the execution.
    error : str or None
        ``"ExceptionName: message"`` of the failure, None on success.
    cpu_seconds : float or None
        CPU time (user + system) of the kernel and of the papermill client that ran
        it: the work, which does not grow when other processes share the cores as
        ``seconds`` does; None when not measured.
    """

    name: str
    source: Path
    output: Path | None
    ok: bool
    seconds: float
    error: str | None = None
    cpu_seconds: float | None = None


def discover_notebooks(notebooks_dir: str | os.PathLike[str] | None = None) -> list[Path]:
    """Return the notebooks of ``notebooks_dir`` (default ``notebooks/``), sorted by name."""
    directory = Path(notebooks_dir) if notebooks_dir is not None else paths.notebooks_dir()
    if not directory.is_dir():
        raise FileNotFoundError(f"notebooks directory {directory} does not exist")
    return sorted(p for p in directory.glob("*.ipynb") if not p.name.startswith("."))


def select_notebooks(
    names: Iterable[str] = (), notebooks_dir: str | os.PathLike[str] | None = None
) -> list[Path]:
    """Pick notebooks by stem or stem prefix (``"00"`` selects ``00_quickstart``).

    Parameters
    ----------
    names : iterable of str
        Stems or prefixes; a trailing ``.ipynb`` is ignored. Empty selects all.
    notebooks_dir : str or os.PathLike, optional
        Where to look; :func:`bufsim.paths.notebooks_dir` by default.

    Returns
    -------
    list of pathlib.Path
        Matching notebooks in name order, each once.

    Raises
    ------
    ValueError
        If a name matches no notebook; the message lists the available ones.
    """
    available = discover_notebooks(notebooks_dir)
    names = [n.removesuffix(".ipynb") for n in names]
    if not names:
        return available
    chosen: set[Path] = set()
    for name in names:
        hits = [p for p in available if p.stem == name] or [
            p for p in available if p.stem.startswith(name)
        ]
        if not name or not hits:
            stems = ", ".join(p.stem for p in available) or "none"
            raise ValueError(f"NAME {name!r} matches no notebook; available: {stems}")
        chosen.update(hits)
    return sorted(chosen)


def describe_error(exc: BaseException) -> str:
    ename = getattr(exc, "ename", None)
    if ename is not None:  # papermill.PapermillExecutionError: the notebook's own error
        return f"{ename}: {getattr(exc, 'evalue', '')}".strip()
    return f"{type(exc).__name__}: {exc}".strip()


def run_notebooks(
    names: Iterable[str] = (),
    *,
    quick: bool = False,
    notebooks_dir: str | os.PathLike[str] | None = None,
    output_dir: str | os.PathLike[str] | None = None,
    kernel_name: str = "python3",
    progress: bool = True,
    parameters: Mapping[str, object] | None = None,
    jobs: int | None = 1,
) -> list[NotebookRun]:
    """Execute notebooks with papermill, ``jobs`` of them side by side.

    Parameters
    ----------
    names : iterable of str, optional
        Stems or prefixes (see :func:`select_notebooks`); empty runs all.
    quick : bool, optional
        Inject ``quick = True`` into each notebook's ``parameters`` cell.
    notebooks_dir : str or os.PathLike, optional
        Source notebooks and working directory of the kernels;
        ``notebooks/`` by default.
    output_dir : str or os.PathLike, optional
        Where executed notebooks go; ``build/notebooks/`` by default.
    kernel_name : str, optional
        Jupyter kernel; ``python3`` resolves to the running interpreter.
    progress : bool, optional
        Show a progress bar naming the notebook being executed.
    parameters : mapping, optional
        More values to inject into every selected notebook's ``parameters`` cell
        (papermill ``-p``), e.g. ``{"seed": 2}``.
    jobs : int or None, optional
        Notebooks executed at once, each in its own process and kernel (the notebooks
        are independent and write their own outputs); None: one per core
        (``os.cpu_count()``), and one more while a notebook of :data:`LIVE_NOTEBOOKS`
        runs (it waits on its MariaDB server for part of its time: :func:`lanes`).
        The longest (by the last run's times) start first.  Where InnoDB's replay
        kernel is not compiled yet and more than one runs at once (or jobs is None),
        it is compiled first, its two loops side by side (:mod:`bufsim.notebooks.warm`).
        With more than one at
        once, each kernel gets ``BUFSIM_JOBS`` = its share of the cores (at least 1, unless
        set already), the threads its own replays spread over (:mod:`bufsim._cores`);
        when a live notebook is among them, the others' kernels run at niceness
        :data:`BACKGROUND_NICE` (:func:`lower_priority`).

    Returns
    -------
    list of NotebookRun
        One per notebook, in name order. Failures are reported here, never raised.
    """
    if jobs is not None and (not isinstance(jobs, int) or isinstance(jobs, bool) or jobs < 1):
        raise ValueError(f"jobs must be an integer >= 1 or None, got {jobs!r}")
    import importlib.util

    # found, not imported: with jobs > 1 only the workers import it (and jsonschema)
    if importlib.util.find_spec("papermill") is None:  # the `notebooks` extra is missing
        raise ImportError("running notebooks needs papermill: pip install -e '.[notebooks]'")

    selected = select_notebooks(names, notebooks_dir)
    out_dir = Path(output_dir) if output_dir is not None else paths.build_dir() / "notebooks"
    out_dir.mkdir(parents=True, exist_ok=True)
    parameters = {**({"quick": True} if quick else {}), **(parameters or {})}
    from bufsim.engine import compile_notice

    line = compile_notice(("innodb",))   # every notebook replays InnoDB; not all replay lru
    n_jobs = min(len(selected), jobs or os.cpu_count() or 1)
    if line and selected and jobs != 1 and (os.cpu_count() or 1) > 1:
        # compiled here, its two loops side by side, instead of by the first notebook
        # that replays, one loop after the other, while the others wait on its lock
        from bufsim.notebooks.warm import warm_innodb

        print("bufsim: compiling the innodb replay kernel before the notebooks start "
              "(once after installing or updating bufsim; kept in "
              f"{os.environ.get('NUMBA_CACHE_DIR', '?')})", file=sys.stderr, flush=True)
        seconds = warm_innodb(2)
        print(f"bufsim: compiled in {seconds:.0f} s", file=sys.stderr, flush=True)
    elif line and selected:  # the first notebook's kernel compiles them, a minute in silence
        print(line, file=sys.stderr, flush=True)
    for source in selected:  # never report a stale notebook of an earlier run
        (out_dir / source.name).unlink(missing_ok=True)
    extra = 1 if jobs is None else 0          # the lane a live notebook's waits leave free
    bar = tqdm(total=len(selected), unit="notebook", disable=not progress, desc="notebooks")
    done: dict[Path, NotebookRun] = {}

    def report(run: NotebookRun) -> None:
        done[run.source] = run
        bar.update(1)
        bar.write(f"{'ok' if run.ok else 'FAILED':6} {run.name} ({run.seconds:.1f} s)")

    if n_jobs + extra <= 1 or len(selected) <= 1:
        for source in selected:
            bar.set_description(source.stem)
            report(_execute(source, out_dir / source.name, parameters, kernel_name))
    else:
        import concurrent.futures as cf
        import multiprocessing

        queue = longest_first(selected, out_dir)
        live = any(s.stem in LIVE_NOTEBOOKS for s in selected)

        def nice_of(stem: str) -> int:   # the others make way for a live notebook's server
            return BACKGROUND_NICE if live and stem not in LIVE_NOTEBOOKS else 0

        ctx = multiprocessing.get_context("spawn")  # a clean interpreter per worker
        with cf.ProcessPoolExecutor(max_workers=n_jobs + extra, mp_context=ctx,
                                    initializer=_init_worker,
                                    initargs=(max(1, (os.cpu_count() or 1) // (n_jobs + extra)),)) as ex:
            running: dict = {}
            while queue or running:
                while queue and len(running) < lanes(n_jobs, extra, [s.stem for s in running.values()]):
                    src = queue.pop(0)
                    running[ex.submit(_execute, src, out_dir / src.name, parameters,
                                      kernel_name, nice_of(src.stem))] = src
                finished, _ = cf.wait(running, return_when=cf.FIRST_COMPLETED)
                for fut in finished:
                    src = running.pop(fut)
                    try:
                        report(fut.result())
                    except Exception as exc:  # noqa: BLE001 - the worker died: reported, run goes on
                        report(NotebookRun(src.stem, src, None, False, 0.0, describe_error(exc)))
    bar.close()
    save_seconds(out_dir, done.values())
    return [done[source] for source in selected]


def lanes(n_jobs: int, extra: int, running: Iterable[str]) -> int:
    """How many notebooks may run now: ``n_jobs``, plus ``extra`` while one of ``running``
    (stems) is in :data:`LIVE_NOTEBOOKS`.

    A live notebook waits on its server for part of its time (07: 63 of its 285 s on an
    idle 2-core machine, 09: 26 of 100), which a notebook of its own lane cannot use.
    With one lane per core the other lane alone is left for the rest (``make reproduce``:
    419 s at 2828f40, a processor-sharing model of those times: 412 s); one more lane
    while a live notebook runs fills its waits (the model: 372 s; measured on the shared
    machine at a load of 6-11, this checkout: 950 s with 2 lanes, 693 s with 3, the
    notebooks' CPU 746 and 729 s; docs/reproduce-profile.md).  Without a live notebook
    there is no wait to fill and no extra lane."""
    return n_jobs + (extra if LIVE_NOTEBOOKS & set(running) else 0)


def _execute(source: Path, output: Path, parameters: Mapping[str, object],
             kernel_name: str, nice: int = 0) -> NotebookRun:
    """Execute one notebook with papermill into ``output`` (a worker of run_notebooks),
    its kernel at niceness ``nice``."""
    import papermill as pm

    start = time.perf_counter()
    cpu_start = _cpu_seconds()
    error = None
    try:
        with tempfile.TemporaryDirectory(prefix="bufsim-ipc-") as sockets:
            shadow = _shadow_folder(os.path.join(sockets, "shadow"))
            pm.execute_notebook(
                str(source),
                str(output),
                parameters=dict(parameters),
                kernel_name=kernel_name,
                cwd=str(source.parent),
                progress_bar=False,
                kernel_manager_class=_ipc_kernel_manager(sockets, shadow, nice),
            )
    except Exception as exc:  # noqa: BLE001 - every failure is reported, the run goes on
        error = describe_error(exc)
    seconds = time.perf_counter() - start
    cpu = _cpu_seconds() - cpu_start
    written = output if output.is_file() else None
    return NotebookRun(source.stem, source, written, error is None, seconds, error, cpu)


def _init_worker(jobs_share: int) -> None:
    """A runner worker's initializer: :data:`SHADOWED` modules fail to import in it (its
    papermill imports nbformat and jsonschema; see :func:`_shadow_folder`), and the kernels
    it starts inherit ``BUFSIM_JOBS=jobs_share`` (their share of the cores, where the
    caller has not set it: :mod:`bufsim._cores`)."""
    for name in SHADOWED:
        sys.modules.setdefault(name, None)  # type: ignore[arg-type]
    os.environ.setdefault(JOBS_ENV, str(jobs_share))


def _cpu_seconds() -> float:
    """User + system CPU seconds of this process and of its children that ended (the
    kernel papermill started and shut down counts once it is reaped)."""
    import resource

    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


_SECONDS_FILE = ".seconds.json"   # in the output folder: each notebook's last time


#: Seconds of the shipped notebooks' full runs on an idle 2-core machine, the order of a
#: first run, before build/notebooks/.seconds.json holds this machine's times: 07 (a
#: MariaDB server, then its grid) starts first, not after the others.  Measured by one
#: ``make reproduce`` on a fresh clone of dd29385 after its ``.ci/run`` (compiled kernels warm,
#: 2 side by side, idle, 2026-11-29: 8 min 47 s in all); 01 and 02 then scaled by their CPU
#: after the timeline sampling and Q1.1 chunk memo (two full runs, 2 side by side, on the
#: shared machine at a load of 7-13, 2026-11-29: 01 184.7 -> 175.9 s CPU, 02 111.5 -> 72.3 s;
#: the others within +-4 s).  Only their order matters here.
TYPICAL_SECONDS = {"00_quickstart": 11, "01_ssb_old_blocks_time": 186,
                   "02_side_load_mysqldump": 86, "03_bp_instance_contention": 62,
                   "04_bp_instances_hot_uniform": 42, "05_dbt3_mrr_bka": 102,
                   "06_analytic_vs_simulated": 45, "07_live_server_validation": 345,
                   "08_explorer": 6, "09_live_trace": 89}


def longest_first(selected: Sequence[Path], out_dir: Path) -> list[Path]:
    """``selected`` ordered by the last run's seconds, longest first (unknown ones first,
    in name order): the long poles start at once and the short ones fill the gaps. A
    notebook this folder has no time for takes its :data:`TYPICAL_SECONDS`, if any."""
    import json

    try:
        last = json.loads((out_dir / _SECONDS_FILE).read_text())
    except (OSError, ValueError):
        last = {}
    if not isinstance(last, dict):
        last = {}

    def known(p: Path) -> float:
        v = last.get(p.stem, TYPICAL_SECONDS.get(p.stem))
        return float(v) if isinstance(v, (int, float)) else math.inf
    return sorted(selected, key=lambda p: -known(p))


def save_seconds(out_dir: Path, runs: Iterable[NotebookRun]) -> None:
    """Remember each successful notebook's time for the next run's order."""
    import json

    path = out_dir / _SECONDS_FILE
    try:
        last = json.loads(path.read_text())
        last = last if isinstance(last, dict) else {}
    except (OSError, ValueError):
        last = {}
    last.update({r.name: round(r.seconds, 1) for r in runs if r.ok})
    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps(last, indent=1, sort_keys=True))


#: notebooks that run against a MariaDB server started by the notebook (bufsim.live)
LIVE_NOTEBOOKS = frozenset({"07_live_server_validation", "09_live_trace"})


def _can_sudo() -> bool:
    """Whether ``sudo`` runs here without asking for a password."""
    import shutil
    import subprocess

    if shutil.which("sudo") is None:
        return False
    try:
        return subprocess.run(["sudo", "-n", "true"], capture_output=True,
                              timeout=20).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def _install_server(script: Path) -> int:
    """Run ``scripts/mariadb-server.sh --if-root`` (apt-get, output shown); its exit status."""
    import subprocess

    return subprocess.run([str(script), "--if-root"], stdout=sys.stderr).returncode


def live_server_status(*, available: Callable[[], tuple[bool, str]] | None = None,
                       uid: int | None = None, can_sudo: Callable[[], bool] = _can_sudo,
                       install: Callable[[Path], int] = _install_server) -> tuple[bool, str]:
    """Whether the live notebooks can start their MariaDB server, installing Debian's
    ``mariadb-server`` first when it is missing and we are root or have password-less
    sudo (``scripts/mariadb-server.sh``, the script ``.ci/run`` uses).

    Returns ``(True, "")``, or ``(False, why)`` where ``why`` names the command that
    installs the server. The keywords stand in for the machine in tests: ``available``
    (default :func:`bufsim.live.server_available`), ``uid`` (default the effective
    uid), ``can_sudo`` and ``install`` (runs the script, returns its exit status).
    """
    if available is None:
        from bufsim.live import server_available as available
    ok, why = available()
    if ok:
        return True, ""
    why = why.split(" (")[0]
    root = (os.geteuid() if uid is None else uid) == 0
    script = Path(__file__).resolve().parents[2] / "scripts" / "mariadb-server.sh"  # checkout
    if not script.is_file():
        return False, f"{why}; install mariadb-server (Debian: apt-get install mariadb-server)"
    command = "make mariadb" if root else "sudo make mariadb"
    if root or can_sudo():
        print(f"bufsim: {why}: installing Debian's mariadb-server ({script.name})",
              file=sys.stderr, flush=True)
        code = install(script)
        ok, why2 = available()
        if ok:
            return True, ""
        return False, (f"{why2.split(' (')[0]} (the install exited with status {code}); "
                       f"see `{command}`")
    return False, f"{why}; install it with `{command}`"


def not_run(source: Path, why: str) -> NotebookRun:
    line = f"not run: {why}, then `make reproduce NOTEBOOKS={source.stem[:2]}`"
    return NotebookRun(source.stem, source, None, False, 0.0, line)
