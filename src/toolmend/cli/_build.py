"""``toolmend build critic``: write a CriticTool-style critique suite from gold trajectories.

    toolmend build critic --source world --seed 0 --out suites/critic-0 [--limit 50] [--tools domain]
    toolmend build critic --variant evolved --out suites/critic-0 [--model openai/m] [--report]

Prints the number of samples per internal error type and per external fault kind, the samples
each label check dropped and the FinishAction share of external golds; the files load with the
CriticTool benchmark (``toolmend score`` / ``toolmend bench``) unchanged (the evolved ones with
``--option variant=evol``). ``--report`` builds both variants, runs the checklist critic on
each and writes ``quality.md`` and ``quality.json`` (see
:mod:`toolmend.benchmarks.critic._quality`).
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table

from toolmend._errors import ToolmendError
from toolmend.cli import _build_data as build_data
from toolmend.cli._console import console, fail

if TYPE_CHECKING:
    from toolmend.benchmarks.critic import SuiteInfo

__all__ = ["register"]


def _table(info: SuiteInfo) -> Table:
    tools = ", domain tools" if info.tools == "domain" else ""
    title = (
        f"critique suite: {info.source}{tools}, {info.variant}, seed {info.seed}, {info.traces} trajectories"
    )
    table = Table(title=title)
    table.add_column("part")
    table.add_column("kind")
    table.add_column("samples", justify="right")
    for kind, count in info.internal.items():
        table.add_row("internal", kind, str(count))
    for kind, count in info.external.items():
        table.add_row("external", kind, str(count))
    for reason, count in info.skipped.items():
        table.add_row("skipped", reason, str(count))
    for check, count in info.dropped.items():
        table.add_row("dropped", check, str(count))
    for plan, count in info.evolution.items():
        table.add_row("evolution", plan, str(count))
    for who, count in info.query_sources.items():
        table.add_row("noisy query", who, str(count))
    for reason, count in info.fallbacks.items():
        table.add_row("model fallback", reason, str(count))
    return table


def _checklist_scores(root: Path, variant: str) -> dict[str, float]:
    """The checklist critic on one variant of the suite, through the one runner (`toolmend bench`)."""
    from toolmend._bench import run_bench

    with tempfile.TemporaryDirectory() as runs:
        result = run_bench(
            "critictool", "checklist", data=root, runs_dir=runs, cache=False, progress=False,
            load_options={"variant": "evol" if variant == "evolved" else "base"},
        )  # fmt: skip
    return dict(result.summary.metrics)


def critic(
    out: Annotated[Path, typer.Option("--out", help="Folder to write the suite into.")],
    source: Annotated[str, typer.Option(help="Gold trajectories: world, nestools or bfcl.")] = "world",
    seed: Annotated[int, typer.Option(help="Same seed, same files byte for byte (rule-based variants).")] = 0,
    limit: Annotated[int | None, typer.Option(help="Use at most this many trajectories.")] = None,
    data: Annotated[
        Path | None, typer.Option(help="Data folder for nestools/bfcl (default: shared).")
    ] = None,
    variant: Annotated[
        str, typer.Option(help="base, or evolved (CriticTool's SRM evolution; files evol_data_*).")
    ] = "base",
    model: Annotated[
        str | None,
        typer.Option(help="Evolved variant: this model rewrites the noisy requests (rule fallback)."),
    ] = None,
    evolution: Annotated[
        list[str] | None,
        typer.Option(
            help="Evolved variant: only these (repeatable): long_context, extra_tools, "
            "noisy_query, harder_tools, mixed."
        ),  # fmt: skip
    ] = None,
    base_url: Annotated[
        str | None, typer.Option("--base-url", help="OpenAI-compatible server URL for --model openai/...")
    ] = None,
    report: Annotated[
        bool, typer.Option(help="Also build the other variant and write quality.md / quality.json.")
    ] = False,
    tools: Annotated[
        str,
        typer.Option(
            help="world: all (every world tool) or domain (the task's domains and --distractors others)."
        ),
    ] = "all",
    distractors: Annotated[int, typer.Option(help="With --tools domain: tools from other domains.")] = 3,
) -> None:
    """Build a critique suite (internal and external errors) in CriticTool's format."""
    from toolmend.benchmarks.critic import build_suite
    from toolmend.benchmarks.critic._build import VARIANTS

    if variant not in VARIANTS:
        fail(f"--variant must be base or evolved; got {variant!r}")
    if data is not None and not data.exists():
        fail(f"--data {data}: no such file or folder")
    if model is not None and variant != "evolved":
        fail("--model rewrites requests of the evolved variant: add --variant evolved")
    out_console = console()
    if limit is not None and limit < 1:
        fail(f"--limit must be 1 or more, got {limit}")
    options = {
        "source": source, "seed": seed, "out": out, "limit": limit, "data": data,
        "tools": tools, "distractors": distractors,
    }  # fmt: skip
    variants = [variant, *([v for v in VARIANTS if v != variant] if report else [])]
    infos = {}
    try:
        rewriter = None
        if model is not None:
            from toolmend.models import get_model

            connection: dict[str, Any] = {"base_url": base_url} if base_url else {}
            rewriter = get_model(model, **connection)
        for name in variants:
            extra = {"model": rewriter, "evolutions": evolution} if name == "evolved" else {}
            infos[name] = build_suite(**options, variant=name, **extra)  # type: ignore[arg-type]
            out_console.print(_table(infos[name]))
            share = infos[name].finish_share
            out_console.print(f"FinishAction share of external golds: {share:.1%}")
        if report:
            from toolmend.benchmarks.critic._quality import suite_quality

            scores = {name: _checklist_scores(out, name) for name in variants}
            quality = suite_quality(out, infos=infos, critic=scores)
    except ToolmendError as exc:
        fail(str(exc))
    out_console.print(f"wrote {sum(len(i.files) for i in infos.values())} files under {out}")
    if report:
        (out / "quality.json").write_text(quality.model_dump_json(indent=1) + "\n", encoding="utf-8")
        (out / "quality.md").write_text(quality.markdown(), encoding="utf-8")
        out_console.print(quality.markdown(), markup=False, highlight=False)
        out_console.print(f"wrote {out / 'quality.md'} and {out / 'quality.json'}")


def register(app: typer.Typer) -> None:
    """Add the ``build`` command group (with ``critic``) to ``app``."""
    build = typer.Typer(help="Build datasets and suites.", no_args_is_help=True)
    build.command("critic")(critic)
    build_data.register(build)
    app.add_typer(build, name="build")
