"""BFCL's multi-turn categories: episodes run in BFCL's own executable classes, scored by state.

The four categories ``multi_turn_base``, ``multi_turn_miss_func`` (a function is held out until a
later turn), ``multi_turn_miss_param`` (a turn leaves out a needed value) and
``multi_turn_long_context`` (the classes load a large extra state) give the model a conversation of
several user turns over a file system, messaging, posting, ticket, trading, travel, vehicle and math
API. The data and the classes come from the ``bfcl-eval`` package, installed without its dependency
list (the classes import only the standard library and ``mpmath``, the ``bfcl`` extra)::

    pip install --no-deps bfcl-eval==2026.3.23 && pip install 'toolmend[bfcl]'

Only ``bfcl_eval.constants.executable_backend_config`` and the class modules under
``bfcl_eval.eval_checker.multi_turn_eval.func_source_code`` are imported; BFCL's evaluator and
model handlers are not.

**The episode** (:func:`run_episode`) follows BFCL's inference loop: each turn's user messages are
added; the model is asked; a reply that decodes to calls is executed in the classes' state, the
results go back as tool messages and the model is asked again; a reply that does not decode, or
decodes to no call, ends the turn. A turn with more than :data:`STEP_LIMIT` executed steps ends the
whole episode (BFCL's force-quit). In ``miss_func`` the held-out function's docs arrive in the
turn BFCL adds them at, as a user message. The prediction is the list of replies in order.

**The score** (:func:`check_multi_turn`) replays the replies (an episode is deterministic): they
are split into turns exactly as the episode split them, every turn's executed calls run in a
fresh copy of the classes and the ground truth's calls in another, and after each turn that
expects calls the checker of ``bfcl-eval==2026.3.23`` is reproduced: the turn must have executed
something (``multi_turn:empty_turn_model_response``), every public attribute of every class
must equal the ground truth's (``multi_turn:instance_state_mismatch``), and each ground-truth
result must be among the results of the model's calls so far, counted with multiplicity, in any
order (``multi_turn:execution_response_mismatch``). An episode with fewer answered turns than the
entry has fails as ``multi_turn:force_terminated``. The first failing turn decides.

**Execution without** ``eval``. BFCL turns every decoded call back into a Python string, prefixes
every ``name(`` in it that names a method with the instance's variable name (a regular expression
over the whole string), and ``eval``\\ s it. Here the same string is built the same way and then
interpreted: literals, and calls whose name resolves to a public method of an involved class; any
other name fails with the ``NameError`` message ``eval`` gives. Differences from BFCL, all on
replies no well-behaved model writes: Python builtins and the evaluator module's own names (which
BFCL's ``eval`` would run), private attributes, and expressions other than literals, literal
arithmetic and calls are not executed.

``compat`` reproduces BFCL's verdicts and ``error_type`` labels on the same replies (checked
against the official code; see ``docs/benchmarks/bfcl.md``). ``improved`` changes exactly:

1. string arguments are passed as written: BFCL's method-name prefixing also rewrites text inside
   string literals (``echo(content='run ls(x)')`` writes ``run <instance>.ls(x)``, with a
   different instance name for the model and for the ground truth, so a correct call can fail the
   state check); ``improved`` resolves names only where a call is made;
2. object arguments are written as objects: BFCL writes an argument that is an object by hand,
   with its keys in unescaped quotes (a key holding ``'`` makes the call a syntax error) and any
   object whose values are all objects as a nested *call* named after its first key (the other
   keys dropped); ``improved`` writes keys with ``repr`` and takes only a one-key object of
   objects for a nested call;
3. every call gets its own copy of a list or dict default: BFCL's ``TwitterAPI.post_tweet``
   defaults ``tags`` and ``mentions`` to one list per *process*, which ``mention`` then extends, so
   a tweet posted without mentions shows (and is compared with) mentions that other tweets, other
   entries or earlier episodes added; in ``compat`` (as in BFCL) results and verdicts of such
   entries can depend on what ran before in the same process.

**Faults** (an extension; BFCL has none). ``load(..., faults="light")`` attaches a fault schedule
from :mod:`toolmend.world` (``none``, ``light``, ``heavy`` or a JSON file; seeded by
``fault_seed``) to the gold steps of each entry, as ``bench world`` does: the n-th call of a
function in the episode fails with a service's error instead of running (``permission_denied``
and ``removed_tool`` for every later call too; ``wrong_shape`` is not offered, since BFCL's results
are strings). The checker replays the same faults, so a call that failed changes no state, and a
retry that went through counts once. The score keeps BFCL's definition (a transient fault the model
retries costs nothing; a persistent one makes the entry fail the state check unless its ground
truth never needed the call), and ``details["faults"]`` says per fault whether the model retried
the same call and whether a retry went through.

An empty object as an argument (``f(x={})``) makes BFCL's string building fail, so BFCL drops that
reply as undecodable and the turn ends there. Both modes keep that, because it decides where a turn
ends, and so which replies the model saw results for.

>>> turns = [["[cd(folder='a')]", "Done."], ["No."]]
>>> [[r for r, _ in t] for t in split_turns([r for t in turns for r in t], 2)[0]]
[["[cd(folder='a')]", 'Done.'], ['No.']]
"""

