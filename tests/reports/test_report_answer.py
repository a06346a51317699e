"""A report leads with the answer: the headline metric first and marked, every metric defined
(hover and glossary), the sample browser linked from the top, worst samples beside their gold
answer, and no column that no sample fills."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from browser import chromium, open_report

from toolmend._bench import run_bench
from toolmend.reports import build_report, load_views, render_html, render_markdown, write_report
from toolmend.runs import Manifest, RunDir, SampleRecord

CRITIC_METRICS = {
    "parse_rate": 100.0, "detect": 87.6, "category": 72.0, "tool": 68.7, "args": 51.0, "skip_retry": 100.0,
    "finish_break": 100.0, "retry": 100.0, "break": 100.0, "skip_finish_tool": 72.6, "skip_finish_args": 45.0,
    "overall": 71.6, "tool_select_error/tool": 0.0,
}  # fmt: skip


def _critic_run(root: Path) -> Path:
    """A run of the critic suite as the runner writes it (metrics in percent, as CriticTool's are),
    with no category and no finding on any sample."""
    run = RunDir.create(
        root, Manifest(benchmark="critic", model="checklist", config={"bench": {"mode": "compat"}})
    )
    with run.writer() as w:
        for i in range(4):
            w.append(SampleRecord(id=f"c{i}", outputs=[f'{{"name": "t{i}"}}'], scores={"tool": float(i % 2)}))
    run.write_results({"metrics": CRITIC_METRICS, "n_samples": 4})
    return run.path


def test_the_headline_comes_first_marked_and_every_metric_is_defined(tmp_path: Path) -> None:
    report = build_report(load_views([_critic_run(tmp_path)]), worst=2)
    assert report.answer == "overall" and report.metrics[0] == "overall"
    assert set(report.definitions) == set(CRITIC_METRICS)
    assert "tool_select_error samples only" in report.definitions["tool_select_error/tool"]

    md = render_markdown(report)
    assert md.index("**Headline — overall: 71.6**") < md.index("| run |") < md.index("## Metrics")
    head, rows = report.metrics_table()
    assert head[-1] == "what it measures" and rows[0][:2] == ["overall", "71.6"]
    assert rows[0][-1].startswith("headline: ") and all(row[-1] for row in rows)
    assert "## Glossary" in md and "- **detect**: " in md

    page = render_html(report, plots=False)
    # The answer, then the links (the sample browser among them), before anything else.
    answer = page.index('class="tm-answer"')
    nav = page.index('<nav class="tm-nav">')
    assert answer < nav < page.index('id="metrics"')
    assert re.search(r'<nav class="tm-nav">.*<a href="#samples">sample browser</a>.*</nav>', page)
    assert 'id="samples"' in page and 'id="glossary"' in page
    assert '<tr class="tm-answer-row"><td><abbr class="tm-metric" title="Weighted sum' in page
    assert '<abbr class="tm-metric" title="Replies that parse' in page


def test_worst_samples_stand_beside_their_gold_answer(tmp_path: Path, data_dir: Path) -> None:
    preds = tmp_path / "pred.jsonl"
    preds.write_text('{"id": "simple_python_0", "output": "[wrong_tool(x=1)]"}\n')
    run = run_bench(
        "bfcl", f"replay/{preds}", data=data_dir / "bfcl", categories=["simple_python"], limit=1,
        runs_dir=tmp_path / "runs", progress=False, cache=False,
    )  # fmt: skip
    files = write_report([run.run_dir], out=tmp_path / "out", plots=False)
    md = files.markdown.read_text()
    worst = md[md.index("## Worst-scored samples") :]
    assert "reply:" in worst and "[wrong_tool(x=1)]" in worst
    assert "gold:" in worst and "calculate_triangle_area(base=10, height=5" in worst
    page = files.html.read_text()
    section = page[page.index('id="worst"') : page.index('id="samples"')]
    assert '<div class="tm-pair">' in section and '<pre class="tm-gold">' in section
    assert "calculate_triangle_area(base=10, height=5" in section


def test_columns_no_sample_fills_are_left_out(tmp_path: Path) -> None:
    html = write_report([_critic_run(tmp_path)], out=tmp_path / "out", plots=False).html
    with chromium(1280, 1000) as driver:
        open_report(driver, html.as_uri())
        heads = [th.text for th in driver.find_elements("css selector", "#tm-head th")]
        assert heads == ["id", "checklist"]
        first = driver.find_elements("css selector", "#tm-list tr.tm-row")[0]
        assert len(first.find_elements("css selector", "td")) == 2
        # The browser is reachable from the top of the page.
        driver.find_element("css selector", 'nav.tm-nav a[href="#samples"]').click()
        assert driver.execute_script("return location.hash") == "#samples"


@pytest.mark.parametrize("benchmark", ["bfcl"])
def test_a_benchmark_without_definitions_keeps_its_table(tmp_path: Path, benchmark: str) -> None:
    run = RunDir.create(
        tmp_path, Manifest(benchmark=benchmark, model="m", config={"bench": {"mode": "compat"}})
    )
    with run.writer() as w:
        w.append(SampleRecord(id="a", outputs=["x"], scores={"accuracy": 1.0}))
    run.write_results({"metrics": {"n_samples": 1, "accuracy": 1.0}, "n_samples": 1})
    report = build_report(load_views([run.path]))
    assert report.answer == "accuracy" and report.metrics[0] == "accuracy"
    assert report.metrics_table()[0] == ["metric", "m"]
