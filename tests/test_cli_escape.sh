#!/usr/bin/env bash
# test_cli_escape.sh - issue 16.11: names in traces and keys, strings and
# tensor names in GGUF files are untrusted. A node named with a terminal
# escape sequence (ESC[31m), a newline, a C1 control and a character cut in
# half, and a GGUF file with the same in a key, a string value and a tensor
# name: every CLI output (trace info/nodes/node/dump, check, diff, gguf,
# shell) holds no raw control byte and is valid UTF-8, the escaped form is
# shown, the JSON outputs parse, and the SVG of the graph validates (xmllint).
. "$(dirname "$0")/support/check.sh"

"$MK" "$work/e.tgt" --escapes --nan && "$MK" "$work/e2.tgt" --escapes --nan --variant 2 || { echo "FAIL mktrace"; exit 1; }

# clean FILE: no C0 control but newline, no DEL, no C1, valid UTF-8
cat > "$work/clean.py" <<'PY'
import sys
b = open(sys.argv[1], 'rb').read()
try:
    t = b.decode('utf-8')
except UnicodeDecodeError as e:
    print('invalid UTF-8 at byte %d: %r' % (e.start, b[max(0, e.start - 20):e.start + 4])); sys.exit(1)
json = len(sys.argv) > 2   # JSON keeps DEL and C1 as Python's json.dumps does (valid JSON; decoders get them back)
bad = [hex(ord(c)) for c in t if (ord(c) < 32 and c != '\n') or (not json and 0x7f <= ord(c) <= 0x9f)]
if bad: print('raw control characters:', bad[:8]); sys.exit(1)
PY
clean() { python3 "$work/clean.py" "$@"; }
ESC_NAME='\x1b[31mred\nline\xc2\x9bx\xe2\x82-0'   # what the name shows as

run() {   # run NAME CMD...: output (stdout and stderr) clean
  local name=$1; shift
  "$@" > "$work/out" 2>&1
  case "$name" in *json*) check "$name: output clean (JSON: no C0 control)" clean "$work/out" json;;
                  *) check "$name: output clean" clean "$work/out";; esac
}
run "trace info" "$TGDB" trace info "$work/e.tgt"
run "trace nodes" "$TGDB" trace nodes "$work/e.tgt"
check "trace nodes shows the name escaped" grep -qF -- "$ESC_NAME" "$work/out"
run "trace node" "$TGDB" trace node "$work/e.tgt" 0:2
check "trace node shows the name escaped" grep -qF -- "'$ESC_NAME'" "$work/out"
run "trace node (a source of it)" "$TGDB" trace node "$work/e.tgt" 0:3
run "trace dump" "$TGDB" trace dump "$work/e.tgt" 0:2
check "trace dump shows the name escaped" grep -qF -- "'$ESC_NAME'" "$work/out"
run "check" "$TGDB" check "$work/e.tgt"
run "check --json" "$TGDB" check "$work/e.tgt" --json
"$TGDB" check "$work/e.tgt" --json > "$work/j" 2>/dev/null
check "check --json parses" python3 -c "import json; json.load(open('$work/j'))"
run "diff" "$TGDB" diff "$work/e.tgt" "$work/e2.tgt" --all
"$TGDB" diff "$work/e.tgt" "$work/e2.tgt" --all > "$work/d" 2>&1
check "diff shows the name escaped, cut between escapes" grep -qF -- ' \x1b[31mred\nline\xc2\x9bx  ' "$work/d"
"$TGDB" diff "$work/e.tgt" "$work/e2.tgt" --all --json > "$work/j" 2>/dev/null
check "diff --json parses, the name's stray bytes as U+FFFD" python3 -c "
import json; d = json.load(open('$work/j')); names = [n['name'] for n in d['nodes']]
import sys; sys.exit(0 if '\x1b[31mred\nline\x9bx\ufffd\ufffd-0' in names else 1)"
run "shell" "$TGDB" shell "$work/e.tgt" -x 'break op RMS_NORM; continue; step; where; print; info; check; list'
check "shell where shows the name escaped" grep -qF -- "$ESC_NAME" "$work/out"

# the SVG of the graph: well-formed XML (xmllint), the escape sequence's ESC not in it
"$TGDB" dot "$work/e.tgt" --graph 0 -o "$work/e.svg" 2> "$work/err"
check "dot: SVG written ($(head -c 200 "$work/err"))" test -s "$work/e.svg"
if command -v xmllint > /dev/null; then
  check "dot: the SVG validates with xmllint" xmllint --noout "$work/e.svg"
else
  check "dot: the SVG parses as XML" python3 -c "import xml.etree.ElementTree as E; E.parse('$work/e.svg')"
fi
check "dot: no raw control byte in the SVG" clean "$work/e.svg"

# a GGUF file with the same in a key, a string value and a tensor name
python3 - "$work/e.gguf" <<'PY'
import struct, sys
def s(b): return struct.pack('<Q', len(b)) + b
kvs = [(b'general.architecture', b'llama'),
       (b'evil.\x1b[31mkey\n', b'va\x1b]0;title\x07lue\r\n\xc2\x9b\xe2\x82'),
       (b'general.name', b'\xe2\x82\xac ok')]
name = b'tok\x1b[2Jen\n\xe2\x82'
out = b'GGUF' + struct.pack('<IQQ', 3, 1, len(kvs))
for k, v in kvs: out += s(k) + struct.pack('<I', 8) + s(v)
out += s(name) + struct.pack('<I', 1) + struct.pack('<Q', 4) + struct.pack('<I', 0) + struct.pack('<Q', 0)
out += b'\0' * ((32 - len(out) % 32) % 32) + struct.pack('<4f', 1, 2, 3, 4)
open(sys.argv[1], 'wb').write(out)
PY
run "gguf" "$TGDB" gguf "$work/e.gguf"
check "gguf shows the key escaped" grep -qF -- 'evil.\x1b[31mkey\n' "$work/out"
check "gguf shows the string value escaped" grep -qF -- '"va\x1b]0;title\x07lue\r\n\xc2\x9b\xe2\x82"' "$work/out"
check "gguf shows the tensor name escaped" grep -qF -- 'tok\x1b[2Jen\n\xe2\x82' "$work/out"
check "gguf keeps valid UTF-8 (the euro sign)" grep -qF -- '"€ ok"' "$work/out"
run "gguf --json" "$TGDB" gguf "$work/e.gguf" --json
"$TGDB" gguf "$work/e.gguf" --json > "$work/j" 2>/dev/null
check "gguf --json parses, stray bytes as U+FFFD" python3 -c "
import json, sys; d = json.load(open('$work/j'))
keys = [kv['key'] for kv in d['kv']] if isinstance(d.get('kv'), list) else list(d.get('kv', {}))
sys.exit(0 if 'evil.\x1b[31mkey\n' in keys or 'evil.\x1b[31mkey\n' in json.dumps(d, ensure_ascii=False) else 1)"
finish