from __future__ import annotations

import ast
import copy
import importlib
import importlib.util
import inspect
import json
import re
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

from toolmend._errors import ConfigError, DatasetError, ToolmendError
from toolmend._schema import Message, Sample, Tool, ToolCall
from toolmend.benchmarks._base import Mode
from toolmend.benchmarks._io import UniqueIds, need, read_jsonl
from toolmend.benchmarks.bfcl._data import question_message
from toolmend.benchmarks.bfcl._decode import decode, safe_arith
from toolmend.formats._tools import load_tools
from toolmend.world._schedule import FaultSchedule, ScheduledFault, scheduled_fault_response

__all__ = [
    "INSTALL_HINT",
    "MULTI_TURN_CATEGORIES",
    "STEP_LIMIT",
    "MultiTurnResult",
    "attach_faults",
    "check_multi_turn",
    "executable_calls",
    "gold_replies",
    "load_multi_turn",
    "multi_turn_data_dir",
    "run_episode",
    "split_turns",
]

MULTI_TURN_CATEGORIES = (
    "multi_turn_base",
    "multi_turn_miss_func",
    "multi_turn_miss_param",
    "multi_turn_long_context",
)
"""The multi-turn categories, executed in BFCL's classes."""

STEP_LIMIT = 20
"""BFCL's per-turn step limit: the episode is force-quit after the 21st executed step of a turn."""

INSTALL_HINT = (
    "the BFCL multi-turn categories need the bfcl-eval package without its dependency list: "
    "pip install --no-deps bfcl-eval==2026.3.23 && pip install 'toolmend[bfcl]' (adds mpmath)"
)

_CLASSES = (
    "GorillaFileSystem",
    "MathAPI",
    "MessageAPI",
    "TwitterAPI",
    "TicketAPI",
    "TradingBot",
    "TravelAPI",
    "VehicleControlAPI",
)
"""The classes of the multi-turn categories (BFCL's other executable classes need more packages)."""

_BLOCKED = ("kill", "exit", "quit", "remove", "unlink", "popen", "Popen", "run")
"""Names BFCL refuses to execute (checked on the first segment after the instance prefix)."""

_METHOD_NAME = re.compile(r"\b([a-zA-Z_]\w*)\s*(?=\()")

_TURN_END_TEXT = "Done."
_NO_CALL_TEXT = "I cannot do that with the functions and information I have; please tell me more."

MULTI_TURN_NOTE = """

The conversation has several requests. After you call functions, their results come back to you
and you may call more functions. When the current request is done, or cannot be done, answer in
plain words without any call; the next request follows."""
"""Appended to the BFCL system prompt for the multi-turn categories."""

HELD_OUT_NOTE = "More functions are available to you now:\n{functions}\nPlease go on with my last request."
"""The user message of the turn at which ``miss_func`` adds the held-out functions."""


# ---------------------------------------------------------------------------------------------
# the bfcl-eval package


def _backend() -> Any:
    try:
        return importlib.import_module("bfcl_eval.constants.executable_backend_config")
    except ImportError:
        raise ConfigError(INSTALL_HINT) from None


def multi_turn_data_dir() -> Path:
    """The ``data`` folder of the installed ``bfcl-eval`` package (nothing of it is imported)."""
    spec = importlib.util.find_spec("bfcl_eval")
    if spec is None or spec.origin is None:
        raise ConfigError(INSTALL_HINT)
    return Path(spec.origin).parent / "data"


@cache
def _class(name: str) -> type:
    backend = _backend()
    path = backend.CLASS_FILE_PATH_MAPPING.get(name)
    if path is None or name not in _CLASSES:
        raise DatasetError(f"unknown BFCL class {name!r}")
    try:
        module = importlib.import_module(path)
    except ImportError as exc:
        raise ConfigError(f"{INSTALL_HINT} ({exc})") from None
    cls = getattr(module, name)
    assert isinstance(cls, type)
    for fn in vars(cls).values():
        if inspect.isfunction(fn):
            # Snapshot before any call can grow a shared default (see ``improved`` item 3).
            _PRISTINE[fn] = {
                p.name: copy.deepcopy(p.default)
                for p in inspect.signature(fn).parameters.values()
                if isinstance(p.default, list | dict | set)
            }
    return cls


