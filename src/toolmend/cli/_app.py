"""The root typer app. Each command lives in its own module and is registered here."""

from __future__ import annotations

import gc
from pathlib import Path
from typing import Any, NoReturn

import typer

# typer ships its own copy of click (typer._click) and raises its exception classes.
from typer._click.exceptions import ClickException, NoArgsIsHelpError, UsageError
from typer.core import TyperGroup

from toolmend._version import __version__
from toolmend.benchmarks import BENCHMARKS, STRATEGIES, SUITES
from toolmend.cli import _bench as bench
from toolmend.cli import _build as build
from toolmend.cli import _cache as cache
from toolmend.cli import _check as check
from toolmend.cli import _mcp as mcp_guard
from toolmend.cli import _report as report
from toolmend.cli import _score as score
from toolmend.cli import _serve as serve
from toolmend.cli import _train as train
from toolmend.cli._console import started_by_main
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


def _os_reason(exc: OSError | UnicodeError) -> str:
    if isinstance(exc, UnicodeDecodeError):
        return f"input is not UTF-8 text ({exc.reason} at byte {exc.start})"
    if isinstance(exc, UnicodeError):
        return f"text cannot be written ({exc})"
    name = exc.filename
    if isinstance(exc, FileExistsError) and name is not None and not Path(name).is_dir():
        return f"{name}: exists and is not a directory"
    reason = exc.strerror or str(exc)
    return f"{name}: {reason.lower()}" if name is not None else reason


def _click_reason(exc: ClickException) -> str:
    """Click's own message on one line, with where to find help for a usage error."""
    text = " ".join(exc.format_message().split())
    ctx = exc.ctx if isinstance(exc, UsageError) else None
    return f"{text} (see '{ctx.command_path} -h')" if ctx is not None else text


class _OneLineErrors(TyperGroup):
    """Every error ends as one ``error:`` line on stderr, never a traceback or a box:

    - unreadable or unwritable paths, whichever command hits them (an ``--out`` that is a file, a
      folder without write access), exit 2;
    - click's own parse errors (an unknown option or command, a missing argument, a value that
      is not an int or below an option's minimum) exit 2, as click's do. A command given without
      its arguments still shows its help (``no_args_is_help``).
    """

    def make_context(self, *args: Any, **kwargs: Any) -> Any:
        # The root's own options are parsed here, before invoke() runs.
        try:
            return super().make_context(*args, **kwargs)
        except ClickException as exc:
            _fail(exc)

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except (OSError, UnicodeError) as exc:
            typer.echo(f"error: {_os_reason(exc)}", err=True)
            raise typer.Exit(2) from None
        except ClickException as exc:
            _fail(exc)


def _fail(exc: ClickException) -> NoReturn:
    if isinstance(exc, NoArgsIsHelpError):
        raise exc  # typer prints the help it carries
    typer.echo(f"error: {_click_reason(exc)}", err=True)
    raise typer.Exit(exc.exit_code) from None


app = typer.Typer(
    cls=_OneLineErrors,
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


for _command in (bench, build, cache, check, mcp_guard, report, score, serve, train):
    _command.register(app)


def main() -> None:
    """Console-script entry point."""
    started_by_main()
    # A command builds and keeps millions of small objects (a suite's records, parsed replies):
    # at the default threshold a collection runs every 700 allocations and walks them again,
    # about 1 s of a cold main job's CPU; cycles are rare here, so collect far less often.
    gc.set_threshold(50_000, 20, 20)
    try:
        app()
    finally:
        # The interpreter's last collection would walk every object the command made (a suite, its
        # embeddings, the records): about a second after the output ends, for memory the OS takes
        # back anyway. Frozen objects are left out of it.
        gc.freeze()
