#!/usr/bin/env bash
# tpm2.sh — bring a TPM 2.0 PKCS#11 token (tpm2-pkcs11 over a software TPM)
# up for signd's tests, and tear it down again.
#
# Usage: softhsm-test/tpm2.sh up DIR
#        softhsm-test/tpm2.sh down DIR
#
# up starts, all inside DIR and on 127.0.0.1 only: swtpm (a TPM 2.0
# simulator, state in DIR/tpm), a private D-Bus session bus and tpm2-abrmd
# on it (tpm2-pkcs11 runs out of TPM object contexts when it talks to swtpm
# directly), then makes a tpm2-pkcs11 store in DIR/store with three tokens:
# signd-tpm for the tests and the spares signd-tpm-pin and signd-tpm-faults
# (the hsm tests want a token they have not logged in to, and one to break).
# It writes DIR/token.env, to be sourced: SIGND_TEST_PKCS11_MODULE,
# SIGND_TEST_PKCS11_LABEL, SIGND_TEST_PKCS11_PIN,
# SIGND_TEST_PKCS11_SPARE_LABELS, and for the module TPM2_PKCS11_TCTI,
# TPM2_PKCS11_STORE and DBUS_SESSION_BUS_ADDRESS. down stops exactly the
# daemons up started (by PID) and removes DIR's state. Nothing outside DIR
# is touched, so several can run at once.
set -euo pipefail
prog=tpm2.sh
source "$(dirname "$0")/lib-token.sh"

module=${TPM2_PKCS11_MODULE:-/usr/lib/x86_64-linux-gnu/pkcs11/libtpm2_pkcs11.so}
label=signd-tpm
spares="signd-tpm-pin signd-tpm-faults"

[ $# -eq 2 ] || { sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
cmd=$1
dir=$2

# wait_for WHAT CMD... retries CMD for 30 s (the machine may be busy).
wait_for() {
  local what=$1 i
  shift
  for i in $(seq 300); do
    "$@" >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  die "$what did not come up: $(tail -n 5 "$dir"/*.log 2>/dev/null)"
}

up() {
  [ -e "$module" ] || die "module $module missing (apt-get install libtpm2-pkcs11-1)"
  local tool
  for tool in swtpm tpm2-abrmd dbus-daemon tpm2_ptool; do
    command -v $tool >/dev/null || die "$tool missing (scripts/install-deps.sh --tokens)"
  done
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  [ ! -e "$dir/pids" ] || die "$dir is in use: run $prog down $dir first"
  mkdir -p "$dir/tpm" "$dir/store"
  trap 'stop_started' ERR

  # swtpm on a free pair of ports (server, control).
  local port tries
  for tries in $(seq 20); do
    port=$((20000 + RANDOM % 20000 * 2))
    swtpm socket --tpm2 --tpmstate dir="$dir/tpm" --flags not-need-init,startup-clear \
      --server type=tcp,port=$port,bindaddr=127.0.0.1 \
      --ctrl type=tcp,port=$((port + 1)),bindaddr=127.0.0.1 >"$dir/swtpm.log" 2>&1 &
    local pid=$!
    sleep 0.3
    if kill -0 $pid 2>/dev/null; then
      started swtpm $pid
      break
    fi
    port=""
  done
  [ -n "$port" ] || die "swtpm did not start: $(cat "$dir/swtpm.log")"

  # A private session bus: tpm2-abrmd owns its name there, not on the
  # machine's bus.
  dbus-daemon --session --nofork --nopidfile --address="unix:path=$dir/bus" \
    --print-address=3 3>"$dir/bus.address" >"$dir/dbus.log" 2>&1 &
  started dbus-daemon $!
  wait_for "dbus-daemon" test -s "$dir/bus.address"
  export DBUS_SESSION_BUS_ADDRESS="unix:path=$dir/bus"

  # tpm2-pkcs11 keeps every key it has used loaded; the tests use dozens
  # of keys through one connection, more than tpm2-abrmd's default of 27
  # transient objects per client ("out of memory for object contexts"); 100
  # is its maximum.
  tpm2-abrmd --session --allow-root --max-transients=100 --tcti="swtpm:host=127.0.0.1,port=$port" >"$dir/tpm2-abrmd.log" 2>&1 &
  started tpm2-abrmd $!
  export TPM2_PKCS11_TCTI=tabrmd:bus_type=session TPM2TOOLS_TCTI=tabrmd:bus_type=session TPM2_PKCS11_STORE="$dir/store"
  wait_for "tpm2-abrmd" dbus-send --session --print-reply --dest=com.intel.tss2.Tabrmd /com/intel/tss2/Tabrmd/Tcti org.freedesktop.DBus.Peer.Ping

  local pid_line pid pin sopin l
  pid_line=$(tpm2_ptool init --path "$dir/store" 2>>"$dir/ptool.log") || die "tpm2_ptool init: $(cat "$dir/ptool.log")"
  pid=$(printf '%s\n' "$pid_line" | awk '/^id:/ { print $2 }')
  [ -n "$pid" ] || die "tpm2_ptool init printed no id: $pid_line"
  pin=$(random_pin 16)
  sopin=$(random_pin 16)
  for l in $label $spares; do
    # tpm2_ptool takes PINs on its command line only; these are throw-away
    # test tokens in a private store. Never do this with a real token's PIN.
    tpm2_ptool addtoken --pid "$pid" --label "$l" --sopin "$sopin" --userpin "$pin" --path "$dir/store" \
      >>"$dir/ptool.log" 2>&1 || die "tpm2_ptool addtoken $l: $(cat "$dir/ptool.log")"
  done
  write_env SIGND_TEST_PKCS11_MODULE="$module" SIGND_TEST_PKCS11_LABEL="$label" SIGND_TEST_PKCS11_PIN="$pin" \
    SIGND_TEST_PKCS11_SPARE_LABELS="$spares" \
    TPM2_PKCS11_TCTI="$TPM2_PKCS11_TCTI" TPM2_PKCS11_STORE="$TPM2_PKCS11_STORE" \
    DBUS_SESSION_BUS_ADDRESS="$DBUS_SESSION_BUS_ADDRESS"
  trap - ERR
  echo "$prog: tokens $label $spares (swtpm on 127.0.0.1:$port); source $dir/token.env" >&2
}

down() {
  dir=$(cd "$dir" && pwd)
  stop_started
  rm -rf "$dir/tpm" "$dir/store" "$dir/bus" "$dir/bus.address" "$dir/token.env"
}

case $cmd in
  up) up ;;
  down) down ;;
  *) echo "$prog: unknown command $cmd (up or down)" >&2; exit 2 ;;
esac
