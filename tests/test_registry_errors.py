from __future__ import annotations

import pytest

from toolmend._errors import ConfigError, DatasetError, MissingExtraError, ModelError, ToolmendError
from toolmend._registry import Registry


def test_registry_suggests_close_names() -> None:
    reg: Registry[int] = Registry("benchmark")
    reg.add("nestools", 1)
    reg.add("bfcl", 2)
    assert reg.get("bfcl") == 2 and reg.names() == ["bfcl", "nestools"]
    with pytest.raises(ConfigError, match=r"unknown benchmark 'nestool'.*Did you mean 'nestools'"):
        reg.get("nestool")
    with pytest.raises(ConfigError, match="already registered"):
        reg.add("bfcl", 3)


def test_dataset_error_names_file_line_and_field() -> None:
    err = DatasetError("expected an object", path="tools.json", line=3, field="parameters")
    assert str(err) == "tools.json, line 3, field 'parameters': expected an object"
    assert isinstance(err, ToolmendError)


def test_other_errors() -> None:
    assert ModelError("429", retryable=True, status=429).retryable
    err = MissingExtraError("trl", "train", "KTO training")
    assert "pip install 'toolmend[train]'" in str(err) and isinstance(err, ImportError)
