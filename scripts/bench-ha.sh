#!/usr/bin/env bash
# bench-ha.sh — `make bench-ha`: signd on several nodes. signHash and token
# throughput of one node on bbolt, one node on etcd and three nodes on etcd,
# and the store's commit latency (bbolt vs etcd), on this machine, in one
# run, alternating.
#
# Usage: scripts/bench-ha.sh          (no arguments; settings in the environment)
#   ROUNDS        rounds, each measures every set-up once (default 3, 1 to 20)
#   LOAD_SECONDS  measuring time of one run (default 5, 1 to 60)
#   C             concurrency of signHash, token and the parallel store run (default 8, 1 to 64)
#   N             codes minted per token run (default 1000, 50 to 20000)
#   BASE_SIGND    optional: a signd binary built from another revision (say
#                 main, to measure a change before and after); its set-ups
#                 bolt, etcd-1 and etcd-3 (boltbase, etcd1base, etcd3base)
#                 join the rounds
#   NET_DELAY     optional: one-way latency (say 500us or 1ms) added in each
#                 direction in front of every etcd member's client and peer
#                 port (bin/signd-cluster delay; the members advertise the
#                 proxies): signd nodes and etcd members as if on separate
#                 machines of one network. Loopback HTTP stays undelayed.
#
# In a temp directory (removed on exit, with every process it started), on
# loopback ports picked at start: a three-member etcd cluster
# (bin/signd-cluster etcd, fsynced, --max-txn-ops 10000), one SoftHSM2 token,
# and three set-ups, each with its user, clients and RSA-2048 credential:
#   bolt    one node, store.backend bolt
#   etcd-1  one node, store.backend etcd (prefix /b1/)
#   etcd-3  three nodes, store.backend etcd (prefix /b3/), one token
# each behind its own round-robin front (bin/signd-cluster front; the
# one-node set-ups too, so that all three pay the same proxy hop).
#   (a) store: before any daemon starts, signd-load store consumes SADs
#       straight in the store (read, delete, audit append; one commit each)
#       at concurrency 1 and C: bbolt vs etcd, p50/p99 of the commit;
#   (b) signHash: signd-load http through each front, one fresh SAD per
#       request (SADs minted by signd-load prepare), concurrency C;
#   (c) token: signd-load codes mints N codes through the front (login and
#       consent pages), signd-load token redeems them at concurrency C.
# Each round runs the set-ups in another order. Printed: the medians, and
# the etcd set-ups' commit counters (signd_store_etcd_*_total on their
# metrics listeners) summed over the (b) and (c) runs: commits, conflicts
# (another node wrote what a commit read), Batch calls per commit (group
# commit), runs per call (conflicts rerun them), barriers (the shared
# linearizable read a transaction starts with) and reads sent to etcd
# besides them (none while the watch cache serves); and where the CPU
# went while measuring: cores used by the etcd members (with NET_DELAY,
# their delay proxies too), the set-up's signd nodes, its front, and the
# rest (the load generator), from /proc.
set -euo pipefail
cd "$(dirname "$0")/.."

bad() { echo "bench-ha.sh: $*" >&2; echo "usage: scripts/bench-ha.sh (settings: ROUNDS, LOAD_SECONDS, C, N, BASE_SIGND, NET_DELAY; see the header)" >&2; exit 2; }
[ $# -eq 0 ] || { [ "$1" = -h ] || [ "$1" = --help ]; } && [ $# -le 1 ] || bad "no arguments expected, got: $*"
if [ $# -eq 1 ]; then sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0; fi
# num NAME VALUE LO HI: VALUE is a whole number from LO to HI.
num() {
  case $2 in ''|*[!0-9]*) bad "$1=$2: want a whole number from $3 to $4" ;; esac
  [ "${#2}" -le 6 ] && [ "$2" -ge "$3" ] && [ "$2" -le "$4" ] || bad "$1=$2: want a whole number from $3 to $4"
}
rounds=${ROUNDS:-3} secs=${LOAD_SECONDS:-5} conc=${C:-8} count=${N:-1000} base=${BASE_SIGND:-} delay=${NET_DELAY:-}
num ROUNDS "$rounds" 1 20
num LOAD_SECONDS "$secs" 1 60
num C "$conc" 1 64
num N "$count" 50 20000
case $delay in '' | [1-9]us | [1-9][0-9]us | [1-9][0-9][0-9]us | [1-9]ms | [1-9][0-9]ms) ;;
  *) bad "NET_DELAY=$delay: want a latency from 1us to 99ms such as 500us or 2ms" ;;
