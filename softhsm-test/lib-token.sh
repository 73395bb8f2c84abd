# lib-token.sh — shared by opencryptoki.sh and tpm2.sh (sourced, not run).
#
# A token's state directory DIR holds:
#   token.env  the SIGND_TEST_PKCS11_* variables (and what the module needs),
#              mode 0600: it holds the throw-away token's user PIN
#   pids       one line per daemon this script started: NAME PID
# Teardown stops exactly the PIDs in DIR/pids, newest first, and nothing
# found by name.

die() { echo "$prog: $*" >&2; exit 1; }

# random_pin N prints N random letters and digits.
random_pin() {
  local pin=""
  while [ ${#pin} -lt "$1" ]; do
    pin+=$(head -c 64 /dev/urandom | tr -dc 'A-Za-z0-9' || true)
  done
  printf '%s' "${pin:0:$1}"
}

# started NAME PID records a daemon this script started.
started() { echo "$1 $2" >>"$dir/pids"; }

# stop_started stops the daemons in DIR/pids, newest first: SIGTERM, then
# SIGKILL after 5 s. A PID whose process is gone is skipped.
stop_started() {
  [ -f "$dir/pids" ] || return 0
  local name pid i
  tac "$dir/pids" | while read -r name pid; do
    kill -0 "$pid" 2>/dev/null || continue
    kill "$pid" 2>/dev/null || true
    for i in $(seq 50); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
      echo "$prog: $name ($pid) ignored SIGTERM; SIGKILL" >&2
      kill -9 "$pid" 2>/dev/null || true
    fi
  done
  rm -f "$dir/pids"
}

# write_env NAME=VALUE... writes DIR/token.env (0600), one export a line.
write_env() {
  local kv
  (umask 077; : >"$dir/token.env")
  for kv in "$@"; do
    printf 'export %s=%q\n' "${kv%%=*}" "${kv#*=}" >>"$dir/token.env"
  done
}

# init_token MODULE SLOT LABEL USER_PIN SO_PIN initializes SLOT of MODULE
# over PKCS#11 (softhsm-test/cmd/init-token): the PINs go through the
# environment of that one process, never a command line.
init_token() {
  local root
  root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
  (cd "$root" && SOFTHSM_USER_PIN=$4 SOFTHSM_SO_PIN=$5 CGO_ENABLED=1 "${GO:-go}" run ./softhsm-test/cmd/init-token -module "$1" ${2:+-slot "$2"} "$3")
}
