#!/usr/bin/env bash
# samples/demo.sh - the README's first command: builds tgdb (installing missing
# Debian packages when run as root), makes a small random llama model from the
# bundled vocabulary (no download), trains it on the shipped corpus
# (samples/corpus/apache-2.0.txt, ~15 s), generates text from it and prints the
# graph of a decode step (nodes, shapes) with timings per op, then records a
# traced generation, summarises and checks the trace, draws its graph, and
# ends with the command that opens the trace in the TUI.
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
PROMPT="Licensed under the Apache License"
CORPUS=samples/corpus/apache-2.0.txt

echo "== sample model ($PRESET, random weights, Llama 2 vocabulary) -> $MODEL"
[ -s "$MODEL" ] || build/samples/make-model --preset "$PRESET" --type f32 --seed 42 -o "$MODEL"

if [ "$PRESET" = tiny ]; then
    TRAINED=build/sample-$PRESET-trained-400.gguf   # the step count in the name: a cached model matches
    echo "== train it on $CORPUS: 400 AdamW steps of 64 tokens, every 50th step shown -> $TRAINED"
    if [ ! -s "$TRAINED" ]; then
        "$TGDB" train -m "$MODEL" -f "$CORPUS" --steps 400 --ctx 64 --lr 0.003 --seed 1 -t "$THREADS" -o "$TRAINED" \
            | awk 'NR == 1 || /^step [0-9]*(50|00)\// || /^loss/'
    fi
    MODEL=$TRAINED
else
    echo "== (training is shown with the tiny preset; this model keeps its random weights)"
fi

echo "== generate: greedy, 16 tokens"
"$TGDB" generate -m "$MODEL" -p "$PROMPT" -n 16 --temp 0 -t "$THREADS" --graph

echo "== generate: sampled (--temp 0.6 --top-k 10 --seed 7), as JSON"
"$TGDB" generate -m "$MODEL" -p "$PROMPT" -n 8 --temp 0.6 --top-k 10 --seed 7 -t "$THREADS" --json

TRACE=build/demo.tgt
echo "== generate with a trace: every graph, placement, split, buffer and evaluated node -> $TRACE"
"$TGDB" generate -m "$MODEL" -p "$PROMPT" -n 8 --temp 0 -t "$THREADS" --trace "$TRACE" --trace-dump 'result_output'

echo "== tgdb trace info $TRACE"
"$TGDB" trace info "$TRACE"

echo "== tgdb check $TRACE (stale reads, unallocated use, NaN origin, splits)"
"$TGDB" check "$TRACE"

echo "== tgdb dot: the prompt's graph as SVG (layers folded) -> build/demo.svg"
FIRST=$("$TGDB" trace info "$TRACE" | sed -nE 's/^  graph ([0-9]+) \(sched.*/\1/p' | head -n 1)   # the prompt's graph id
"$TGDB" dot "$TRACE" --graph "${FIRST:-1}" --collapse -o build/demo.svg

echo
echo "Browse the trace in the terminal UI (? lists the keys):"
echo "    $TG_ROOT/$TGDB tui $TG_ROOT/$TRACE"
