# lib-bench.sh — sourced by scripts/bench-signhash.sh and scripts/bench-token.sh:
# the fresh SoftHSM2 token and the daemon configuration both benchmarks run on.

# bench_config WORK LISTEN BASE_URL METRICS_LISTEN LOG_LEVEL [YAML]
# Creates the SoftHSM2 token signd-bench with random PINs in WORK/softhsm
# (SOFTHSM2_CONF exported, the user PIN in WORK/pkcs11.pin, 0600) and writes
# the daemon's configuration for it to WORK/signd.yaml: the server on LISTEN
# with BASE_URL, the metrics listener on METRICS_LISTEN ('""' = none), the
# store and admin socket in WORK, JSON logs at LOG_LEVEL; YAML (top-level
# sections) is appended as is. Sets cfg to the file's path.
bench_config() {
  local work=$1 listen=$2 base_url=$3 metrics=$4 level=$5 extra=${6:-} pin conf_line
  umask 077
  pin=$(openssl rand -hex 8)
  conf_line=$(SOFTHSM_USER_PIN=$pin SOFTHSM_SO_PIN=$(openssl rand -hex 8) softhsm-test/init-token.sh "$work/softhsm" signd-bench)
  export "${conf_line?}"
  printf '%s\n' "$pin" >"$work/pkcs11.pin"
  cfg=$work/signd.yaml
  cat >"$cfg" <<YAML
server:
  listen: $listen
  base_url: $base_url
  admin_socket: $work/signd.sock
  metrics_listen: $metrics
store:
  path: $work/signd.db
pkcs11:
  module: ${SIGND_TEST_PKCS11_MODULE:-/usr/lib/softhsm/libsofthsm2.so}
  token_label: signd-bench
  pin_file: $work/pkcs11.pin
log:
  level: $level
  format: json
oidc:
  pairwise_salt_file: $work/pairwise.salt
${extra}
YAML
}

# bench_signer WORK: the user bench (password in WORK/password), the client
# bench-client and an RSA-2048 credential enrolled with a development CA in
# WORK/ca, on the configuration bench_config wrote. Sets cred to the
# credential's ID.
bench_signer() {
  local work=$1
  openssl rand -hex 16 >"$work/password"
  bin/signd --config "$cfg" user add bench --password-file "$work/password" >/dev/null
  bin/signd --config "$cfg" client add bench-client --redirect-uri https://bench.invalid/cb >/dev/null 2>&1
  cred=$(scripts/enroll-key.sh --config "$cfg" --signd bin/signd --user bench --dev-ca "$work/ca" 2>/dev/null | tail -n 1)
}

# bench_start BIN LOG: starts `BIN --config $cfg serve` with its log in LOG
# and waits until it says it is ready (log level info). Sets daemon to its
# PID and addr to the address it listens on; exits with the log when it
# does not start.
bench_start() {
  local bin=$1 log=$2
  "$bin" --config "$cfg" serve 2>"$log" &
  daemon=$!
  addr=""
  for _ in $(seq 1 100); do
    addr=$(sed -n 's/.*"msg":"signd ready".*"listen":"\([^"]*\)".*/\1/p' "$log" | head -n 1)
    [ -n "$addr" ] && return 0
    kill -0 "$daemon" 2>/dev/null || { cat "$log" >&2; exit 1; }
    sleep 0.1
  done
  echo "signd did not start" >&2
  cat "$log" >&2
  exit 1
}
