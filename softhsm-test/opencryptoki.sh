#!/usr/bin/env bash
# opencryptoki.sh — bring opencryptoki's software token up for signd's
# tests, and tear it down again.
#
# Usage: softhsm-test/opencryptoki.sh up DIR
#        softhsm-test/opencryptoki.sh down DIR
#
# up makes a fresh token labelled signd-ock in opencryptoki's software
# token (the slot whose stdll is libpkcs11_sw.so) with a random 8-character
# user PIN (opencryptoki takes 4 to 8), and writes DIR/token.env, to be
# sourced: SIGND_TEST_PKCS11_MODULE, SIGND_TEST_PKCS11_LABEL,
# SIGND_TEST_PKCS11_PIN. down stops the daemons up started and puts
# everything back as it was.
#
# opencryptoki 3.8 keeps its token in /var/lib/opencryptoki/swtok and its
# configuration in /etc/opencryptoki/opencryptoki.conf, both compiled in
# (no variable moves them; `tokname` only renames the directory under
# /var/lib/opencryptoki), and one pkcsslotd serves the machine. So up takes
# the machine-wide lock /tmp/opencryptoki.lock (flock; held by a process it
# starts until down), moves the token directory and its shared memory
# (/dev/shm/var.lib.opencryptoki.swtok) aside and starts pkcsslotd unless
# one is running; down removes the test token, moves the originals back,
# stops only the pkcsslotd it started and releases the lock. Needs root
# (or the pkcs11 group and write access to those directories) and Go.
set -euo pipefail
prog=opencryptoki.sh
source "$(dirname "$0")/lib-token.sh"

module=${OPENCRYPTOKI_MODULE:-/usr/lib/x86_64-linux-gnu/pkcs11/libopencryptoki.so}
conf=/etc/opencryptoki/opencryptoki.conf
tokdir=/var/lib/opencryptoki/swtok
shm=/dev/shm/var.lib.opencryptoki.swtok
lockdir=/var/lock/opencryptoki
saved=.saved-by-signd-tests
label=signd-ock
lock=/tmp/opencryptoki.lock

[ $# -eq 2 ] || { sed -n '2,25p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
cmd=$1
dir=$2

# sw_slot prints the slot number of libpkcs11_sw.so in opencryptoki.conf.
sw_slot() {
  awk '/^[[:space:]]*slot[[:space:]]+[0-9]+/ { slot = $2 }
       /stdll[[:space:]]*=[[:space:]]*libpkcs11_sw\.so/ { print slot; exit }' "$conf"
}

up() {
  [ -e "$module" ] || die "module $module missing (apt-get install opencryptoki)"
  command -v pkcsslotd >/dev/null || die "pkcsslotd missing (apt-get install opencryptoki)"
  local slot
  slot=$(sw_slot)
  [ -n "$slot" ] || die "no slot with stdll = libpkcs11_sw.so in $conf"
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  [ ! -e "$dir/pids" ] || die "$dir is in use: run $prog down $dir first"

  # From here a failure undoes what up did (down).
  trap 'echo "$prog: up failed; tearing down" >&2; down' EXIT
  # The lock is held by a sleep started under flock until down kills it.
  rm -f "$dir/lock-holder"
  flock "$lock" sh -c 'echo $$ >"$1"; exec sleep 86400' sh "$dir/lock-holder" &
  local waited=0
  until [ -s "$dir/lock-holder" ]; do
    sleep 0.2
    waited=$((waited + 1))
    if [ $((waited % 150)) -eq 0 ]; then echo "$prog: waiting for $lock" >&2; fi
  done
  started lock "$(cat "$dir/lock-holder")"

  [ ! -e "$tokdir$saved" ] && [ ! -e "$shm$saved" ] ||
    die "$tokdir$saved or $shm$saved exists: an earlier run did not finish; move it back by hand"
  [ ! -e "$tokdir" ] || mv "$tokdir" "$tokdir$saved"
  [ ! -e "$shm" ] || mv "$shm" "$shm$saved"
  echo moved >"$dir/moved"
  install -d -m 0770 -g pkcs11 "$tokdir" "$tokdir/TOK_OBJ" "$lockdir" "$lockdir/swtok"

  if pid=$(pgrep -x pkcsslotd); then
    echo "$prog: using the pkcsslotd already running ($pid); it is left running" >&2
  else
    pkcsslotd -f >"$dir/pkcsslotd.log" 2>&1 &
    started pkcsslotd $!
    local i
    for i in $(seq 50); do
      [ -S /var/run/pkcsslotd.socket ] && break
      sleep 0.1
    done
    [ -S /var/run/pkcsslotd.socket ] || die "pkcsslotd did not start: $(cat "$dir/pkcsslotd.log")"
  fi

  # A fresh token's SO PIN is opencryptoki's default, 87654321 (it is in
  # the manual; it becomes this token's SO PIN).
  local pin
  pin=$(random_pin 8)
  init_token "$module" "$slot" "$label" "$pin" 87654321 || die "initializing the token failed"
  write_env SIGND_TEST_PKCS11_MODULE="$module" SIGND_TEST_PKCS11_LABEL="$label" SIGND_TEST_PKCS11_PIN="$pin"
  trap - EXIT
  echo "$prog: token $label in slot $slot; source $dir/token.env" >&2
}

down() {
  dir=$(cd "$dir" && pwd)
  local holder=""
  if [ -f "$dir/pids" ]; then
    holder=$(awk '$1 == "lock" { print $2 }' "$dir/pids")
    # Everything but the lock first: the daemons, then the files.
    grep -v '^lock ' "$dir/pids" >"$dir/pids.daemons" || true
    mv "$dir/pids.daemons" "$dir/pids"
    stop_started
  fi
  if [ -f "$dir/moved" ]; then
    rm -rf "$tokdir" "$shm"
    [ ! -e "$tokdir$saved" ] || mv "$tokdir$saved" "$tokdir"
    [ ! -e "$shm$saved" ] || mv "$shm$saved" "$shm"
    rm -f "$dir/moved"
  fi
  rm -f "$dir/token.env" "$dir/lock-holder"
  if [ -n "$holder" ]; then
    echo "lock $holder" >"$dir/pids"
    stop_started
  fi
}

case $cmd in
  up) up ;;
  down) down ;;
  *) echo "$prog: unknown command $cmd (up or down)" >&2; exit 2 ;;
esac
