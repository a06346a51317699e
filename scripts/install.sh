#!/usr/bin/env bash
# Create .venv and install toolmend with everything the tests need. Safe to re-run.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
.venv/bin/python -m pip install -q --upgrade "pip>=25.1"
# torch first, pinned: left to itself pip would resolve a multi-GB CUDA build.
.venv/bin/python -m pip install -q "torch==2.13.0"
.venv/bin/python -m pip install -q -e ".[embed,viz]" --group dev