esac
if [ -n "$base" ]; then
  [ -f "$base" ] && [ -x "$base" ] || bad "BASE_SIGND=$base: not an executable file"
  base=$(cd "$(dirname "$base")" && pwd)/$(basename "$base")
fi

work=$(mktemp -d)
pids=() etcd_pids=()
# stop PID...: SIGTERM, up to 10 s, then SIGKILL.
stop() {
  local p
  for p in "$@"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "$@"; do
    for _ in $(seq 1 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$p" 2>/dev/null || true
    wait "$p" 2>/dev/null || true
  done
}
# The nodes and fronts first: a node shutting down still talks to etcd.
cleanup() {
  stop "${pids[@]}"
  stop "${etcd_pids[@]}"
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo
echo "# Several nodes: bbolt vs etcd, one and three nodes (scripts/bench-ha.sh)"
CGO_ENABLED=1 go build -o bin/signd ./cmd/signd
go build -o bin/signd-load ./cmd/signd-load
go build -o bin/signd-cluster ./cmd/signd-cluster

# started NAME LOG CMD...: CMD in the background, its PID in pids.
started() {
  local log=$2
  shift 2
  "$@" >"$log" 2>&1 &
  pids+=("$!")
}
# ready URL LOG: until URL answers 200 (at most 60 s).
ready() {
  for _ in $(seq 1 600); do
    curl -fsS -o /dev/null "$1" 2>/dev/null && return 0
    sleep 0.1
  done
  echo "bench-ha.sh: $1 did not answer in 60 s" >&2
  tail -n 20 "$2" >&2
  exit 1
}

mapfile -t port < <(bin/signd-cluster ports 36)
# 0-2 etcd clients, 3-5 etcd peers, 6 bolt node, 7 etcd-1 node, 8-10 etcd-3
# nodes, 11-13 the fronts of bolt, etcd-1, etcd-3; with BASE_SIGND 14
# etcd-1 node, 15-17 etcd-3 nodes, 18-19 their fronts; 20-27 the metrics
# listeners of the etcd-1 and etcd-3 nodes (their store's commit counters;
# the base ones too); with BASE_SIGND 28 bolt node, 29 its front; with
# NET_DELAY 30-32 the delay proxies of the etcd clients, 33-35 of the peers.
mport=20
# The addresses members advertise and signd dials: the delay proxies with
# NET_DELAY, else the members' own ports.
cport=0 pport=3
if [ -n "$delay" ]; then
  cport=30 pport=33
  for i in 0 1 2; do
    for k in 0 3; do
      started "delay$k$i" "$work/delay$k$i.log" bin/signd-cluster delay --listen "127.0.0.1:${port[30 + k + i]}" \
        --to "127.0.0.1:${port[k + i]}" --delay "$delay"
    done
  done
fi
members=""
for i in 0 1 2; do members+="${members:+,}m$i=http://127.0.0.1:${port[pport + i]}"; done
for i in 0 1 2; do
  started "etcd$i" "$work/etcd$i.log" bin/signd-cluster etcd --name "m$i" --dir "$work/etcd/m$i" \
    --client "http://127.0.0.1:${port[i]}" --peer "http://127.0.0.1:${port[3 + i]}" \
    --advertise-peer "http://127.0.0.1:${port[pport + i]}" --cluster "$members"
done
etcd_pids=("${pids[@]}") pids=()
for i in 0 1 2; do ready "http://127.0.0.1:${port[i]}/health" "$work/etcd$i.log"; done
endpoints="[http://127.0.0.1:${port[cport]}, http://127.0.0.1:${port[cport + 1]}, http://127.0.0.1:${port[cport + 2]}]"

# shellcheck source=scripts/lib-bench.sh
. scripts/lib-bench.sh
bench_token "$work"
openssl rand 32 >"$work/pairwise.salt"
openssl rand -hex 24 >"$work/client.secret"
extra="oauth:
  code_ttl: 10m"
# setup NAME STORE NODE_PORT...: configs $work/NAME-K.yaml, the bench user,
# clients and credential (bench_signer), the front's URL in url_NAME and
# the credential in cred_NAME.
setup() {
  local name=$1 store=$2 front=$3 k=0 p m s metrics=""
  shift 3
  for p in "$@"; do
    k=$((k + 1)) m='""' s=$store
    # Each node of this signd its own audit chain (store.etcd.node); the
    # BASE_SIGND nodes predate the key.
    case $name in
      etcd1 | etcd3) m=127.0.0.1:${port[mport]} mport=$((mport + 1)) metrics+=" $m" s+=$'\n'"    node: n$k" ;;
      etcd1base | etcd3base) m=127.0.0.1:${port[mport]} mport=$((mport + 1)) metrics+=" $m" ;;
    esac
    bench_yaml "$work/$name-$k.yaml" "$work" "127.0.0.1:$p" "http://127.0.0.1:$front" "$m" warn "$s" "$extra"
  done
  printf -v "metrics_$name" '%s' "$metrics"
  cfg=$work/$name-1.yaml
  bench_signer "$work" --email bench@bench.invalid --email-verified # user bench (password in $work/password), client bench-client, credential $cred
  mv "$work/password" "$work/password-$name"
  bin/signd --config "$cfg" client add bench-rp --redirect-uri https://bench.invalid/cb --scope openid \
    --require-pkce --secret-file "$work/client.secret" >/dev/null
  printf -v "url_$name" '%s' "http://127.0.0.1:$front"
  printf -v "cred_$name" '%s' "$cred"
  printf -v "nodes_$name" '%s' "$k"
}
# etcd_store PREFIX: the store section of a store under PREFIX on the etcd.
etcd_store() {
  printf 'store:\n  backend: etcd\n  etcd:\n    endpoints: %s\n    prefix: %s' "$endpoints" "$1"
}
setup bolt "store:
  path: $work/signd.db" "${port[11]}" "${port[6]}"
