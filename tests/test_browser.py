"""A real browser: JupyterLab shows the quickstart notebook's chart.

Starts JupyterLab on 127.0.0.1 (free port, random token) over a temporary folder holding a
copy of ``notebooks/00_quickstart.ipynb`` (quick mode), drives Debian's Chromium through
``/usr/bin/chromedriver`` with selenium, runs all cells, and checks that the page holds a
rendered Vega chart (an ``svg`` or ``canvas`` inside ``.vega-embed``) and no error output.
A screenshot is saved to ``build/browser/00_quickstart.png``. JupyterLab and Chromium are
stopped at the end whatever happens.
"""
from __future__ import annotations

import contextlib
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import nbformat
import pytest

from bufsim import paths

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
FLAGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
         "--no-first-run", "--disable-background-networking", "--disable-component-update",
         "--disable-sync", "--window-size=1400,1000"]

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not CHROMIUM.is_file() or not CHROMEDRIVER.is_file(),
                       reason="needs Debian's chromium and chromium-driver "
                              "(/usr/bin/chromium, /usr/bin/chromedriver); `sudo make chromium` installs them"),
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_http(url: str, proc: subprocess.Popen, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"JupyterLab exited with {proc.returncode}")
        with contextlib.suppress(OSError):
            with urllib.request.urlopen(url, timeout=5) as r:
                if r.status == 200:
                    return
        time.sleep(0.5)
    raise TimeoutError(f"JupyterLab did not answer {url} within {timeout} s")


@contextlib.contextmanager
def _jupyterlab(root: Path, home: Path):
    port, token = _free_port(), secrets.token_hex(16)
    env = {**os.environ, "JUPYTER_CONFIG_DIR": str(home / "config"),
           "JUPYTER_DATA_DIR": str(home / "data"), "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
           "JUPYTERLAB_SETTINGS_DIR": str(home / "settings"),
           "JUPYTERLAB_WORKSPACES_DIR": str(home / "workspaces"),
           paths.BUILD_ENV_VAR: str(home / "build")}   # the notebook writes nothing in the checkout
    env.pop(paths.FIGURES_ENV_VAR, None)
    cmd = [sys.executable, "-m", "jupyterlab", "--no-browser", "--ServerApp.ip=127.0.0.1",
           f"--ServerApp.port={port}", "--ServerApp.port_retries=0",
           f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}",
           "--ServerApp.allow_root=True", "--LabApp.expose_app_in_browser=True", "--LabApp.news_url=",
           "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"]
    settings = home / "settings" / "@jupyterlab" / "apputils-extension"
    settings.mkdir(parents=True)   # no "official Jupyter news?" prompt (and no fetch)
    (settings / "notification.jupyterlab-settings").write_text('{"fetchNews": "false"}')
    log = open(home / "jupyterlab.log", "wb")
    proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)
    try:
        try:
            _wait_http(f"http://127.0.0.1:{port}/api/status?token={token}", proc, 120)
        except (RuntimeError, TimeoutError) as exc:
            log.flush()
            tail = (home / "jupyterlab.log").read_text(errors="replace")[-2000:]
            raise RuntimeError(f"{exc}; its log ends:\n{tail}") from None
        yield f"http://127.0.0.1:{port}", token
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
        log.close()


def test_jupyterlab_renders_the_quickstart_chart(tmp_path):
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium (test extra) missing")
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    root = tmp_path / "lab"
    root.mkdir()
    nb = nbformat.read(str(paths.notebooks_dir() / "00_quickstart.ipynb"), as_version=4)
    cell = next(c for c in nb.cells if "parameters" in c.metadata.get("tags", []))
    cell.source = cell.source.replace("quick = False", "quick = True")
    assert "quick = True" in cell.source
    nbformat.write(nb, str(root / "00_quickstart.ipynb"))
    shot = paths.build_dir() / "browser" / "00_quickstart.png"
    shot.parent.mkdir(parents=True, exist_ok=True)

    with _jupyterlab(root, tmp_path) as (base, token):
        options = webdriver.ChromeOptions()
        options.binary_location = str(CHROMIUM)
        for flag in FLAGS + [f"--user-data-dir={tmp_path / 'chromium-profile'}"]:
            options.add_argument(flag)
        service = Service(executable_path=str(CHROMEDRIVER), log_output=str(tmp_path / "chromedriver.log"))
        driver = webdriver.Chrome(service=service, options=options)
        try:
            driver.get(f"{base}/lab/tree/00_quickstart.ipynb?token={token}")
            wait = WebDriverWait(driver, 180, poll_frequency=1)
            wait.until(lambda d: d.execute_script(
                "const a = window.jupyterapp; if (!a) return false;"
                "const w = a.shell.currentWidget;"
                "return !!(w && w.sessionContext && w.sessionContext.session"
                " && w.sessionContext.session.kernel"
                " && w.sessionContext.session.kernel.status === 'idle');"))
            driver.execute_script("window.jupyterapp.commands.execute('notebook:run-all-cells');")
            # the run is over when the last cell has an execution count and the kernel is idle
            WebDriverWait(driver, 600, poll_frequency=2).until(lambda d: d.execute_script(
                "const w = window.jupyterapp.shell.currentWidget;"
                "const cells = w.content.model.cells;"
                "const last = cells.get(cells.length - 1);"
                "return last.executionCount !== null"
                " && w.sessionContext.session.kernel.status === 'idle';"))
            charts = WebDriverWait(driver, 120, poll_frequency=1).until(
                lambda d: d.find_elements(By.CSS_SELECTOR,
                                          ".vega-embed svg, .vega-embed canvas"))
            driver.execute_script("arguments[0].scrollIntoView({block: 'center'});", charts[0])
            time.sleep(1)  # let the chart finish drawing for the screenshot
            driver.save_screenshot(str(shot))
            errors = driver.execute_script(
                "const w = window.jupyterapp.shell.currentWidget; const out = [];"
                "for (let i = 0; i < w.content.model.cells.length; i++) {"
                "  const c = w.content.model.cells.get(i);"
                "  if (c.type !== 'code') continue;"
                "  for (let j = 0; j < c.outputs.length; j++) {"
                "    const o = c.outputs.get(j).toJSON();"
                "    if (o.output_type === 'error') out.push(o.ename + ': ' + o.evalue); } }"
                "return out;")
            tracebacks = [e.text for e in driver.find_elements(
                By.CSS_SELECTOR, "[data-mime-type='application/vnd.jupyter.stderr']")
                if "Traceback" in e.text or "Error" in e.text]
        finally:
            driver.quit()
    assert charts, "no rendered Vega chart (svg or canvas inside .vega-embed)"
    assert errors == [] and tracebacks == [], (errors, tracebacks)
    assert shot.is_file() and shot.stat().st_size > 10_000
