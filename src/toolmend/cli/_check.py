"""``toolmend check``: parse a model's output, check its calls against tool schemas, optionally repair.

::

    toolmend check --tools tools.json --calls output.txt
    toolmend check --tools tools.json --calls output.txt --repair --json
    toolmend check --tools tools.json --calls output.txt --context request.txt   # + grounding

Exit status: 0 when there is nothing to report, 1 when findings remain (after repair, with
``--repair``), 2 on bad usage or an input that cannot be read.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any, get_args

import typer
from rich.console import Console
from rich.markup import escape

from toolmend._errors import DatasetError, SpecError, ToolmendError
from toolmend._jsontext import dumps, loads, printable, read_text
from toolmend._schema import Finding, ToolCall
from toolmend.check import Checker, repair, ungrounded
from toolmend.formats import CallFormat, load_tools, parse_calls

__all__ = ["register", "run_check"]

_FORMATS = get_args(CallFormat)


def _finding_json(f: Finding) -> dict[str, Any]:
    return {"code": f.code, "call": f.call, "path": f.path, "message": f.message, "suggestion": f.suggestion}


def _call_json(c: ToolCall) -> dict[str, Any]:
    out: dict[str, Any] = {"name": c.name, "arguments": c.model_dump(mode="json")["arguments"]}
    if c.id is not None:
        out["id"] = c.id
    if c.outputs:
        out["outputs"] = list(c.outputs)
    return out


def run_check(
    tools_path: Path,
    calls_text: str,
    *,
    format: str = "auto",
    do_repair: bool = False,
    expected_count: int | None = None,
    context: str | list[Any] | None = None,
) -> dict[str, Any]:
    """The report ``toolmend check`` prints: ``{"calls", "findings", "repaired", "format"}``.

    Parser findings (``invalid_format``, ``redundant_information``, ``positional_argument``)
    come first, then the checklist's; with the conversation as ``context`` (a text or chat
    messages), then the values it never mentions (:func:`toolmend.check.ungrounded`). Raises
    :class:`~toolmend.ToolmendError` for unusable input.
    """
    tools = load_tools(tools_path)
    parsed = parse_calls(calls_text, format)  # type: ignore[arg-type]
    checker = Checker(tools)
    try:
        checker.verify()  # a broken schema is bad input, found before any call is judged by it
    except SpecError as exc:
        raise DatasetError(str(exc), path=tools_path) from exc
    repaired: list[dict[str, Any]] = []
    if do_repair:
        result = repair(parsed.calls, checker, expected_count)
        calls, findings = result.calls, result.findings
        repaired = [
            {
                "call": fix.call,
                "path": fix.path,
                "action": fix.action,
                "code": fix.finding.code,
                "before": _jsonable(fix.before),
                "after": _jsonable(fix.after),
            }
            for fix in result.fixes
        ]
    else:
        calls, findings = parsed.calls, checker.check(parsed.calls, expected_count)
    if context is not None:
        findings += ungrounded(calls, context, checker, besides=findings)
    return {
        "format": parsed.format,
        "calls": [_call_json(c) for c in calls],
        "findings": [_finding_json(f) for f in [*parsed.findings, *findings]],
        "repaired": repaired,
    }


def _jsonable(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))


def _read_calls(source: str) -> str:
    if source == "-":
        return sys.stdin.read()
    path = Path(source)
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ToolmendError(f"{path}: cannot read the model output: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise ToolmendError(f"{path}: the model output is not UTF-8 text ({exc.reason})") from exc


def _read_context(path: Path) -> str | list[Any]:
    """A JSON list of chat messages (``{"role", "content"}``), or any other text as it is."""
    try:
        text = read_text(path)
    except OSError as exc:
        raise ToolmendError(f"{path}: cannot read the conversation: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise ToolmendError(f"{path}: the conversation is not UTF-8 text ({exc.reason})") from exc
    if not text.lstrip().startswith("["):
        return text
    try:
        messages = loads(text)
    except json.JSONDecodeError as exc:
        raise ToolmendError(f"{path}:{exc.lineno}: not a JSON list of messages: {exc.msg}") from exc
    for i, m in enumerate(messages):
        if not isinstance(m, dict) or not isinstance(m.get("content", ""), str | list | None):
            raise ToolmendError(f"{path}: message {i}: expected an object with a text 'content'")
    return list(messages)


def _print_human(report: dict[str, Any], console: Console) -> None:
    fmt = report["format"]
    console.print(f"{len(report['calls'])} call(s) read as [bold]{escape(fmt)}[/bold]")
    for fix in report["repaired"]:
        where = f"call {fix['call']}" + (f" {fix['path']}" if fix["path"] else "")
        console.print(
            f"  [green]fixed[/green] {escape(where)}: {fix['action'].replace('_', ' ')} "
            f"{escape(repr(fix['before']))} -> {escape(repr(fix['after']))} ({fix['code']})"
        )
    for f in report["findings"]:
        where = "output" if f["call"] is None else f"call {f['call']}"
        if f["path"]:
            where += f" {f['path']}"
        console.print(f"  [red]{f['code']}[/red] {escape(where)}: {escape(f['message'])}")
        if f["suggestion"]:
            console.print(f"      [dim]hint:[/dim] {escape(f['suggestion'])}")
    if report["repaired"]:
        console.print("repaired calls:")
        console.print_json(dumps(report["calls"]))
    n = len(report["findings"])
    console.print("[green]clean[/green]" if n == 0 else f"[red]{n} finding(s)[/red]")


def register(app: typer.Typer) -> None:
    """Add the ``check`` command to ``app``."""

    @app.command("check")
    def check_command(
        tools: Annotated[
            Path,
            typer.Option(
                "--tools", help="Tool specs (JSON list, any dialect, or a file with a 'tools' key)."
            ),
        ],
        calls: Annotated[str, typer.Option("--calls", help="The model's raw output ('-' for stdin).")],
        format: Annotated[
            str, typer.Option("--format", help=f"How the output is written: {'|'.join(_FORMATS)}.")
        ] = "auto",
        do_repair: Annotated[
            bool, typer.Option("--repair", help="Apply safe fixes and report what remains.")
        ] = False,
        as_json: Annotated[bool, typer.Option("--json", help="Print a JSON report instead of text.")] = False,
        expected_count: Annotated[
            int | None, typer.Option("--expected-count", min=0, help="How many calls the task needs.")
        ] = None,
        context: Annotated[
            Path | None,
            typer.Option(
                "--context",
                help="The conversation (text, or a JSON list of messages): also report string "
                "values it never mentions.",
            ),
        ] = None,
    ) -> None:
        """Check a model's tool calls against tool schemas (exit 0 clean, 1 findings, 2 bad input)."""
        err = Console(stderr=True, highlight=False, soft_wrap=True)
        if format not in _FORMATS:
            err.print(f"error: --format must be one of {', '.join(_FORMATS)}, got {format!r}")
            raise typer.Exit(2)
        try:
            report = run_check(
                tools, _read_calls(calls), format=format, do_repair=do_repair, expected_count=expected_count,
                context=_read_context(context) if context is not None else None,
            )  # fmt: skip
        except ToolmendError as exc:
            err.print(f"error: {escape(str(exc))}")
            raise typer.Exit(2) from exc
        if as_json:
            typer.echo(dumps(report, indent=2))
        else:
            _print_human(printable(report), Console(highlight=False, soft_wrap=True))
        raise typer.Exit(1 if report["findings"] else 0)
