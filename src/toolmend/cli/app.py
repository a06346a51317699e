"""The root typer app. Each command lives in its own module and is registered here."""

from __future__ import annotations

import typer

from toolmend._version import __version__
from toolmend.benchmarks import BENCHMARKS, STRATEGIES, SUITES
from toolmend.cli import bench, build, cache, check, report, score, train
from toolmend.models import MODELS


def _help() -> str:
    """The root help: what the command does and every plug-in name it knows (entry points too)."""
    return "\n\n".join(
        [
            "Measure, catch, recover from and train away LLM tool-call errors.",
            f"Suites (toolmend bench SUITE, data built on demand): {', '.join(SUITES.names()) or 'none'}.",
            f"Benchmarks: {', '.join(BENCHMARKS.names())}.",
            f"Model backends (--model NAME or NAME/...): {', '.join(MODELS.names())}.",
            f"Strategies (--strategy): {', '.join(STRATEGIES.names()) or 'none registered'}.",
        ]
    )


app = typer.Typer(
    name="toolmend",
    help=_help(),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"toolmend {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version."
    ),
) -> None:
    """Measure, catch, recover from and train away LLM tool-call errors (see the list above)."""


for _command in (bench, build, cache, check, report, score, train):
    _command.register(app)


def main() -> None:
    """Console-script entry point."""
    app()
