#!/bin/bash
# side-by-side.sh - tgdb bench next to llama.cpp's llama-bench on the same model files, in
# interleaved rounds, for a table of paired ratios that a noisy machine disturbs less than two
# separate runs.
#
# usage: tests/bench/side-by-side.sh [-r ROUNDS] [-p N] [-n N] [-d DEPTH] [-t THREADS]
#                                    [--tgdb PATH] LLAMA_BENCH MODEL.gguf...
#
# Each round runs, for every model, `tgdb bench -r 1 -fa on,off --json` and
# `llama-bench -r 1 -fa 1,0 -o csv` with the same -p/-n/-d/-t, one right after the other (which
# one goes first alternates between rounds, so a drift favours neither). The table gives, per
# model, test and flash-attention setting, the median tokens/s of each side over the rounds, the
# ratio of the medians (tgdb / llama.cpp) and the range of the per-round ratios. LLAMA_BENCH is a
# llama.cpp build of your own (never part of this repository). Progress goes to stderr.
# exit status: 0 table printed, 2 usage error, 1 a run failed (its output is shown).
set -u -o pipefail

rounds=5 pp=256 tg=64 depth=0 threads=2
here=$(cd "$(dirname "$0")/../.." && pwd)
tgdb="$here/build/inspect/tgdb"
usage() { sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
num() { [[ $2 =~ ^[0-9]+$ ]] || { echo "side-by-side.sh: $1 needs a number, got '$2'" >&2; exit 2; }; }
while [ $# -gt 0 ]; do
    case "$1" in
        -r) num "$1" "${2-}"; rounds=$2; shift 2 ;;
        -p) num "$1" "${2-}"; pp=$2; shift 2 ;;
        -n) num "$1" "${2-}"; tg=$2; shift 2 ;;
        -d) num "$1" "${2-}"; depth=$2; shift 2 ;;
        -t) num "$1" "${2-}"; threads=$2; shift 2 ;;
        --tgdb) tgdb=${2-}; shift 2 ;;
        -h|--help) usage ;;
        -*) echo "side-by-side.sh: unknown option '$1'" >&2; usage ;;
        *) break ;;
    esac
done
[ $# -ge 2 ] || usage
[ "$rounds" -ge 1 ] || { echo "side-by-side.sh: -r must be at least 1" >&2; exit 2; }
llama=$1; shift
[ -x "$llama" ] || { echo "side-by-side.sh: '$llama' is not an executable llama-bench" >&2; exit 2; }
[ -x "$tgdb" ] || { echo "side-by-side.sh: '$tgdb' is not built (cmake --build build, or --tgdb PATH)" >&2; exit 2; }
for m in "$@"; do [ -r "$m" ] || { echo "side-by-side.sh: cannot read model '$m'" >&2; exit 2; }; done

samples=$(mktemp) || exit 1
out=$(mktemp) || exit 1
trap 'rm -f "$samples" "$out" "$out.err"' EXIT

# tgdb bench --json: one object per test; prints "pp|tg fa value" lines.
ours() {
    "$tgdb" bench -m "$1" -p "$pp" -n "$tg" -d "$depth" -t "$threads" -r 1 -fa on,off --json >"$out" 2>&1 ||
        { echo "side-by-side.sh: tgdb bench failed on $1:" >&2; cat "$out" >&2; exit 1; }
    tr '{' '\n' <"$out" | awk '/"avg_ts"/ {
        np = $0; sub(/.*"n_prompt": */, "", np); sub(/[^0-9].*/, "", np)
        fa = $0; sub(/.*"flash_attn": *"/, "", fa); sub(/".*/, "", fa)
        ts = $0; sub(/.*"avg_ts": */, "", ts); sub(/[^0-9.].*/, "", ts)
        print (np + 0 > 0 ? "pp" : "tg"), fa, ts }'
}

# llama-bench -o csv: columns found by their header names.
theirs() {
    "$llama" -m "$1" -p "$pp" -n "$tg" -d "$depth" -t "$threads" -r 1 -fa 1,0 -o csv >"$out" 2>"$out.err" ||
        { echo "side-by-side.sh: llama-bench failed on $1:" >&2; tail -n 20 "$out.err" "$out" >&2; exit 1; }
    # the header is bare names, the rows quoted fields (which may hold commas)
    awk 'NR == 1 { n = split($0, h, ","); for (i = 1; i <= n; i++) col[h[i]] = i; next }
        { line = $0; sub(/^"/, "", line); sub(/"$/, "", line); gsub(/","/, "\037", line); split(line, f, "\037")
          fa = f[col["flash_attn"]]
          print (f[col["n_prompt"]] + 0 > 0 ? "pp" : "tg"), (fa == "1" || fa == "true" ? "on" : "off"), f[col["avg_ts"]] }' "$out"
}

cpu=$(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //')
flags=$(grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\n' | grep -E '^(avx|avx2|fma|f16c|avx512f|avx512_vnni|avx512bw)$' | paste -sd' ')
for ((r = 1; r <= rounds; r++)); do
    for m in "$@"; do
        name=$(basename "$m" .gguf)
        echo "round $r/$rounds: $name" >&2
        if ((r % 2)); then order="ours theirs"; else order="theirs ours"; fi
        for side in $order; do
            lines=$($side "$m") || exit 1
            [ -n "$lines" ] || { echo "side-by-side.sh: no results from $side on $m" >&2; exit 1; }
            echo "$lines" | awk -v m="$name" -v s="$side" -v r="$r" '{ print m, $1, $2, s, r, $3 }' >>"$samples"
        done
    done
done

echo "tgdb bench vs llama-bench: $cpu ($flags), $threads threads, p=$pp n=$tg depth=$depth, $rounds interleaved rounds"
echo
echo "| model | test | fa | tgdb tok/s (median) | llama.cpp tok/s (median) | ratio | per-round ratios |"
echo "|---|---|---|---|---|---|---|"
awk '
function median(list,   n, a, i, j, t) {
    n = split(list, a, " ")
    for (i = 2; i <= n; i++) { t = a[i] + 0; for (j = i - 1; j >= 1 && a[j] + 0 > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
{ k = $1 SUBSEP $2 SUBSEP $3; v[k, $4] = v[k, $4] " " $6; val[k, $4, $5] = $6; rs[$5] = 1
  if (!(k in seen)) { seen[k] = 1; keys[++nk] = k } }
END {
    for (i = 1; i <= nk; i++) {
        k = keys[i]; split(k, f, SUBSEP)
        mo = median(v[k, "ours"]); mt = median(v[k, "theirs"])
        lo = ""; hi = ""
        for (r in rs) if ((k, "ours", r) in val && (k, "theirs", r) in val && val[k, "theirs", r] > 0) {
            q = val[k, "ours", r] / val[k, "theirs", r]
            if (lo == "" || q < lo) lo = q
            if (hi == "" || q > hi) hi = q
        }
        printf "| %s | %s%s | %s | %.1f | %.1f | %s%.2f%s | %.2f .. %.2f |\n", f[1], f[2], (f[2] == "pp" ? '"$pp"' : '"$tg"'),
               f[3], mo, mt, (mt > 0 && mo / mt < 1 ? "**" : ""), (mt > 0 ? mo / mt : 0), (mt > 0 && mo / mt < 1 ? "**" : ""), lo, hi
    }
}' "$samples"
