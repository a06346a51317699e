"""``hf/<local path>``: a transformers causal LM run in-process (extra ``hf``).

The path is a transformers folder, a ``.gguf`` file (dequantised, converted once into a cached
folder: :mod:`toolmend.models._gguf`), or a named local model (``hf/smollm2-135m``).

The prompt is the tokenizer's chat template (or the ``chat_template`` given, e.g. the one toolmend
supplies for a named model whose own template ignores tools), with tools passed to it as JSON
Schemas in native mode, or described in the system prompt in prompt mode. Concurrent
``generate`` calls are batched (left padding) up to ``batch_size``. Decoding is greedy unless
``temperature`` > 0. A request whose prompt plus reply budget exceeds the model's context
(``max_position_embeddings``) is a :class:`~toolmend.ModelError` raised before generating, for
that request alone (the model would otherwise write past its trained positions without complaint).

Native mode needs a template that renders the tools: one that ignores them (the same text with
and without tools) would silently send none, so such a request is a :class:`~toolmend.ConfigError`
that says to use prompt mode. The calls the model writes are parsed with
:func:`toolmend.formats.parse_calls` (Hermes ``<tool_call>`` blocks, JSON actions, Python calls)
into ``Completion.tool_calls``, as a server's tool parser would; text without a call stays text.
In prompt mode the reply is returned as text, for the caller to parse.

``tool_choice`` is enforced while decoding, as a grammar-constrained server would: ``"required"``
(or the name of one tool) makes the reply open with a Hermes call, ``<tool_call>\n{"name":
"<tool>", "arguments": {"<parameter>": ``, the tool and its first parameter chosen by the model
among the offered ones (a named choice: that tool); the values and any further arguments are then
the model's own. A small instruction model may answer every request in
prose however the tools are presented (SmolLM2-135M-Instruct does), so its tool calling can only
be measured this way. ``"none"`` renders no tools. The constructor's ``tool_choice`` applies to
requests with tools that set none (``-M tool_choice=required``) and that answer a user turn; a
request that answers tool results decodes freely, as OpenAI's Agents SDK resets ``tool_choice``
after a call, because a reply forced to call every time can never end a multi-step episode (in
BFCL's multi-turn loop a turn ends only with a reply that calls nothing). ``"auto"`` (the default)
decodes freely.

Sampling gives each request a random stream of its own, seeded from the config's ``seed``, the
sample id, the epoch and the prompt (Gumbel-max over the model's logits after temperature and the
model's top-k / top-p / min-p, which is an exact draw from that distribution). A reply therefore
does not depend on the batch it lands in, the same request with the same seed is answered the
same way, and the replies of different samples are independent. (Re-seeding torch's one
generator per batch would make every batch replay the same stream: the k-th reply of each batch
would share its random numbers, and an evaluation's samples would not be independent.)

    model = HFModel("./checkpoints/qwen-0.5b", batch_size=16)
"""

from __future__ import annotations

import hashlib
import json
import secrets
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from toolmend._errors import ConfigError, DatasetError, MissingExtraError, ModelError
from toolmend._jsontext import read_json
from toolmend._schema import Tool, ToolCall
from toolmend.formats._calls import parse_calls
from toolmend.formats._tools import to_openai_tool
from toolmend.models._base import (
    Completion,
    GenerateConfig,
    GenerateRequest,
    Model,
    RawToolCall,
    ToolChoice,
    ToolMode,
    Usage,
)
from toolmend.models._batching import MicroBatcher
from toolmend.models._cache import ResponseCache
from toolmend.models._gguf import GGUFSource, hf_folder, is_gguf_ref, resolve_gguf
from toolmend.models._openai_wire import DEFAULT_TOOL_PROMPT, render_tools_prompt, to_wire_messages
from toolmend.models._tool_names import ToolNameMap

__all__ = [
    "CALL_OPENING",
    "ForcedOpening",
    "HFModel",
    "call_openings",
    "chat_dicts",
    "default_choice",
    "fingerprint_dir",
    "ignores_tools",
    "load_few_shot",
    "native_completion",
    "no_tools_error",
    "stream_seed",
]

_PROBE_MESSAGES = [{"role": "user", "content": "What is the weather in Paris?"}]
_PROBE_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "The weather in a city.",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
    }
]


CALL_OPENING = '<tool_call>\n{{"name": "{name}", "arguments": {{'
"""How a reply that ``tool_choice`` forces to call opens (Hermes, which
:func:`~toolmend.formats.parse_calls` reads); ``{name}`` is the tool's name."""


