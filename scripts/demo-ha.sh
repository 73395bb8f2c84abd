#!/usr/bin/env bash
# demo-ha.sh — `make demo-ha`: three signd nodes on a three-member etcd
# cluster, behind one round-robin front, on this machine's loopback.
#
# Usage:
#   scripts/demo-ha.sh            set up, start, print how to use it; Ctrl-C stops it all
#   scripts/demo-ha.sh --detach   the same, but return and leave it running
#   scripts/demo-ha.sh --stop     stop what a detached run left running
#   scripts/demo-ha.sh --help     this text
#
# What runs (bin/signd-cluster, cmd/signd-cluster; everything on 127.0.0.1):
#   etcd members m1 m2 m3   clients :23791 :23792 :23793, peers :23801-:23803,
#                           data in var/ha/etcd (fsynced; kept between runs)
#   signd nodes 1 2 3       :8451 :8452 :8453 (metrics :9471-:9473), configs
#                           var/ha/node{1,2,3}.yaml, one SoftHSM2 token
#                           directory var/ha/softhsm shared by all three
#   front                   :8440, round-robin over the nodes whose /readyz
#                           answers 200; the nodes' base_url and issuer
# A node's or the front's port that another program listens on is replaced
# by a free one, and the ports in use are printed.
# The demo user, client, signing key and time-stamping key are enrolled once
# (scripts/lib-demo.sh, as `make demo` does) into etcd. Logs and PIDs are in
# var/ha/run; `rm -rf var/ha` (after --stop) starts over. `make demo` (one
# node, bbolt, var/) is separate and unchanged.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
var=$root/var/ha
bin=$root/bin/signd
run=$var/run

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }
bad() { echo "demo-ha.sh: $*" >&2; echo "Run with --help for usage." >&2; exit 2; }

mode=foreground
[ $# -le 1 ] || bad "one argument at most, got $#: $*"
case ${1:-} in
  '') ;;
  --detach) mode=detach ;;
  --stop) mode=stop ;;
  -h|--help) usage; exit 0 ;;
  *) bad "unknown argument: $1" ;;
esac

# stop_all: SIGTERM to each process whose PID file is in var/ha/run and
# whose command line still names this demo (a recycled PID is left alone);
# the front and the nodes first, then the etcd members; waits up to 10 s
# each, then SIGKILL.
stop_all() {
  local f pid n
  for f in "$run"/front.pid "$run"/node*.pid "$run"/etcd*.pid; do
    [ -s "$f" ] || continue
    pid=$(cat "$f")
    if [ -r "/proc/$pid/cmdline" ] && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q -e "$var" -e "$root/bin/signd-cluster front --listen 127.0.0.1:"; then
      kill -TERM "$pid" 2>/dev/null || true
      for n in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      if kill -0 "$pid" 2>/dev/null; then
        echo "demo-ha.sh: $(basename "$f" .pid) (PID $pid) did not stop in 10 s; killing it" >&2
        kill -KILL "$pid" 2>/dev/null || true
      fi
    fi
    rm -f "$f"
  done
}

