#!/usr/bin/env bash
# The main job on the embedded default: install, then run the whole method end to end
# (pull models → index → annotate → fine-tune → evaluate → report) into runs/default.
# Extra arguments go to `toolformer pipeline` (see its --help); a re-run skips finished stages.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
.venv/bin/toolformer pipeline --out runs/default "$@"