_PRISTINE: dict[Any, dict[str, Any]] = {}
"""Each method's list, dict and set defaults as they were when its class was first loaded."""


# ---------------------------------------------------------------------------------------------
# loading


def _read_entries(path: Path) -> list[tuple[int, dict[str, Any]]]:
    records = list(read_jsonl(path, objects=True))
    for n, record in records:
        need(record.get("id"), str, "a string id", path=path, line=n, field="id")
    return records


@lru_cache(maxsize=64)
def _func_docs(path: Path) -> tuple[str, ...]:
    # Kept as JSON text so that every sample gets its own copy.
    return tuple(json.dumps(r) for _, r in read_jsonl(path, objects=True))


@lru_cache(maxsize=64)
def _class_tools(path: Path) -> tuple[Tool, ...]:
    docs = [json.loads(d) for d in _func_docs(path)]
    try:
        return tuple(load_tools(docs, dialect="bfcl"))
    except DatasetError as exc:
        raise DatasetError(exc.reason, path=path, field=exc.field) from exc


def _check_entry(record: dict[str, Any], classes: Iterable[str], path: Path, line: int) -> None:
    turns: list[Any] = need(
        record.get("question"), list, "a list of turns", path=path, line=line, field="question"
    )
    for i, turn in enumerate(turns):
        need(turn, list, "a list of messages", path=path, line=line, field=f"question[{i}]")
        for j, msg in enumerate(turn):
            question_message(msg, path, line, f"question[{i}][{j}]")
    need(record.get("initial_config"), dict, "an object", path=path, line=line, field="initial_config")
    involved: list[Any] = need(
        record.get("involved_classes"),
        list,
        "a list of class names",
        path=path,
        line=line,
        field="involved_classes",
    )
    known = set(classes)
    for name in involved:
        if name not in known:
            raise DatasetError(
                f"expected one of {', '.join(sorted(known))}, got {name!r}",
                path=path, line=line, field="involved_classes",
            )  # fmt: skip
    what = "an object of turn index -> function names"
    missed: dict[str, Any] = need(
        record.get("missed_function", {}), dict, what, path=path, line=line, field="missed_function"
    )
    for turn, names in missed.items():
        if not turn.isdigit() or int(turn) >= len(turns) or not isinstance(names, list):
            raise DatasetError(
                "expected a turn index and a list of function names",
                path=path, line=line, field=f"missed_function.{turn}",
            )  # fmt: skip


def _check_truth(truth: Any, n_turns: int, path: Path, line: int) -> list[list[str]]:
    need(
        truth,
        list,
        "a list of turns, each a list of call strings",
        path=path,
        line=line,
        field="ground_truth",
    )
    if len(truth) != n_turns:
        raise DatasetError(
            f"{len(truth)} answer turns for {n_turns} question turns",
            path=path,
            line=line,
            field="ground_truth",
        )
    for i, turn in enumerate(truth):
        if not isinstance(turn, list) or not all(isinstance(c, str) for c in turn):
            raise DatasetError(
                "expected a list of call strings", path=path, line=line, field=f"ground_truth[{i}]"
            )
        for j, call in enumerate(turn):
            try:
                node = ast.parse(call, mode="eval").body
            except SyntaxError:
                node = None
            if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
                raise DatasetError(
                    "expected a call such as name(arg=1)",
                    path=path,
                    line=line,
                    field=f"ground_truth[{i}][{j}]",
                )
    return truth


def _as_keywords(call: str, classes: Sequence[str]) -> ToolCall:
    """A ground-truth call string as a call with keyword arguments (BFCL's answers use some
    positional ones; they are named from the method's signature)."""
    node = ast.parse(call, mode="eval").body
    assert isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
    name = node.func.id
    args = {kw.arg: ast.literal_eval(kw.value) for kw in node.keywords if kw.arg is not None}
    if node.args:
        method = _method_signature(name, tuple(classes))
        params = [p for p in method.parameters if p != "self"] if method is not None else []
        for param, value in zip(params, node.args, strict=False):
            args[param] = ast.literal_eval(value)
    return ToolCall(name=name, arguments=args)


@lru_cache(maxsize=256)
def _method_signature(name: str, classes: tuple[str, ...]) -> inspect.Signature | None:
    # A later class's method shadows an earlier one's, as in BFCL's name mapping.
    found = None
    for cls_name in classes:
        fn = getattr(_class(cls_name), name, None)
        if fn is not None and not name.startswith("_") and inspect.isfunction(fn):
            found = inspect.signature(fn)
    return found


