"""toolmend's layers, enforced: a package imports only packages of lower layers.

Every import in ``src/toolmend`` counts — module level or inside a function, absolute or
relative — except those under ``if TYPE_CHECKING:`` (annotations only). So does every lazy
registration target (``REGISTRY.add_lazy("name", "toolmend.pkg.module:attr")``, any string of that
``module:attr`` shape): loading it later is an import of the module that wrote it. A package never
imports a package of its own layer or a higher one, so no two packages import each other. The order is
written here and in docs/architecture.md (a test keeps the two equal).

The owner rule: each concern in :data:`OWNERS` (a library, a parser, a way of splitting text)
appears in the source of its one owner module and nowhere else, except in files listed with
the reason they may.

``python tests/test_layers.py`` prints each package with the imports it may make and makes.
"""

from __future__ import annotations

import ast
import re
import sys
from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "toolmend"

LAYERS: list[list[str]] = [
    ["_version", "_errors"],
    ["_jsontext", "_shared", "_registry", "_http", "_kvcache"],
    ["_schema"],
    ["formats"],
    ["check", "compare", "env"],
    ["models", "world", "synth", "guard"],
    ["_strategy"],
    ["strategies"],
    ["benchmarks"],
    ["train"],
    ["integrations"],
    ["runs"],
    ["_bench"],
    ["reports", "serve"],
    ["mcp"],
    ["cli"],
    ["__init__", "__main__"],
]
"""Lowest first. A new package goes into this list, and into docs/architecture.md."""

Edge = tuple[str, str, str, int]
"""(importing package, imported package, importing module's file, line)."""


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement, at any depth, outside ``if TYPE_CHECKING:`` blocks."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.orelse:
                yield from _imports(ast.Module(body=[child], type_ignores=[]))
            continue
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        yield from _imports(node)


def _lazy_targets(tree: ast.AST, package: str) -> Iterator[tuple[str, int]]:
    """``(module, line)`` for every ``"package.module:attr"`` string (a lazy registration target),
    also as the constant head of an f-string (``f"package.module:{attr}"``)."""
    whole = re.compile(rf"({re.escape(package)}(?:\.\w+)*):\w+")
    head = re.compile(rf"({re.escape(package)}(?:\.\w+)*):")
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            match = whole.fullmatch(node.value)
        elif isinstance(node, ast.JoinedStr) and node.values:
            first = node.values[0]
            text = first.value if isinstance(first, ast.Constant) and isinstance(first.value, str) else ""
            match = head.fullmatch(text) if len(node.values) > 1 else None
        else:
            continue
        if match:
            yield match.group(1), node.lineno


def _module_name(path: Path, src: Path, package: str) -> tuple[str, bool]:
    rel = path.relative_to(src).with_suffix("")
    parts = [package, *rel.parts]
    is_init = parts[-1] == "__init__"
    return ".".join(parts[:-1] if is_init else parts), is_init


def _top(module: str, package: str) -> str | None:
    """The top-level unit of ``module`` inside ``package`` (``__init__`` for the root itself)."""
    parts = module.split(".")
    if parts[0] != package:
        return None
    return parts[1] if len(parts) > 1 else "__init__"


def import_edges(src: Path, package: str = "toolmend") -> list[Edge]:
    """Imports between the top-level packages and modules of ``package`` (its folder ``src``)."""
    edges: list[Edge] = []
    for path in sorted(src.rglob("*.py")):
        module, is_init = _module_name(path, src, package)
        here = _top(module, package)
        if here is None:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in _imports(tree):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif node.level:
                base = module.split(".") if is_init else module.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                targets = [".".join([*base, node.module] if node.module else base)]
            else:
                targets = [node.module or ""]
            if isinstance(node, ast.ImportFrom) and targets[0] == package:
                # ``from toolmend import x``: x is a top-level unit itself, or a name of the root.
                targets = [f"{package}.{a.name}" for a in node.names]
            for target in targets:
                there = _top(target, package)
                if there is not None and there != here:
                    if there not in _units(src) and there != "__init__":
                        there = "__init__"  # a name defined by the root package
                    edges.append((here, there, str(path.relative_to(src.parent)), node.lineno))
        for target, line in sorted(_lazy_targets(tree, package), key=lambda t: t[1]):
            there = _top(target, package)
            if there is not None and there != here and _exists(src, target):
                edges.append((here, there, str(path.relative_to(src.parent)), line))
    return edges


def _exists(src: Path, module: str) -> bool:
    """Whether ``module`` (``package.a.b``) is a module or package in ``src`` (a string such as a
    seed ``f"toolmend.critic:{seed}"`` only looks like a target)."""
    path = src.joinpath(*module.split(".")[1:])
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def _units(src: Path) -> set[str]:
    return {p.stem for p in src.glob("*.py")} | {
        p.name for p in src.iterdir() if (p / "__init__.py").exists()
    }


