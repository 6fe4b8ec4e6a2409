"""The report in a real headless Chromium: verdict and cards on the first screen, charts with axis titles, the
drill-down of a model probe shows its prompt and reply, no console errors. Screenshots go to reports/screenshots/."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from harness.cli import main
from tests.harness.conftest import REPO, SCENARIOS

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")
SHOTS = REPO / "reports" / "screenshots"


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("report") / "run"
    paths = [str(SCENARIOS / "recall"), str(SCENARIOS / "model"), str(SCENARIOS / "dream" / "cross-file-dedupe.yaml")]
    code = main(["run", *paths, "--strategy", "heuristic,model", "--cassettes", str(SCENARIOS / "cassettes"),
                 "--out", str(out), "--no-gates"], environ={})
    assert code == 0  # every scenario passes: the report must say PASSED
    return out / "report.html"


def test_report_is_self_contained_and_small(report: Path) -> None:
    html = report.read_text()
    assert not re.search(r"""<(script|img|link|iframe)[^>]+(src|href)=["']?https?:""", html)
    assert "<link " not in html
    assert "sourceMappingURL" not in html
    assert "Chart.js v4" in html  # the vendored library is inlined
    assert report.stat().st_size < 2_000_000  # 1.67 MB today: recall/ grew by 124 model-answered probes (issue 30)
    specs = json.loads(re.search(r'<script type="application/json" id="chart-data">(.*?)</script>', html, re.S)[1])
    assert {"per-scenario-f1", "latency", "index-lines", "trend"} <= set(specs)
    for spec in specs.values():
        for axis in spec["options"]["scales"].values():
            assert axis["title"]["display"]
            assert axis["title"]["text"]


@pytest.fixture(scope="module")
def browser():  # type: ignore[no-untyped-def]
    if not (CHROMIUM and CHROMEDRIVER):
        pytest.skip("needs Debian's chromium and chromium-driver (.ci/run installs them)")
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is in the dev extra")
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    options = Options()
    options.binary_location = CHROMIUM  # type: ignore[assignment]
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage", "--window-size=1280,900"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    yield driver
    driver.quit()


@pytest.mark.slow
def test_report_in_chromium(report: Path, browser) -> None:  # type: ignore[no-untyped-def]
    from selenium.webdriver.common.by import By

    SHOTS.mkdir(parents=True, exist_ok=True)
    browser.get(report.as_uri())
    # verdict and one card per strategy, all inside the first 900 px
    verdict = browser.find_element(By.ID, "verdict")
    assert verdict.text == "PASSED"
    assert "scenario runs passed" in browser.find_element(By.ID, "verdict-text").text
    cards = browser.find_elements(By.CSS_SELECTOR, "#cards .card")
    assert [c.get_attribute("data-strategy") for c in cards] == ["heuristic", "model", "heuristic@sqlite", "model@sqlite"]
    for el in (verdict, *cards):
        assert el.is_displayed()
        assert el.rect["y"] + el.rect["height"] <= 900
    assert "significant" in cards[1].text  # the model card carries deltas against heuristic, in words
    browser.save_screenshot(str(SHOTS / "report-first-screen.png"))
    # charts: drawn by Chart.js, with axis titles
    titles = browser.execute_script(
        "var c = window.memharnessCharts['per-scenario-f1']; return c ? [c.options.scales.x.title.text, "
        "c.options.scales.y.title.text, c.canvas.width > 0] : null;")
    assert titles is not None
    assert titles[0] == "recall f1 (0–1)"
    assert titles[1] == "scenario"
    assert titles[2] is True
    assert browser.execute_script("return Object.keys(window.memharnessCharts).length") >= 4
    browser.execute_script("document.getElementById('charts').scrollIntoView()")
    browser.save_screenshot(str(SHOTS / "report-charts.png"))
    # drill-down of a model probe: prompt version, request messages and the reply
    probe = browser.find_element(By.CSS_SELECTOR, "details.scenario .probe[data-model='yes'][data-kind='recall']")
    scenario = probe.find_element(By.XPATH, "ancestor::details[contains(@class, 'scenario')]")
    assert scenario.get_attribute("open") is None
    scenario.find_element(By.TAG_NAME, "summary").click()
    call = probe.find_element(By.CSS_SELECTOR, "details.model-call")
    call.find_element(By.TAG_NAME, "summary").click()
    assert call.find_element(By.CSS_SELECTOR, ".prompt-version").text.startswith("recall_system@")
    prompts = call.find_elements(By.CSS_SELECTOR, "pre.prompt")
    assert prompts[0].is_displayed()
    assert "Query:" in prompts[-1].text
    assert "selected_memories" in call.find_element(By.CSS_SELECTOR, "pre.reply").text
    browser.execute_script("arguments[0].scrollIntoView()", probe)
    browser.save_screenshot(str(SHOTS / "report-model-probe.png"))
    # filtering still works
    browser.find_element(By.ID, "filter").send_keys("fallback-timeout")
    visible = [d for d in browser.find_elements(By.CSS_SELECTOR, "details.scenario") if d.is_displayed()]
    assert {d.get_attribute("id") for d in visible} == {"r-fallback-timeout-model", "r-fallback-timeout-model@sqlite"}
    errors = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    assert errors == []


@pytest.mark.slow
def test_the_side_by_side_report_of_every_shipped_system_in_chromium(tmp_path: Path, browser) -> None:  # type: ignore[no-untyped-def]
    """Issue 35: `--system all` puts mem0 beside the reference and SQLite systems in one report: a card per
    system's strategy, the pairs compared in words, each system's skips with their reasons, no console error."""
    import importlib.util

    from selenium.webdriver.common.by import By

    if importlib.util.find_spec("mem0") is None:
        pytest.skip("mem0ai is not installed: pip install -e '.[mem0]' (.ci/run installs it)")
    portable = [p for p in sorted(SCENARIOS.glob("*/*.yaml"))
                if not any(line.startswith(("design:", "systems:")) for line in p.read_text().splitlines())]
    out = tmp_path / "all"
    code = main(["run", *map(str, portable), "--system", "all", "--no-gates", "--out", str(out)], environ={})
    assert code == 0
    browser.get((out / "report.html").as_uri())
    cards = [c.get_attribute("data-strategy") for c in browser.find_elements(By.CSS_SELECTOR, "#cards .card")]
    assert {"heuristic", "heuristic@sqlite", "heuristic@mem0"} <= set(cards), cards
    assert cards.index("heuristic") < cards.index("heuristic@sqlite") < cards.index("heuristic@mem0")
    SHOTS.mkdir(parents=True, exist_ok=True)
    browser.save_screenshot(str(SHOTS / "report-side-by-side.png"))  # the first screen: verdict and the cards
    page = browser.find_element(By.TAG_NAME, "body").text  # what is on the page before anything is opened
    assert "heuristic@mem0 against heuristic" in page  # paired where the probes match, in words
    assert "heuristic@mem0 against heuristic@sqlite" in page
    skipped = browser.find_element(By.ID, "r-fallback-timeout-model@mem0")  # mem0's skips, with the reason
    skipped.find_element(By.TAG_NAME, "summary").click()
    assert "skipped: mem0 implements strategies heuristic, not model" in skipped.text
    errors = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    assert errors == []
