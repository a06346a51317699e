"""The OpenAI chat-completions wire contract on the proxy's side: request validation and
OpenAI-shaped error bodies.

A request the proxy cannot forward safely gets a 400 whose ``error`` names the field and what was
expected, as OpenAI's own API does, so that every SDK raises its usual ``BadRequestError``.

>>> body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "temperatur": 0}
>>> try:
...     validate_request(body)
... except RequestError as exc:
...     print(exc.status, exc.param, exc)
400 temperatur Unrecognized request argument supplied: temperatur
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import jsonschema

from toolmend._errors import SpecError, ToolmendError
from toolmend.check import Checker
from toolmend.serve import _json

__all__ = [
    "KNOWN_FIELDS",
    "RequestError",
    "openai_error",
    "request_checker",
    "tool_names",
    "validate_request",
]

KNOWN_FIELDS = frozenset(
    {
        # OpenAI chat completions
        "model", "messages", "tools", "tool_choice", "parallel_tool_calls", "stream", "stream_options",
        "temperature", "top_p", "n", "stop", "max_tokens", "max_completion_tokens", "presence_penalty",
        "frequency_penalty", "logit_bias", "logprobs", "top_logprobs", "user", "seed", "response_format",
        "functions", "function_call", "metadata", "store", "service_tier", "modalities", "audio",
        "prediction", "reasoning_effort", "web_search_options", "verbosity", "safety_identifier",
        "prompt_cache_key",
        # sampling and template extras of vLLM, SGLang and Ollama's OpenAI endpoints
        "top_k", "min_p", "repetition_penalty", "min_tokens", "best_of", "use_beam_search",
        "length_penalty", "stop_token_ids", "skip_special_tokens", "spaces_between_special_tokens",
        "include_stop_str_in_output", "ignore_eos", "chat_template", "chat_template_kwargs",
        "add_generation_prompt", "continue_final_message", "echo", "documents", "guided_json",
        "guided_regex", "guided_choice", "guided_grammar", "guided_decoding_backend", "structured_outputs",
        "priority", "request_id", "return_tokens_as_token_ids", "truncate_prompt_tokens",
        "mm_processor_kwargs", "cache_salt", "regex", "ebnf", "separate_reasoning", "reasoning",
        "options", "keep_alive", "think",
    }
)  # fmt: skip
"""Top-level request fields the proxy forwards; any other is a 400, as on OpenAI's API
(``toolmend serve --allow-field NAME`` adds more)."""


class RequestError(ToolmendError):
    """A request the proxy refuses: ``status`` and an OpenAI-shaped :meth:`body`."""

    def __init__(
        self,
        message: str,
        *,
        status: int = 400,
        param: str | None = None,
        code: str | None = None,
        type: str = "invalid_request_error",
    ) -> None:
        super().__init__(message)
        self.status = status
        self.param = param
        self.code = code
        self.type = type

    def body(self) -> dict[str, Any]:
        """The error as OpenAI sends it: ``{"error": {message, type, param, code}}``."""
        return openai_error(str(self), type=self.type, param=self.param, code=self.code)


def openai_error(
    message: str,
    *,
    type: str = "invalid_request_error",
    param: str | None = None,
    code: Any = None,
    **extra: Any,
) -> dict[str, Any]:
    """An OpenAI-shaped error object (``extra`` adds toolmend's own keys, such as findings)."""
    return {"error": {"message": message, "type": type, "param": param, "code": code, **extra}}


def _require(cond: bool, message: str, param: str, code: str = "invalid_value") -> None:
    if not cond:
        raise RequestError(message, param=param, code=code)


def parse_body(raw: bytes) -> dict[str, Any]:
    """The request body as an object, or a :class:`RequestError` saying why it is not one."""
    try:
        body = _json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        why = f"{exc.msg} at char {exc.pos}" if isinstance(exc, json.JSONDecodeError) else str(exc)
        raise RequestError(f"The request body is not valid JSON: {why}.", code="invalid_json") from None
    if not isinstance(body, dict):
        raise RequestError(
            f"The request body must be a JSON object, got {type(body).__name__}.", code="invalid_json"
        )
    return body


def validate_request(body: Mapping[str, Any], extra_fields: Iterable[str] = ()) -> None:
    """Raise :class:`RequestError` for a body OpenAI's API would refuse, or the guard could not use
    (a tool whose ``parameters`` is not a JSON Schema, a ``tool_choice`` naming no offered tool)."""
    allowed = KNOWN_FIELDS.union(extra_fields)
    for key in body:
        _require(key in allowed, f"Unrecognized request argument supplied: {key}", key, "unknown_parameter")
    _require("model" in body, "Missing required parameter: 'model'.", "model", "missing_required_parameter")
    _require(isinstance(body["model"], str), "'model' must be a string.", "model")
    _require(
        "messages" in body,
        "Missing required parameter: 'messages'.",
        "messages",
        "missing_required_parameter",
    )
    messages = body["messages"]
    _require(
        isinstance(messages, list) and bool(messages), "'messages' must be a non-empty array.", "messages"
    )
    for i, m in enumerate(messages):
        _require(isinstance(m, dict), f"messages[{i}] must be an object.", f"messages[{i}]")
        _require(
            m.get("role") in ("system", "developer", "user", "assistant", "tool", "function"),
            f"messages[{i}].role must be one of system, developer, user, assistant, tool; got {m.get('role')!r}.",
            f"messages[{i}].role",
        )
    if "stream" in body:
        _require(
            isinstance(body["stream"], bool) or body["stream"] is None,
            "'stream' must be a boolean.",
            "stream",
        )
    tools = body.get("tools")
    if tools is not None:
        _require(isinstance(tools, list), "'tools' must be an array.", "tools")
        request_checker(tools)
    _check_tool_choice(body.get("tool_choice"), tool_names(body))


def _check_tool(tool: Any, where: str) -> None:
    _require(isinstance(tool, dict), f"{where} must be an object.", where)
    _require(tool.get("type", "function") == "function", f"{where}.type must be 'function'.", f"{where}.type")
    fn = tool.get("function")
    _require(isinstance(fn, dict), f"{where}.function must be an object.", f"{where}.function")
    name = fn.get("name")
    _require(
        isinstance(name, str) and bool(name),
        f"{where}.function.name must be a non-empty string.",
        f"{where}.function.name",
    )
    params = fn.get("parameters")
    if params is None:
        return
    where = f"{where}.function.parameters"
    _require(isinstance(params, dict), f"{where} must be a JSON Schema object.", where, "invalid_schema")
    try:
        jsonschema.validators.validator_for(params, default=jsonschema.Draft202012Validator).check_schema(
            params
        )
    except jsonschema.SchemaError as exc:
        path = "".join(f"[{p!r}]" if isinstance(p, int) else f".{p}" for p in exc.path)
        raise RequestError(
            f"{where}{path} is not a valid JSON Schema: {exc.message}.", param=where, code="invalid_schema"
        ) from None


def request_checker(tools: list[Any]) -> Checker:
    """The compiled checker for a request's ``tools``, each tool as the guard must see it
    (:func:`_strict_view`). Agents send the same tools with every request, and checking a schema
    against the meta-schema costs milliseconds: a tool list is validated (a
    :class:`RequestError` when it is not valid) and compiled once per content
    (:meth:`Checker.cached <toolmend.check.Checker.cached>`)."""
    try:
        checker = Checker.cached(tools, view=_strict_view, check=_check_tools)
        # Compiled now, so that a spec the checker refuses (an unknown $schema, a remote $ref, a
        # pattern RE2 cannot run) is the client's 400 before anything goes upstream; once per
        # content, as compiled specs stay with the cached checker.
        checker.verify()
        return checker
    except SpecError as exc:
        raise RequestError(f"'tools' holds a tool the guard cannot use: {exc}", param="tools",
                           code="invalid_schema") from None  # fmt: skip


def _check_tools(tools: Sequence[Any]) -> None:
    for i, tool in enumerate(tools):
        _check_tool(tool, f"tools[{i}]")


def _strict_view(tool: Mapping[str, Any]) -> Mapping[str, Any]:
    """A tool marked ``strict`` as the guard must see it: what OpenAI's strict mode guarantees is
    that every property is present and no other is, at every level (optional ones as ``null``)."""
    fn = tool.get("function") or {}
    if fn.get("strict") is not True or not isinstance(fn.get("parameters"), dict):
        return tool
    return {**tool, "function": {**fn, "parameters": _closed(fn["parameters"])}}


def _closed(schema: Any) -> Any:
    if not isinstance(schema, dict):
        return schema
    out = {k: _closed(v) if k in ("items", "additionalProperties") else v for k, v in schema.items()}
    for key in ("anyOf", "oneOf", "allOf", "prefixItems"):
        if isinstance(schema.get(key), list):
            out[key] = [_closed(s) for s in schema[key]]
    props = schema.get("properties")
    if isinstance(props, dict):
        out["properties"] = {k: _closed(v) for k, v in props.items()}
        out["required"] = list(props)
        out.setdefault("additionalProperties", False)
    return out


def tool_names(body: Mapping[str, Any]) -> list[str]:
    """The names of the request's tools, in order."""
    out = []
    for tool in body.get("tools") or []:
        fn = tool.get("function") if isinstance(tool, dict) else None
        if isinstance(fn, dict) and isinstance(fn.get("name"), str):
            out.append(fn["name"])
    return out


def _check_tool_choice(choice: Any, names: list[str]) -> None:
    if choice is None or choice in ("none", "auto", "required"):
        return
    if isinstance(choice, str):
        raise RequestError(
            f"'tool_choice' must be none, auto, required or an object; got {choice!r}.", param="tool_choice"
        )
    _require(isinstance(choice, dict), "'tool_choice' must be a string or an object.", "tool_choice")
    if choice.get("type") == "allowed_tools":
        spec = choice.get("allowed_tools") or {}
        wanted = [t.get("function", {}).get("name") for t in spec.get("tools") or [] if isinstance(t, dict)]
    else:
        fn = choice.get("function")
        wanted = [fn.get("name") if isinstance(fn, dict) else None]
    for name in wanted:
        _require(
            name in names,
            f"'tool_choice' names the tool {name!r}, which is not in 'tools' ({', '.join(names) or 'none'}).",
            "tool_choice",
        )