setup etcd1 "$(etcd_store /b1/)" "${port[12]}" "${port[7]}"
setup etcd3 "$(etcd_store /b3/)" "${port[13]}" "${port[8]}" "${port[9]}" "${port[10]}"
names=(bolt etcd1 etcd3)
if [ -n "$base" ]; then
  setup boltbase "store:
  path: $work/signd-base.db" "${port[29]}" "${port[28]}"
  setup etcd1base "$(etcd_store /c1/)" "${port[18]}" "${port[14]}"
  setup etcd3base "$(etcd_store /c3/)" "${port[19]}" "${port[15]}" "${port[16]}" "${port[17]}"
  names+=(boltbase etcd1base etcd3base)
fi

# SADs, minted straight into each store while no daemon runs (bbolt's file
# is locked by its daemon). One run signs at most sads of them.
sads=$((secs * 400 + 100))
[ "$sads" -le 2000 ] || sads=2000
for r in $(seq 1 "$rounds"); do
  for n in "${names[@]}"; do
    c=cred_$n
    bin/signd-load prepare --config "$work/$n-1.yaml" --user bench --client bench-client --credential "${!c}" \
      --count "$sads" --out "$work/sads-$n-$r.json" >/dev/null
  done
  for n in bolt etcd1; do
    for c in 1 "$conc"; do
      cr=cred_$n
      bin/signd-load prepare --config "$work/$n-1.yaml" --user bench --client bench-client --credential "${!cr}" \
        --count "$sads" --out "$work/store-$n-$c-$r.json" >/dev/null
    done
  done
done

# (a) the store alone.
echo "## (a) bin/signd-load store --concurrency 1 and $conc --duration ${secs}s: bbolt vs etcd (3 members), $rounds rounds, alternating"
: >"$work/runs.txt"
for r in $(seq 1 "$rounds"); do
  for c in 1 "$conc"; do
    for n in bolt etcd1; do
      printf 'setup=%s-store ' "$n" | tee -a "$work/runs.txt"
      bin/signd-load store --config "$work/$n-1.yaml" --in "$work/store-$n-$c-$r.json" --concurrency "$c" --duration "${secs}s" |
        tee -a "$work/runs.txt"
    done
  done
done

# The daemons and their fronts, one after the other: the first node of a
# set-up creates the store's OIDC signing key, and SoftHSM2 processes
# opening one token directory at the same moment may miss the token.
for n in "${names[@]}"; do
  k=nodes_$n backends=() signd=bin/signd
  case $n in *base) signd=$base ;; esac
  for i in $(seq 1 "${!k}"); do
    started "$n-$i" "$work/$n-$i.log" "$signd" --config "$work/$n-$i.yaml" serve
    printf -v "nodepids_$n" '%s' "$(v=nodepids_$n; echo "${!v:-} ${pids[-1]}")"
    addr=$(sed -n 's/^  listen: //p' "$work/$n-$i.yaml")
    backends+=(--backend "http://$addr")
    ready "http://$addr/readyz" "$work/$n-$i.log"
  done
  u=url_$n
  started "front-$n" "$work/front-$n.log" bin/signd-cluster front --listen "${!u#http://}" "${backends[@]}" --check 500ms
  printf -v "frontpid_$n" '%s' "${pids[-1]}"
