#!/usr/bin/env bash
# test_replay.sh - `tgdb replay` and `tgdb repro`:
# - sched-splits (CPU+BLAS) with the matmul and its inputs recorded: replaying
#   the BLAS node on the CPU backend agrees within tolerance, on BLAS it is
#   bitwise identical; a node whose inputs were not recorded is refused with
#   the TGDB_TRACE_DUMP pattern that would record them;
# - nan-origin: `tgdb check` names the first NaN node, `tgdb repro` on it
#   writes a reproduction that builds (Makefile and CMake, pkg-config tg of
#   the build tree installed into a temporary prefix) and reproduces the NaN.
. "$(dirname "$0")/support/check.sh"
tmp=$work

TGDB_TRACE=$tmp/s.tgt TGDB_TRACE_DUMP='h,W,x' "$B/samples/sched-splits" 64 >"$tmp/sample.out" 2>&1 || bad "sched-splits ran"
out=$("$TGDB" replay "$tmp/s.tgt" h@1 --backend CPU); rc=$?
if grep -q "no BLAS backend" "$tmp/sample.out"; then
    echo "note: built without BLAS: the matmul ran on the CPU"
    [ $rc = 0 ] && echo "$out" | grep -q "recomputed on CPU: bitwise identical" && ok "replay on CPU" || bad "replay: rc=$rc $out"
else
    [ $rc = 0 ] && echo "$out" | grep -q "recorded on BLAS" && echo "$out" | grep -q "recomputed on CPU: \(agrees within --rtol\|bitwise identical\)" \
        && ok "BLAS node replayed on CPU agrees within tolerance" || bad "replay on CPU: rc=$rc $out"
    out=$("$TGDB" replay "$tmp/s.tgt" h@1 --backend BLAS); rc=$?
    [ $rc = 0 ] && echo "$out" | grep -q "recomputed on BLAS: bitwise identical" && ok "replay on BLAS: bitwise identical" \
        || bad "replay on BLAS: rc=$rc $out"
fi
"$TGDB" replay "$tmp/s.tgt" h@1 --json >"$tmp/r.json" && python3 - "$tmp/r.json" <<'PY' && ok "--json: inputs from the trace, small rel_l2" || bad "--json"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["op"] == "MUL_MAT" and d["agrees"] and d["rel_l2"] < 1e-5 and d["elements"] == 48 * 64
assert [i["from"] for i in d["inputs"]] == ["trace", "trace"]
PY
"$TGDB" replay "$tmp/s.tgt" y@1 >/dev/null 2>"$tmp/err"; rc=$?
[ $rc = 2 ] && grep -q "TGDB_TRACE_DUMP='y,h,b1'" "$tmp/err" && ok "inputs not recorded: says what to record" || bad "missing inputs: $(cat "$tmp/err")"
"$TGDB" replay "$tmp/s.tgt" nope >/dev/null 2>&1; [ $? = 2 ] && ok "unknown node: exit 2" || bad "unknown node"
"$TGDB" replay "$tmp/s.tgt" h@1 --backend NOPE >/dev/null 2>"$tmp/err"; [ $? = 2 ] && ok "unknown backend: $(cat "$tmp/err")" || bad "unknown backend"

# repro of the first NaN
TGDB_TRACE=$tmp/n.tgt TGDB_TRACE_DUMP='log_x,x_minus_shift' "$B/samples/nan-origin" >/dev/null 2>&1
first=$("$TGDB" check "$tmp/n.tgt" --json | python3 -c "
import json, sys
print([f for f in json.load(sys.stdin)['findings'] if f['kind'] == 'nan'][0]['tensor']['name'])")
[ "$first" = log_x ] && ok "check: the first NaN node is log_x" || bad "first NaN: '$first'"
"$TGDB" repro "$tmp/n.tgt" "$first" -o "$tmp/rep" >/dev/null || bad "repro failed"
for f in repro.c repro.h repro.gguf src0.npy expected.npy Makefile CMakeLists.txt README.txt; do
    [ -s "$tmp/rep/$f" ] || bad "repro: $f missing"
done
python3 - "$tmp/rep" <<'PY' && ok "repro: .npy files hold the input and the NaN output" || bad "npy"
import ast, struct, sys, math
def load(p):
    b = open(p, "rb").read()
    assert b[:6] == b"\x93NUMPY"
    hl = struct.unpack("<H", b[8:10])[0]
    h = ast.literal_eval(b[10:10 + hl].decode())
    n = 1
    for s in h["shape"]: n *= s
    return h, struct.unpack("<%df" % n, b[10 + hl:10 + hl + 4 * n])
h, x = load(sys.argv[1] + "/src0.npy")
assert h["shape"] == (8, 64) and h["descr"] == "<f4" and min(x) < 0
h, y = load(sys.argv[1] + "/expected.npy")
assert sum(math.isnan(v) for v in y) == sum(v < 0 for v in x) > 0
PY
cmake --install "$B" --prefix "$tmp/prefix" >/dev/null || bad "cmake --install"
pcdir=$(dirname "$(find "$tmp/prefix" -name tg.pc | head -1)")
san=""   # a sanitizer build's libraries need the sanitizer runtime in the program too
if nm "$B/engine/libtg.a" 2>/dev/null | grep -c __asan_ >/dev/null; then san="-fsanitize=address,undefined"; fi
out=$(PKG_CONFIG_PATH=$pcdir make -s -C "$tmp/rep" CFLAGS="-O1 -g $san" run 2>&1); rc=$?
[ $rc = 0 ] && echo "$out" | grep -q "NaN 128 recorded / 128 recomputed" && echo "$out" | grep -q "^REPRODUCED" \
    && ok "repro builds with make (pkg-config tg) and reproduces the NaN" || bad "make run: rc=$rc $out"
if command -v cmake >/dev/null; then
    PKG_CONFIG_PATH=$pcdir cmake -S "$tmp/rep" -B "$tmp/rep/build" -DCMAKE_C_FLAGS="$san" >/dev/null 2>&1 \
        && cmake --build "$tmp/rep/build" >/dev/null 2>&1 && (cd "$tmp/rep" && build/repro repro.gguf | grep -q "^REPRODUCED") \
        && ok "repro builds with CMake and reproduces" || bad "cmake build of the repro"
fi
# a node whose inputs were not recorded
"$TGDB" repro "$tmp/n.tgt" x_minus_shift -o "$tmp/rep2" >/dev/null 2>"$tmp/err"; rc=$?
[ $rc = 2 ] && grep -q "input 'x' of 'x_minus_shift' was not recorded" "$tmp/err" && ok "repro without inputs: explained" \
    || bad "repro without inputs: rc=$rc $(cat "$tmp/err")"
echo "test_replay: $pass passed, $fail failed"
[ $fail = 0 ]
