# check.sh - the shared preamble of the script tests (sourced, not run):
#   . "$(dirname "$0")/support/check.sh"
# Sets B (the build directory), DATA (tests/data), TGDB and MK (the tgdb
# program and tests/tools/mktrace), makes a scratch directory $work removed
# at exit, and defines the checks, each printing "ok   WHAT" or "FAIL WHAT"
# like the C tests' check.h:
#   ok WHAT / bad WHAT        record a result
#   check WHAT CMD...         ok when CMD succeeds
#   finish                    prints "<test>: N passed, N failed"; the
#                             script's status (call it last)
set -u
B=${TG_BUILD_DIR:?}
DATA=${TG_TEST_DATA:-}
TGDB=$B/inspect/tgdb
MK=$B/tests/mktrace
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
pass=0; fail=0
ok()    { echo "ok   $*"; pass=$((pass + 1)); }
bad()   { echo "FAIL $*"; fail=$((fail + 1)); }
check() { local what=$1; shift; if "$@"; then ok "$what"; else bad "$what"; fi; }
finish() { echo "$(basename "$0" .sh): $pass passed, $fail failed"; [ "$fail" = 0 ]; }
