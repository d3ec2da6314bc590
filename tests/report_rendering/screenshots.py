"""Regenerate the screenshots in docs/images/ from the sample runs (needs Debian's chromium):

    .venv/bin/python tests/report_rendering/screenshots.py [docs/images]

Each sample report at a laptop's 1366 px and a phone's 390 px, the index of every sample run
(with a second copy of ``healthy``, to show two runs of one name told apart) at both widths, and
the README's ``report-screenshot.png``. Each picture is the top of the page, cut so the PNG
stays small (a few hundred KB at most).
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

from report_browser import Browser
from report_fixtures import analyzed

from runlens.io.output import write_index, write_reports

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ("exploding_gradients", "crash_shape", "overfitting", "nan_divergence")
SCREENS = {"1366": (1366, 768, 1500), "390": (390, 844, 2000)}  # width, screen height, picture height
INDEX_TALL = {"1366": 1250, "390": 2000}  # the index's cards are dense: a shorter cut stays small
README = ("sample-exploding_gradients", 1100, 1400)


def main(argv: list[str]) -> None:
    out = Path(argv[0]) if argv else ROOT / "docs" / "images"
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="runlens-shots-") as tmp:
        pages = _reports(Path(tmp))
        with Browser() as browser:
            for name, page in pages.items():
                for label, (width, height, tall) in SCREENS.items():
                    tall = INDEX_TALL[label] if name == "index" else tall
                    _shoot(browser, page, out / f"{name}-{label}.png", width, height, tall)
            name, width, tall = README
            _shoot(browser, pages[name], out / "report-screenshot.png", width, tall, tall)


def _reports(tmp: Path) -> dict[str, Path]:
    copy = tmp / "copy" / "healthy"
    shutil.copytree(ROOT / "sample_runs" / "healthy", copy)
    runs = sorted(p for p in (ROOT / "sample_runs").iterdir() if (p / "run.json").is_file()) + [copy]
    entries, pages = [], {}
    for path in runs:
        data = analyzed(path)
        if path.name in SAMPLES and path.parent.name == "sample_runs":
            page = write_reports(data, tmp / "reports", ("html",), stem=path.name)[0]
            pages[f"sample-{path.name}"] = page
            entries.append((data.diagnosis, page.name))
        else:
            entries.append((data.diagnosis, None))
    pages["index"] = write_index(entries, tmp / "reports")
    return pages


def _shoot(browser: Browser, page: Path, target: Path, width: int, height: int, tall: int) -> None:
    shot = browser.open(page, screenshot=True, viewport=(width, height), mobile=width < 600,
                        shot_height=tall).screenshot
    target.write_bytes(shot)
    print(f"{target}: {len(shot) / 1024:.0f} KB")


if __name__ == "__main__":
    main(sys.argv[1:])
