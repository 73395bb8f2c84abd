#!/usr/bin/env bash
# bench-signhash.sh — the CSC signHash part of `make bench` (scripts/bench.sh).
#
# Usage: scripts/bench-signhash.sh WORKDIR
#
# In WORKDIR (empty, removed by the caller): a SoftHSM2 token, a config, a
# user, a client and an RSA-2048 credential enrolled with a development CA.
# SADs are minted straight into the store while the daemon is stopped
# (signd-load prepare). Then signd serve starts on 127.0.0.1 and, on that one
# token, for each concurrency, ROUNDS (default 3) times in alternation:
#   (a) signd-load hsm: hsm.Token.SignDigest with the daemon's pool size;
#   (b) signd-load http — a separate process — POSTing
#       /csc/v1/signatures/signHash, one fresh SAD per request;
# (c) the medians: b/a per concurrency and at saturation, p50/p99, and the
# daemon's peak RSS (VmHWM). LOAD_SECONDS (default 5) is the measuring time
# of one run; CONCURRENCY (default "1 2 8 32") the levels.
set -euo pipefail
cd "$(dirname "$0")/.."
work=${1:?usage: bench-signhash.sh WORKDIR}
secs=${LOAD_SECONDS:-5}
levels=${CONCURRENCY:-1 2 8 32}
daemon=""
trap '[ -z "$daemon" ] || kill "$daemon" 2>/dev/null || true' EXIT

echo
echo "# CSC signHash: raw HSM vs HTTP through signd serve, same token (scripts/bench-signhash.sh)"
CGO_ENABLED=1 go build -o bin/signd ./cmd/signd
CGO_ENABLED=1 go build -o bin/signd-load ./cmd/signd-load

# shellcheck source=scripts/lib-bench.sh
. scripts/lib-bench.sh
bench_config "$work" 127.0.0.1:0 http://127.0.0.1:8443 127.0.0.1:9464 info
bench_signer "$work"

# The two measurements alternate, ROUNDS times per concurrency, and the
# medians are compared: the machine's other load drifts, so (a) and (b) are
# taken side by side rather than minutes apart.
rounds=${ROUNDS:-3}
count=$((secs * 2000 + 100)) # per run: more than the fastest level signs
for c in $levels; do
  for r in $(seq 1 "$rounds"); do
    bin/signd-load prepare --config "$cfg" --user bench --client bench-client --credential "$cred" \
      --count "$count" --out "$work/sads-$c-$r.json" >/dev/null
  done
done

bench_start bin/signd "$work/signd.log"
rss_start=$(awk '/^VmHWM/ {print $2}' "/proc/$daemon/status")

echo "## (a) bin/signd-load hsm --concurrency C --duration ${secs}s   (b) bin/signd-load http --url http://$addr --concurrency C --duration ${secs}s; $rounds rounds each, alternating"
: >"$work/runs.txt"
for c in $levels; do
  for r in $(seq 1 "$rounds"); do
    bin/signd-load hsm --config "$cfg" --in "$work/sads-$c-$r.json" --concurrency "$c" --duration "${secs}s" | tee -a "$work/runs.txt"
    bin/signd-load http --url "http://$addr" --in "$work/sads-$c-$r.json" --concurrency "$c" --duration "${secs}s" | tee -a "$work/runs.txt"
  done
done
rss=$(awk '/^VmHWM/ {print $2}' "/proc/$daemon/status")
kill -TERM "$daemon"
wait "$daemon" || true
daemon=""
bad=$(grep -c '"level":"ERROR"' "$work/signd.log" || true)

# median over the rounds of key k for mode m and concurrency c.
val() { awk -v m="$1" -v c="$2" -v k="$3" '{ split("", f); for (i = 1; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] } }
  f["mode"] == m && f["c"] == c { print f[k] }' "$work/runs.txt" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

echo
echo "## (c) medians: signHash over HTTP ÷ raw HSM, $(date -u +%Y-%m-%d), $(nproc) cores, RSA-2048, one token"
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
echo "daemon peak RSS (VmHWM): $((rss / 1024)) MiB ($((rss_start / 1024)) MiB after start-up); errors logged by the daemon: $bad"
