"""``toolmend serve``: the tool-call guard as an OpenAI-compatible proxy.

::

    toolmend serve --upstream http://127.0.0.1:8000/v1
    toolmend serve --upstream http://gpu:8000/v1 --policy guard.toml --traces runs/proxy --api-key-env PROXY_KEY

The policy file (TOML or JSON) holds :class:`~toolmend.guard.GuardPolicy` fields, at the top
level or under ``[guard]``. Exit status 2 on bad usage (an unreadable policy, a missing key
variable), never a traceback.

The upstream's ``user:password@`` (sent as Basic auth) is never shown; clients' credential headers
are not forwarded once the proxy has upstream credentials of its own; ``--metrics-auth`` asks
``/metrics`` for the client key; binding beyond loopback without ``--api-key-env`` prints a warning.
"""

from __future__ import annotations

import contextlib
import json
import os
import tomllib
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any
from urllib.parse import urlparse

import typer
from pydantic import ValidationError

from toolmend._errors import ToolmendError, first_error
from toolmend._jsontext import loads
from toolmend.cli._console import fail
from toolmend.guard import GuardPolicy

if TYPE_CHECKING:
    from toolmend.serve._budget import Limits

__all__ = ["guard_settings", "load_policy", "register", "started"]


# The limits' flags, shared with `toolmend mcp-guard` (the same Limits under the same names).
MaxBodyBytesFlag = Annotated[
    int | None,
    typer.Option("--max-body-bytes", help="Largest request body (413 beyond) (default 64 MiB)."),
]
MaxUpstreamBytesFlag = Annotated[
    int | None,
    typer.Option(
        "--max-upstream-bytes",
        help="Largest upstream answer, decompressed (502 beyond) (default 64 MiB).",
    ),
]
MaxToolsFlag = Annotated[
    int | None, typer.Option("--max-tools", help="Most tools in one request (default 512).")
]
MaxSchemaBytesFlag = Annotated[
    int | None,
    typer.Option("--max-schema-bytes", help="Largest 'tools' of one request, as JSON (default 4 MiB)."),
]
MaxSchemaDepthFlag = Annotated[
    int | None, typer.Option("--max-schema-depth", help="Deepest tool schema (at most 48) (default 48).")
]
MaxJsonDepthFlag = Annotated[
    int | None, typer.Option("--max-json-depth", help="Deepest request body (at most 512) (default 512).")
]
CheckSecondsFlag = Annotated[
    float | None,
    typer.Option("--check-seconds", help="CPU seconds one request's checks may take (default 2)."),
]
HeaderTimeoutFlag = Annotated[
    float | None,
    typer.Option("--header-timeout", help="Seconds a client may take to send its headers (default 60)."),
]
BodyTimeoutFlag = Annotated[
    float | None,
    typer.Option("--body-timeout", help="Seconds a client may take to send its body (default 60)."),
]


def given_limits(given: Mapping[str, Any]) -> Limits:
    """The :class:`~toolmend.serve.Limits` the limit flags among a command's parameters ``given``
    ask for (``None``: the default); a pydantic ``ValidationError`` naming the field when one is
    out of range."""
    from toolmend.serve._budget import Limits

    return Limits(**{k: v for k, v in given.items() if k in Limits.model_fields and v is not None})


