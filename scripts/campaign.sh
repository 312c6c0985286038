#!/usr/bin/env bash
# The Calculator C* campaign (issue 25), banked in the repository as it runs: annotate for
# CHUNK minutes, commit datasets/cstar-math, repeat until the campaign reports itself complete.
# Safe to stop at any moment (Ctrl-C, kill, a session's end) and to rerun on a new machine: it
# resumes from the committed bank/. Extra arguments go to `toolformer campaign`.
#   nohup nice -n 10 bash scripts/campaign.sh > runs/campaign.log 2>&1 &
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x .venv/bin/toolformer ] || bash scripts/install.sh
OUT=datasets/cstar-math
CHUNK=${CHUNK:-15}
commit() {
  for _ in 1 2 3 4 5; do
    git add -A "$OUT" && { git diff --cached --quiet -- "$OUT" ||
      git commit -q -m "datasets/cstar-math: bank $(ls "$OUT"/bank/shard-*.jsonl | wc -l) shards ($1)" -- "$OUT"; } && return 0
    sleep 5  # another git command holds the index lock
  done
  echo "could not commit $OUT; the files are on disk and the next run commits them" >&2
}
while true; do
  .venv/bin/toolformer campaign --out "$OUT" --max-minutes "$CHUNK" --progress false "$@"
  done=$(.venv/bin/python -c "import json; print(json.load(open('$OUT/data/summary.json'))['complete'])")
  stopped=$(.venv/bin/python -c "import json; print(json.load(open('$OUT/data/summary.json'))['stopped'])")
  commit "$stopped"
  [ "$done" = "True" ] && break
  [ "$stopped" = "time" ] || break  # max_windows or another stop the caller asked for
done
