#!/usr/bin/env bash
# bench-signhash.sh — the CSC signHash part of `make bench` (scripts/bench.sh).
#
# Usage: scripts/bench-signhash.sh [--token ENVFILE] WORKDIR
#
# In WORKDIR (empty, removed by the caller): a SoftHSM2 token, a config, a
# user, a client and an RSA-2048 credential enrolled with a development CA.
# Another token: --token ENVFILE sources the token.env that
# softhsm-test/opencryptoki.sh or tpm2.sh wrote (or set
# SIGND_TEST_PKCS11_MODULE, _LABEL and _PIN yourself); the benchmark then
# runs on that token, which must be fresh (its keys stay on it).
# SADs are minted straight into the store while the daemon is stopped
# (signd-load prepare). Then signd serve starts on 127.0.0.1 and, on that one
# token, for each concurrency, ROUNDS (default 3) times in alternation:
#   (a) signd-load hsm: hsm.Token.SignDigest with the daemon's pool size;
#   (b) signd-load http — a separate process — POSTing
#       /csc/v1/signatures/signHash, one fresh SAD per request;
# (c) the medians: b/a per concurrency and at saturation, p50/p99, and the
# daemon's peak RSS (VmHWM). LOAD_SECONDS (default 5) is the measuring time
# of one run; CONCURRENCY (default "1 2 8 32") the levels.
#
# BASE_BIN (optional): a second signd binary, e.g. built from main in a
# detached worktree, to compare with in the same run. It serves a copy of
# the same store (WORKDIR/base.db, its own SADs) on the same token, and
# takes its turn in every round: raw HSM, then base and this tree's signd,
# which of the two goes first alternating from round to round. The table
# then gives each one's ratio to the raw HSM and new ÷ base.
#
# TRACE=1 (optional): afterwards, for each level, this tree's signd runs
# once more with --trace for LOAD_SECONDS under signd-load http, and
# `signd-load phases` prints where a request's time went (WORKDIR/phases-C.md).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = --token ]; then
  # shellcheck disable=SC1090
  . "${2:?usage: bench-signhash.sh [--token ENVFILE] WORKDIR}"
  shift 2
fi
work=${1:?usage: bench-signhash.sh [--token ENVFILE] WORKDIR}
secs=${LOAD_SECONDS:-5}
levels=${CONCURRENCY:-1 2 8 32}
base_bin=${BASE_BIN:-}
daemon="" base_daemon=""
trap '[ -z "$daemon" ] || kill "$daemon" 2>/dev/null || true; [ -z "$base_daemon" ] || kill "$base_daemon" 2>/dev/null || true' EXIT

echo
echo "# CSC signHash: raw HSM vs HTTP through signd serve, same token (scripts/bench-signhash.sh)"
# shellcheck source=scripts/lib-bench.sh
. scripts/lib-bench.sh
bench_signhash_setup "$work"

# The two measurements alternate, ROUNDS times per concurrency, and the
# medians are compared: the machine's other load drifts, so (a) and (b) are
# taken side by side rather than minutes apart.
rounds=${ROUNDS:-3}
count=$((secs * 2000 + 100)) # per run: more than the fastest level signs
# prepare_sads CONFIG PREFIX: a prepare file of SADs per concurrency level
# and round, $work/PREFIXsads-C-R.json, minted into CONFIG's store.
prepare_sads() {
  local c r
  for c in $levels; do
    for r in $(seq 1 "$rounds"); do
      bin/signd-load prepare --config "$1" --user bench --client bench-client --credential "$cred" \
        --count "$count" --out "$work/$2sads-$c-$r.json" >/dev/null
    done
  done
}
if [ -n "$base_bin" ]; then
  # The base daemon's store: a copy of the enrolled one, with SADs of its
  # own; its own config (no metrics listener, its own admin socket).
  cp "$work/signd.db" "$work/base.db"
  base_cfg=$work/base.yaml
  bench_yaml "$base_cfg" "$work" 127.0.0.1:0 http://127.0.0.1:8443 '""' info "store:
  path: $work/base.db"
  prepare_sads "$base_cfg" base-
fi
prepare_sads "$cfg" ""

if [ -n "$base_bin" ]; then
  new_cfg=$cfg cfg=$base_cfg
  bench_start "$base_bin" "$work/base.log"
  base_daemon=$daemon base_addr=$addr cfg=$new_cfg
fi
bench_start bin/signd "$work/signd.log"
rss_start=$(awk '/^VmHWM/ {print $2}' "/proc/$daemon/status")

echo "## (a) bin/signd-load hsm --concurrency C --duration ${secs}s   (b) bin/signd-load http --url http://$addr --concurrency C --duration ${secs}s; $rounds rounds each, alternating${base_bin:+; base $base_bin (mode=base) between them}"
: >"$work/runs.txt"
for c in $levels; do
  for r in $(seq 1 "$rounds"); do
    bin/signd-load hsm --config "$cfg" --in "$work/sads-$c-$r.json" --concurrency "$c" --duration "${secs}s" | tee -a "$work/runs.txt"
    # base and new take turns going first (odd rounds base, even rounds new).
    for side in $([ $((r % 2)) = 1 ] && echo base new || echo new base); do
      if [ "$side" = new ]; then
        bin/signd-load http --url "http://$addr" --in "$work/sads-$c-$r.json" --concurrency "$c" --duration "${secs}s" | tee -a "$work/runs.txt"
      elif [ -n "$base_bin" ]; then
        bin/signd-load http --url "http://$base_addr" --in "$work/base-sads-$c-$r.json" --concurrency "$c" --duration "${secs}s" |
          sed 's/^mode=http /mode=base /' | tee -a "$work/runs.txt"
      fi
    done
  done
