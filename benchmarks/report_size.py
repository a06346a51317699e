"""Size of ``report.html`` and the time it takes to open, for 20,000 samples x 3 runs.

    .venv/bin/python benchmarks/report_size.py [--samples 20000] [--runs 3] [--out /tmp/report-size]

Writes ``--runs`` synthetic run directories of ``--samples`` samples each (BFCL-like replies of
60–250 characters with random words in them, per-sample scores, category and error type, a checker message on failures,
findings and two strategy decisions on a third of the samples; the runs disagree on a tenth of
the samples), builds the comparison report, and opens it in headless chromium (Debian's
chromium + chromium-driver through Selenium, as the browser test does). "open" is
``performance.now()`` read by the page once the first page of the sample list is rendered: from
navigation start, so reading the file and parsing the embedded JSON are included. Prompts and
tools are not in synthetic runs (they come from the dataset); each distinct prompt is stored once
in the page's string pool, so they add roughly the size of the distinct prompts.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

from toolmend.reports import write_report
from toolmend.runs import Manifest, RunDir, SampleRecord
from toolmend.schema import Finding, ToolCall

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "reports"))
from browser import chromium, open_report  # noqa: E402

CATEGORIES = ["simple_python", "multiple", "parallel", "parallel_multiple", "irrelevance", "java"]
# Free text in the replies, so that the compressed size is not flattered by repetition.
WORDS = ["the", "meeting", "room", "is", "booked", "for", "two", "hours", "next", "week", "please",
         "confirm", "attendees", "budget", "approval", "flight", "to", "Osaka", "leaves", "at", "noon",
         "with", "a", "layover", "in", "Seoul", "and", "the", "hotel", "is", "near", "the", "station",
         "remind", "me", "about", "the", "invoice", "and", "send", "the", "summary", "to", "the",
         "whole", "team", "before", "Friday"]  # fmt: skip
ERRORS = ["simple_function_checker:missing_required", "type_error:simple", "ast_decoder:decoder_failed",
          "value_error:string", "simple_function_checker:wrong_func_name"]  # fmt: skip


def make_runs(root: Path, samples: int, runs: int, seed: int = 0) -> list[Path]:
    rng = random.Random(seed)
    truth = [rng.random() < 0.7 for _ in range(samples)]
    paths = []
    for k in range(runs):
        run = RunDir.create(root, Manifest(benchmark="bfcl", model=f"model-{k}", n_planned=samples),
                            name=f"run-{k}")  # fmt: skip
        with run.writer() as w:
            for i in range(samples):
                ok = truth[i] != (rng.random() < 0.1)
                name = f"get_{rng.choice(['weather', 'stock_price', 'flight', 'recipe'])}_{i % 97}"
                args = {"city": rng.choice(["Paris", "Lima", "Osaka"]), "days": rng.randint(1, 9),
                        "note": " ".join(rng.choices(WORDS, k=rng.randint(0, 30)))}  # fmt: skip
                details: dict[str, object] = {"category": CATEGORIES[i % len(CATEGORIES)], "valid": ok}
                findings: list[Finding] = []
                events: list[dict[str, object]] = []
                if not ok:
                    details["error_type"] = rng.choice(ERRORS)
                    details["error"] = [
                        f"Invalid value for parameter 'days': {args['days']}. Expected one of [3]."
                    ]
                    findings = [
                        Finding(code="invalid_value", message="days should be 3", call=0, path="days")
                    ]
                    events = [{"code": "invalid_value", "action": "reask", "attempt": 1},
                              {"code": "invalid_value", "action": "finish", "attempt": 2}]  # fmt: skip
                else:
                    details["error_type"] = ""
                w.append(
                    SampleRecord(
                        id=f"{CATEGORIES[i % len(CATEGORIES)]}_{i}",
                        outputs=[
                            f"[{name}(city='{args['city']}', days={args['days']}, note='{args['note']}')]"
                        ],
                        calls=[ToolCall(name=name, arguments=args)],
                        findings=findings,
                        scores={"accuracy": float(ok)},
                        details=details,
                        events=events,
                        requests=1,
                        latency_s=rng.random(),
                    )
                )
        run.write_results({"metrics": {"overall_sample_weighted": sum(truth) / samples}})
        paths.append(run.path)
    return paths


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--samples", type=int, default=20_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--out", type=Path, default=Path("/tmp/report-size"))
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    paths = make_runs(args.out / "runs", args.samples, args.runs)
    start, cpu = time.perf_counter(), time.process_time()
    html = write_report(paths, out=args.out / "report", plots=True).html
    build_s, build_cpu = time.perf_counter() - start, time.process_time() - cpu
    size = html.stat().st_size
    with chromium() as driver:
        opens = []
        for _ in range(3):
            open_report(driver, html.as_uri())
            opens.append(driver.execute_script("return window.tmOpenMs"))
        rows = len(driver.find_elements("css selector", "#tm-list tr.tm-row"))
        count = driver.find_element("id", "tm-count").text
    print(f"{args.samples} samples x {args.runs} runs: report.html {size / 1e6:.1f} MB "
          f"({size / (args.samples * args.runs):.0f} bytes per sample-run), written in {build_s:.1f} s "
          f"({build_cpu:.1f} s CPU)")  # fmt: skip
    print(f"open until the list is rendered (performance.now()): {', '.join(f'{ms:.0f}' for ms in opens)} ms "
          f"(median {sorted(opens)[1]:.0f} ms); {rows} rows on the first page; {count}")  # fmt: skip


if __name__ == "__main__":
    main()
