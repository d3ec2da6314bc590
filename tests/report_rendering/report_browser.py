"""Open a local HTML file in headless Chromium and watch it over the Chrome
DevTools Protocol: console errors, exceptions, every network request, the
load time, the DOM, a screenshot.

Used by the browser test and by ``benchmarks/report_size.py``. Needs
``/usr/bin/chromium`` (Debian's package) and the ``websockets`` client.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CHROMIUM = os.environ.get("RUNLENS_CHROMIUM", "/usr/bin/chromium")
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-extensions", "--disable-default-apps", "--mute-audio", "--hide-scrollbars")


@dataclass
class PageReport:
    url: str
    requests: list[str] = field(default_factory=list)
    console_errors: list[str] = field(default_factory=list)
    load_seconds: float = float("nan")
    evaluated: Any = None
    screenshot: bytes = b""


class Browser:
    """One headless Chromium process with a fresh profile; use as a context manager."""

    def __init__(self, width: int = 1100, height: int = 1400) -> None:
        if not Path(CHROMIUM).exists():
            raise FileNotFoundError(f"{CHROMIUM} not found: install Debian's chromium package (.ci/run does)")
        self.width, self.height = width, height
        self.profile = tempfile.mkdtemp(prefix="runlens-chromium-")
        self.proc = subprocess.Popen(
            [CHROMIUM, *FLAGS, f"--user-data-dir={self.profile}", "--remote-debugging-port=0",
             f"--window-size={width},{height}", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.ws_url = self._browser_ws()
        self._ids = 0

    def _browser_ws(self) -> str:
        # Chromium prints the port it chose; port 0 avoids clashes between parallel runs.
        deadline = time.monotonic() + 60
        assert self.proc.stderr is not None
        while time.monotonic() < deadline:
            line = self.proc.stderr.readline()
            found = re.search(r"DevTools listening on (ws://\S+)", line)
            if found:
                return found.group(1)
            if not line and self.proc.poll() is not None:
                break
        self.close()
        raise RuntimeError("chromium did not start its DevTools endpoint")

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.profile, ignore_errors=True)

    def open(self, path: str | os.PathLike[str], *, evaluate: str | None = None,
             screenshot: bool = False, javascript: bool = True, dark: bool = False,
             viewport: tuple[int, int] | None = None, mobile: bool | None = None,
             shot_height: int | None = None, shot_top: int = 0, timeout: float = 60) -> PageReport:
        """Load ``path`` in a new tab and report what happened; ``evaluate``
        runs after the load event, ``dark`` emulates prefers-color-scheme,
        ``viewport`` (width, height) emulates a screen of that size (a phone's unless ``mobile``
        is False); ``shot_height`` takes the screenshot of that many pixels of the page from
        ``shot_top`` down (a full-page picture rather than one screen)."""
        from websockets.sync.client import connect

        url = Path(path).resolve().as_uri()
        report = PageReport(url=url)
        with connect(self.ws_url, max_size=None, open_timeout=timeout) as browser:
            target = self._call(browser, "Target.createTarget", {"url": "about:blank"})["targetId"]
            session = self._call(browser, "Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
            for method in ("Page.enable", "Network.enable", "Runtime.enable", "Log.enable"):
                self._call(browser, method, {}, session, report)
            width, height = viewport or (self.width, self.height)
            self._call(browser, "Emulation.setDeviceMetricsOverride",
                       {"width": width, "height": height, "deviceScaleFactor": 1,
                        "mobile": viewport is not None if mobile is None else mobile}, session, report)
            if not javascript:
                self._call(browser, "Emulation.setScriptExecutionDisabled", {"value": True}, session, report)
            if dark:
                self._call(browser, "Emulation.setEmulatedMedia",
                           {"features": [{"name": "prefers-color-scheme", "value": "dark"}]}, session, report)
            start = time.monotonic()
            self._call(browser, "Page.navigate", {"url": url}, session, report)
            self._wait_event(browser, "Page.loadEventFired", session, report, timeout)
            report.load_seconds = time.monotonic() - start
            if evaluate:
                result = self._call(browser, "Runtime.evaluate", {"expression": evaluate, "returnByValue": True},
                                    session, report)
                report.evaluated = result.get("result", {}).get("value")
            if screenshot:
                params: dict[str, Any] = {"format": "png"}
                if shot_height:
                    params |= {"captureBeyondViewport": True,
                               "clip": {"x": 0, "y": shot_top, "width": width, "height": shot_height, "scale": 1}}
                shot = self._call(browser, "Page.captureScreenshot", params, session, report)
                report.screenshot = base64.b64decode(shot["data"])
            self._call(browser, "Target.closeTarget", {"targetId": target})
        return report

    # -- protocol ---------------------------------------------------------
    def _call(self, ws: Any, method: str, params: dict, session: str | None = None,
              report: PageReport | None = None, timeout: float = 60) -> dict:
        self._ids += 1
        msg: dict[str, Any] = {"id": self._ids, "method": method, "params": params}
        if session:
            msg["sessionId"] = session
        ws.send(json.dumps(msg))
        deadline = time.monotonic() + timeout
        while True:
            data = json.loads(ws.recv(timeout=max(0.1, deadline - time.monotonic())))
            if data.get("id") == self._ids:
                if "error" in data:
                    raise RuntimeError(f"CDP {method} failed: {data['error']}")
                return data.get("result", {})
            if report is not None:
                _record(data, report)

    def _wait_event(self, ws: Any, name: str, session: str, report: PageReport, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while True:
            data = json.loads(ws.recv(timeout=max(0.1, deadline - time.monotonic())))
            _record(data, report)
            if data.get("method") == name and data.get("sessionId") == session:
                return


def _record(event: dict, report: PageReport) -> None:
    method, params = event.get("method"), event.get("params", {})
    if method == "Network.requestWillBeSent":
        report.requests.append(params.get("request", {}).get("url", ""))
    elif method == "Runtime.exceptionThrown":
        report.console_errors.append(json.dumps(params.get("exceptionDetails", {}))[:500])
    elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
        report.console_errors.append(json.dumps(params.get("args", []))[:500])
    elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
        report.console_errors.append(params["entry"].get("text", "")[:500])


def main(argv: list[str] | None = None) -> None:
    """``python tests/report_rendering/report_browser.py REPORT.html OUT.png [WIDTH HEIGHT]``:
    a screenshot of a report (how docs/images/report-screenshot.png is made)."""
    import sys

    args = sys.argv[1:] if argv is None else argv
    width, height = (int(args[2]), int(args[3])) if len(args) >= 4 else (1100, 1400)
    with Browser(width, height) as browser:
        report = browser.open(args[0], screenshot=True)
    Path(args[1]).write_bytes(report.screenshot)
    print(f"{args[1]}: {len(report.screenshot):,} bytes, loaded in {report.load_seconds:.2f} s")


if __name__ == "__main__":
    main()