def call_openings(tools: list[Tool], choice: ToolChoice | None) -> list[str] | None:
    """The texts a reply must open with under ``choice`` (``None``: it is free).

    >>> from toolmend._schema import Tool
    >>> tools = [Tool(name="a"), Tool(name="b")]
    >>> call_openings(tools, "required")[1]
    '<tool_call>\\n{"name": "b", "arguments": {}'
    >>> t = Tool(name="c", parameters={"type": "object", "properties": {"x": {}, "y": {}}})
    >>> call_openings([t], "c")[1]
    '<tool_call>\\n{"name": "c", "arguments": {"y": '
    >>> call_openings(tools, "auto") is None
    True
    """
    if not tools or choice in (None, "auto", "none"):
        return None
    names = [t.name for t in tools] if choice == "required" else [t.name for t in tools if t.name == choice]
    if not names:
        raise ConfigError(f"tool_choice names {choice!r}, which is not among the offered tools")
    openings = []
    for tool in tools:
        if tool.name not in names:
            continue
        head = CALL_OPENING.format(name=tool.name)
        # The first key too is one of the tool's parameters: a small model otherwise copies the
        # template's placeholder or an example's keys; a tool without parameters gets ``{}``.
        keys = list((tool.parameters or {}).get("properties") or {})
        openings.extend([head + json.dumps(k, ensure_ascii=False) + ": " for k in keys] or [head + "}"])
    return openings


def default_choice(request: GenerateRequest, default: ToolChoice | None) -> ToolChoice | None:
    """The ``tool_choice`` that ``request`` is decoded under when the model's own is ``default``:
    the request's, else ``default`` unless the request answers tool results (see the module
    docstring).

    >>> from toolmend._schema import Message, Tool
    >>> ask = GenerateRequest(messages=[Message(role="user", content="hi")], tools=[Tool(name="a")])
    >>> default_choice(ask, "required")
    'required'
    >>> after = ask.model_copy(update={"messages": [*ask.messages, Message(role="tool", content="1")]})
    >>> default_choice(after, "required") is None
    True
    """
    if request.tool_choice is not None or not request.tools:
        return request.tool_choice
    if request.messages and request.messages[-1].role == "tool":
        return None
    return default


class ForcedOpening:
    """Masks the logits of each row so that its reply opens with one of that row's texts; once
    one is written the row decodes freely. A token may end past an opening (``{"`` after ``{``).

    ``pieces`` is the text of each token id (as the tokenizer decodes it alone), ``openings`` one
    list per row (``None``: free), ``prompt_len`` where the replies start in ``input_ids``. Used as
    a transformers ``LogitsProcessor`` (it is called with ``(input_ids, scores)``).
    """

    def __init__(self, pieces: list[str], openings: list[list[str] | None], prompt_len: int) -> None:
        self.pieces = pieces
        self.openings = openings
        self.prompt_len = prompt_len
        self._by_first: dict[str, list[int]] = {}
        for i, piece in enumerate(pieces):
            if piece:  # a token that decodes to nothing would let a row stall forever
                self._by_first.setdefault(piece[0], []).append(i)

    def allowed(self, written: str, openings: list[str]) -> list[int] | None:
        """The token ids that keep ``written`` on the way to one of ``openings`` (``None``: any)."""
        rests = set()
        for opening in openings:
            if written.startswith(opening):
                return None
            if opening.startswith(written):
                rests.add(opening[len(written) :])
        ids: set[int] = set()
        for rest in rests:
            for i in self._by_first.get(rest[0], []):
                piece = self.pieces[i]
                if rest.startswith(piece) or piece.startswith(rest):
                    ids.add(i)
        return sorted(ids)

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        for row, openings in enumerate(self.openings):
            if openings is None:
                continue
            written = "".join(self.pieces[int(t)] for t in input_ids[row, self.prompt_len :])
            ids = self.allowed(written, openings)
            if ids is None:
                continue
            keep = scores[row, ids].clone()
            scores[row, :] = float("-inf")
            scores[row, ids] = keep
        return scores


def fingerprint_dir(path: Path) -> str:
    """A cheap fingerprint of a checkpoint (file names, sizes, mtimes), so that retraining into the
    same folder does not serve the old model's cached answers."""
    h = hashlib.sha256()
    files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
    for p in files:
        st = p.stat()
        h.update(
            f"{p.relative_to(path) if path.is_dir() else p.name}:{st.st_size}:{st.st_mtime_ns};".encode()
        )
    return h.hexdigest()[:16]


