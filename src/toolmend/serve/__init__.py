"""``toolmend serve``: the guard as an OpenAI-compatible proxy, streaming-aware.

Point an agent's base URL at the proxy and the proxy at any OpenAI-compatible server (vLLM,
SGLang, Ollama, a hosted API). Every answer with tool calls is checked against the request's
``tools`` by the unchanged :class:`~toolmend.guard.Guard`: safe repairs are applied, what repair
cannot fix is re-asked upstream in hidden turns, and the agent sees a well-formed answer (or an
OpenAI-shaped error saying why there is none).

- Streams: ``content`` deltas pass through at once; tool-call deltas are assembled by ``index``
  (:class:`StreamAssembler`), held until the answer is complete, then emitted as a compliant
  sequence with an honest ``finish_reason``.
- What backends ignore is enforced: ``tool_choice``, ``parallel_tool_calls=false``, per-tool
  ``strict``; tool calls printed as text are turned back into ``tool_calls``.
- ``/v1/responses`` (the Responses API) gets the same guard: ``function_call`` items are checked,
  repaired, re-asked with ``function_call_output`` items, and streams held from the first call.
- No request can stall another: each request is held to :class:`Limits` (sizes, nesting, how long
  a client may take to send it) and its checks run off the event loop within a CPU
  :class:`Budget`; every refusal is an OpenAI-shaped 400, 408 or 413 (docs/serve.md).
- ``x-toolmend-*`` headers (an SSE comment on streams) say what happened; ``/metrics`` counts it;
  ``--traces DIR`` writes it down for scoring and training data.
- Anthropic Messages clients (``base_url=http://H:P``) get the same at ``/v1/messages``, forwarded
  to ``{upstream}/messages`` (:mod:`toolmend.serve._anthropic`).

>>> from toolmend.serve import ServeConfig, create_app
>>> app = create_app(ServeConfig(upstream="http://127.0.0.1:8000/v1", shadow=True))
"""

from toolmend.serve._app import ServeConfig, create_app, run
from toolmend.serve._assembler import AssembledCall, ContentGate, StreamAssembler
from toolmend.serve._budget import Budget, BudgetExceeded, Limits
from toolmend.serve._metrics import Metrics
from toolmend.serve._protocol import RequestError, openai_error, validate_request
from toolmend.serve._traces import TraceWriter
from toolmend.serve._upstream import Upstream, UpstreamError
from toolmend.serve._verdict import Answer, Verdict, judge

__all__ = [
    "Answer",
    "AssembledCall",
    "Budget",
    "BudgetExceeded",
    "ContentGate",
    "Limits",
    "Metrics",
    "RequestError",
    "ServeConfig",
    "StreamAssembler",
    "TraceWriter",
    "Upstream",
    "UpstreamError",
    "Verdict",
    "create_app",
    "openai_error",
    "judge",
    "run",
    "validate_request",
]