def load_policy(path: Path) -> GuardPolicy:
    """A :class:`GuardPolicy` from a TOML or JSON file; a :class:`ToolmendError` naming the file
    and field when it cannot be used."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ToolmendError(f"{path}: cannot read the policy file ({exc.strerror or exc})") from exc
    try:
        data: Any = loads(text) if path.suffix == ".json" else tomllib.loads(text)
    except (json.JSONDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ToolmendError(
            f"{path}: not valid {'JSON' if path.suffix == '.json' else 'TOML'} ({exc})"
        ) from exc
    if isinstance(data, dict) and isinstance(data.get("guard"), dict):
        data = data["guard"]
    if not isinstance(data, dict):
        raise ToolmendError(f"{path}: expected a table of GuardPolicy fields")
    try:
        return GuardPolicy.model_validate(data)
    except ValidationError as exc:
        field, msg = first_error(exc)
        raise ToolmendError(f"{path}, field {field or '?'!r}: {msg}") from None
    except ToolmendError as exc:
        raise ToolmendError(f"{path}: {exc}") from None


def guard_settings(
    policy: Path | None, given: dict[str, Any], *, strict: bool = False
) -> tuple[GuardPolicy, Limits]:
    """The policy file's :class:`GuardPolicy` (the default without one; ``strict`` on top) and the
    :class:`~toolmend.serve.Limits` the flags in ``given`` ask for; raises what
    :func:`started` turns into one ``error:`` line."""
    guard_policy = load_policy(policy) if policy is not None else GuardPolicy()
    if strict:
        guard_policy = guard_policy.model_copy(update={"strict": True})
    return guard_policy, given_limits(given)


@contextlib.contextmanager
def started(host: str, port: int) -> Iterator[None]:
    """Where a server command sets itself up and listens: a bad setting (a flag's value, the
    policy file) or an address it cannot listen on is one ``error:`` line and exit status 2,
    never a traceback."""
    try:
        yield
    except ValidationError as exc:
        field, msg = first_error(exc)
        fail(f"--{field.replace('_', '-')}: {msg}" if field else msg)
    except ToolmendError as exc:
        fail(str(exc).splitlines()[0])
    except OSError as exc:
        fail(f"cannot listen on {host}:{port} ({exc.strerror or exc})")


def _key(var: str | None, flag: str) -> str | None:
    if var is None:
        return None
    value = os.environ.get(var)
    if not value:
        fail(f"{flag} {var}: the environment variable {var} is not set")
    return value


def serve_command(
    upstream: Annotated[
        str, typer.Option("--upstream", help="Upstream base URL, e.g. http://127.0.0.1:8000/v1.")
    ],
    host: Annotated[
        str, typer.Option("--host", help="Address to bind (default: loopback only).")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="Port to listen on.")] = 8700,
    policy: Annotated[Path | None, typer.Option("--policy", help="GuardPolicy as TOML or JSON.")] = None,
    api_key_env: Annotated[
        str | None, typer.Option("--api-key-env", help="Require 'Authorization: Bearer $VAR' from clients.")
    ] = None,
    metrics_auth: Annotated[
        bool, typer.Option("--metrics-auth", help="Ask /metrics for the --api-key-env key too.")
    ] = False,
    upstream_key_env: Annotated[
        str | None,
        typer.Option("--upstream-key-env", help="Send $VAR as the upstream key (default: the client's own)."),
    ] = None,
    traces: Annotated[
        Path | None, typer.Option("--traces", help="Append every exchange to DIR/traces.jsonl.")
    ] = None,
    shadow: Annotated[
        bool, typer.Option("--shadow", help="Only annotate (headers, metrics, traces); change nothing.")
    ] = False,
    strict: Annotated[
        bool,
        typer.Option(
            "--strict", help="Return an OpenAI-shaped error instead of a repaired or re-asked call."
        ),
    ] = False,
    timeout: Annotated[
        float, typer.Option("--timeout", help="Seconds an upstream request may take in all.")
    ] = 600.0,
    read_timeout: Annotated[
        float | None, typer.Option("--read-timeout", help="Seconds the upstream may stay silent mid-answer.")
    ] = None,
    retries: Annotated[
        int, typer.Option("--retries", help="Retries after upstream 429/5xx or a dropped connection.")
    ] = 2,
    allow_field: Annotated[
        list[str] | None,
        typer.Option("--allow-field", help="Accept and forward this extra request field (repeatable)."),
    ] = None,
    max_body_bytes: MaxBodyBytesFlag = None,
    max_upstream_bytes: MaxUpstreamBytesFlag = None,
    max_tools: MaxToolsFlag = None,
    max_schema_bytes: MaxSchemaBytesFlag = None,
    max_schema_depth: MaxSchemaDepthFlag = None,
    max_json_depth: MaxJsonDepthFlag = None,
    check_seconds: CheckSecondsFlag = None,
    header_timeout: HeaderTimeoutFlag = None,
    body_timeout: BodyTimeoutFlag = None,
) -> None:
    """Run the tool-call guard as an OpenAI-compatible proxy in front of UPSTREAM."""
    given = dict(locals())  # the parameters as given: the limit flags among them
    from toolmend.serve import ServeConfig, run
    from toolmend.serve._upstream import public_url

    url = urlparse(upstream)
    if url.scheme not in ("http", "https") or not url.netloc:
        fail(f"--upstream {public_url(upstream)!r}: expected an http(s) URL such as http://127.0.0.1:8000/v1")
    if metrics_auth and api_key_env is None:
        fail("--metrics-auth needs --api-key-env (the key /metrics asks for)")
    if shadow and strict:
        fail("--shadow and --strict cannot be combined (shadow never changes a response)")
    with started(host, port):
        guard_policy, limits = guard_settings(policy, given)
        config = ServeConfig(
            upstream=upstream, host=host, port=port, policy=guard_policy,
            api_key=_key(api_key_env, "--api-key-env"), metrics_auth=metrics_auth, upstream_api_key=_key(upstream_key_env, "--upstream-key-env"),
            traces=traces, shadow=shadow, strict=strict, timeout=timeout, read_timeout=read_timeout,
            retries=retries, extra_fields=frozenset(allow_field or ()), limits=limits,
        )  # fmt: skip
        run(config, print_line=lambda line: typer.echo(line, err=True))


def register(app: typer.Typer) -> None:
    """Add ``serve`` to ``app``."""
    app.command("serve")(serve_command)
