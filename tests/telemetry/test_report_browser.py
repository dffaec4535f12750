"""The HTML report of the recorded mesh, opened in headless Chromium: the plots are in the DOM
the browser built and are painted on the screenshot."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import List

import pytest

from qdmesh_telemetry.job import AnalysisResult
from qdmesh_telemetry.svg_plots import OUTCOME_COLOURS, PALETTE
from tests.prerequisites import require
from tests.telemetry.png import colour_counts

pytestmark = pytest.mark.timeout(900)

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def chromium(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    binary = shutil.which("chromium")
    require(binary is not None, "Debian's chromium (headless) for the report test")
    profile = tmp_path / f"profile-{len(list(tmp_path.glob('profile-*')))}"
    command: List[str] = [str(binary), *FLAGS, f"--user-data-dir={profile}", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)


def hex_rgb(colour: str) -> tuple:
    return tuple(int(colour[i:i + 2], 16) for i in (1, 3, 5))


def test_report_plots_render_in_chromium(analysis: AnalysisResult, tmp_path: Path) -> None:
    url = analysis.report.resolve().as_uri()
    dom = chromium(tmp_path, "--dump-dom", url)
    assert dom.returncode == 0, dom.stderr[-2000:]
    html = dom.stdout
    for plot in ("throughput", "traffic-matrix", "outcomes"):
        assert f'data-plot="{plot}"' in html, plot
    # The browser parsed the SVG: one polyline per busy address, a 3x3 heat map with the four
    # used links non-zero, and the outcome segments of tel.local (accepted and rejected).
    assert len(re.findall(r'<polyline class="series"', html)) >= 3
    cells = re.findall(r'class="cell" data-source="(\w)" data-target="(\w)" data-value="([\d.]+)"', html)
    assert len(cells) == 9
    assert {(s, t) for s, t, v in cells if float(v) > 0} == {("A", "B"), ("B", "C"), ("C", "B"), ("B", "A")}
    assert 'data-outcome="rejected" data-value="5"' in html

    shot = tmp_path / "report.png"
    painted = chromium(tmp_path, f"--screenshot={shot}", "--window-size=1100,1600", "--hide-scrollbars", url)
    assert painted.returncode == 0 and shot.exists(), painted.stderr[-2000:]
    colours = colour_counts(shot)
    assert colours[hex_rgb(OUTCOME_COLOURS["accepted"])] > 200, "no accepted bar painted"
    assert colours[hex_rgb(OUTCOME_COLOURS["rejected"])] > 20, "no rejected bar painted"
    assert sum(colours[hex_rgb(c)] for c in PALETTE[:3]) > 100, "no throughput lines painted"
    heat = sum(n for (r, g, b), n in colours.items() if b == 255 and r == g and r < 250)
    assert heat > 4 * 30 * 30, "heat map cells not painted"