done
for n in "${names[@]}"; do
  k=nodes_$n
  for i in $(seq 1 "${!k}"); do ready "http://$(sed -n 's/^  listen: //p' "$work/$n-$i.yaml")/readyz" "$work/$n-$i.log"; done
  u=url_$n
  ready "${!u}/readyz" "$work/front-$n.log"
done

# counters NAME: the store commit counters summed over the set-up's nodes
# (commits conflicts batch_calls batch_runs), since their start; zeros for
# a set-up without metrics.
counters() {
  local m=metrics_$1 a
  for a in ${!m}; do curl -fsS "http://$a/metrics"; done | awk '
    /^signd_store_etcd_commits_total / { c += $2 } /^signd_store_etcd_conflicts_total / { x += $2 }
    /^signd_store_etcd_batch_calls_total / { b += $2 } /^signd_store_etcd_batch_runs_total / { r += $2 }
    /^signd_store_etcd_barriers_total / { g += $2 } /^signd_store_etcd_reads_total / { d += $2 }
    END { printf "%d %d %d %d %d %d\n", c, x, b, r, g, d }'
}
# ticks PID...: the CPU time (user + system, clock ticks) the processes
# used so far.
ticks() {
  local p t=0 f
  for p in "$@"; do
    read -r -a f <"/proc/$p/stat" || continue
    t=$((t + f[13] + f[14]))
  done
  echo "$t"
}
# boxticks: the machine's busy and total clock ticks so far (all cores).
boxticks() {
  awk '/^cpu / { busy = $2 + $3 + $4 + $7 + $8 + $9; print busy, busy + $5 + $6 }' /proc/stat
}
# cpusample NAME: CPU ticks of the set-up's etcd members (0 for bbolt),
# signd nodes and front, and the machine's busy and total ticks.
cpusample() {
  local np=nodepids_$1 fp=frontpid_$1 e=0
  case $1 in etcd*) e=$(ticks "${etcd_pids[@]}") ;; esac
  echo "$e $(ticks ${!np}) $(ticks "${!fp}") $(boxticks)"
}
# measured NAME MODE CMD...: runs CMD, and adds the counters' growth
# meanwhile to contention.txt, and the CPU each part used to cpu.txt.
measured() {
  local n=$1 mode=$2 c0 x0 b0 r0 g0 d0 c1 x1 b1 r1 g1 d1 e0 s0 f0 u0 t0 e1 s1 f1 u1 t1
  shift 2
  read -r c0 x0 b0 r0 g0 d0 < <(counters "$n")
  read -r e0 s0 f0 u0 t0 < <(cpusample "$n")
  "$@"
  read -r e1 s1 f1 u1 t1 < <(cpusample "$n")
  read -r c1 x1 b1 r1 g1 d1 < <(counters "$n")
  echo "$n $mode $((c1 - c0)) $((x1 - x0)) $((b1 - b0)) $((r1 - r0)) $((g1 - g0)) $((d1 - d0))" >>"$work/contention.txt"
  echo "$n $mode $((e1 - e0)) $((s1 - s0)) $((f1 - f0)) $((u1 - u0)) $((t1 - t0))" >>"$work/cpu.txt"
}

