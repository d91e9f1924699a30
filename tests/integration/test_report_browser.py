"""``report.html`` in a real headless Chromium (Selenium + chromedriver), 1280 px wide: a
simulated run folder of the default scenario, plotted and reported through the command
line, and a simulated comparison; each page loads without console errors or fetched
resources, has no horizontal scroll, every image decodes, and the numbers it shows are
those of the folder's files (the run's CSV files and summary.json to 3 significant
digits; the comparison's answer is compare.json's speed-ups and intervals)."""

from __future__ import annotations

import csv
import json
import os
import re
import shutil

import pytest

from coflowbed.analysis.report.html import MAX_ROWS, csv_files
from coflowbed.analysis.report.markup import cell
from tests.cli import SCENARIOS, coflowbed_ok

pytestmark = [pytest.mark.browser, pytest.mark.processes, pytest.mark.slow]
WIDTH = 1280  # px: the window the pages must fit without horizontal scrolling

webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed")
if not (shutil.which("chromium") and shutil.which("chromedriver")):
    pytest.skip("needs chromium and chromium-driver (Debian packages)", allow_module_level=True)


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    """A simulated run folder with its plots and report."""
    out = tmp_path_factory.mktemp("report") / "sim-default"
    coflowbed_ok("simulate", SCENARIOS / "default.yaml", "--out", out, timeout=300)
    coflowbed_ok("plot", out)
    coflowbed_ok("report", out)
    return out


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    """A headless Chromium that keeps the page's console messages.  Its temporary files
    (the profile lock's socket directory, which it leaves in ``$TMPDIR``) go to a
    directory of this test run, not to /tmp."""
    opts = webdriver.ChromeOptions()
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"):
        opts.add_argument(arg)
    opts.add_argument(f"--window-size={WIDTH},900")
    opts.binary_location = shutil.which("chromium")
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    tmp = tmp_path_factory.mktemp("chromium")
    env = {**os.environ, "TMPDIR": str(tmp)}
    service = webdriver.ChromeService(executable_path=shutil.which("chromedriver"), env=env)
    drv = webdriver.Chrome(options=opts, service=service)
    yield drv
    drv.quit()


def _open(browser, folder):
    """Load the folder's report; return the console messages of the load."""
    browser.get((folder / "report.html").as_uri())
    return browser.get_log("browser")


def _widths(browser) -> tuple[int, int, int]:
    """(window's inner width, page's client width, page's scroll width) in px."""
    return tuple(
        browser.execute_script(
            "const d = document.documentElement;"
            "return [window.innerWidth, d.clientWidth, d.scrollWidth];"
        )
    )


def _cells(browser, name):
    """The rows of table ``name`` as lists of cell texts (header first)."""
    return browser.execute_script(
        "return [...document.querySelector(`table[data-table='${arguments[0]}']`).rows]"
        ".map(r => [...r.cells].map(c => c.textContent));",
        name,
    )


def test_the_page_loads_cleanly_and_every_image_decodes(report, browser):
    logs = _open(browser, report)
    assert [e for e in logs if e["level"] in ("SEVERE", "WARNING")] == []
    widths = browser.execute_script("return [...document.images].map(i => i.naturalWidth)")
    assert len(widths) == len(list(report.glob("*.png"))) >= 3
    assert all(w > 0 for w in widths), widths
    fetched = browser.execute_script(
        "return performance.getEntriesByType('resource').map(e => e.name)"
    )
    assert [u for u in fetched if not u.startswith("data:")] == []


def test_the_run_page_fits_1280_px_without_horizontal_scroll(report, browser):
    _open(browser, report)
    inner, client, scroll = _widths(browser)
    assert inner == WIDTH and scroll <= client <= WIDTH


def test_every_csv_table_shows_the_file_to_three_digits(report, browser):
    _open(browser, report)
    files = csv_files(report)
    assert {"coflows.csv", "flows.csv", "compute.csv"} <= {p.name for p in files}
    for path in files:
        rows = list(csv.reader(path.open(newline="")))
        if rows:
            shown = [rows[0]] + [[cell(c) for c in r] for r in rows[1 : MAX_ROWS + 1]]
            assert _cells(browser, path.name) == shown, path.name