done
rss=$(awk '/^VmHWM/ {print $2}' "/proc/$daemon/status")
kill -TERM "$daemon"
wait "$daemon" || true
daemon=""
bad=$(grep -c '"level":"ERROR"' "$work/signd.log" || true)
if [ -n "$base_bin" ]; then
  base_rss=$(awk '/^VmHWM/ {print $2}' "/proc/$base_daemon/status")
  kill -TERM "$base_daemon"
  wait "$base_daemon" || true
  base_daemon=""
  bad=$((bad + $(grep -c '"level":"ERROR"' "$work/base.log" || true)))
fi

# median over the rounds of key k for mode m and concurrency c.
val() { awk -v m="$1" -v c="$2" -v k="$3" '{ split("", f); for (i = 1; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] } }
  f["mode"] == m && f["c"] == c { print f[k] }' "$work/runs.txt" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

echo
echo "## (c) medians: signHash over HTTP ÷ raw HSM, $(date -u +%Y-%m-%d), $(nproc) cores, RSA-2048, one token: ${bench_label} of ${SIGND_TEST_PKCS11_MODULE:-/usr/lib/softhsm/libsofthsm2.so}"
printf '%-5s %12s %12s %8s %10s %10s %10s %10s\n' c "hsm sigs/s" "http sigs/s" "b/a" "hsm p50" "hsm p99" "http p50" "http p99"
best_a=0 best_b=0
for c in $levels; do
  a=$(val hsm "$c" rate) b=$(val http "$c" rate)
  printf '%-5s %12s %12s %8s %9sms %9sms %9sms %9sms\n' "$c" "$a" "$b" "$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.2f", (a > 0 ? b / a : 0) }')" \
    "$(val hsm "$c" p50_ms)" "$(val hsm "$c" p99_ms)" "$(val http "$c" p50_ms)" "$(val http "$c" p99_ms)"
  best_a=$(awk -v x="$best_a" -v y="$a" 'BEGIN { print (y > x ? y : x) }')
  best_b=$(awk -v x="$best_b" -v y="$b" 'BEGIN { print (y > x ? y : x) }')
done
awk -v a="$best_a" -v b="$best_b" 'BEGIN { printf "saturation: hsm %.0f/s, http %.0f/s, b/a %.2f\n", a, b, (a > 0 ? b / a : 0) }'
echo "daemon peak RSS (VmHWM): $((rss / 1024)) MiB ($((rss_start / 1024)) MiB after start-up)${base_bin:+; base: $((${base_rss:-0} / 1024)) MiB}; errors logged: $bad"

if [ -n "$base_bin" ]; then
  echo
  echo "## (d) medians, base ($base_bin) vs this tree, both ÷ raw HSM of the same rounds"
  printf '%-5s %10s %10s %10s %8s %8s %9s %12s %12s\n' c "hsm/s" "base/s" "new/s" "base÷hsm" "new÷hsm" "new÷base" "base p50/p99" "new p50/p99"
  for c in $levels; do
    a=$(val hsm "$c" rate) o=$(val base "$c" rate) n=$(val http "$c" rate)
    printf '%-5s %10s %10s %10s %8s %8s %9s %12s %12s\n' "$c" "$a" "$o" "$n" \
      "$(awk -v a="$a" -v b="$o" 'BEGIN { printf "%.2f", (a > 0 ? b / a : 0) }')" \
      "$(awk -v a="$a" -v b="$n" 'BEGIN { printf "%.2f", (a > 0 ? b / a : 0) }')" \
      "$(awk -v a="$o" -v b="$n" 'BEGIN { printf "%.2f", (a > 0 ? b / a : 0) }')" \
      "$(val base "$c" p50_ms)/$(val base "$c" p99_ms)" "$(val http "$c" p50_ms)/$(val http "$c" p99_ms)"
  done
  # new ÷ base per round (the pairs), to show the spread.
  echo "new ÷ base per round (c: ratios):"
  for c in $levels; do
    printf '%s:' "$c"
    awk -v c="$c" '{ split("", f); for (i = 1; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] } }
      f["c"] == c && f["mode"] == "base" { o[++nb] = f["rate"] } f["c"] == c && f["mode"] == "http" { h[++nh] = f["rate"] }
      END { for (i = 1; i <= nb && i <= nh; i++) printf " %.2f", (o[i] > 0 ? h[i] / o[i] : 0) }' "$work/runs.txt"
    echo
  done
fi

if [ "${TRACE:-}" = 1 ]; then
  echo
  echo "## (e) where a request's time goes: bin/signd serve --trace, bin/signd-load http, bin/signd-load phases"
  for c in $levels; do
    bin/signd-load prepare --config "$cfg" --user bench --client bench-client --credential "$cred" \
      --count "$count" --out "$work/trace-sads-$c.json" >/dev/null
    bench_start bin/signd "$work/trace-$c.log" --trace "$work/trace-$c.out"
    bin/signd-load http --url "http://$addr" --in "$work/trace-sads-$c.json" --concurrency "$c" --duration "${secs}s"
    kill -TERM "$daemon"
    wait "$daemon" || true
    daemon=""
    echo "### concurrency $c"
    bin/signd-load phases --trace "$work/trace-$c.out" | tee "$work/phases-$c.md"
  done
fi
