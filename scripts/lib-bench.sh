# lib-bench.sh — sourced by scripts/bench-signhash.sh, bench-token.sh, bench-rss.sh
# and bench-ha.sh:
# the fresh SoftHSM2 token and the daemon configurations the benchmarks run on.

# The benchmarks measure throughput from one client and one address (each
# code is minted through the login form, every exchange is rp's): the rate
# limits (ratelimit.*, docs/CONFIG.md, "Lockouts and rate limits") are off for every daemon they
# start. A binary older than the limits (SIGND_BASE_BIN) ignores the
# variables.
export SIGND_RATELIMIT_TIMESTAMP_RATE=0 SIGND_RATELIMIT_AUTH_LOGIN_RATE=0 \
  SIGND_RATELIMIT_TOKEN_RATE=0 SIGND_RATELIMIT_FORMS_RATE=0

# bench_config WORK LISTEN BASE_URL METRICS_LISTEN LOG_LEVEL [YAML]
# Creates the SoftHSM2 token signd-bench with random PINs in WORK/softhsm
# (bench_token) and writes the daemon's configuration for it to
# WORK/signd.yaml (bench_yaml) with the store WORK/signd.db. Sets cfg to the
# file's path.
bench_config() {
  local work=$1
  bench_token "$work"
  cfg=$work/signd.yaml
  bench_yaml "$cfg" "$work" "$2" "$3" "$4" "$5" "store:
  path: $work/signd.db" "${6:-}"
}

# bench_token WORK: the SoftHSM2 token signd-bench with random PINs in
# WORK/softhsm (SOFTHSM2_CONF exported, the user PIN in WORK/pkcs11.pin,
# 0600). With SIGND_TEST_PKCS11_LABEL set (softhsm-test/opencryptoki.sh or
# tpm2.sh wrote it, with SIGND_TEST_PKCS11_MODULE and _PIN), that existing
# token instead: its PIN goes to WORK/pkcs11.pin. Sets bench_label.
bench_token() {
  local work=$1 pin conf_line
  umask 077
  if [ -n "${SIGND_TEST_PKCS11_LABEL:-}" ]; then
    bench_label=$SIGND_TEST_PKCS11_LABEL
    printf '%s\n' "${SIGND_TEST_PKCS11_PIN:?SIGND_TEST_PKCS11_LABEL needs SIGND_TEST_PKCS11_PIN}" >"$work/pkcs11.pin"
    return
  fi
  bench_label=signd-bench
  pin=$(openssl rand -hex 8)
  conf_line=$(SOFTHSM_USER_PIN=$pin SOFTHSM_SO_PIN=$(openssl rand -hex 8) softhsm-test/init-token.sh "$work/softhsm" signd-bench)
  export "${conf_line?}"
  printf '%s\n' "$pin" >"$work/pkcs11.pin"
}

# bench_yaml FILE WORK LISTEN BASE_URL METRICS_LISTEN LOG_LEVEL STORE [YAML]
# writes a daemon configuration to FILE for the token of bench_token WORK:
# the server on LISTEN with BASE_URL, the metrics listener on
# METRICS_LISTEN ('""' = none), the admin socket FILE's name with .sock,
# JSON logs at LOG_LEVEL, the pairwise salt in WORK; STORE (the store:
# section) and YAML (top-level sections) are written as they are.
bench_yaml() {
  local file=$1 work=$2 listen=$3 base_url=$4 metrics=$5 level=$6 store=$7 extra=${8:-}
  cat >"$file" <<YAML
server:
  listen: $listen
  base_url: $base_url
  admin_socket: ${file%.yaml}.sock
  metrics_listen: $metrics
${store}
pkcs11:
  module: ${SIGND_TEST_PKCS11_MODULE:-/usr/lib/softhsm/libsofthsm2.so}
  token_label: ${bench_label:-signd-bench}
  pin_file: $work/pkcs11.pin
log:
  level: $level
  format: json
oidc:
  pairwise_salt_file: $work/pairwise.salt
${extra}
YAML
}

# bench_signhash_setup WORK: what a signHash benchmark on one daemon runs
# on: bin/signd and bin/signd-load built, the token and configuration of
# bench_config on 127.0.0.1 (any port, log level info) and bench_signer's
# user, client and credential.
bench_signhash_setup() {
  CGO_ENABLED=1 go build -o bin/signd ./cmd/signd
  CGO_ENABLED=1 go build -o bin/signd-load ./cmd/signd-load
  bench_config "$1" 127.0.0.1:0 http://127.0.0.1:8443 127.0.0.1:9464 info
  bench_signer "$1"
}

# bench_signer WORK [FLAG...]: the user bench (password in WORK/password;
# FLAGs go to `signd user add`), the client bench-client and an RSA-2048
# credential enrolled with a development CA in WORK/ca, on the
# configuration $cfg. Sets cred to the credential's ID.
bench_signer() {
  local work=$1
  shift
  openssl rand -hex 16 >"$work/password"
  bin/signd --config "$cfg" user add bench --password-file "$work/password" "$@" >/dev/null
  bin/signd --config "$cfg" client add bench-client --redirect-uri https://bench.invalid/cb >/dev/null 2>&1
  cred=$(scripts/enroll-key.sh --config "$cfg" --signd bin/signd --user bench --dev-ca "$work/ca" 2>/dev/null | tail -n 1)
}

# bench_start BIN LOG [FLAG...]: starts `BIN --config $cfg serve FLAG...` with its log in LOG
# and waits until it says it is ready (log level info). Sets daemon to its
# PID and addr to the address it listens on; exits with the log when it
# does not start.
bench_start() {
  local bin=$1 log=$2
  : >"$log" # before the daemon's shell opens it: the wait below reads it at once
  "$bin" --config "$cfg" serve "${@:3}" 2>"$log" &
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