def load_multi_turn(root: str | Path | None, categories: Sequence[str]) -> list[Sample]:
    """Samples of the multi-turn ``categories``: question files ``BFCL_v<N>_<category>.json`` and
    their ``possible_answer/`` twins from ``root`` where it has them, else from the installed
    ``bfcl-eval`` package; function docs from ``multi_turn_func_doc/`` beside them.

    Each sample's ``tools`` are every function of its classes (what the classes execute);
    ``metadata`` keeps ``turns`` (the user messages per turn), ``ground_truth`` (BFCL's call
    strings per turn), ``initial_config``, ``involved_classes``, ``held_out`` (turn index →
    function names, ``miss_func`` only) and ``held_out_docs`` (their docs), ``offered`` (the functions the first turn offers) and
    ``category``. ``target`` is the ground truth's calls, all turns, with keyword arguments.
    """
    backend = _backend()
    package = multi_turn_data_dir()
    base = Path(root) if root is not None else None
    if base is not None and base.is_file():
        base = base.parent
    samples: list[Sample] = []
    for category in categories:
        if category not in MULTI_TURN_CATEGORIES:
            raise DatasetError(f"not a multi-turn category: {category!r}")
        folder = package
        if base is not None and any(base.glob(f"BFCL_v*_{category}.json")):
            folder = base
        found = sorted(folder.glob(f"BFCL_v*_{category}.json"))
        if not found:
            raise DatasetError(f"no question file for {category}", path=folder)
        qpath = found[-1]
        apath = folder / "possible_answer" / qpath.name
        docs_dir = folder / "multi_turn_func_doc"
        if not docs_dir.is_dir():
            docs_dir = package / "multi_turn_func_doc"
        samples.extend(_load_category(category, qpath, apath, docs_dir, backend))
    return samples


def _load_category(category: str, qpath: Path, apath: Path, docs_dir: Path, backend: Any) -> list[Sample]:
    if not apath.is_file():
        raise DatasetError(f"the {category} category needs its possible-answer file", path=apath)
    questions = _read_entries(qpath)
    answers = _read_entries(apath)
    if len(answers) != len(questions):
        raise DatasetError(
            f"{len(answers)} answers for {len(questions)} questions in {qpath.name}", path=apath
        )
    unique = UniqueIds(qpath)
    doc_files: dict[str, str] = backend.MULTI_TURN_FUNC_DOC_FILE_MAPPING
    samples: list[Sample] = []
    for (line, record), (aline, answer) in zip(questions, answers, strict=True):
        unique.add(record["id"], line)
        if answer["id"] != record["id"]:
            raise DatasetError(
                f"answer id {answer['id']!r} does not match question id {record['id']!r}",
                path=apath, line=aline, field="id",
            )  # fmt: skip
        _check_entry(record, [c for c in _CLASSES if c in doc_files], qpath, line)
        truth = _check_truth(answer.get("ground_truth"), len(record["question"]), apath, aline)
        docs: list[dict[str, Any]] = []
        for name in record["involved_classes"]:
            docs.extend(json.loads(d) for d in _func_docs(docs_dir / doc_files[name]))
        held_out: dict[str, list[str]] = {}
        held_out_docs: dict[str, list[dict[str, Any]]] = {}
        offered = [d["name"] for d in docs]
        for turn, names in record.get("missed_function", {}).items():
            held_out[turn], held_out_docs[turn] = [], []
            for name in names:
                if name in offered:
                    offered.remove(name)
                    held_out[turn].append(name)
                    held_out_docs[turn].append(next(d for d in docs if d["name"] == name))
        tools = [t for name in record["involved_classes"] for t in _class_tools(docs_dir / doc_files[name])]
        first = record["question"][0] if record["question"] else []
        samples.append(
            Sample(
                id=record["id"],
                messages=[Message(role=m["role"], content=m["content"]) for m in first],
                tools=tools,
                target=[_as_keywords(c, record["involved_classes"]) for turn in truth for c in turn],
                metadata={
                    "category": category,
                    "turns": record["question"],
                    "ground_truth": truth,
                    "initial_config": record["initial_config"],
                    "involved_classes": record["involved_classes"],
                    "held_out": held_out,
                    "held_out_docs": held_out_docs,
                    "offered": offered,
                },
            )
        )
    return samples


# ---------------------------------------------------------------------------------------------
# decoding a reply into BFCL's call strings


class _Unrenderable(Exception):
    """BFCL's call-string building fails on this reply (an empty object as an argument)."""