def violations(edges: list[Edge], layers: list[list[str]]) -> list[str]:
    """One line per import that goes up or sideways, and per package missing from ``layers``."""
    rank = {name: i for i, layer in enumerate(layers) for name in layer}
    out: list[str] = []
    for here, there, where, line in edges:
        for name in (here, there):
            if name not in rank:
                out.append(
                    f"{where}:{line}: {name!r} is in no layer (add it to LAYERS and docs/architecture.md)"
                )
        if here in rank and there in rank and rank[there] >= rank[here]:
            how = "its own layer" if rank[there] == rank[here] else "a higher layer"
            out.append(f"{where}:{line}: {here} imports {there}, {how}")
    pairs = {(a, b) for a, b, _, _ in edges}
    for a, b in sorted(pairs):
        if a < b and (b, a) in pairs:
            out.append(f"{a} and {b} import each other")
    return out


def allowed_table(layers: list[list[str]], edges: list[Edge]) -> str:
    """The layers, then each package with the layers it may import from and what it imports."""
    used: dict[str, set[str]] = defaultdict(set)
    for a, b, _, _ in edges:
        used[a].add(b)
    lines = [f"layer {i:>2}: {', '.join(layer)}" for i, layer in enumerate(layers)]
    lines.append("package (layer): may import layers | imports")
    for i, layer in enumerate(layers):
        for name in layer:
            may = f"0-{i - 1}" if i > 1 else ("0" if i == 1 else "none")
            lines.append(f"  {name} ({i}): {may} | {', '.join(sorted(used[name])) or '-'}")
    return "\n".join(lines)


def test_no_package_imports_upwards_or_sideways() -> None:
    edges = import_edges(SRC)
    print("\n" + allowed_table(LAYERS, edges))
    assert violations(edges, LAYERS) == []


def test_architecture_page_states_the_same_layer_order() -> None:
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    match = re.search(r"Layers, lowest first: (.+?)\.\n", text)
    assert match, "docs/architecture.md must state 'Layers, lowest first: ...'"
    written = [[n.strip(" `") for n in group.split(",")] for group in match.group(1).split(" < ")]
    assert written == LAYERS


def _write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / "pkg" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root / "pkg"


def test_a_violating_import_fails(tmp_path: Path) -> None:
    layers = [["base"], ["mid", "side"], ["top"], ["__init__"]]
    src = _write(
        tmp_path,
        {
            "__init__.py": "from pkg.top import run\n",
            "base.py": "import json\n",
            "mid/__init__.py": "from pkg import base\nfrom . import inner\n",
            "mid/inner.py": (
                "from typing import TYPE_CHECKING\n"
                "if TYPE_CHECKING:\n"
                "    from pkg.top import Thing  # annotations only: allowed\n"
                "def late():\n"
                "    from ..top import run  # a function-level, relative import upwards\n"
                "    return run\n"
            ),
            "side.py": "import pkg.mid\n",  # sideways, within one layer
            "top.py": "from pkg.mid.inner import late\nimport pkg.base as b\ndef run(): pass\n",
        },
    )
    edges = import_edges(src, package="pkg")
    found = violations(edges, layers)
    assert found == [
        "pkg/mid/inner.py:5: mid imports top, a higher layer",
        "pkg/side.py:1: side imports mid, its own layer",
        "mid and top import each other",
    ]
    # An unknown package is reported, so the list cannot silently fall behind the code.
    assert any(
        "'side' is in no layer" in v for v in violations(edges, [["base"], ["mid"], ["top"], ["__init__"]])
    )
    clean = [e for e in edges if e[2] not in ("pkg/mid/inner.py", "pkg/side.py")]
    assert violations(clean, layers) == []


# -- the owner rule ----------------------------------------------------------------------------------

Finder = Callable[[ast.AST], Iterator[int]]
"""The lines of a parsed module where a concern appears."""


def imports(module: str) -> Finder:
    """``import module`` / ``from module import ...`` (and its submodules), at any depth."""

    def find(tree: ast.AST) -> Iterator[int]:
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level:
                names = [node.module or ""]
            else:
                continue
            if any(n == module or n.startswith(module + ".") for n in names):
                yield node.lineno

    return find


def calls(method: str, *args: object) -> Finder:
    """A call of ``.method(...)`` on anything; with ``args``, only when its positional arguments
    are exactly those constants (``calls("split", "\\n")`` finds ``text.split("\\n")``)."""

    def find(tree: ast.AST) -> Iterator[int]:
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            if node.func.attr != method:
                continue
            if args and [a.value if isinstance(a, ast.Constant) else a for a in node.args] != list(args):
                continue
            yield node.lineno

    return find


