"""Plausible wrong names: similar real tools, hallucinated tool names, parameter-key aliases and
irrelevant keys.

>>> from toolmend import Tool
>>> tools = [Tool(name="mail_send"), Tool(name="mail_search"), Tool(name="todo_list")]
>>> similar_tools(tools[0], tools)[0].name
'mail_search'
>>> "mail_send" in hallucinated_names("mail_send", [t.name for t in tools])
False
>>> key_aliases("city", {"city": {}})[:2]
['location', 'city_name']
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable

from rapidfuzz import fuzz

from toolmend._schema import Tool
from toolmend.check._names import fold

__all__ = ["hallucinated_names", "hallucinations", "irrelevant_keys", "key_aliases", "similar_tools"]

# Words that name the same action or thing; a model that half-remembers a tool reaches for them.
_WORD_SYNONYMS: dict[str, tuple[str, ...]] = {
    "get": ("fetch", "retrieve", "lookup"),
    "search": ("find", "lookup", "query"),
    "find": ("search", "locate"),
    "list": ("get_all", "fetch_all", "browse"),
    "create": ("add", "new", "make"),
    "add": ("create", "insert", "append"),
    "delete": ("remove", "erase"),
    "remove": ("delete", "drop"),
    "send": ("post", "dispatch", "submit"),
    "update": ("edit", "modify", "change"),
    "book": ("reserve", "purchase"),
    "cancel": ("revoke", "abort"),
    "read": ("open", "view"),
    "write": ("save", "store"),
    "current": ("now", "live", "today"),
    "forecast": ("prediction", "outlook"),
    "convert": ("exchange", "transform"),
    "calculate": ("compute", "calc"),
    "info": ("details", "data"),
    "details": ("info", "summary"),
    "quote": ("price", "value"),
    "move": ("transfer", "relocate"),
    "transfer": ("send", "move"),
    "complete": ("finish", "close"),
    "checkout": ("purchase", "pay"),
    "status": ("state", "progress"),
    "weather": ("climate", "meteo"),
    "events": ("appointments", "meetings"),
    "event": ("appointment", "meeting"),
    "mail": ("email", "inbox"),
    "email": ("mail", "message"),
}
_SUFFIXES = ("v2", "api", "tool", "info", "data")
_PREFIXES = ("get", "do", "run")

_KEY_SYNONYMS: dict[str, tuple[str, ...]] = {
    "city": ("location", "city_name", "place"),
    "date": ("day", "on_date", "when"),
    "query": ("q", "search_term", "keywords"),
    "keyword": ("query", "search_term", "term"),
    "name": ("full_name", "title", "label"),
    "email": ("email_address", "mail", "address"),
    "to": ("recipients", "recipient", "to_address"),
    "subject": ("title", "topic", "heading"),
    "body": ("content", "text", "message"),
    "content": ("text", "body", "data"),
    "title": ("name", "subject", "summary"),
    "amount": ("value", "sum", "quantity"),
    "symbol": ("ticker", "stock", "code"),
    "path": ("file_path", "filename", "file"),
    "origin": ("from", "source", "departure"),
    "destination": ("to", "dest", "arrival"),
    "unit": ("units", "scale", "temperature_unit"),
    "category": ("type", "kind", "genre"),
    "limit": ("max_results", "count", "top_k"),
    "folder": ("mailbox", "directory", "box"),
    "mode": ("travel_mode", "method", "transport"),
    "quantity": ("qty", "count", "amount"),
    "priority": ("urgency", "importance", "level"),
    "directory": ("dir", "folder", "path"),
    "id": ("identifier", "ref", "number"),
}
_GENERIC_KEYS = ("verbose", "language", "format", "timeout", "include_metadata", "page")
_WORDS = re.compile(r"[A-Za-z][a-z]*|[0-9]+")


def _tokens(name: str) -> list[str]:
    return [w.lower() for w in _WORDS.findall(name.replace(".", "_"))]


def _text(tool: Tool) -> str:
    return " ".join(_tokens(tool.name))


def similar_tools(tool: Tool, tools: Iterable[Tool], *, limit: int = 3) -> list[Tool]:
    """The other offered tools most similar to ``tool`` (name words weigh more than the
    description), best first; ties go by name so the order never depends on the input order."""
    scored: list[tuple[float, str, Tool]] = []
    for other in tools:
        if other.name == tool.name:
            continue
        name_score = fuzz.token_set_ratio(_text(tool), _text(other))
        desc_score = fuzz.token_set_ratio(tool.description, other.description) if tool.description else 0.0
        scored.append((0.65 * name_score + 0.35 * desc_score, other.name, other))
    scored.sort(key=lambda s: (-s[0], s[1]))
    return [t for _, _, t in scored[:limit]]


def _join(words: list[str], like: str) -> str:
    if "_" in like or "-" in like or like.islower():
        return ("-" if "-" in like else "_").join(words)
    # camelCase or PascalCase name: keep its style
    first = words[0] if like[:1].islower() else words[0].capitalize()
    return first + "".join(w.capitalize() for w in words[1:])


def hallucinated_names(name: str, existing: Collection[str]) -> list[str]:
    """Plausible tool names that are *not* offered: synonyms of the name's words first, then
    variants with a suffix or prefix or a singular/plural switch. None of them equals an offered
    name up to case and separators, so it is a made-up tool, not a typo of a real one."""
    return [n for n, _ in hallucinations(name, existing)]


def hallucinations(name: str, existing: Collection[str]) -> list[tuple[str, str]]:
    """:func:`hallucinated_names` with the kind of each: ``"synonym"`` or ``"variant"``."""
    taken = {fold(n) for n in existing} | {fold(name)}
    head, dot, tail = name.rpartition(".")
    if dot:
        # A namespaced name (``math.factorial``): vary the function, keep the namespace.
        return [
            (f"{head}.{v}", kind) for v, kind in hallucinations(tail, []) if fold(f"{head}.{v}") not in taken
        ]
    words = _tokens(name)
    out: list[tuple[str, str]] = []
    names: set[str] = set()

    def add(candidate: str, kind: str) -> None:
        if fold(candidate) not in taken and candidate not in names:
            names.add(candidate)
            out.append((candidate, kind))

    if not words:
        add(name + "_v2", "variant")
        return out
    for i, word in enumerate(words):
        for syn in _WORD_SYNONYMS.get(word, ()):
            add(_join([*words[:i], *syn.split("_"), *words[i + 1 :]], name), "synonym")
    for i, word in enumerate(words):
        if len(word) > 3:
            toggled = word[:-1] if word.endswith("s") else word + "s"
            add(_join([*words[:i], toggled, *words[i + 1 :]], name), "variant")
    for suffix in _SUFFIXES:
        add(_join([*words, suffix], name), "variant")
    for prefix in _PREFIXES:
        if words[0] != prefix:
            add(_join([prefix, *words], name), "variant")
    return out


def _camel(key: str) -> str:
    parts = key.split("_")
    return parts[0] + "".join(p.capitalize() for p in parts[1:])


def key_aliases(key: str, declared: Collection[str]) -> list[str]:
    """Plausible other spellings of parameter ``key`` that the tool does not declare: synonyms
    (``city`` → ``location``), then a camelCase form, then an abbreviation."""
    out: list[str] = []
    words = key.split("_")
    candidates = list(_KEY_SYNONYMS.get(key, ()))
    last = words[-1]
    if len(words) > 1:
        for syn in _KEY_SYNONYMS.get(last, ()):
            candidates.append("_".join([*words[:-1], syn]))
        candidates.append(_camel(key))
    if len(words) == 1 and len(key) > 5:
        candidates.append(key[:4])
    candidates.append(key + "_value")
    for c in candidates:
        if c != key and c not in declared and c not in out:
            out.append(c)
    return out


def irrelevant_keys(tool: Tool, tools: Iterable[Tool]) -> list[str]:
    """Keys a model might wrongly add: parameters of *other* offered tools that this tool does
    not take (sorted), then generic option names."""
    own = set(tool.properties)
    borrowed = sorted({k for t in tools if t.name != tool.name for k in t.properties} - own)
    return borrowed + [k for k in _GENERIC_KEYS if k not in own and k not in borrowed]
