"""Secrets out of what toolmend writes: command lines, settings and error messages.

A run directory is shared (attached to issues, committed next to results), so an API key passed
as ``-M api_key=sk-…``, a header passed as ``-M 'headers={"X-Api-Key": …}'``, a bearer token or
credentials inside a URL (``https://user:pass@host``) must never reach it. Values under a
secret-looking key are replaced by ``***``, as are URL credentials and bearer tokens in text.

>>> redact_argv(["toolmend", "bench", "-M", "api_key=sk-123", "--base-url", "http://u:pw@h/v1"])
['toolmend', 'bench', '-M', 'api_key=***', '--base-url', 'http://***@h/v1']
>>> redact({"headers": {"X-Api-Key": "k", "Accept": "json"}, "seed": 1})
{'headers': {'X-Api-Key': '***', 'Accept': 'json'}, 'seed': 1}
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["REDACTED", "is_secret_key", "redact", "redact_argv", "redact_text"]

REDACTED = "***"

_SECRET_KEY = re.compile(
    r"(api[_-]?key|apikey|token|secret|password|passwd|pwd|authorization|auth|cookie|credential|"
    r"private[_-]?key|access[_-]?key|session)",
    re.IGNORECASE,
)
_URL_CREDENTIALS = re.compile(r"(?<=://)[^/\s@:]*(?::[^/\s@]*)?@")
_BEARER = re.compile(r"\b(Bearer|Basic|Token)\s+[A-Za-z0-9._~+/=-]+", re.IGNORECASE)
_KNOWN_KEYS = re.compile(r"\b(sk|pk|rk)-[A-Za-z0-9_-]{8,}|\bhf_[A-Za-z0-9]{16,}|\bAKIA[0-9A-Z]{16}\b")
_FLAG = re.compile(r"^--?([A-Za-z][\w-]*)(=(.*))?$", re.DOTALL)


def is_secret_key(name: str) -> bool:
    """Whether a setting, header or option named ``name`` holds a secret.

    >>> is_secret_key("api_key_env"), is_secret_key("X-Api-Key"), is_secret_key("max_tokens")
    (False, True, False)
    """
    lowered = name.lower()
    # Names of where a secret lives, and token counts, are not secrets themselves.
    if lowered.endswith(("_env", "-env")) or "tokens" in lowered or "tokenizer" in lowered:
        return False
    return bool(_SECRET_KEY.search(name))


def redact_text(text: str) -> str:
    """``text`` with URL credentials, bearer tokens and well-known key shapes replaced."""
    text = _URL_CREDENTIALS.sub(REDACTED + "@", text)
    text = _BEARER.sub(lambda m: f"{m.group(1)} {REDACTED}", text)
    return _KNOWN_KEYS.sub(REDACTED, text)


def redact(value: Any) -> Any:
    """``value`` (JSON-like) with secrets replaced: values under secret-looking keys, and
    credentials in every string (a string that is a JSON object is redacted inside)."""
    if isinstance(value, dict):
        return {k: (REDACTED if is_secret_key(str(k)) and v else redact(v)) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact(v) for v in value]
    if isinstance(value, str):
        return _redact_string(value)
    return value


def _redact_string(text: str) -> str:
    stripped = text.strip()
    if stripped.startswith("{") and stripped.endswith("}"):
        try:
            loaded = json.loads(stripped)
        except ValueError:
            loaded = None
        if isinstance(loaded, dict):
            return json.dumps(redact(loaded), ensure_ascii=False)
    return redact_text(text)


def _key_value(arg: str) -> str:
    key, sep, value = arg.partition("=")
    if not sep:
        return _redact_string(arg)
    if is_secret_key(key):
        return f"{key}={REDACTED}"
    return f"{key}={_redact_string(value)}"


def redact_argv(argv: list[str]) -> list[str]:
    """A command line with secrets replaced: ``--api-key X`` / ``--api-key=X``, ``KEY=VALUE``
    options whose key looks secret (``-M api_key=…``), JSON values with secret keys, URL
    credentials and bearer tokens."""
    out: list[str] = []
    secret_next = False
    for arg in argv:
        if secret_next:
            out.append(REDACTED)
            secret_next = False
            continue
        flag = _FLAG.match(arg)
        if flag is not None:
            name, inline = flag.group(1), flag.group(3)
            if is_secret_key(name):
                if inline is None:
                    secret_next = True
                    out.append(arg)
                else:
                    out.append(f"--{name}={REDACTED}" if arg.startswith("--") else f"-{name}={REDACTED}")
                continue
            out.append(arg if inline is None else f"{arg[: flag.start(3)]}{_key_value(inline)}")
            continue
        out.append(_key_value(arg))
    return out