def _nested(value: Any, mode: Mode) -> str:
    if isinstance(value, dict):
        if all(isinstance(v, dict) for v in value.values()) and (mode == "compat" or len(value) == 1):
            if not value:
                raise _Unrenderable("an empty object argument")
            name = next(iter(value))
            return f"{name}({', '.join(f'{_key(k)}={_nested(v, mode)}' for k, v in value[name].items())})"
        quote = (lambda k: f"'{k}'") if mode == "compat" else repr
        return "{" + ", ".join(f"{quote(k)}: {_nested(v, mode)}" for k, v in value.items()) + "}"
    return repr(value)


def _key(name: Any) -> str:
    # toolmend's decoder keeps a ``**kwargs`` argument under "**"; BFCL's under None.
    return "None" if name == "**" else str(name)


def _call_strings(calls: list[dict[str, Any]], style: str, mode: Mode) -> list[str]:
    out: list[str] = []
    for call in calls:
        for name, args in call.items():
            if style == "fc":
                out.append(f"{name}({','.join(f'{_key(k)}={v!r}' for k, v in args.items())})")
            else:
                out.append(f"{name}({', '.join(f'{_key(k)}={_nested(v, mode)}' for k, v in args.items())})")
    return out


def executable_calls(reply: str, mode: Mode = "compat") -> tuple[list[ToolCall], list[str]] | None:
    """The calls of ``reply`` and BFCL's call strings for them, or None when the reply ends the
    turn (it does not decode, decodes to no call, or its strings cannot be built).

    The turn split is always BFCL's (``mode`` only changes how the strings are written).

    >>> executable_calls("[cd(folder='a'), ls()]")[1]
    ["cd(folder='a')", 'ls()']
    >>> executable_calls("All done.") is None
    True
    """
    decoded = decode(reply, "compat")
    if not decoded.ok or not decoded.well_formed or not decoded.calls:
        return None
    calls = decoded.calls
    try:
        strings = _call_strings(calls, decoded.style, "compat")
        if mode != "compat":
            strings = _call_strings(calls, decoded.style, mode)
    except _Unrenderable:
        return None
    except RecursionError:
        return None
    tool_calls = [
        ToolCall(name=name, arguments={str(k): v for k, v in args.items()})
        for call in calls
        for name, args in call.items()
    ]
    return tool_calls, strings


def split_turns(
    replies: Sequence[str], n_turns: int
) -> tuple[list[list[tuple[str, list[str] | None]]], bool]:
    """The replies grouped into turns as the episode grouped them: ``(turns, force_quit)``.

    Each turn is a list of ``(reply, call strings or None)``; a turn ends at a reply without
    calls, after :data:`STEP_LIMIT` + 1 executed steps (``force_quit``: no later turn), or when the
    replies run out (later turns are then missing).
    """
    turns: list[list[tuple[str, list[str] | None]]] = []
    replies = list(replies)
    k = 0
    for _ in range(n_turns):
        steps: list[tuple[str, list[str] | None]] = []
        count = 0
        while k < len(replies):
            reply = replies[k]
            k += 1
            found = executable_calls(reply) if isinstance(reply, str) else None
            steps.append((reply, found[1] if found else None))
            if found is None:
                break
            count += 1
            if count > STEP_LIMIT:
                turns.append(steps)
                return turns, True
        if not steps:
            break
        turns.append(steps)
    return turns, False


# ---------------------------------------------------------------------------------------------
# executing call strings in the classes' state


class _Instances:
    """One set of the entry's class instances, loaded from its initial configuration."""

    def __init__(self, sample: Sample, prefix: str) -> None:
        backend = _backend()
        config = sample.metadata["initial_config"]
        long_context = "long_context" in str(sample.metadata.get("category", ""))
        self.by_class: dict[str, Any] = {}
        self.variables: dict[str, Any] = {}
        self.methods: dict[str, Any] = {}
        self.owner: dict[str, str] = {}
        for name in sample.metadata["involved_classes"]:
            instance = _class(name)()
            if name not in backend.STATELESS_CLASSES:
                instance._load_scenario(copy.deepcopy(config.get(name, {})), long_context=long_context)
            variable = re.sub(r"[-./:]", "_", f"{prefix}_{sample.id}_{name}_instance")
            self.by_class[name] = instance
            self.variables[variable] = instance
            for method, bound in inspect.getmembers(instance, predicate=inspect.ismethod):
                if not method.startswith("_"):
                    self.owner[method] = variable
                    self.methods[method] = bound

    def run(self, call: str, mode: Mode = "compat") -> str:
        """Execute one call string; the result as BFCL records it (errors included)."""
        if mode == "compat":
            call = _METHOD_NAME.sub(lambda m: self._prefixed(m.group(1)), call)
        head = call.split("(")[0] if "(" in call else call
        if "." in head:
            head = head.split(".")[1]
        try:
            if head in _BLOCKED:
                raise _Refused(f"Function call {head} is not allowed.")
            tree = compile(call, "<string>", "eval", ast.PyCF_ONLY_AST)
            assert isinstance(tree, ast.Expression)
            names = self.variables if mode == "compat" else self.methods
            result = _Evaluator(names, fresh_defaults=mode != "compat").value(tree.body)
        except Exception as exc:  # an executed method's own failure is a tool result
            return f"Error during execution: {exc}"
        if type(result) is str:
            return result
        if type(result) is dict:
            try:
                return json.dumps(result)
            except (TypeError, ValueError):
                return str(result)
        return str(result)

    def _prefixed(self, name: str) -> str:
        variable = self.owner.get(name)
        return f"{variable}.{name}" if variable is not None else name


