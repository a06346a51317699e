import json
from pathlib import Path

import toolmend


def test_all_names_resolve() -> None:
    for name in toolmend.__all__:
        assert getattr(toolmend, name) is not None, name


def test_all_has_no_repeats() -> None:
    names = [n for n in toolmend.__all__ if n != "__version__"]
    assert len(set(names)) == len(names)


def test_one_public_name_is_one_thing() -> None:
    """A name exported by two public modules is the same object in both (re-exports only)."""
    import importlib
    import pkgutil

    seen: dict[str, dict[int, str]] = {}
    for info in pkgutil.walk_packages(toolmend.__path__, "toolmend."):
        parts = info.name.split(".")
        if info.name.endswith("__main__") or any(p.startswith("_") for p in parts) or parts[1] == "cli":
            continue  # private modules, and the CLI's per-command modules (each has a `register`)
        module = importlib.import_module(info.name)
        for name in getattr(module, "__all__", []):
            seen.setdefault(name, {})[id(getattr(module, name))] = info.name
    clashes = {name: sorted(where.values()) for name, where in seen.items() if len(where) > 1}
    assert clashes == {}


def test_the_check_subpackage_is_not_shadowed() -> None:
    import types

    import toolmend.check as check_pkg

    assert isinstance(check_pkg, types.ModuleType) and toolmend.check is check_pkg
    assert toolmend.check_calls is check_pkg.check


def test_help_and_dir_show_the_lazily_loaded_names() -> None:
    import pydoc
    import subprocess
    import sys

    assert {"run_bench", "get_model", "World"} <= set(dir(toolmend))
    code = "import pydoc, toolmend; print(pydoc.render_doc(toolmend, renderer=pydoc.plaintext))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    for name in ("run_bench", "get_model", "write_report", "check_calls"):
        assert name in out
    assert pydoc.render_doc(toolmend, renderer=pydoc.plaintext)  # in this process too


# Implementation modules are private (``_module.py``) and re-exported by their package, as in
# httpx; these stay importable by path because they are optional integrations behind extras.
PUBLIC_MODULES = {
    "toolmend.guard.anthropic_client",
    "toolmend.guard.langchain",
    "toolmend.guard.openai_client",
}
PINNED = Path(__file__).resolve().parent / "data" / "public_api.json"


def _public_api() -> dict[str, list[str]]:
    import importlib
    import pkgutil

    api: dict[str, list[str]] = {"toolmend": sorted(toolmend.__all__)}
    for info in pkgutil.walk_packages(toolmend.__path__, "toolmend."):
        if any(p.startswith("_") for p in info.name.split(".")):
            continue
        module = importlib.import_module(info.name)
        api[info.name] = sorted(getattr(module, "__all__", []))
    return api


def test_implementation_modules_are_private() -> None:
    import pkgutil

    public_modules = {
        info.name
        for info in pkgutil.walk_packages(toolmend.__path__, "toolmend.")
        if not info.ispkg and not any(p.startswith("_") for p in info.name.split("."))
    }
    assert public_modules == PUBLIC_MODULES


def test_public_all_lists_are_pinned() -> None:
    """A change to any public ``__all__`` is a deliberate API change: update tests/data/public_api.json
    (``python tests/test_public_api.py`` rewrites it) in the same commit."""
    assert _public_api() == json.loads(PINNED.read_text(encoding="utf-8"))


if __name__ == "__main__":
    PINNED.write_text(json.dumps(_public_api(), indent=1) + "\n", encoding="utf-8")