def uses(name: str) -> Finder:
    """The name ``name`` used as a variable or an attribute (``ClientSession``, ``x.ClientSession``)."""

    def find(tree: ast.AST) -> Iterator[int]:
        for node in ast.walk(tree):
            if (isinstance(node, ast.Name) and node.id == name) or (
                isinstance(node, ast.Attribute) and node.attr == name
            ):
                yield node.lineno

    return find


def mentions(text: str) -> Finder:
    """A string constant holding ``text`` (any case): a header name, a format's keyword."""

    def find(tree: ast.AST) -> Iterator[int]:
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and text.lower() in node.value.lower()
            ):
                yield node.lineno

    return find


def any_of(*finders: Finder) -> Finder:
    """Where any of ``finders`` finds the concern."""

    def find(tree: ast.AST) -> Iterator[int]:
        for f in finders:
            yield from f(tree)

    return find


def constructs(*names: str) -> Finder:
    """A call of ``name(...)`` or ``x.name(...)``: building one (naming the type in an annotation
    is not)."""

    def find(tree: ast.AST) -> Iterator[int]:
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                func = node.func
                called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
                if called in names:
                    yield node.lineno

    return find


def reads_header(pattern: str) -> Finder:
    """A header read by name: ``h.get("Retry-After")``, ``h["retry-after-ms"]`` (``pattern`` is
    a regular expression, matched whole and in any case)."""
    rx = re.compile(pattern, re.IGNORECASE)

    def find(tree: ast.AST) -> Iterator[int]:
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in (
                "get", "getone", "getall"
            ):  # fmt: skip
                keys = node.args[:1]
            elif isinstance(node, ast.Subscript):
                keys = [node.slice]
            else:
                continue
            if any(
                isinstance(k, ast.Constant) and isinstance(k.value, str) and rx.fullmatch(k.value)
                for k in keys
            ):
                yield node.lineno

    return find


@dataclass(frozen=True)
class Owner:
    """A concern's one owner (a file under ``src/toolmend``), how to find the concern in source,
    and the other files that may hold it, each with the reason."""

    module: str
    find: Finder
    allowed: Mapping[str, str] = field(default_factory=dict)


OWNERS: dict[str, Owner] = {
    "orjson": Owner("_jsontext.py", imports("orjson")),
    # A JSON-lines reader that splits with str.splitlines() cuts records at U+2028 and U+2029,
    # which JSON allows raw inside strings; lines() in the owner splits at "\n" only.
    "JSON-lines splitting": Owner(
        "_jsontext.py",
        any_of(calls("splitlines"), calls("split", "\n")),
        allowed={
            "env/_registry.py": "the lines of a docstring",
            "world/_grading.py": "the lines of a fact an answer must state",
            "cli/_serve.py": "the first line of an error message",
        },
    ),
    # One cache mechanism: WAL, corruption recovery, the size bound and `toolmend cache` hold
    # only for files opened through _kvcache.KVCache.
    "sqlite3": Owner("_kvcache.py", imports("sqlite3")),
    # One session factory (pool, timeouts, certifi TLS): building a session or a connector
    # anywhere else is a second HTTP stack.
    "aiohttp.ClientSession": Owner("_http.py", constructs("ClientSession", "TCPConnector")),
    # One Retry-After parser: reading the header or parsing an HTTP date anywhere else is a second
    # one (the proxy's own turned "soon" into a 500 and waited forever on "NaN").
    "Retry-After parsing": Owner(
        "_http.py",
        any_of(
            reads_header(r"retry-after(-ms)?"),
            constructs("parsedate_to_datetime", "parsedate", "parsedate_tz"),
        ),
    ),
}
"""Concern -> the one module allowed to hold it. A new concern is one entry: its owner, a finder
(imports, calls, uses, mentions, any_of) and the files allowed beside it, each with its reason."""


def owner_violations(src: Path, owners: Mapping[str, Owner]) -> list[str]:
    """One line per place a concern appears outside its owner and the files allowed it."""
    out: list[str] = []
    for path in sorted(src.rglob("*.py")):
        rel = path.relative_to(src).as_posix()
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for concern, owner in owners.items():
            if rel == owner.module or rel in owner.allowed:
                continue
            for line in sorted(set(owner.find(tree))):
                out.append(f"{src.name}/{rel}:{line}: {concern} belongs in {owner.module} only")
    return out