class _Refused(ToolmendError):
    """A call the evaluator will not run; its message is the one Python's ``eval`` would give, so
    the tool result reads as BFCL's does."""


class _Evaluator:
    """Literals and calls of public methods; everything else is refused (see the module docs)."""

    def __init__(self, names: dict[str, Any], *, fresh_defaults: bool = False) -> None:
        self.names = names
        self.fresh_defaults = fresh_defaults

    def value(self, node: ast.AST) -> Any:
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.List):
            return [self.value(e) for e in node.elts]
        if isinstance(node, ast.Tuple):
            return tuple(self.value(e) for e in node.elts)
        if isinstance(node, ast.Set):
            return {self.value(e) for e in node.elts}
        if isinstance(node, ast.Dict):
            out: dict[Any, Any] = {}
            for k, v in zip(node.keys, node.values, strict=True):
                if k is None:
                    out.update(self.value(v))
                else:
                    key = self.value(k)
                    out[key] = self.value(v)
            return out
        if isinstance(node, ast.UnaryOp | ast.BinOp):
            return safe_arith(node)
        if isinstance(node, ast.Name):
            if node.id in self.names:
                return self.names[node.id]
            raise _Refused(f"name '{node.id}' is not defined")
        if isinstance(node, ast.Attribute):
            base = self.value(node.value)
            if node.attr.startswith("_") or not callable(getattr(base, node.attr, None)):
                raise AttributeError(f"'{type(base).__name__}' object has no attribute '{node.attr}'")
            return getattr(base, node.attr)
        if isinstance(node, ast.Call):
            func = self.value(node.func)
            args = [self.value(a) for a in node.args]
            kwargs: dict[str, Any] = {}
            for kw in node.keywords:
                if kw.arg is None:
                    kwargs.update(self.value(kw.value))
                else:
                    kwargs[kw.arg] = self.value(kw.value)
            if not inspect.ismethod(func):
                raise _Refused(f"'{type(func).__name__}' object is not callable")
            if self.fresh_defaults:
                _fresh_defaults(func, args, kwargs)
            return func(*args, **kwargs)
        raise _Refused(f"{type(node).__name__} expressions are not executed")


def _fresh_defaults(func: Any, args: list[Any], kwargs: dict[str, Any]) -> None:
    """Give each left-out parameter whose default is a list, dict or set its own copy of the
    default as first loaded."""
    pristine = _PRISTINE.get(getattr(func, "__func__", None), {})
    params = [p for p in inspect.signature(func).parameters.values()]
    for param in params[len(args) :]:
        if param.name not in kwargs and param.name in pristine:
            kwargs[param.name] = copy.deepcopy(pristine[param.name])


# ---------------------------------------------------------------------------------------------
# the checker


@dataclass
class MultiTurnResult:
    """The verdict on one episode; ``turn_outcomes`` has one entry per turn of the entry:
    ``passed``, ``no_call_expected`` (a turn whose ground truth is empty), the failing turn's
    ``error_type`` without the ``multi_turn:`` prefix, ``not_checked`` after it, ``missing``."""

    valid: bool
    error_type: str = ""
    error: str = ""
    failed_turn: int | None = None
    turn_outcomes: list[str] = field(default_factory=list)
    steps: list[int] = field(default_factory=list)
    differences: list[str] = field(default_factory=list)
    missing_results: list[str] = field(default_factory=list)
    faults: list[dict[str, Any]] = field(default_factory=list)
    """What became of each scheduled fault that fired (see :func:`attach_faults`)."""


