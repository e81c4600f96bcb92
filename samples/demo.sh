#!/usr/bin/env bash
# samples/demo.sh - the README's first command: builds tgdb (installing missing
# Debian packages when run as root), makes a small random llama model from the
# bundled vocabulary (no download), generates text from it and prints the
# graph of a decode step (nodes, shapes) with timings per op.
#   TG_DEMO_PRESET=100m   use the ~100M-parameter preset instead of the tiny one
set -euo pipefail
TG_ROOT=$(cd "$(dirname "$0")/.." && pwd)
export TG_ROOT
cd "$TG_ROOT"
. tests/deps.sh
tg_install_deps
echo "== build"
tg_build build

TGDB=build/inspect/tgdb
PRESET=${TG_DEMO_PRESET:-tiny}
MODEL=build/sample-$PRESET.gguf
THREADS=${TG_DEMO_THREADS:-2}
PROMPT="Once upon a time, there was a little robot"

echo "== sample model ($PRESET, random weights, Llama 2 vocabulary) -> $MODEL"
[ -s "$MODEL" ] || build/samples/make-model --preset "$PRESET" --type f32 --seed 42 -o "$MODEL"

echo "== generate: greedy, 16 tokens"
"$TGDB" generate -m "$MODEL" -p "$PROMPT" -n 16 --temp 0 -t "$THREADS" --graph

echo "== generate: sampled (--temp 0.8 --top-k 40 --seed 7), as JSON"
"$TGDB" generate -m "$MODEL" -p "$PROMPT" -n 8 --temp 0.8 --top-k 40 --seed 7 -t "$THREADS" --json

# == trace: record the run (helper "trace" adds: generate --trace build/demo.tgtrace)
# == trace info: summarise the recording (helper "trace" adds: tgdb trace info build/demo.tgtrace)
# == check: diagnostics over the trace (helper "check" adds: tgdb check build/demo.tgtrace)
# == hint: browsing the trace in the TUI (helper "tui" adds the final hint line)

echo "== done"
