#!/usr/bin/env bash
# Runs every native Go fuzz target of signd for FUZZTIME each, one after
# another (go test -fuzz takes one target per run), and prints the execs of
# each target and their total. Exits non-zero when a target fails; the
# failing input is then in <package>/testdata/fuzz/<target>/ (see
# docs/FUZZING.md for what to do with it).
#
#   make fuzz                                   # 30s per target
#   make fuzz FUZZTIME=2m                       # longer
#   FUZZTIME=10s bash scripts/fuzz.sh ./csc     # the targets of some packages
#
# Environment:
#   FUZZTIME       time (30s) or count (100000x) per target, go test -fuzztime
#   FUZZ_PARALLEL  fuzz workers per target, go test -parallel (default: nproc)
#   FUZZ_MINIMIZE  go test -fuzzminimizetime (default 1000x: minimizing each
#                  new input at most 1000 runs keeps a target from stalling
#                  on large inputs; a crasher can be minimized again by hand)
#   FUZZ_MATCH     regular expression: run only the targets it matches
# No target needs SoftHSM2 (softhsmtest.FuzzOnly skips the token set-up).
set -euo pipefail
cd "$(dirname "$0")/.."

GO=${GO:-go}
FUZZTIME=${FUZZTIME:-30s}
FUZZ_PARALLEL=${FUZZ_PARALLEL:-$(nproc)}
FUZZ_MINIMIZE=${FUZZ_MINIMIZE:-1000x}
FUZZ_MATCH=${FUZZ_MATCH:-.}

# Packages with fuzz targets: the arguments, or every package whose test
# files declare one (go test -list runs only those, so no other TestMain
# is started).
if [ $# -gt 0 ]; then
  pkgs=("$@")
else
  mapfile -t pkgs < <(git ls-files '*_test.go' | xargs grep -l '^func Fuzz' | xargs -n1 dirname | sort -u | sed 's|^|./|')
fi

log=$(mktemp -d)
trap 'rm -rf "$log"' EXIT
results=()
total=0
failed=0
flaked=0
start=$SECONDS
for pkg in "${pkgs[@]}"; do
  targets=$("$GO" test -list '^Fuzz' "$pkg" | grep '^Fuzz' | grep -E -- "$FUZZ_MATCH" || true)
  for t in $targets; do
    out="$log/$t.log"
    corpus="$pkg/testdata/fuzz/$t"
    before=$(ls "$corpus" 2>/dev/null | sort || true)
    printf '%-22s %-24s ' "$pkg" "$t"
    status=ok
    if ! "$GO" test -run "^$t\$" -fuzz "^$t\$" -fuzztime "$FUZZTIME" -fuzzminimizetime "$FUZZ_MINIMIZE" \
      -parallel "$FUZZ_PARALLEL" "$pkg" >"$out" 2>&1; then
      status=FAIL
      # Go before 1.27 may end a duration -fuzztime with a bare "context
      # deadline exceeded" (golang/go#75804, a race in the coordinator):
      # no input failed and none was written. Reported, not failed.
      after=$(ls "$corpus" 2>/dev/null | sort || true)
      if [ "$before" = "$after" ] && grep -q '^    context deadline exceeded$' "$out" &&
        ! grep -qE 'panic:|Failing input|_test\.go:[0-9]+:' "$out"; then
        status="ok (deadline race golang/go#75804, no failing input)"
        flaked=$((flaked + 1))
      else
        failed=$((failed + 1))
      fi
    fi
    execs=$(sed -n 's/^fuzz: elapsed: .*, execs: \([0-9]*\) .*/\1/p' "$out" | tail -1)
    execs=${execs:-0}
    total=$((total + execs))
    printf '%12s execs  %s\n' "$execs" "$status"
    results+=("$pkg $t $execs $status")
    if [ "$status" = FAIL ]; then
      grep -E -- '--- FAIL|_test\.go:[0-9]+|panic:|Failing input|go test -run' "$out" | head -20 | sed 's/^/    /'
    fi
  done
done
printf '%d targets, %d execs in total, %d failed, %d ended by the deadline race, %ds (FUZZTIME=%s, -parallel %s)\n' \
  "${#results[@]}" "$total" "$failed" "$flaked" $((SECONDS - start)) "$FUZZTIME" "$FUZZ_PARALLEL"
[ "$failed" -eq 0 ]