def check_multi_turn(sample: Sample, replies: Sequence[str], mode: Mode = "compat") -> MultiTurnResult:
    """Replay ``replies`` for ``sample`` and score them like BFCL's multi-turn checker (see the
    module docstring; ``improved`` changes only how call strings are written and executed)."""
    truth: list[list[str]] = sample.metadata["ground_truth"]
    turns, _ = split_turns(replies, len(truth))
    steps = [sum(1 for _, calls in t if calls is not None) for t in turns]
    met = _FaultGate(sample)
    for reply, strings in (step for turn in turns for step in turn):
        if strings is not None:
            found = executable_calls(reply)
            assert found is not None
            for call, text in zip(found[0], strings, strict=True):
                met.meet(call.name, text)
    fault_outcomes = met.outcomes()
    if len(turns) != len(truth):
        answered = ["not_checked"] * len(turns) + ["missing"] * (len(truth) - len(turns))
        return MultiTurnResult(
            False, "multi_turn:force_terminated",
            f"{len(turns)} of {len(truth)} turns answered (step limit or replies ran out)",
            failed_turn=len(turns) if len(turns) < len(truth) else None,
            turn_outcomes=answered, steps=steps, faults=fault_outcomes,
        )  # fmt: skip
    model = _Instances(sample, "model_eval")
    faults = _FaultGate(sample)
    gold = _Instances(sample, "model_ground_truth_eval")
    so_far: list[str] = []
    outcomes: list[str] = []
    for index, (turn, expected) in enumerate(zip(turns, truth, strict=True)):
        executed = [reply for reply, calls in turn if calls is not None]
        for reply in executed:
            found = executable_calls(reply, mode)
            assert found is not None
            so_far.extend(faults.run(model, c.name, s, mode) for c, s in zip(*found, strict=True))
        expected_results = [gold.run(s, mode) for s in expected]
        failure: MultiTurnResult | None = None
        if not expected:
            outcomes.append("no_call_expected")
            continue
        if not executed:
            failure = MultiTurnResult(
                False, "multi_turn:empty_turn_model_response", f"no call in turn {index}, which expects calls"
            )
        else:
            differences = _state_differences(model, gold)
            if differences:
                failure = MultiTurnResult(
                    False, "multi_turn:instance_state_mismatch",
                    f"turn {index}: state differs from the ground truth's in {', '.join(differences)}",
                    differences=differences,
                )  # fmt: skip
            else:
                missing = _missing(expected_results, so_far)
                if missing:
                    failure = MultiTurnResult(
                        False, "multi_turn:execution_response_mismatch",
                        f"turn {index}: {len(missing)} ground-truth result(s) not among the model's results so far",
                        missing_results=[m[:300] for m in missing],
                    )  # fmt: skip
        if failure is not None:
            failure.failed_turn = index
            failure.steps = steps
            short = failure.error_type.removeprefix("multi_turn:")
            failure.turn_outcomes = outcomes + [short] + ["not_checked"] * (len(truth) - index - 1)
            failure.faults = fault_outcomes
            return failure
        outcomes.append("passed")
    return MultiTurnResult(True, turn_outcomes=outcomes, steps=steps, faults=fault_outcomes)


def _state_differences(model: _Instances, gold: _Instances) -> list[str]:
    out: list[str] = []
    for name, expected in gold.by_class.items():
        actual = model.by_class[name]
        for attr, value in vars(expected).items():
            if attr.startswith("_"):
                continue
            if not hasattr(actual, attr) or getattr(actual, attr) != value:
                out.append(f"{name}.{attr}")
    return out


def _missing(expected: list[str], actual: list[str]) -> list[str]:
    pool = list(actual)
    missing: list[str] = []
    for item in expected:
        try:
            pool.remove(item)
        except ValueError:
            missing.append(item)
    return missing


# ---------------------------------------------------------------------------------------------
# the episode and the gold replies


def turn_messages(sample: Sample, index: int) -> list[Message]:
    """The messages turn ``index`` adds: its user messages, or for the turn at which ``miss_func``
    adds the held-out functions, a user message with their docs (:data:`HELD_OUT_NOTE`)."""
    docs = sample.metadata.get("held_out_docs", {}).get(str(index))
    if docs:
        text = HELD_OUT_NOTE.format(functions=json.dumps(docs, indent=2, ensure_ascii=False))
        return [Message(role="user", content=text)]
    return [Message(role=m["role"], content=m["content"]) for m in sample.metadata["turns"][index]]