FewShotSource = str | Path | Sequence[Mapping[str, Any]]
"""Worked examples: a JSON file holding a list of messages, or the list itself."""


def load_few_shot(source: FewShotSource | None) -> list[dict[str, str]]:
    """The worked examples ``source`` holds: messages ``{"role": "user" | "assistant", "content":
    "..."}``, from a user message to an assistant one (a list, or a JSON file of one).

    >>> load_few_shot([{"role": "user", "content": "2+2?"}, {"role": "assistant", "content": "[add(a=2, b=2)]"}])[1]
    {'role': 'assistant', 'content': '[add(a=2, b=2)]'}
    >>> load_few_shot([{"role": "user", "content": "2+2?"}])
    Traceback (most recent call last):
    ...
    toolmend._errors.DatasetError: few_shot: expected examples that end with an assistant message (its answer)
    """
    if source is None:
        return []
    path = source if isinstance(source, str | Path) else None
    where = str(path) if path is not None else "few_shot"
    data = read_json(path) if path is not None else source
    if not isinstance(data, list) or not data:
        raise DatasetError("expected a non-empty list of messages", path=where)
    out: list[dict[str, str]] = []
    for i, m in enumerate(data):
        if not isinstance(m, Mapping) or m.get("role") not in ("user", "assistant"):
            raise DatasetError(
                'expected an object with "role": "user" or "assistant"', path=where, field=f"[{i}]"
            )
        if not isinstance(m.get("content"), str):
            raise DatasetError("expected a string", path=where, field=f"[{i}].content")
        out.append({"role": m["role"], "content": m["content"]})
    if out[0]["role"] != "user" or out[-1]["role"] != "assistant":
        first = (
            "start with a user message"
            if out[0]["role"] != "user"
            else "end with an assistant message (its answer)"
        )
        raise DatasetError(f"expected examples that {first}", path=where)
    return out


def chat_dicts(
    request: GenerateRequest, mode: ToolMode, tool_prompt: str, few_shot: Sequence[dict[str, str]] = ()
) -> list[dict[str, Any]]:
    """Messages for a local chat template: the OpenAI shape, with call arguments as objects (what
    Hugging Face templates expect); ``few_shot`` examples go right after the system message."""
    names = ToolNameMap([])  # local templates take any name
    prompt_tools = mode == "prompt" and bool(request.tools)
    messages = to_wire_messages(
        request.messages,
        names=names,
        mode=mode,
        system_suffix=render_tools_prompt(request.tools, tool_prompt) if prompt_tools else None,
    )
    for m in messages:
        for call in m.get("tool_calls") or []:
            fn = call["function"]
            fn["arguments"] = json.loads(fn["arguments"])
        if m.get("content") is None:
            m["content"] = ""
    if few_shot:
        at = 1 if messages and messages[0]["role"] == "system" else 0
        messages[at:at] = [dict(m) for m in few_shot]
    return messages


def ignores_tools(render: Callable[[list[dict[str, Any]], list[dict[str, Any]] | None], str]) -> bool:
    """Whether a chat template drops the tools it is given: ``render(messages, tools)`` gives the
    same prompt for a probe conversation with a probe tool as without it."""
    return render(_PROBE_MESSAGES, _PROBE_TOOLS) == render(_PROBE_MESSAGES, None)


def no_tools_error(model: str) -> ConfigError:
    """The error for native tool mode on a template that ignores tools."""
    return ConfigError(
        f"{model}: the chat template ignores tools, so native tool mode would send the model none; "
        "use --tool-mode prompt (tools described in the system prompt) or a chat_template that renders tools"
    )


def native_completion(text: str, tools: list[Tool]) -> tuple[str, list[ToolCall], list[RawToolCall]]:
    """The calls a local model wrote in ``text`` when it was given ``tools`` natively, as a
    server's tool parser would return them: ``(prose left over, calls, raw calls)``.

    Hermes ``<tool_call>`` blocks, JSON actions and NesTools lists are calls whatever their
    names; Python-looking calls only when every name is one of ``tools`` (otherwise a prose answer
    quoting code would become a call). Text without a call comes back unchanged, with no calls.
    """
    result = parse_calls(text)
    if not result.calls:
        return text, [], []
    if result.format == "python" and not {c.name for c in result.calls} <= {t.name for t in tools}:
        return text, [], []
    raws = [
        RawToolCall(
            name=c.name, arguments=json.dumps(c.model_dump(mode="json")["arguments"], ensure_ascii=False)
        )
        for c in result.calls
    ]
    return result.text, list(result.calls), raws


