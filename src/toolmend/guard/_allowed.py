"""What a request allows: OpenAI's ``tool_choice`` and ``parallel_tool_calls`` as data, so the
guard enforces them for servers that ignore them (vLLM drops the calls after the first for
``parallel_tool_calls=false``, and reports some named or required choices differently).

:meth:`Guard.decide <toolmend.guard.Guard.decide>` applies a :class:`AllowedCalls`:

- ``none``: every call is dropped (a safe fix, ``tool_choice_none``);
- ``parallel=False``: the calls after the first are dropped (``parallel_tool_calls``);
- ``names``: only these tools may be called; a call to another is checked as an unknown tool;
- ``required``: an answer without a call is a count problem (``wrong_tool_count``) and is
  re-asked like any other.

>>> AllowedCalls.from_openai({"tool_choice": {"type": "function", "function": {"name": "f"}},
...                         "parallel_tool_calls": False})
AllowedCalls(mode='required', names=('f',), parallel=False)
>>> AllowedCalls.from_openai({}).unrestricted
True
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["AllowedCalls"]


@dataclass(frozen=True, slots=True)
class AllowedCalls:
    """Which calls the request allows (see the module docstring). The default allows anything."""

    mode: Literal["auto", "none", "required"] = "auto"
    names: tuple[str, ...] | None = None
    """The tools that may be called; ``None`` for every offered tool."""
    parallel: bool = True
    """Whether more than one call per answer is allowed (``parallel_tool_calls``)."""

    @classmethod
    def from_openai(cls, request: Mapping[str, Any]) -> AllowedCalls:
        """From a chat-completions request (or the keyword arguments of ``create``): its
        ``tool_choice`` (``none``, ``auto``, ``required``, a named function, or
        ``allowed_tools``) and ``parallel_tool_calls``. Values it cannot read count as ``auto``."""
        choice = request.get("tool_choice")
        parallel = request.get("parallel_tool_calls") is not False
        if choice in ("none", "required"):
            return cls(mode=choice, parallel=parallel)
        if not isinstance(choice, Mapping):
            return cls(parallel=parallel)
        if choice.get("type") == "allowed_tools":
            spec = choice.get("allowed_tools")
            spec = spec if isinstance(spec, Mapping) else {}
            names = tuple(_names(spec.get("tools")))
            mode: Literal["auto", "required"] = "required" if spec.get("mode") == "required" else "auto"
            return cls(mode=mode, names=names, parallel=parallel)
        fn = choice.get("function")
        name = fn.get("name") if isinstance(fn, Mapping) else None
        if not isinstance(name, str):
            return cls(parallel=parallel)
        return cls(mode="required", names=(name,), parallel=parallel)

    @property
    def unrestricted(self) -> bool:
        """Whether this choice allows anything (so there is nothing to enforce)."""
        return self.mode == "auto" and self.names is None and self.parallel


def _names(tools: Any) -> list[str]:
    out = []
    for t in tools if isinstance(tools, list) else []:
        fn = t.get("function") if isinstance(t, Mapping) else None
        name = fn.get("name") if isinstance(fn, Mapping) else None
        if isinstance(name, str):
            out.append(name)
    return out
