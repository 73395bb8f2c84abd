#!/usr/bin/env bash
# bench.sh — `make bench`: HSM signing throughput beside OpenSSL, one run.
#
# Runs the Go benchmarks of package hsm (RSA-2048 PKCS#1 v1.5 signatures in a
# real SoftHSM2 token with 1, 2, 4 and 8 goroutines, and Go's crypto/rsa for
# comparison), then `openssl speed rsa2048` single- and multi-process on the
# same machine, and prints the figures side by side with their ratios.
# BENCHTIME (default 2s) and OPENSSL_SECONDS (default 3) tune the run.
#
# Then the CSC signHash benchmark, on one fresh token in a temp directory:
# (a) raw hsm.Token.SignDigest with the daemon's pool (signd-load hsm), then
# (b) POST /csc/v1/signatures/signHash through `signd serve` on loopback,
# load from a separate process (signd-load http), with SADs minted into the
# store before the daemon starts, at concurrency 1, 2, 8 and 32; (c) b/a,
# p50/p99 and the daemon's peak RSS (VmHWM). LOAD_SECONDS (default 5) is the
# measuring time per concurrency; SKIP_HSM_BENCH=1 skips the first part.
set -euo pipefail
cd "$(dirname "$0")/.."
benchtime=${BENCHTIME:-2s}
osecs=${OPENSSL_SECONDS:-3}
cores=$(nproc)
out=$(mktemp)
work=$(mktemp -d)
trap 'rm -rf "$out" "$work"' EXIT
if [ "${SKIP_HSM_BENCH:-}" != 1 ]; then

echo "# go test -run '^\$' -bench 'SignRSA2048|GoCryptoRSA2048' -benchtime $benchtime ./hsm/"
CGO_ENABLED=1 go test -run '^$' -bench 'SignRSA2048|GoCryptoRSA2048' -benchtime "$benchtime" ./hsm/ | tee "$out"

echo
echo "# openssl speed -seconds $osecs rsa2048 (1 process, then -multi $cores)"
ossl1=$(openssl speed -seconds "$osecs" rsa2048 2>/dev/null | awk '/^rsa 2048 bits/ {print $(NF-1)}')
osslN=$(openssl speed -seconds "$osecs" -multi "$cores" rsa2048 2>/dev/null | awk '/^rsa 2048 bits/ {print $(NF-1)}')
echo "openssl rsa2048 sign/s: 1 process $ossl1, $cores processes $osslN"

# sigs/s of a benchmark line: the value before the "sigs/s" unit.
rate() { awk -v pat="$1" '$1 ~ pat { for (i = 2; i <= NF; i++) if ($i == "sigs/s") v = $(i-1) } END { print v }' "$out"; }

echo
echo "## RSA-2048 signatures per second, $(date -u +%Y-%m-%d), $cores cores, $(openssl version | cut -d' ' -f1-2)"
printf '%-12s %14s %14s %16s %16s\n' goroutines softhsm go-crypto/rsa softhsm/openssl1 softhsm/opensslN
for g in 1 2 4 8; do
  h=$(rate "^BenchmarkSignRSA2048/goroutines-$g(-[0-9]+)?\$")
  c=$(rate "^BenchmarkGoCryptoRSA2048/goroutines-$g(-[0-9]+)?\$")
  awk -v g="$g" -v h="${h:-0}" -v c="${c:-0}" -v o1="${ossl1:-0}" -v on="${osslN:-0}" 'BEGIN {
    printf "%-12s %14.0f %14.0f %16s %16s\n", g, h, c,
      (o1 > 0 ? sprintf("%.2f", h / o1) : "n/a"), (on > 0 ? sprintf("%.2f", h / on) : "n/a") }'
done
printf '%-12s %14s %14s %16s %16s\n' openssl "$ossl1 (1 proc)" "$osslN ($cores proc)" "" ""
fi

bash scripts/bench-signhash.sh "$work"
