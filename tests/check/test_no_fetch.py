"""Nothing in a tool spec or a call makes toolmend open a file, a device, a FIFO or a socket.

An audit hook (``sys.addaudithook``) watches every ``open`` and socket connection Python makes
while hostile specs load and calls are checked; hooks cannot be removed, so it records only
while a flag is set. What Rust code (jsonschema-rs) might read is watched through the files
themselves: a file's access time moves when anything reads it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from audit import watched

from toolmend._errors import SpecError
from toolmend._schema import ToolCall
from toolmend.check import Checker, check
from toolmend.check._spec import DIALECTS, compile_parameters


def test_the_guard_sees_an_open_and_a_connect(tmp_path: Path) -> None:
    """The guard itself works: it would see what the tests below must not do."""
    import socket

    target = tmp_path / "x.json"
    target.write_text("{}")
    with watched() as seen:
        target.read_text()
        sock = socket.socket()
        try:
            sock.settimeout(0.01)
            sock.connect(("127.0.0.1", 9))
        except OSError:
            pass
        finally:
            sock.close()
    assert [e for e, _ in seen] == ["open", "socket.connect"]


def _hostile(tmp_path: Path) -> list[tuple[str, dict[str, Any]]]:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    local = tmp_path / "schema.json"
    local.write_text('{"type": "object"}')
    uris = [
        "file:///dev/zero", "file:///dev/stdin", "/dev/zero", f"file://{fifo}", f"file://{local}", str(local),
        "http://127.0.0.1:9/schema.json", "https://example.org/draft/2020-12/schema",
        "https://json-schema.org/draft/2020-12/schem", "tcp://127.0.0.1:9",
    ]  # fmt: skip
    out: list[tuple[str, dict[str, Any]]] = []
    for uri in uris:
        out.append(("$schema", {"$schema": uri, "type": "object", "properties": {"a": {"type": "string"}}}))
        out.append(
            ("$schema", {"type": "object", "properties": {"a": {"$id": "https://x.org/a", "$schema": uri}}})
        )
        out.append(("$ref", {"type": "object", "properties": {"a": {"$ref": uri}}}))
        out.append(("$ref", {"type": "object", "properties": {"a": {"$dynamicRef": uri}}}))
        out.append(
            ("$ref", {"$id": "https://x.org/root", "type": "object", "properties": {"a": {"$ref": "b.json"}}})
        )
    return out


def test_hostile_specs_are_refused_without_opening_anything(tmp_path: Path) -> None:
    cases = _hostile(tmp_path)
    check([ToolCall(name="warm", arguments={})], [{"name": "warm", "parameters": {"type": "object"}}])
    with watched() as seen:
        for i, (_, schema) in enumerate(cases):
            spec = {"name": f"t{i}", "description": "", "inputSchema": schema}  # the MCP way
            with pytest.raises(SpecError, match="dialect|fetches nothing"):
                Checker([spec]).check_call(ToolCall(name=f"t{i}", arguments={"a": "x"}))
            with pytest.raises(SpecError):
                compile_parameters(f"u{i}", schema)
    assert seen == []


def test_every_bundled_dialect_checks_without_opening_anything() -> None:
    schemas: list[dict[str, Any]] = [
        {
            "$schema": uri,
            "type": "object",
            "properties": {"a": {"type": "string", "pattern": "^x"}},
            "required": ["a"],
        }
        for uri in DIALECTS
    ]
    # Each written both ways the web writes it: https / http, with and without the empty fragment.
    schemas += [
        {**s, "$schema": str(s["$schema"]).replace("http://", "https://").rstrip("#")} for s in schemas
    ]
    with watched() as seen:
        for schema in schemas:
            checker = Checker([{"name": "f", "parameters": schema}])
            assert checker.check_call(ToolCall(name="f", arguments={"a": "xy"})) == [], schema["$schema"]
            assert [f.code for f in checker.check_call(ToolCall(name="f", arguments={"a": "y"}))] == [
                "invalid_value"
            ]
            assert checker.spec("f") is not None and checker.spec("f").dialect in DIALECTS  # type: ignore[union-attr]
    assert seen == []


def test_no_native_code_reads_a_file_a_spec_names(tmp_path: Path) -> None:
    """jsonschema-rs is Rust: the audit hook cannot see it, the file's access time can."""
    target = tmp_path / "meta.json"
    target.write_text('{"type": "object"}')
    os.utime(target, (1, target.stat().st_mtime))
    target.read_text()  # the control: this file system records reads
    if target.stat().st_atime == 1:
        pytest.skip("this file system does not record access times")
    os.utime(target, (1, target.stat().st_mtime))
    for uri in (f"file://{target}", str(target)):
        with pytest.raises(SpecError, match="unknown dialect"):
            compile_parameters("f", {"$schema": uri, "type": "object"})
        with pytest.raises(SpecError, match="fetches nothing"):
            compile_parameters("f", {"type": "object", "properties": {"a": {"$ref": uri}}})
    assert target.stat().st_atime == 1
