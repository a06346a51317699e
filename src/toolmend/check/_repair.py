"""Deterministic repair: only fixes that cannot change what a call means, each tied to its finding.

>>> from toolmend import ToolCall
>>> tools = [{"name": "set_alarm", "parameters": {"type": "object", "properties": {
...     "hour": {"type": "integer"}, "repeat": {"type": "boolean"},
...     "days": {"type": "array", "items": {"type": "string", "enum": ["Mon", "Tue"]}}},
...     "required": ["hour"]}}]
>>> result = repair([ToolCall(name="setAlarm", arguments={"Hour": "7", "repeat": "true", "days": "mon"})], tools)
>>> result.calls[0].name, result.calls[0].arguments
('set_alarm', {'hour': 7, 'repeat': True, 'days': ['Mon']})
>>> [fix.action for fix in result.fixes]
['rename_tool', 'rename_key', 'coerce', 'coerce', 'coerce', 'enum_case']

What repair does, in this order (re-checking after each stage):

1. a tool name that is an unambiguous near-miss of exactly one offered tool is renamed
   (:data:`~toolmend.check._names.NAME_THRESHOLD`; a tie renames nothing);
2. a key that aliases a declared parameter (case, ``_``/``-``/camelCase, a small edit) is
   renamed; other undeclared keys are dropped;
3. values are converted where the conversion is safe (:func:`~toolmend.check._coerce.coerce`),
   enum values are fixed up to case, and an empty optional value is dropped;
4. exact repeated calls beyond the expected count are dropped.

It never invents a value: a missing required parameter, an out-of-range number or a wrong
enum value stays a finding in :attr:`RepairResult.findings`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from toolmend._schema import Finding, Ref, Tool, ToolCall
from toolmend.check._checker import Checker
from toolmend.check._coerce import NO_COERCION, coerce
from toolmend.check._names import NAME_THRESHOLD, best_match

__all__ = ["Fix", "FixAction", "RepairResult", "repair"]

FixAction = Literal["rename_tool", "rename_key", "drop_key", "coerce", "enum_case", "drop_empty", "drop_call"]

_MAX_ROUNDS = 8


class Fix(BaseModel):
    """One change repair made, with the finding it answers."""

    model_config = ConfigDict(extra="forbid")

    finding: Finding
    action: FixAction
    call: int
    """Index of the call in the list given to :func:`repair`."""
    path: str = ""
    before: Any = None
    after: Any = None

    def describe(self) -> str:
        """One line for humans: ``call 0 'days': coerce 'mon' → ['mon']``."""
        where = f"call {self.call}" + (f" '{self.path}'" if self.path else "")
        if self.action in ("drop_key", "drop_empty", "drop_call"):
            return f"{where}: {self.action.replace('_', ' ')} ({self.before!r})"
        return f"{where}: {self.action.replace('_', ' ')} {self.before!r} -> {self.after!r}"


class RepairResult(BaseModel):
    """What :func:`repair` returns: the repaired calls, the fixes made, the findings left."""

    model_config = ConfigDict(extra="forbid")

    calls: list[ToolCall]
    fixes: list[Fix] = Field(default_factory=list)
    findings: list[Finding] = Field(default_factory=list)

    @property
    def changed(self) -> bool:
        """Whether any fix was made."""
        return bool(self.fixes)

    @property
    def clean(self) -> bool:
        """Whether the repaired calls pass the checklist."""
        return not self.findings


def _container(args: dict[str, Any], loc: Sequence[Any]) -> Any:
    node: Any = args
    for part in loc[:-1]:
        node = node[part]
    return node


def _schema_at(tool: Tool, loc: Sequence[Any]) -> tuple[Mapping[str, Any], bool]:
    """The schema at ``loc`` and whether the last step is a required object member."""
    schema: Mapping[str, Any] = tool.parameters
    required = False
    for part in loc:
        if isinstance(part, int):
            items = schema.get("items")
            schema = items if isinstance(items, Mapping) else {}
            required = False
        else:
            props = schema.get("properties")
            required = part in (schema.get("required") or [])
            schema = props.get(part, {}) if isinstance(props, Mapping) else {}
    return schema, required


class _Repairer:
    def __init__(
        self, checker: Checker, calls: list[ToolCall], threshold: float, expected_count: int | None
    ) -> None:
        self.checker = checker
        self.expected_count = expected_count
        self.calls = calls
        self.origin = list(range(len(calls)))
        self.threshold = threshold
        self.fixes: list[Fix] = []

    def _record(self, finding: Finding, action: FixAction, index: int, before: Any, after: Any) -> None:
        self.fixes.append(
            Fix(
                finding=finding,
                action=action,
                call=self.origin[index],
                path=finding.path,
                before=before,
                after=after,
            )
        )

    def names(self, findings: list[Finding]) -> bool:
        done = False
        for f in findings:
            if f.code != "wrong_tool_name" or f.call is None:
                continue
            call = self.calls[f.call]
            target = best_match(call.name, self.checker.tools, threshold=self.threshold)
            if target is not None:
                self._record(f, "rename_tool", f.call, call.name, target)
                call.name = target
                done = True
        return done

    def keys(self, findings: list[Finding]) -> bool:
        done = False
        for f in findings:
            if f.code != "redundant_parameter" or f.call is None:
                continue
            loc = f.data.get("loc") or []
            if not loc:
                continue
            holder = _container(self.calls[f.call].arguments, loc)
            key = loc[-1]
            if not isinstance(holder, dict) or key not in holder:
                continue
            alias = f.data.get("alias")
            if isinstance(alias, str) and alias not in holder:
                # Rebuilt in place so that the key keeps its position.
                renamed = {alias if k == key else k: v for k, v in holder.items()}
                holder.clear()
                holder.update(renamed)
                self._record(f, "rename_key", f.call, key, alias)
            else:
                self._record(f, "drop_key", f.call, {key: holder[key]}, None)
                del holder[key]
            done = True
        return done

    def values(self, findings: list[Finding]) -> bool:
        done = False
        for f in findings:
            loc = f.data.get("loc") or []
            if f.call is None or not loc or "ref" in f.data:
                continue
            call = self.calls[f.call]
            holder = _container(call.arguments, loc)
            key = loc[-1]
            try:
                value = holder[key]
            except (KeyError, IndexError, TypeError):
                continue
            if isinstance(value, Ref):
                continue
            if f.code == "invalid_type":
                fixed = coerce(value, tuple(f.data.get("expected") or ()))
                if type(fixed) is int and f.data.get("original_type") in ("float", "double"):
                    fixed = float(fixed)  # the spec says float: "5" becomes 5.0, as it means
                if fixed is not NO_COERCION:
                    holder[key] = fixed
                    self._record(f, "coerce", f.call, value, fixed)
                    done = True
            elif f.code == "invalid_value" and f.data.get("keyword") == "enum" and isinstance(value, str):
                allowed = f.data.get("allowed") or []
                same = [
                    e for e in allowed if isinstance(e, str) and e.strip().lower() == value.strip().lower()
                ]
                if len(same) == 1:
                    holder[key] = same[0]
                    self._record(f, "enum_case", f.call, value, same[0])
                    done = True
            elif f.code == "empty_value" and isinstance(key, str) and isinstance(holder, dict):
                tool = self.checker.tools.get(call.name)
                if tool is not None and not _schema_at(tool, loc)[1]:
                    self._record(f, "drop_empty", f.call, {key: value}, None)
                    del holder[key]
                    done = True
        return done

    def repeats(self, findings: list[Finding]) -> bool:
        groups: dict[int, list[int]] = {}
        by_index: dict[int, Finding] = {}
        for f in findings:
            if f.code == "duplicate_call" and f.call is not None:
                groups.setdefault(int(f.data.get("first", f.call)), []).append(f.call)
                by_index[f.call] = f
        drop: list[int] = []
        excess = len(by_index) if self.expected_count is None else len(self.calls) - self.expected_count
        # Only the excess goes (some repeats may be meant: two samples of the same draw), taken
        # from the most repeated call first, latest copy first.
        while len(drop) < excess and any(groups.values()):
            biggest = max(groups, key=lambda k: (len(groups[k]), k))
            drop.append(groups[biggest].pop())
        for index in sorted(drop, reverse=True):
            self._record(by_index[index], "drop_call", index, self.calls[index].name, None)
            del self.calls[index]
            del self.origin[index]
        return bool(drop)


def repair(
    calls: Sequence[ToolCall | Mapping[str, Any]],
    tools: Checker | Iterable[Tool | Mapping[str, Any]],
    expected_count: int | None = None,
    *,
    name_threshold: float = NAME_THRESHOLD,
) -> RepairResult:
    """Apply every safe fix to ``calls`` and return them with the fixes and what is left.

    ``tools`` may be a :class:`~toolmend.check.Checker` (reused, faster) or tool specs. The
    input calls are not modified.
    """
    checker = tools if isinstance(tools, Checker) else Checker(tools)
    work = [c.model_copy(deep=True) if isinstance(c, ToolCall) else ToolCall.model_validate(c) for c in calls]
    fixer = _Repairer(checker, work, name_threshold, expected_count)
    stages = (fixer.names, fixer.keys, fixer.values, fixer.repeats)
    findings = checker.check(work, expected_count)
    for _ in range(_MAX_ROUNDS):
        # The first stage that changes something ends the round and the calls are checked
        # again: a renamed tool brings its schema, renamed keys must settle before their values
        # are judged, and values must settle before repeats can be told apart.
        if not findings or not any(stage(findings) for stage in stages):
            break
        findings = checker.check(work, expected_count)
    return RepairResult(calls=work, fixes=fixer.fixes, findings=findings)