# (b) signHash and (c) token, each round in another order.
: >"$work/contention.txt"
: >"$work/cpu.txt"
echo "## (b) bin/signd-load http --concurrency $conc --duration ${secs}s  (c) bin/signd-load codes --count $count, then bin/signd-load token --concurrency $conc --duration ${secs}s; through each front, $rounds rounds, alternating"
for r in $(seq 1 "$rounds"); do
  for i in "${!names[@]}"; do
    n=${names[$(((r - 1 + i) % ${#names[@]}))]} u=url_$n
    printf 'setup=%s ' "$n" | tee -a "$work/runs.txt"
    measured "$n" http bin/signd-load http --url "${!u}" --in "$work/sads-$n-$r.json" --concurrency "$conc" --duration "${secs}s" | tee -a "$work/runs.txt"
  done
  for i in "${!names[@]}"; do
    n=${names[$(((r - 1 + i) % ${#names[@]}))]} u=url_$n
    bin/signd-load codes --url "${!u}" --client bench-rp --redirect-uri https://bench.invalid/cb --user bench \
      --password-file "$work/password-$n" --count "$count" --duration 60s --out "$work/codes.json" >/dev/null
    printf 'setup=%s ' "$n" | tee -a "$work/runs.txt"
    measured "$n" token bin/signd-load token --in "$work/codes.json" --secret-file "$work/client.secret" --concurrency "$conc" \
      --duration "${secs}s" | tee -a "$work/runs.txt"
    rm -f "$work/codes.json"
  done
done
errors=$(for n in "${names[@]}"; do cat "$work/$n"-*.log; done | grep -c '"level":"ERROR"' || true)
audit=$(bin/signd --config "$work/etcd3-2.yaml" audit verify 2>&1 | awk 'NR == 1')   # the summary; the chains follow it

# median over the rounds of key k for set-up s, mode m and concurrency c.
val() { awk -v s="$1" -v m="$2" -v c="$3" -v k="$4" '{ split("", f); for (i = 1; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] } }
  f["setup"] == s && f["mode"] == m && f["c"] == c { print f[k] }' "$work/runs.txt" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

echo
echo "## medians of $rounds rounds, $(date -u +%Y-%m-%d), $(nproc) cores, RSA-2048, one SoftHSM2 token, etcd: 3 members on this machine"
printf '%-34s %10s %10s %10s\n' "store commit (signd-load store)" "commits/s" p50 p99
for c in 1 "$conc"; do
  for n in bolt etcd1; do
    label=$([ "$n" = bolt ] && echo "bbolt" || echo "etcd")
    printf '%-34s %10s %8sms %8sms\n' "$label, c=$c" "$(val "$n-store" store "$c" rate)" "$(val "$n-store" store "$c" p50_ms)" "$(val "$n-store" store "$c" p99_ms)"
  done
done
printf '\n%-34s %10s %10s %10s %14s %10s %10s\n' "set-up (through a front), c=$conc" "sigs/s" p50 p99 "exchanges/s" p50 p99
for n in "${names[@]}"; do
  label=$(case $n in bolt) echo "1 node, bbolt" ;; etcd1) echo "1 node, etcd" ;; etcd3) echo "3 nodes, etcd" ;;
    boltbase) echo "1 node, bbolt, BASE_SIGND" ;; etcd1base) echo "1 node, etcd, BASE_SIGND" ;; etcd3base) echo "3 nodes, etcd, BASE_SIGND" ;; esac)
  printf '%-34s %10s %8sms %8sms %14s %8sms %8sms\n' "$label" "$(val "$n" http "$conc" rate)" "$(val "$n" http "$conc" p50_ms)" "$(val "$n" http "$conc" p99_ms)" \
    "$(val "$n" token "$conc" rate)" "$(val "$n" token "$conc" p50_ms)" "$(val "$n" token "$conc" p99_ms)"
done
echo "errors logged by the daemons: $errors; audit verify (etcd-3, from node 2): $audit"
for n in "${names[@]}"; do grep -H '"level":"ERROR"' "$work/$n"-*.log || true; done | sed "s|^$work/||" | head -n 5 | cut -c 1-400
printf '\n%-34s %10s %10s %12s %14s %12s %10s %10s\n' "etcd commits while measuring" commits conflicts "batch calls" "calls/commit" "runs/call" barriers reads
for n in "${names[@]}"; do
  case $n in bolt | boltbase) continue ;; esac
  for mode in http token; do
    label="$(case $n in etcd1*) echo "1 node" ;; *) echo "3 nodes" ;; esac), $([ "$mode" = http ] && echo signHash || echo token)$(case $n in *base) echo ", BASE_SIGND" ;; esac)"
    awk -v n="$n" -v m="$mode" -v l="$label" '$1 == n && $2 == m { c += $3; x += $4; b += $5; r += $6; g += $7; d += $8 }
      END { printf "%-34s %10d %10d %12d %14s %12s %10d %10d\n", l, c, x, b, (c ? sprintf("%.2f", b / c) : "-"), (b ? sprintf("%.2f", r / b) : "-"), g, d }' "$work/contention.txt"
  done
done
# Where the CPU went while measuring: cores (CPU seconds per second of
# wall time) of the etcd members, the set-up's signd nodes and front, and
# the rest (the load generator, the kernel's own work); busy is the share
# of all cores in use.
printf '\n%-34s %8s %8s %8s %8s %8s\n' "CPU while measuring (cores)" busy etcd signd front rest
for n in "${names[@]}"; do
  for mode in http token; do
    awk -v n="$n" -v m="$mode" -v cores="$(nproc)" -v l="$n, $([ "$mode" = http ] && echo signHash || echo token)" '
      $1 == n && $2 == m { e += $3; s += $4; f += $5; u += $6; t += $7 }
      END { if (t == 0) exit; w = t / cores
        r = (u - e - s - f) / w; if (r < 0) r = 0 # the two clocks round apart
        printf "%-34s %7.0f%% %8.2f %8.2f %8.2f %8.2f\n", l, 100 * u / t, e / w, s / w, f / w, r }' "$work/cpu.txt"
  done
done