def test_key_figures_and_type_summary_equal_the_run_files(report, browser):
    _open(browser, report)
    summary = json.loads((report / "summary.json").read_text())
    key = {r[0]: r[1] for r in _cells(browser, "key")[1:]}
    for name in ("iteration_time_s", "avg_cct_s", "p95_cct_s", "max_cct_s"):
        assert float(key[name]) == pytest.approx(summary[name], rel=5e-3), name
    rows = list(csv.DictReader((report / "coflows.csv").open()))
    types = {r[0]: r for r in _cells(browser, "types")[1:]}
    assert set(types) == {r["ctype"] for r in rows}
    for t, cells in types.items():
        mine = [r for r in rows if r["ctype"] == t]
        assert int(cells[1]) == len(mine)
        assert int(cells[3]) == sum(int(r["bytes"]) for r in mine)
        top = max(float(r["cct_s"]) for r in mine)
        assert float(cells[6]) == pytest.approx(top, rel=5e-3)


@pytest.fixture(scope="module")
def comparison(tmp_path_factory):
    """A simulated ``compare --repeat 3 --seeds 1,2,3`` folder of tiny-moe with its
    report (and so every run's page)."""
    out = tmp_path_factory.mktemp("report") / "cmp-tiny-moe"
    args = ("compare", SCENARIOS / "tiny-moe.yaml", "--policies", "fair,hermod", "--sim")
    coflowbed_ok(*args, "--repeat", "3", "--seeds", "1,2,3", "--out", out, timeout=300)
    coflowbed_ok("report", out)
    return out


def test_a_comparison_page_fits_1280_px_and_every_image_loads(comparison, browser):
    logs = _open(browser, comparison)
    assert [e for e in logs if e["level"] in ("SEVERE", "WARNING")] == []
    inner, client, scroll = _widths(browser)
    assert inner == WIDTH and scroll <= client <= WIDTH
    widths = browser.execute_script("return [...document.images].map(i => i.naturalWidth)")
    pngs = {p.name for p in comparison.glob("*.png")}
    assert {"compare_iteration.png", "compare_cct_types.png", "compare_cct_cdf.png"} <= pngs
    assert len(widths) == len(pngs) and all(w > 0 for w in widths), widths


def test_the_headline_is_compare_jsons_answer(comparison, browser):
    _open(browser, comparison)
    answer = browser.execute_script("return document.querySelector('.answer').textContent")
    saved = json.loads((comparison / "compare.json").read_text())
    hermod = next(s for s in saved["stats"] if s["policy"] == "hermod")["speedups"]
    expected = [
        hermod[key][part]
        for key in ("speedup_iteration_time", "speedup_avg_cct")
        for part in ("value", "ci_low", "ci_high")
    ]
    shown = [float(x) for x in re.findall(r"\d+\.\d+", answer)]
    assert shown == pytest.approx(expected, rel=5e-3), answer
    assert answer.startswith("hermod is ") and " than fair on average CCT (" in answer
    body = browser.execute_script("return document.body.textContent")
    assert "differences between seeds 1, 2, 3" in body


def test_every_run_page_is_linked_and_loads(comparison, browser):
    _open(browser, comparison)
    links = browser.execute_script(
        "return [...document.querySelectorAll('table[data-table=runs] a')].map(a => a.href)"
    )
    assert len(links) == 2 * 3
    browser.get(links[-1])
    assert browser.execute_script("return document.title") == "hermod/r3"
    inner, client, scroll = _widths(browser)
    assert scroll <= client <= WIDTH
    size = browser.execute_script(
        "const i = document.querySelector('img[alt=\"timeline.png\"]');"
        "return [i.naturalWidth, i.naturalHeight]"
    )
    assert size[0] > 0 and 0 < size[1] <= 880  # the timeline fits a screen
