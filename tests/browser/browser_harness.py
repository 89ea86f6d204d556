"""Shared pieces of the browser smoke tests: where things are, and private JupyterLab and TensorBoard
servers on free loopback ports.

Every wait has a deadline and every process started here is stopped in a ``finally``. Nothing
listens beyond 127.0.0.1: the servers bind loopback only, Playwright talks to Chromium over a pipe,
and the static-export test opens ``file://`` pages. A missing browser stack (Chromium, the
``playwright`` package, the vendored widget renderer) skips these tests, except in CI
(``CI=true``), where it fails them: the suite's one rule, ``tests/_requirements.py``.
"""

import contextlib
import json
import os
import pathlib
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parents[1]
NOTEBOOKS_DIR = REPO / "notebooks"
LESSONS = sorted(NOTEBOOKS_DIR.glob("*.ipynb"))
SCREENSHOTS_DIR = HERE / "screenshots"
# Filled by `make browser-deps` from the npm registry (git-ignored): the widget renderer that
# nbconvert's HTML loads from a CDN, served to the page locally so the test needs no network.
VENDOR_DIR = HERE / "vendor"
HTML_MANAGER_DIST = VENDOR_DIR / "html-manager" / "dist"
REQUIRE_JS = VENDOR_DIR / "requirejs" / "require.js"

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--no-first-run", "--disable-sync"]
CHROMIUM_INSTALL = "sudo apt-get update && sudo apt-get install -y chromium"
BROWSER_LAUNCH_TIMEOUT_S = 60
SERVER_START_TIMEOUT_S = 90
SERVER_STOP_TIMEOUT_S = 20
KERNEL_SHUTDOWN_TIMEOUT_S = 10
WIDGET_VIEW_MIME = "application/vnd.jupyter.widget-view+json"

# JupyterLab user settings for the test server: every cell stays in the DOM (no windowing), so each
# output area can be inspected; no news feed, no update check.
LAB_SETTINGS = {
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {"fetchNews": "false",
                                                                        "checkForUpdates": False},
}


def lesson_ids(paths):
    """Test ids for lesson parameters: the file stem (``01_dataflow_graph_and_session``)."""
    return [path.stem for path in paths]


def free_loopback_port():
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class LabServer:
    """A running ``jupyter lab``: ``url`` (``http://127.0.0.1:<port>``), ``token``, and its log file."""

    def __init__(self, url, token, log_path):
        self.url, self.token, self.log_path = url, token, log_path

    def api(self, method, path, timeout_s=10):
        """Call the server's REST API (``/api/...``) and return the decoded JSON body (or None)."""
        request = urllib.request.Request(f"{self.url}{path}", method=method,
                                         headers={"Authorization": f"token {self.token}"})
        with urllib.request.urlopen(request, timeout=timeout_s) as response:
            body = response.read()
        return json.loads(body) if body else None

    def log_tail(self, nchars=4000):
        """The end of the server's log, for failure messages."""
        return self.log_path.read_text(errors="replace")[-nchars:]

    def shutdown_kernels(self):
        """Shut down every kernel the server runs (bounded; errors are ignored: the server goes next)."""
        try:
            for kernel in self.api("GET", "/api/kernels"):
                self.api("DELETE", f"/api/kernels/{kernel['id']}", timeout_s=KERNEL_SHUTDOWN_TIMEOUT_S)
        except (OSError, ValueError):
            pass


def _write_lab_settings(settings_dir):
    for relative, values in LAB_SETTINGS.items():
        path = settings_dir / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values))


def _wait_until_up(name, probe, process, log_tail):
    """Call ``probe()`` until it returns true (an OSError counts as not yet); fail if ``process`` exits first.

    Raises:
        RuntimeError: the process exited (the message carries ``log_tail()``).
        TimeoutError: no success within ``SERVER_START_TIMEOUT_S``.
    """
    deadline = time.monotonic() + SERVER_START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{name} exited with {process.returncode}:\n{log_tail()}")
        try:
            if probe():
                return
        except (OSError, urllib.error.URLError):
            pass
        time.sleep(0.25)
    raise TimeoutError(f"{name} did not answer within {SERVER_START_TIMEOUT_S} s:\n{log_tail()}")


