#!/usr/bin/env bash
# bench-rss.sh — the daemon's resident memory at idle, under a signHash load
# and after it.
#
# Usage: scripts/bench-rss.sh WORKDIR [BASELINE_SIGND]
#
# In WORKDIR (empty, removed by the caller) it sets up what
# scripts/bench-signhash.sh sets up (a SoftHSM2 token, a config, a user, a
# client, an RSA-2048 credential, SADs minted by signd-load prepare). Then,
# ROUNDS (default 3) times, for bin/signd and — when given — BASELINE_SIGND
# in alternation, on the same token and store: start `signd serve`, wait
# SETTLE seconds (default 2) and read VmRSS and RssAnon ("idle"); run
# signd-load http for LOAD_SECONDS (default 5) at CONCURRENCY (default 8)
# and read VmHWM ("peak", the high-water mark of the whole life, start-up
# included), VmRSS and RssAnon ("load"); wait AFTER seconds (default 10)
# and read VmRSS and RssAnon again ("after"); stop the daemon. It prints one
# line per run and the medians per binary.
set -euo pipefail
cd "$(dirname "$0")/.."
work=${1:?usage: bench-rss.sh WORKDIR [BASELINE_SIGND]}
base=${2:-}
secs=${LOAD_SECONDS:-5}
conc=${CONCURRENCY:-8}
settle=${SETTLE:-2}
after=${AFTER:-10}
rounds=${ROUNDS:-3}
daemon=""
trap '[ -z "$daemon" ] || kill "$daemon" 2>/dev/null || true' EXIT

echo
echo "# signd resident memory: idle, under signHash load, after (scripts/bench-rss.sh)"
# shellcheck source=scripts/lib-bench.sh
. scripts/lib-bench.sh
bench_signhash_setup "$work"

bins="bin/signd"
[ -z "$base" ] || bins="$base bin/signd"
count=$((secs * 2000 + 100))
for r in $(seq 1 "$rounds"); do
  for b in $bins; do
    bin/signd-load prepare --config "$cfg" --user bench --client bench-client --credential "$cred" \
      --count "$count" --out "$work/sads-$r-$(basename "$b").json" >/dev/null
  done
done

kib() { awk -v k="$2" '$1 == k":" {print $2}' "/proc/$1/status"; }
: >"$work/runs.txt"
echo "## each run: signd serve; sleep ${settle}s; VmRSS (idle); signd-load http -c $conc ${secs}s; VmHWM (peak), VmRSS (load); sleep ${after}s; VmRSS (after)"
for r in $(seq 1 "$rounds"); do
  for b in $bins; do
    bench_start "$b" "$work/signd.log"
    sleep "$settle"
    idle=$(kib "$daemon" VmRSS) idle_anon=$(kib "$daemon" RssAnon)
    rate=$(bin/signd-load http --url "http://$addr" --in "$work/sads-$r-$(basename "$b").json" --concurrency "$conc" --duration "${secs}s" |
      sed -n 's/.* rate=\([0-9.]*\).*/\1/p')
    peak=$(kib "$daemon" VmHWM) load=$(kib "$daemon" VmRSS) load_anon=$(kib "$daemon" RssAnon)
    sleep "$after"
    aft=$(kib "$daemon" VmRSS) aft_anon=$(kib "$daemon" RssAnon)
    kill -TERM "$daemon"
    wait "$daemon" || true
    daemon=""
    echo "bin=$b round=$r idle_mib=$((idle / 1024)) idle_anon_mib=$((idle_anon / 1024)) peak_mib=$((peak / 1024)) load_mib=$((load / 1024)) load_anon_mib=$((load_anon / 1024)) after_mib=$((aft / 1024)) after_anon_mib=$((aft_anon / 1024)) sigs_per_s=${rate:-?}" |
      tee -a "$work/runs.txt"
  done
done

# median over the rounds of key k for binary b.
val() { awk -v b="$1" -v k="$2" '{ split("", f); for (i = 1; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] } }
  f["bin"] == b { print f[k] }' "$work/runs.txt" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
echo
echo "## medians of $rounds rounds, $(date -u +%Y-%m-%d), $(nproc) cores, MiB"
printf '%-28s %6s %10s %6s %6s %10s %6s %11s %8s\n' binary idle "idle anon" peak load "load anon" after "after anon" "sigs/s"
for b in $bins; do
  printf '%-28s %6s %10s %6s %6s %10s %6s %11s %8s\n' "$b" "$(val "$b" idle_mib)" "$(val "$b" idle_anon_mib)" "$(val "$b" peak_mib)" "$(val "$b" load_mib)" \
    "$(val "$b" load_anon_mib)" "$(val "$b" after_mib)" "$(val "$b" after_anon_mib)" "$(val "$b" sigs_per_s)"
done
echo "(anon: RssAnon, the heap and stacks; the rest of VmRSS is file pages, mostly the store's mmap and the binary)"
