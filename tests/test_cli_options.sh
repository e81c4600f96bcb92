#!/bin/bash
# test_cli_options.sh - the tgdb command framework: exit-code convention in
# help, write errors on stdout give exit 2 with one clear line.
. "$(dirname "$0")/support/check.sh"
TMP=$work

"$TGDB" help >"$TMP/out" 2>&1; rc=$?
check "tgdb help: exit 0 and documents the exit codes" bash -c "test $rc = 0 && grep -q '^exit status: 0 .*1 .*2 usage or input error' '$TMP/out'"
for c in generate perplexity bench gguf tokenize; do
    "$TGDB" help $c >"$TMP/out" 2>&1; rc=$?
    check "tgdb help $c documents the exit codes" bash -c "test $rc = 0 && grep -q '^exit status:' '$TMP/out'"
done

if [ -w /dev/full ]; then
    for args in "help" "gguf $DATA/tiny-f32.gguf" "gguf $DATA/tiny-f32.gguf --json" "--version" "help gguf"; do
        "$TGDB" $args >/dev/full 2>"$TMP/err"; rc=$?
        check "tgdb $args > /dev/full: exit 2, one line ($(cat "$TMP/err"))" \
            bash -c "test $rc = 2 && test \$(wc -l < '$TMP/err') = 1 && grep -q 'cannot write to standard output: No space left' '$TMP/err'"
    done
else
    echo "ok   (no writable /dev/full here: write-error checks not run)"
fi
finish