if [ "$mode" = stop ]; then
  [ -d "$run" ] && ls "$run"/*.pid >/dev/null 2>&1 || { echo "demo-ha.sh: nothing to stop (no PID files in var/ha/run)" >&2; exit 0; }
  stop_all
  echo "demo-ha.sh: stopped" >&2
  exit 0
fi

# shellcheck source=scripts/lib-demo.sh
. scripts/lib-demo.sh

if ls "$run"/*.pid >/dev/null 2>&1; then
  for f in "$run"/*.pid; do
    if kill -0 "$(cat "$f")" 2>/dev/null; then
      echo "demo-ha.sh: already running ($(basename "$f" .pid), PID $(cat "$f")); stop it first: make demo-ha-stop" >&2
      exit 1
    fi
  done
  rm -f "$run"/*.pid
fi

# 1. Packages, bin/signd, bin/signd-pdf and bin/signd-cluster.
demo_build

# The ports of the front and of the nodes (API, metrics): the defaults
# unless another program listens there.
demo_ports 8440 8451 8452 8453 9471 9472 9473
front=${ports[0]}
node_port=("" "${ports[1]}" "${ports[2]}" "${ports[3]}")
metrics_port=("" "${ports[4]}" "${ports[5]}" "${ports[6]}")

# 2. The token and PINs, shared by the three nodes.
demo_token "$var"
mkdir -p "$run"
[ -s "$var/pairwise.salt" ] || openssl rand 32 >"$var/pairwise.salt"

# The processes are ours from here on: stop them on any failure, and on
# Ctrl-C in the foreground.
trap 'stop_all' EXIT
trap 'exit 130' INT TERM

# start NAME CMD...: runs CMD in the background with its log in
# var/ha/run/NAME.log and its PID in var/ha/run/NAME.pid.
start() {
  local name=$1
  shift
  "$@" >"$run/$name.log" 2>&1 &
  echo $! >"$run/$name.pid"
}
# wait_http NAME URL: until URL answers 200 (at most 60 s).
wait_http() {
  local name=$1 url=$2
  for _ in $(seq 1 600); do
    curl -fsS -o /dev/null "$url" 2>/dev/null && return 0
    kill -0 "$(cat "$run/$name.pid")" 2>/dev/null || { echo "demo-ha.sh: $name exited:" >&2; tail -n 20 "$run/$name.log" >&2; exit 1; }
    sleep 0.1
  done
  echo "demo-ha.sh: $name did not answer $url in 60 s:" >&2
  tail -n 20 "$run/$name.log" >&2
  exit 1
}

# 3. The etcd cluster.
say "etcd cluster m1 m2 m3 on 127.0.0.1:23791-23793 (data in var/ha/etcd)"
members=m1=http://127.0.0.1:23801,m2=http://127.0.0.1:23802,m3=http://127.0.0.1:23803
for i in 1 2 3; do
  start "etcd$i" "$cluster" etcd --name "m$i" --dir "$var/etcd/m$i" \
    --client "http://127.0.0.1:2379$i" --peer "http://127.0.0.1:2380$i" --cluster "$members"
done
for i in 1 2 3; do wait_http "etcd$i" "http://127.0.0.1:2379$i/health"; done

# 4. The nodes' configs: one store (etcd), one token, one issuer (the front).
for i in 1 2 3; do
  {
    cat <<YAML
# signd demo-ha node $i (made by make demo-ha). See docs/OPERATIONS.md, "Running several nodes".
server:
  listen: 127.0.0.1:${node_port[$i]}
  base_url: http://127.0.0.1:$front
  admin_socket: $run/node$i.sock
  metrics_listen: 127.0.0.1:${metrics_port[$i]}
  trusted_proxies: [127.0.0.1]
store:
  backend: etcd
  etcd:
    endpoints: [http://127.0.0.1:23791, http://127.0.0.1:23792, http://127.0.0.1:23793]
    prefix: /signd/
    node: node$i
oidc:
  pairwise_salt_file: $var/pairwise.salt
YAML
    demo_yaml_token "$var"
  } >"$var/node$i.yaml"
done

# 5. The demo user, client and keys, once, into etcd (the nodes are not
# running yet: the CLI writes to etcd directly).
demo_enroll "$var" "$var/node1.yaml"

# 6. The nodes and the front.
say "signd nodes on 127.0.0.1:${node_port[1]}, :${node_port[2]}, :${node_port[3]} (metrics :${metrics_port[1]}, :${metrics_port[2]}, :${metrics_port[3]}), front on 127.0.0.1:$front"
# One node after the other: the first creates the OIDC signing key on a
# fresh store, and SoftHSM2 processes opening one token directory at the
# same moment may miss the token.
for i in 1 2 3; do
  start "node$i" "$bin" --config "$var/node$i.yaml" serve
  wait_http "node$i" "http://127.0.0.1:${node_port[$i]}/readyz"
done
start front "$cluster" front --listen "127.0.0.1:$front" \
  --backend "http://127.0.0.1:${node_port[1]}" --backend "http://127.0.0.1:${node_port[2]}" \
  --backend "http://127.0.0.1:${node_port[3]}" --check 500ms
wait_http front "http://127.0.0.1:$front/readyz"

cat >&2 <<INFO

signd demo-ha is running: 3 nodes on a 3-member etcd cluster, behind
http://127.0.0.1:$front (everything under var/ha; logs in var/ha/run).
  nodes          http://127.0.0.1:${node_port[1]} http://127.0.0.1:${node_port[2]} http://127.0.0.1:${node_port[3]}
  metrics        http://127.0.0.1:${metrics_port[1]}/metrics http://127.0.0.1:${metrics_port[2]}/metrics http://127.0.0.1:${metrics_port[3]}/metrics

INFO
demo_usage "$var" "http://127.0.0.1:$front" "$cred"
cat >&2 <<INFO

Every request goes to the next node in turn; all share one store and one
token. The admin CLI talks to a node over its socket:
  bin/signd --config var/ha/node2.yaml credential show $cred
  bin/signd --config var/ha/node3.yaml audit verify    # every node's audit chain, from any node

Fail over: stop a node (the front takes it out within 0.5 s) or an etcd
member (2 of 3 keep a quorum); stop two members and the nodes answer 503:
  kill -9 \$(cat var/ha/run/node2.pid)
  kill -9 \$(cat var/ha/run/etcd3.pid)
  curl -s http://127.0.0.1:${node_port[1]}/readyz; curl -s http://127.0.0.1:${node_port[3]}/readyz
INFO

if [ "$mode" = detach ]; then
  trap - EXIT INT TERM
  echo "Running in the background. Stop it with: make demo-ha-stop" >&2
  exit 0
fi
echo "Running in the foreground: Ctrl-C stops it all (or make demo-ha-stop from another terminal)." >&2
# Until Ctrl-C, or until the front exits.
wait "$(cat "$run/front.pid")" || true