async def run_episode(
    sample: Sample, first: list[Message], generate: Callable[..., Awaitable[str]]
) -> list[str]:
    """Run BFCL's inference loop for ``sample`` from the prompt ``first``; the replies in order."""
    instances = _Instances(sample, "toolmend")
    faults = _FaultGate(sample)
    messages = list(first)
    replies: list[str] = []
    for index in range(len(sample.metadata["turns"])):
        if index > 0:
            messages.extend(turn_messages(sample, index))
        count = 0
        while True:
            reply = await generate(list(messages), epoch=len(replies))
            replies.append(reply)
            found = executable_calls(reply)
            if found is None:
                messages.append(Message(role="assistant", content=reply))
                break
            calls, strings = found
            step = len(replies) - 1
            calls = [c.model_copy(update={"id": f"call_{step}_{k}"}) for k, c in enumerate(calls)]
            messages.append(Message(role="assistant", content=reply, tool_calls=calls))
            for call, text in zip(calls, strings, strict=True):
                result = faults.run(instances, call.name, text)
                messages.append(Message(role="tool", content=result, tool_call_id=call.id, name=call.name))
            count += 1
            if count > STEP_LIMIT:
                return replies
    return replies


def attach_faults(samples: Sequence[Sample], faults: str, seed: int = 0) -> list[Sample]:
    """``samples`` with the fault schedule ``faults`` (``none``, ``light``, ``heavy`` or a JSON
    file; see :class:`~toolmend.world.FaultSchedule`) attached to their gold steps as
    ``metadata["faults"]``, and the schedule's identity as ``metadata["fault_schedule"]``."""
    schedule = FaultSchedule.named(faults, seed=seed)
    out: list[Sample] = []
    for sample in samples:
        tools = [c.name for c in sample.target]
        bound = [f.model_dump() for f in schedule.for_steps(sample.id, tools)]
        metadata = {**sample.metadata, "faults": bound, "fault_schedule": schedule.identity}
        out.append(sample.model_copy(update={"metadata": metadata}))
    return out


class _FaultGate:
    """The entry's scheduled faults, met in the order the calls run (the n-th call of a function
    over the whole episode); the episode and the checker count alike, so they agree."""

    def __init__(self, sample: Sample) -> None:
        self.faults = [ScheduledFault.model_validate(f) for f in sample.metadata.get("faults") or []]
        self.calls: Counter[str] = Counter()
        self.log: list[tuple[str, int | None]] = []
        """Per executed call: its call string and the fault that answered it."""

    def meet(self, name: str, text: str) -> ScheduledFault | None:
        """Count one call of ``name``; the fault that answers it instead of the function, if any."""
        self.calls[name] += 1
        for index, fault in enumerate(self.faults):
            if fault.fires(name, self.calls[name]):
                self.log.append((text, index))
                return fault
        self.log.append((text, None))
        return None

    def run(self, instances: _Instances, name: str, text: str, mode: Mode = "compat") -> str:
        """The result of one call: the fault's error body, or the call run in ``instances``."""
        fault = self.meet(name, text)
        if fault is not None:
            return scheduled_fault_response(fault.kind, name).content
        return instances.run(text, mode)

    def outcomes(self) -> list[dict[str, Any]]:
        """One entry per fault that fired: ``kind``, ``tool``, ``step``, ``hits``, ``retried``
        (the same call string again later) and ``recovered`` (such a repeat ran)."""
        out: list[dict[str, Any]] = []
        for index, fault in enumerate(self.faults):
            hits = [i for i, (_, f) in enumerate(self.log) if f == index]
            if not hits:
                continue
            failed = self.log[hits[0]][0]
            again = [f for text, f in self.log[hits[0] + 1 :] if text == failed]
            out.append(
                {
                    "kind": fault.kind,
                    "tool": fault.tool,
                    "step": fault.step,
                    "hits": len(hits),
                    "retried": bool(again),
                    "recovered": any(f is None for f in again),
                }
            )
        return out


def gold_replies(sample: Sample) -> list[str]:
    """A perfect model's replies: per turn, the ground-truth calls in one reply and then a short
    text that ends the turn (only the text where the turn expects no call)."""
    from toolmend.benchmarks.bfcl._decode import render_python

    out: list[str] = []
    for expected in sample.metadata["ground_truth"]:
        if expected:
            classes = sample.metadata["involved_classes"]
            out.append(render_python([_as_keywords(c, classes) for c in expected]))
            out.append(_TURN_END_TEXT)
        else:
            out.append(_NO_CALL_TEXT)
    return out


def gold_index(sample: Sample, prompt: Sequence[Message], messages: Sequence[Message]) -> int:
    """Which of :func:`gold_replies` answers ``messages``: the replies so far that the episode
    answered (with tool results, or by starting the next turn)."""
    starts = {turn_messages(sample, i)[0].content for i in range(1, len(sample.metadata["turns"]))
              if turn_messages(sample, i)}  # fmt: skip
    return sum(
        1
        for i in range(len(prompt), len(messages) - 1)
        if messages[i].role == "assistant"
        and (
            messages[i + 1].role == "tool"
            or (messages[i + 1].role == "user" and messages[i + 1].content in starts)
        )
    )
