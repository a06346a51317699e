"""The report's sample browser in real headless chromium (Debian's chromium + chromium-driver,
driven by Selenium): two BFCL runs on the real data, filter, open, search, sort, screenshot."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from browser import chromium, open_report, wait_for
from repo_module import repo_module

from toolmend._bench import run_bench
from toolmend.benchmarks import BENCHMARKS, load_builtin_benchmarks
from toolmend.benchmarks.bfcl._decode import render_python
from toolmend.reports import write_report

CATEGORIES = ["simple_python"]


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory, data_dir: Path) -> Path:
    root = tmp_path_factory.mktemp("browser")
    load_builtin_benchmarks("bfcl")
    samples = BENCHMARKS.get("bfcl")().load(data_dir / "bfcl", categories=CATEGORIES)[:30]
    preds = root / "pred.jsonl"
    with preds.open("w") as f:
        for i, s in enumerate(samples):
            out = render_python(s.target) if i % 3 else ("[calculate(x=1)]" if i % 2 else "not a call")
            f.write(json.dumps({"id": s.id, "output": out}) + "\n")
    common = {"data": data_dir / "bfcl", "categories": CATEGORIES, "limit": 30, "runs_dir": root / "runs",
              "progress": False, "cache": False}  # fmt: skip
    gold = run_bench("bfcl", "scripted", **common)
    replay = run_bench("bfcl", f"replay/{preds}", **common)
    return write_report([gold.run_dir, replay.run_dir], out=root / "cmp").html


def _rows(driver) -> list:  # type: ignore[no-untyped-def]
    return driver.find_elements("css selector", "#tm-list tr.tm-row")


def test_browse_filter_open_search_sort(report: Path, tmp_path: Path) -> None:
    from selenium.webdriver.support.ui import Select

    with chromium(1280, 1600) as driver:
        open_report(driver, report.as_uri())
        assert len(_rows(driver)) == 30
        # Filter to one error type: only the replay's undecodable replies (ids 0, 6, 12, …) remain.
        Select(driver.find_element("id", "tm-filter-error_type")).select_by_visible_text(
            "ast_decoder:decoder_failed"
        )
        rows = _rows(driver)
        assert [r.get_attribute("data-id") for r in rows] == [f"simple_python_{i}" for i in range(0, 30, 6)]
        rows[0].click()
        detail = driver.find_element("id", "tm-detail")
        prompt = detail.find_element("css selector", ".tm-prompt").text
        assert "SYSTEM" in prompt and "Find the area of a triangle" in prompt
        gold = detail.find_element("css selector", "pre.tm-gold").text
        assert gold == "[calculate_triangle_area(base=10, height=5, unit='units')]"
        runs = detail.find_elements("css selector", ".tm-run")
        assert len(runs) == 2
        # Each run's answer: the gold oracle's calls (rendered as a tool call) and the broken reply.
        assert "calculate_triangle_area(" in runs[0].find_element("css selector", ".tm-transcript").text
        assert "not a call" in runs[1].find_element("css selector", ".tm-transcript").text
        assert "cannot decode" in runs[1].find_element("css selector", ".tm-why").text
        assert driver.execute_script("return location.hash") == "#sample=simple_python_0"

        # Search for an id (with the filter cleared), then sort by score (ascending: failures first).
        Select(driver.find_element("id", "tm-filter-error_type")).select_by_index(0)
        search = driver.find_element("id", "tm-search")
        search.send_keys("simple_python_1")
        ids = [r.get_attribute("data-id") for r in _rows(driver)]
        assert ids == ["simple_python_1"] + [f"simple_python_{i}" for i in range(10, 20)]
        Select(driver.find_element("id", "tm-run")).select_by_index(1)
        Select(driver.find_element("id", "tm-sort")).select_by_value("score-asc")
        scores = [r.find_elements("css selector", "td.tm-score")[1].text for r in _rows(driver)]
        assert scores == sorted(scores, key=float) and scores[0] == "0.0" and scores[-1] == "100.0"
        shot = tmp_path / "browser.png"
        assert driver.save_screenshot(str(shot)) and shot.stat().st_size > 10_000


def test_flip_links_open_the_sample(report: Path) -> None:
    with chromium() as driver:
        open_report(driver, report.as_uri())
        link = driver.find_element("css selector", "p.flips a")
        sid = link.text
        link.click()
        assert wait_for(driver, "#tm-detail h3").text == sid


def test_many_samples_are_paged_and_filterable(tmp_path: Path) -> None:
    """The 20,000 x 3 measurement's generator at 1,000 x 3: the gzipped data inflated by the page,
    paging, the "changed" filter, and the page's own open time (printed, never asserted;
    docs/benchmarks.md has the 20,000 x 3 figures)."""

    from selenium.webdriver.support.ui import Select

    module = repo_module("benchmarks/report_size.py")
    html = write_report(module.make_runs(tmp_path / "runs", 1000, 3), out=tmp_path / "r", plots=False).html
    assert 'type="application/gzip-base64"' in html.read_text()  # over 1 MB of JSON: embedded gzipped
    with chromium() as driver:
        open_report(driver, html.as_uri())
        count = driver.find_element("id", "tm-count")
        assert count.text == "1000 of 1000 samples · page 1 of 20" and len(_rows(driver)) == 50
        driver.find_element("id", "tm-next").click()
        assert count.text.endswith("page 2 of 20")
        assert _rows(driver)[0].get_attribute("data-id") == "parallel_50"  # the 51st sample
        Select(driver.find_element("id", "tm-filter-changed")).select_by_visible_text("yes")
        changed = int(count.text.split()[0])
        assert 0 < changed < 1000
        assert all("changed" in r.text for r in _rows(driver))
        opened = driver.execute_script("return window.tmOpenMs")
        print(f"1000 x 3: {html.stat().st_size / 1e6:.1f} MB, list rendered {opened:.0f} ms after navigation")