class HFModel(Model):
    """A local transformers checkpoint (see the module docstring)."""

    engine = "transformers"
    http = False

    def __init__(
        self,
        path: str | Path,
        *,
        batch_size: int = 8,
        max_new_tokens: int = 512,
        device: str | None = None,
        tool_mode: ToolMode = "native",
        tool_prompt: str = DEFAULT_TOOL_PROMPT,
        chat_template: str | None = None,
        name: str | None = None,
        cache: ResponseCache | None = None,
        tool_choice: ToolChoice | None = None,
        few_shot: FewShotSource | None = None,
    ) -> None:
        self.path = Path(path).expanduser()
        self.gguf: GGUFSource | None = None
        if is_gguf_ref(path) and not self.path.is_dir():
            self.gguf = resolve_gguf(path)
            self.path = self.gguf.path
        elif not self.path.exists():
            raise ConfigError(f"hf model path {self.path} does not exist")
        elif not (self.path / "config.json").is_file():
            raise ConfigError(f"hf model path {self.path} is not a model folder (it has no config.json)")
        super().__init__(name or f"hf/{path}", cache=cache, max_connections=max(64, batch_size))
        self.chat_template = chat_template or (self.gguf.chat_template if self.gguf else None)
        """The template to render with (``None``: the tokenizer's own)."""
        self.stop: list[str] = list(self.gguf.stop) if self.gguf else []
        """Texts that end every reply (a base model's transcript), trimmed from it."""
        self.few_shot = load_few_shot(few_shot)
        """Worked examples put after the system message of every request."""
        self._ignores_tools: bool | None = None
        self.batch_size = batch_size
        self.max_new_tokens = max_new_tokens
        self.device = device
        self.tool_mode: ToolMode = tool_mode
        self.tool_prompt = tool_prompt
        self.tool_choice = None if tool_choice == "auto" else tool_choice
        """The ``tool_choice`` of requests with tools that set none (see the module docstring)."""
        self._pieces: list[str] | None = None
        self.batcher: MicroBatcher[GenerateRequest, Completion] = MicroBatcher(
            self._run_batch, max_batch=batch_size
        )
        self._model: Any = None
        self._tokenizer: Any = None

    def cache_identity(self) -> dict[str, Any]:
        identity = {
            "backend": "hf",
            "path": str(self.path.resolve()),
            "fingerprint": fingerprint_dir(self.path),
            "tool_mode": self.tool_mode,
            "max_new_tokens": self.max_new_tokens,
        }
        if self.chat_template is not None:  # absent otherwise: keys stay those of earlier versions
            identity["chat_template"] = hashlib.sha256(self.chat_template.encode()).hexdigest()[:16]
        if self.tool_choice is not None:
            identity["tool_choice"] = self.tool_choice
            identity["tool_choice_after_tool_results"] = "auto"
        if self.stop:
            identity["stop"] = self.stop
        if self.few_shot:
            identity["few_shot"] = hashlib.sha256(json.dumps(self.few_shot).encode()).hexdigest()[:16]
        return identity

    def request_defaults(self) -> dict[str, Any]:
        """The ``tool_choice`` given to requests that set none, where one is set."""
        return {"tool_choice": self.tool_choice} if self.tool_choice is not None else {}

    def choice(self, request: GenerateRequest) -> ToolChoice | None:
        """The ``tool_choice`` that ``request`` is decoded under (:func:`default_choice`)."""
        return default_choice(request, self.tool_choice)

    def pieces(self) -> list[str]:
        """The text of each token id, decoded alone (for :class:`ForcedOpening`)."""
        if self._pieces is None:
            _, tokenizer = self._load()
            self._pieces = [tokenizer.decode([i]) for i in range(len(tokenizer))]
        return self._pieces

    def folder(self) -> Path:
        """The transformers folder to load: the path itself, or a GGUF file's converted copy."""
        return hf_folder(self.gguf) if self.gguf is not None else self.path

    def render(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> str:
        """The prompt for ``messages`` (OpenAI-shaped dicts) and ``tools`` (``None``: no tools)."""
        _, tokenizer = self._load()
        text: str = tokenizer.apply_chat_template(
            messages,
            tools=tools,
            chat_template=self.chat_template,
            add_generation_prompt=True,
            tokenize=False,
        )
        return text

    def _load(self) -> tuple[Any, Any]:
        if self._model is None:
            try:
                import torch
                from transformers import AutoModelForCausalLM, AutoTokenizer
            except ImportError as exc:
                raise MissingExtraError("transformers", "hf", "the hf backend") from exc
            folder = self.folder()
            tokenizer = AutoTokenizer.from_pretrained(folder)
            tokenizer.padding_side = "left"
            if tokenizer.pad_token is None:
                tokenizer.pad_token = tokenizer.eos_token
            if not (self.chat_template or getattr(tokenizer, "chat_template", None)):
                raise ModelError(f"{self.path}: the tokenizer has no chat template")
            model: Any = AutoModelForCausalLM.from_pretrained(folder)
            device = self.device or ("cuda" if torch.cuda.is_available() else "cpu")
            self._model = model.to(device).eval()
            self._tokenizer = tokenizer
        return self._model, self._tokenizer

    async def _generate(self, request: GenerateRequest) -> Completion:
        return await self.batcher.submit(request)

    def context_length(self) -> int | None:
        """The model's context in tokens (its ``max_position_embeddings``; ``None``: unstated)."""
        model, _ = self._load()
        n = getattr(model.config, "max_position_embeddings", None)
        return n if isinstance(n, int) and n > 0 else None

    def _run_batch(self, requests: list[GenerateRequest]) -> list[Completion | ModelError]:
        # One generate() per distinct setting: a batch shares temperature, stop strings, etc.
        groups: dict[str, list[int]] = {}
        for i, r in enumerate(requests):
            groups.setdefault(r.config.model_dump_json(), []).append(i)
        results: list[Completion | ModelError | None] = [None] * len(requests)
        for indices in groups.values():
            outs = self._generate_group([requests[i] for i in indices], requests[indices[0]].config)
            for i, out in zip(indices, outs, strict=True):
                results[i] = out
        return [r for r in results if r is not None]

    def _generate_group(
        self, requests: list[GenerateRequest], cfg: GenerateConfig
    ) -> list[Completion | ModelError]:
        """Completions in the order of ``requests``; a request whose prompt and reply budget do not
        fit the context gets a :class:`~toolmend.ModelError` in its place, before anything runs
        (past its trained positions the model would still write, only nonsense)."""
        model, tokenizer = self._load()
        native = self.tool_mode == "native"
        if native and any(r.tools for r in requests):
            if self._ignores_tools is None:
                self._ignores_tools = ignores_tools(self.render)
            if self._ignores_tools:
                raise no_tools_error(self.name)
        texts = []
        openings: list[list[str] | None] = []
        for r in requests:
            choice = self.choice(r) if native else None
            tools = [to_openai_tool(t) for t in r.tools] if native and r.tools and choice != "none" else None
            texts.append(self.render(chat_dicts(r, self.tool_mode, self.tool_prompt, self.few_shot), tools))
            openings.append(call_openings(r.tools, choice) if tools else None)
        budget = cfg.max_tokens or self.max_new_tokens
        limit = self.context_length()
        results: list[Completion | ModelError | None] = [None] * len(requests)
        if limit is not None:
            lengths = [len(ids) for ids in tokenizer(texts, add_special_tokens=False)["input_ids"]]
            for i, n in enumerate(lengths):
                if n + budget > limit:
                    results[i] = ModelError(
                        f"{self.name}: the prompt has {n} tokens and up to {budget} more may be generated, "
                        f"beyond the model's context of {limit} tokens (its max_position_embeddings)"
                    )
        run = [i for i, r in enumerate(results) if r is None]
        if run:
            picked = [requests[i] for i in run]
            outs = self._generate_rows(
                picked, cfg, [texts[i] for i in run], [openings[i] for i in run], budget
            )
            for i, out in zip(run, outs, strict=True):
                results[i] = out
        return [r for r in results if r is not None]

    def _generate_rows(
        self,
        requests: list[GenerateRequest],
        cfg: GenerateConfig,
        texts: list[str],
        openings: list[list[str] | None],
        budget: int,
    ) -> list[Completion]:
        import torch

        model, tokenizer = self._load()
        native = self.tool_mode == "native"
        enc = tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=False).to(model.device)
        kwargs: dict[str, Any] = {
            "max_new_tokens": budget,
            # Sampling too decodes by argmax: over logits plus each request's own Gumbel noise.
            "do_sample": False,
            "pad_token_id": tokenizer.pad_token_id,
        }
        processors: list[Any] = []
        if any(o is not None for o in openings):
            # Masked before sampling's noise: a forced token is drawn among the allowed ones.
            processors.append(ForcedOpening(self.pieces(), openings, enc["input_ids"].shape[1]))
        if cfg.temperature is not None and cfg.temperature > 0:
            seeds = [stream_seed(cfg.seed, r, text) for r, text in zip(requests, texts, strict=True)]
            processors.extend(_sampler(model, cfg, seeds))
        if processors:
            from transformers import LogitsProcessorList

            kwargs["logits_processor"] = LogitsProcessorList(processors)
        stops = [s for s in [*self.stop, *(cfg.stop or [])] if s]
        if stops:
            kwargs.update(stop_strings=stops, tokenizer=tokenizer)
        with torch.no_grad():
            out = model.generate(**enc, **kwargs)
        prompt_len = enc["input_ids"].shape[1]
        completions = []
        eos = tokenizer.eos_token_id
        for r, row, mask in zip(requests, out, enc["attention_mask"], strict=True):
            new = row[prompt_len:].tolist()
            n = next((k for k, t in enumerate(new) if t in (eos, tokenizer.pad_token_id)), None)
            used = new if n is None else new[: n + (1 if new[n] == eos else 0)]
            text = tokenizer.decode(used, skip_special_tokens=True)
            cut = min((k for k in (text.find(s) for s in stops) if k >= 0), default=None)
            if cut is not None:  # generation stops after the stop text; the reply ends before it
                text = text[:cut]
            calls: list[ToolCall] = []
            raws: list[RawToolCall] = []
            if native and r.tools and self.choice(r) != "none":
                text, calls, raws = native_completion(text, r.tools)
            completions.append(
                Completion(
                    text=text,
                    tool_calls=calls,
                    raw_tool_calls=raws,
                    usage=Usage(input_tokens=int(mask.sum()), output_tokens=len(used)),
                    finish_reason="stop" if n is not None or cut is not None else "length",
                    model=self.name,
                )
            )
        return completions

    async def aclose(self) -> None:
        self._model = None
        self._tokenizer = None