def test_each_concern_lives_in_its_owner_only() -> None:
    assert owner_violations(SRC, OWNERS) == []
    for concern, owner in OWNERS.items():
        assert (SRC / owner.module).is_file(), f"{concern}: owner {owner.module} does not exist"
        for rel in owner.allowed:
            assert (SRC / rel).is_file(), f"{concern}: {rel} is allowed but does not exist (drop it)"
            tree = ast.parse((SRC / rel).read_text(encoding="utf-8"))
            assert list(owner.find(tree)), f"{concern}: {rel} no longer needs its exception (drop it)"


def test_a_concern_outside_its_owner_fails(tmp_path: Path) -> None:
    src = _write(
        tmp_path,
        {
            "owner.py": "import orjson\nrows = text.split('\\n')\n",
            "reader.py": (
                "import json\n"
                "def rows(text):\n"
                "    from orjson import loads  # a late import counts too\n"
                "    return [json.loads(x) for x in text.splitlines()]\n"
            ),
            "writer.py": "def lines(text):\n    return text.split('\\n') + text.split(',')\n",
            "prompt.py": "def first(doc):\n    return doc.splitlines()[0]\n",
            "retry.py": "HEADER = 'Retry-After'\nsession = aiohttp.ClientSession()\n",
        },
    )
    owners = {
        "orjson": Owner("owner.py", imports("orjson")),
        "JSON-lines splitting": Owner(
            "owner.py", any_of(calls("splitlines"), calls("split", "\n")), {"prompt.py": "a docstring"}
        ),
        "Retry-After": Owner("owner.py", mentions("retry-after")),
        "ClientSession": Owner("owner.py", uses("ClientSession")),
    }
    assert owner_violations(src, owners) == [
        "pkg/reader.py:3: orjson belongs in owner.py only",
        "pkg/reader.py:4: JSON-lines splitting belongs in owner.py only",
        "pkg/retry.py:1: Retry-After belongs in owner.py only",
        "pkg/retry.py:2: ClientSession belongs in owner.py only",
        "pkg/writer.py:2: JSON-lines splitting belongs in owner.py only",
    ]


def test_the_http_and_cache_owners_catch_a_second_mechanism(tmp_path: Path) -> None:
    src = _write(
        tmp_path,
        {
            "_kvcache.py": "import sqlite3\n",
            "_http.py": "import aiohttp\ns = aiohttp.ClientSession()\nh = {}\nh.get('retry-after')\n",
            "cache.py": "from sqlite3 import connect\n",
            "client.py": (
                "import aiohttp, email.utils\n"
                "x: aiohttp.ClientSession | None = None  # naming the type is fine\n"
                "def f(h):\n"
                "    s = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=4))\n"
                "    a = h.get('Retry-After-Ms')\n"
                "    b = h['retry-after']\n"
                "    return email.utils.parsedate_to_datetime(a or b)\n"
            ),
            "env.py": "def f(body):\n    return body.get('retry_after_s')  # a tool's fault body, not a header\n",
        },
    )
    owners = {k: OWNERS[k] for k in ("sqlite3", "aiohttp.ClientSession", "Retry-After parsing")}
    assert owner_violations(src, owners) == [
        "pkg/cache.py:1: sqlite3 belongs in _kvcache.py only",
        "pkg/client.py:4: aiohttp.ClientSession belongs in _http.py only",
        "pkg/client.py:5: Retry-After parsing belongs in _http.py only",
        "pkg/client.py:6: Retry-After parsing belongs in _http.py only",
        "pkg/client.py:7: Retry-After parsing belongs in _http.py only",
    ]


def test_a_lazy_registration_upwards_fails(tmp_path: Path) -> None:
    layers = [["base"], ["registry"], ["plugin"], ["__init__"]]
    src = _write(
        tmp_path,
        {
            "__init__.py": "",
            "base.py": "",
            "registry.py": (
                "from pkg import base\n"
                "REG.add_lazy('a', 'pkg.plugin.impl:make')\n"  # a plug-in of a higher layer
                "for n in ('b', 'c'):\n"
                "    REG.add_lazy(n, f'pkg.plugin:{n}')\n"
                "REG.add_lazy('d', 'pkg.base:thing')\n"  # lower: allowed
                "REG.add_lazy('e', 'os.path:sep')\n"  # not this package
            ),
            "plugin/__init__.py": "REG.add_lazy('f', 'pkg.registry:REG')\n",
            "plugin/impl.py": "def make(): pass\n",
        },
    )
    found = violations(import_edges(src, package="pkg"), layers)
    assert found == [
        "pkg/registry.py:2: registry imports plugin, a higher layer",
        "pkg/registry.py:4: registry imports plugin, a higher layer",
        "plugin and registry import each other",
    ]


if __name__ == "__main__":
    sys.stdout.write(allowed_table(LAYERS, import_edges(SRC)) + "\n")
