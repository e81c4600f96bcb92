#!/usr/bin/env bash
# test_layers.sh - the dependency rule between the libraries, checked on the
# built archives' undefined symbols: engine <- trace <- {dot, live};
# live <- tui; only libtglive (above the engine) calls the llama runtime;
# libtgtrace needs neither live nor any front end; libtgtui never uses inspect.
. "$(dirname "$0")/support/check.sh"
undef() { nm -u --format=just-symbols "$1" 2>/dev/null | sort -u; }

for lib in trace/libtgtrace.a live/libtglive.a tui/libtgtui.a; do
    [ -f "$B/$lib" ] || { bad "$lib not built"; }
done
trace_u=$(undef "$B/trace/libtgtrace.a")
tui_u=$(undef "$B/tui/libtgtui.a")
live_u=$(undef "$B/live/libtglive.a")
[ -n "$trace_u" ] || bad "no symbols read from libtgtrace.a (nm missing?)"

bad_trace=$(echo "$trace_u" | grep -E '^(tg_llama_|tg_vocab_|tg_live_|tg_tui_|tg_dot_|tg_cli_|shell_)' || true)
[ -z "$bad_trace" ] && ok "libtgtrace calls no llama, live, tui, dot or cli function" \
    || bad "libtgtrace depends on: $(echo $bad_trace)"
bad_tui=$(echo "$tui_u" | grep -E '^(tg_llama_|tg_vocab_|tg_cli_|shell_|tg_dot_)' || true)
[ -z "$bad_tui" ] && ok "libtgtui calls no llama, inspect or dot function (live mode goes through libtglive)" \
    || bad "libtgtui depends on: $(echo $bad_tui)"
echo "$tui_u" | grep -q '^tg_live_open$' && ok "libtgtui's live mode uses libtglive" || bad "libtgtui does not use tg_live_open"
echo "$live_u" | grep -q '^tg_llama_' && ok "libtglive drives the llama runtime" || bad "libtglive calls no tg_llama_ function"
bad_live=$(echo "$live_u" | grep -E '^(tg_tui_|tg_dot_|tg_cli_|shell_)' || true)
[ -z "$bad_live" ] && ok "libtglive uses no front end" || bad "libtglive depends on: $(echo $bad_live)"

# libraries report failures through the status + last error, never on stderr
for lib in tui/libtgtui.a live/libtglive.a; do
    u=$(undef "$B/$lib")
    echo "$u" | grep -qE '^(stderr|fprintf|printf|puts|perror|exit|abort)$' \
        && bad "$lib prints or exits: $(echo "$u" | grep -E '^(stderr|fprintf|printf|puts|perror|exit|abort)$' | tr '\n' ' ')" \
        || ok "$lib neither prints nor exits"
done
finish
