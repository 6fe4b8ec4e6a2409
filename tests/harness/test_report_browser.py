"""The report in a real headless Chromium: it renders, logs no console errors, and the drill-down expands."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from harness.cli import main
from tests.harness.conftest import SCENARIOS

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")
webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is in the dev extra")

pytestmark = pytest.mark.skipif(not (CHROMIUM and CHROMEDRIVER),
                                reason="needs Debian's chromium and chromium-driver (.ci/run installs them)")


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("report")
    paths = [str(SCENARIOS / "recall"), str(SCENARIOS / "model"), str(SCENARIOS / "dream" / "cross-file-dedupe.yaml")]
    code = main(["run", *paths, "--strategy", "heuristic,model", "--cassettes", str(SCENARIOS / "cassettes"),
                 "--out", str(out), "--no-gates"], environ={})
    assert code == 0  # every scenario passes: the report must say PASSED
    return out / "report.html"


@pytest.fixture(scope="module")
def browser():  # type: ignore[no-untyped-def]
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    options = Options()
    options.binary_location = CHROMIUM  # type: ignore[assignment]
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage", "--window-size=1280,2000"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    yield driver
    driver.quit()


def test_report_renders_without_console_errors_and_expands(report: Path, browser) -> None:  # type: ignore[no-untyped-def]
    from selenium.webdriver.common.by import By

    browser.get(report.as_uri())
    assert browser.find_element(By.ID, "verdict").text == "PASSED"
    assert browser.find_elements(By.CSS_SELECTOR, "#comparisons tr")  # the paired comparison table
    assert len(browser.find_elements(By.CSS_SELECTOR, "svg.chart")) >= 3
    first = browser.find_elements(By.CSS_SELECTOR, "details.scenario")[0]
    assert first.get_attribute("open") is None
    first.find_element(By.TAG_NAME, "summary").click()
    assert first.get_attribute("open") is not None
    assert first.find_element(By.CSS_SELECTOR, "table.probes").is_displayed()
    assert first.find_element(By.CSS_SELECTOR, "svg.chart").is_displayed()  # the span waterfall
    box = browser.find_element(By.ID, "filter")
    box.send_keys("fallback-timeout")
    visible = [d for d in browser.find_elements(By.CSS_SELECTOR, "details.scenario") if d.is_displayed()]
    assert len(visible) == 1
    browser.save_screenshot(str(report.parent / "report.png"))
    errors = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    assert errors == []


def test_report_is_self_contained(report: Path) -> None:
    html = report.read_text()
    for needle in ("http://", "https://", "<link ", "src=\"http"):
        assert needle not in html.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert report.stat().st_size < 3_000_000
