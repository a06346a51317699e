"""Report content from hand-made run directories: breakdowns, worst samples, escaping, self-containment."""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path

import pytest

from toolmend.reports import build_report, load_views, render_html, render_markdown, write_report
from toolmend.runs import InfraError, Manifest, RunDir, SampleRecord

EVIL = '<script>alert("x")</script> ``` [f(a=1)]'


def _run(root: Path, model: str, scores: list[float], metrics: dict[str, float]) -> Path:
    run = RunDir.create(root, Manifest(benchmark="bfcl", model=model, config={"bench": {"mode": "compat"}}))
    cats = ["simple", "simple", "parallel", "parallel"]
    with run.writer() as w:
        for i, (score, cat) in enumerate(zip(scores, cats, strict=True)):
            w.append(
                SampleRecord(
                    id=f"s{i}",
                    outputs=[EVIL if i == 0 else f"[g(b={i})]"],
                    scores={"accuracy": score},
                    details={"category": cat, "error_type": "" if score else f"type_{i % 2}"},
                )
            )
        w.append(SampleRecord(id="s9", error=InfraError(message="HTTP 503", status=503)))
    run.write_results({"metrics": metrics, "n_samples": 5})
    return run.path


@pytest.fixture
def runs(tmp_path: Path) -> list[Path]:
    a = _run(
        tmp_path, "model-a", [0.0, 1.0, 1.0, 0.0], {"accuracy": 0.5, "overall_pct": 50.0, "n_samples": 4}
    )
    b = _run(
        tmp_path, "model-b", [1.0, 1.0, 0.0, 1.0], {"accuracy": 0.75, "overall_pct": 75.0, "n_samples": 4}
    )
    return [a, b]


def test_breakdowns_and_worst_samples_are_hand_checkable(runs: list[Path]) -> None:
    view = load_views([runs[0]])[0]
    assert view.primary == "accuracy" and len(view.failed) == 1 and len(view.scored) == 4
    by = view.breakdowns()
    assert [(g.group, g.n, g.mean) for g in by["category"]] == [("parallel", 2, 0.5), ("simple", 2, 0.5)]
    assert [(g.group, g.n) for g in by["error_type"]] == [("none", 2), ("type_0", 1), ("type_1", 1)]
    assert [r.id for r in view.worst(2)] == ["s0", "s3"]


def test_markdown_has_metrics_breakdowns_errors_and_fenced_outputs(runs: list[Path]) -> None:
    report = build_report(load_views(runs), worst=2)
    assert report.plotted == ["accuracy", "overall_pct"]
    md = render_markdown(report)
    assert "| accuracy | 50.0 | 75.0 |" in md
    assert "## By category" in md and "## By error type" in md
    assert "| parallel | 2 | 50.0 | 2 | 50.0 |" in md
    assert "2 samples failed with infrastructure errors" in md and "HTTP 503" in md
    # The output holds ``` so the fence must be longer.
    assert "````\n" + EVIL + "\n````" in md


class _Refs(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.refs: list[tuple[str, str, str]] = []
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        for name, value in attrs:
            if name in ("src", "href", "srcset", "action", "data", "xlink:href") or name.startswith("on"):
                self.refs.append((tag, name, value or ""))


def test_html_is_self_contained_with_plots_and_escaped_outputs(runs: list[Path]) -> None:
    page = render_html(build_report(load_views(runs), worst=2))
    parser = _Refs()
    parser.feed(page)
    # Only links within the page (flipped samples → the sample browser; SVG glyph uses).
    assert parser.refs and all(v.startswith("#") for _, _, v in parser.refs)
    assert {(t, n) for t, n, _ in parser.refs} <= {("a", "href"), ("use", "xlink:href"), ("use", "href")}
    scripts = [a for t, a in parser.tags if t == "script"]
    assert scripts == [{"type": "application/json", "id": "tm-data"}, {}]  # inline only, no src
    tags = [t for t, _ in parser.tags]
    assert "link" not in tags and "iframe" not in tags and "img" not in tags
    # metrics, by category, by error type: inline SVG figures
    assert tags.count("figure") == 3 and tags.count("svg") == 3
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in page and EVIL not in page
    # In the browser's JSON the raw output is there, with "<" escaped so it cannot close the block.
    assert "\\u003cscript>alert" in page and page.count("</script>") == 2
    assert "model-a" in page and "model-b" in page


def test_write_report_without_plots_and_with_nothing(tmp_path: Path, runs: list[Path]) -> None:
    files = write_report(runs, out=tmp_path / "out", plots=False)
    assert "<img" not in files.html.read_text()
    assert files.markdown.read_text().startswith("# toolmend report: bfcl")
    with pytest.raises(Exception, match="at least one run"):
        write_report([], out=tmp_path)


def test_unfinished_run_reports_without_metrics(tmp_path: Path) -> None:
    run = RunDir.create(tmp_path, Manifest(benchmark="nestools", model="m"))
    with run.writer() as w:
        w.append(SampleRecord(id="a", scores={"tree_pass": 0.0}, details={"depth": 2}))
    md = render_markdown(build_report(load_views([run.path])))
    assert "partial: 1 done" in md and "| tree_pass | 0.0 |" in md
    assert "## By depth" not in md  # one group is not a breakdown


def test_a_run_with_one_group_still_gets_its_column_in_a_comparison(tmp_path: Path, runs: list[Path]) -> None:
    perfect = _run(tmp_path, "model-c", [1.0, 1.0, 1.0, 1.0], {"accuracy": 1.0})
    md = render_markdown(build_report(load_views([runs[0], perfect])))
    assert "| none | 2 | 100.0 | 4 | 100.0 |" in md
    assert "| type_0 | 1 | 0.0 | 0 | – |" in md


def test_worst_ranks_over_all_runs_and_breaks_ties_by_the_other_metrics(tmp_path: Path) -> None:
    def run(model: str, scores: dict[str, dict[str, float]]) -> Path:
        r = RunDir.create(tmp_path, Manifest(benchmark="critictool", model=model))
        with r.writer() as w:
            for sid, values in scores.items():
                w.append(SampleRecord(id=sid, scores=values))
        return r.path

    a = run(
        "a",
        {
            "s0": {"tool": 0.0, "args": 1.0},
            "s1": {"tool": 0.0, "args": 0.0},
            "s2": {"tool": 1.0, "args": 1.0},
        },
    )
    b = run(
        "b",
        {
            "s0": {"tool": 0.0, "args": 1.0},
            "s1": {"tool": 1.0, "args": 1.0},
            "s2": {"tool": 0.0, "args": 0.0},
        },
    )
    worst = build_report(load_views([a, b]), worst=2).worst
    # s0 is wrong in both runs (mean 0); s1 and s2 tie (mean 50 in both keys), s1 is seen first.
    assert [(w.id, w.run, w.score) for w in worst] == [
        ("s0", "a", 0.0),
        ("s0", "b", 0.0),
        ("s1", "a", 0.0),
        ("s1", "b", 100.0),
    ]
    single = build_report(load_views([a]), worst=1).worst
    assert [w.id for w in single] == ["s1"]  # wrong on more counts than s0, though later in id order