def stream_seed(seed: int | None, request: GenerateRequest, prompt: str) -> int:
    """The seed of one request's random stream: from the run's ``seed``, the request's sample id
    and epoch, and its rendered prompt; a fresh one for each request when ``seed`` is ``None``."""
    if seed is None:
        return secrets.randbits(63)
    key = json.dumps([seed, request.sample_id, request.epoch, prompt])
    return int.from_bytes(hashlib.blake2b(key.encode(), digest_size=8).digest(), "big") >> 1


def _sampler(model: Any, cfg: GenerateConfig, seeds: list[int]) -> Any:
    """The logits processors of sampling: the warpers ``generate(do_sample=True)`` would apply
    (``cfg``'s temperature and top-p, the model's own top-k, top-p and min-p defaults), then Gumbel
    noise from one generator per row, so that argmax draws each row from its own stream."""
    import torch
    from transformers import (
        LogitsProcessor,
        LogitsProcessorList,
        MinPLogitsWarper,
        TemperatureLogitsWarper,
        TopKLogitsWarper,
        TopPLogitsWarper,
    )

    defaults = model.generation_config
    warpers: list[Any] = []
    if cfg.temperature is not None and cfg.temperature != 1.0:
        warpers.append(TemperatureLogitsWarper(cfg.temperature))
    if defaults.top_k:
        warpers.append(TopKLogitsWarper(defaults.top_k))
    top_p = cfg.top_p if cfg.top_p is not None else defaults.top_p
    if top_p is not None and top_p < 1.0:
        warpers.append(TopPLogitsWarper(top_p))
    if defaults.min_p is not None:
        warpers.append(MinPLogitsWarper(defaults.min_p))

    class RowStreams(LogitsProcessor):
        def __init__(self) -> None:
            self.generators = [torch.Generator(device=model.device).manual_seed(s) for s in seeds]

        def __call__(self, input_ids: Any, scores: Any) -> Any:
            # -log(E) with E ~ Exp(1) is Gumbel noise; argmax(scores + noise) is a softmax draw.
            noise = torch.stack(
                [
                    torch.empty(scores.shape[-1], device=scores.device).exponential_(generator=g)
                    for g in self.generators
                ]
            )
            return scores - noise.clamp_(min=torch.finfo(noise.dtype).tiny).log()

    return LogitsProcessorList([*warpers, RowStreams()])