def _stop(process):
    """SIGTERM the server (it shuts its kernels down), then SIGKILL its process group if it lingers."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=SERVER_STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            pass
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=SERVER_STOP_TIMEOUT_S)


@contextlib.contextmanager
def running_jupyter_lab(root_dir, state_dir):
    """Run ``jupyter lab`` on a free 127.0.0.1 port with a random token, serving ``root_dir``.

    Its config, runtime files, user settings, workspaces and log live under ``state_dir``; the
    browser reaches ``window.jupyterapp`` (``expose_app_in_browser``). Yields a ``LabServer``; on exit
    its kernels are shut down and the server is stopped (killed if it lingers).

    Raises:
        RuntimeError: the server exited during start-up (the message carries its log).
        TimeoutError: it did not answer ``/api/status`` within ``SERVER_START_TIMEOUT_S``.
    """
    _write_lab_settings(state_dir / "settings")
    port, token = free_loopback_port(), secrets.token_hex(16)
    env = dict(os.environ, JUPYTER_CONFIG_DIR=str(state_dir / "config"),
               JUPYTER_RUNTIME_DIR=str(state_dir / "runtime"))
    command = [sys.executable, "-m", "jupyterlab", "--no-browser",
               "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}", "--ServerApp.port_retries=0",
               f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root_dir}",
               "--ServerApp.allow_root=True", "--ServerApp.terminals_enabled=False",
               "--LabApp.expose_app_in_browser=True", "--LabApp.news_url=None",
               "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
               "--LabApp.extension_manager=readonly",
               f"--LabApp.user_settings_dir={state_dir / 'settings'}",
               f"--LabApp.workspaces_dir={state_dir / 'workspaces'}"]
    log_path = state_dir / "server.log"
    with open(log_path, "wb") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                   env=env, start_new_session=True)
    server = LabServer(f"http://127.0.0.1:{port}", token, log_path)
    try:
        _wait_until_up("jupyter lab", lambda: server.api("GET", "/api/status", timeout_s=2) is not None, process,
                       server.log_tail)
        yield server
    finally:
        try:
            if process.poll() is None:
                server.shutdown_kernels()
        finally:
            _stop(process)


class TensorBoardServer:
    """A running ``tensorboard``: ``url`` (``http://127.0.0.1:<port>``) and its log file."""

    def __init__(self, url, log_path):
        self.url, self.log_path = url, log_path

    def get_json(self, path, timeout_s=10):
        """GET ``path`` (``/data/...``) and return the decoded JSON body."""
        with urllib.request.urlopen(f"{self.url}{path}", timeout=timeout_s) as response:
            return json.loads(response.read())

    def log_tail(self, nchars=4000):
        """The end of the server's log, for failure messages."""
        return self.log_path.read_text(errors="replace")[-nchars:]


@contextlib.contextmanager
def running_tensorboard(logdir, state_dir, ready):
    """Run ``python -m tensorboard.main --logdir logdir`` on a free 127.0.0.1 port (Python loader, no data
    server); wait until ``ready(server)`` is true (e.g. the graphs plugin lists the run), then yield a
    ``TensorBoardServer``; on exit the server is stopped (killed if it lingers). Its log and temporary files
    (``TMPDIR``: TensorBoard's ``.tensorboard-info``) live under ``state_dir``.

    Raises:
        RuntimeError: the server exited during start-up (the message carries its log).
        TimeoutError: ``ready`` was not true within ``SERVER_START_TIMEOUT_S``.
    """
    port = free_loopback_port()
    command = [sys.executable, "-m", "tensorboard.main", f"--logdir={logdir}", "--host=127.0.0.1", f"--port={port}",
               "--load_fast=false", "--reload_interval=0"]
    env = dict(os.environ, TMPDIR=str(state_dir))
    log_path = state_dir / "tensorboard.log"
    with open(log_path, "wb") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                   env=env, start_new_session=True)
    server = TensorBoardServer(f"http://127.0.0.1:{port}", log_path)
    try:
        _wait_until_up("tensorboard", lambda: ready(server), process, server.log_tail)
        yield server
    finally:
        _stop(process)
