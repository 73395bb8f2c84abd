# lib-demo.sh — sourced by scripts/demo.sh (`make demo`, one node) and
# scripts/demo-ha.sh (`make demo-ha`, three nodes on etcd): the packages, the
# build, the SoftHSM2 token and the demo's user, client and keys. The caller
# sets root (the repository) and bin (its bin/signd) and runs `set -euo
# pipefail`.

say() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }
randsecret() { openssl rand -base64 "$1" | tr -d '/+=\n' | cut -c1-"$2"; }

# demo_build: the packages (the same script `make test` and CI use), then
# bin/signd, bin/signd-pdf and bin/signd-cluster (whose path it sets in
# cluster).
demo_build() {
  bash scripts/install-deps.sh --no-browser
  command -v go >/dev/null 2>&1 || { echo "${0##*/}: Go is not installed (https://go.dev/dl/)" >&2; exit 1; }
  say "building bin/signd, bin/signd-pdf and bin/signd-cluster"
  make -s build
  go build -o "$root/bin/signd-pdf" ./cmd/signd-pdf
  go build -o "$root/bin/signd-cluster" ./cmd/signd-cluster
  cluster=$root/bin/signd-cluster
}

# demo_ports DEFAULT...: sets the array ports to one port per DEFAULT, in
# order: DEFAULT itself when 127.0.0.1:DEFAULT can be listened on, else a
# free one the kernel chooses (bin/signd-cluster pick; no two the same), and
# says on stderr which defaults were taken. The ports are free when picked;
# another program could still take one before signd listens on it.
demo_ports() {
  local out i=0 p
  out=$("$cluster" pick "$@")
  mapfile -t ports <<<"$out"
  for p in "$@"; do
    [ "${ports[$i]}" = "$p" ] || say "127.0.0.1:$p is taken; using 127.0.0.1:${ports[$i]} instead"
    i=$((i + 1))
  done
}

# demo_token VAR: the PINs (generated once, kept in VAR, mode 0600) and the
# SoftHSM2 token 'signd' in VAR/softhsm; exports SOFTHSM2_CONF. Leaves the
# umask at 077.
demo_token() {
  local var=$1 conf_line
  mkdir -p "$var"
  chmod 0700 "$var"
  umask 077
  [ -s "$var/pkcs11.pin" ] || randsecret 24 16 >"$var/pkcs11.pin"
  [ -s "$var/pkcs11-so.pin" ] || randsecret 24 16 >"$var/pkcs11-so.pin"
  say "SoftHSM2 token 'signd' in ${var#"$root"/}/softhsm"
  conf_line=$(SOFTHSM_USER_PIN=$(cat "$var/pkcs11.pin") SOFTHSM_SO_PIN=$(cat "$var/pkcs11-so.pin") \
    softhsm-test/init-token.sh "$var/softhsm" signd)
  export "${conf_line?}"
}

# demo_yaml_token VAR: the configuration's part every demo node shares,
# YAML on standard output: the token demo_token made, text logs, and the
# time-stamping method (its key is demo_enroll's).
demo_yaml_token() {
  cat <<YAML
pkcs11:
  module: /usr/lib/softhsm/libsofthsm2.so
  token_label: signd
  pin_file: $1/pkcs11.pin
log:
  format: text
csc:
  timestamp:
    enabled: true
    policy: 1.3.6.1.4.1.99999.1.1
YAML
}

# demo_enroll VAR CFG: once, with `bin/signd --config CFG`: the user demo,
# the client demo-client, an enabled signing credential and the
# time-stamping key, both certified by a development CA in VAR/dev-ca;
# secrets in VAR. Sets cred to the credential's ID.
demo_enroll() {
  local var=$1 cfg=$2 tsa_csr tsa_key
  signd() { "$bin" --config "$cfg" "$@"; }

  # The user.
  [ -s "$var/demo-password" ] || randsecret 24 16 >"$var/demo-password"
  [ -s "$var/demo-pin" ] || printf '%06d\n' $(( $(od -An -N4 -tu4 /dev/urandom) % 1000000 )) >"$var/demo-pin"
  if ! signd user show demo >/dev/null 2>&1; then
    say "creating user demo"
    signd user add demo --password-file "$var/demo-password" --pin-file "$var/demo-pin" \
      --email demo@example.test --email-verified >/dev/null
  fi

  # The client.
  if ! signd client show demo-client >/dev/null 2>&1; then
    say "registering client demo-client"
    [ -s "$var/demo-client.secret" ] || randsecret 64 43 >"$var/demo-client.secret"
    signd client add demo-client --name "signd demo client" \
      --redirect-uri http://127.0.0.1:9000/callback --secret-file "$var/demo-client.secret" \
      --scope service --scope credential --scope openid --scope email >/dev/null
  fi

  # The credential.
  cred=$(signd credential list --user demo 2>/dev/null | awk '$3 == "enabled" {print $1; exit}')
  if [ -z "$cred" ]; then
    say "enrolling a signing key for demo (development CA in ${var#"$root"/}/dev-ca)"
    cred=$(scripts/enroll-key.sh --config "$cfg" --signd "$bin" --user demo --dev-ca "$var/dev-ca" \
      --subject "CN=Demo User,O=signd demo,C=NL" | tail -n 1)
  fi

  # The time-stamping key (signatures/timestamp), certified by the same
  # development CA with the critical id-kp-timeStamping RFC 3161 asks for.
  if [ ! -s "$var/tsa.pem" ]; then
    say "enrolling the time-stamping key (development CA in ${var#"$root"/}/dev-ca)"
    tsa_csr=$(signd tsa enroll --subject "CN=signd demo TSA,O=signd demo,C=NL" --csr-out -)
    tsa_key=$(printf '%s\n' "$tsa_csr" | tail -n 1)
    printf '%s\n' "$tsa_csr" | sed -n '/BEGIN CERTIFICATE REQUEST/,/END CERTIFICATE REQUEST/p' >"$var/tsa.csr"
    printf 'basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=critical,timeStamping\n' >"$var/tsa-ext.cnf"
    openssl x509 -req -in "$var/tsa.csr" -CA "$var/dev-ca/ca.pem" -CAkey "$var/dev-ca/ca.key" -sha256 -days 365 \
      -set_serial "0x$(openssl rand -hex 16)" -extfile "$var/tsa-ext.cnf" -out "$var/tsa.pem.tmp" 2>/dev/null
    signd tsa import-cert --key-id "$tsa_key" --cert "$var/tsa.pem.tmp" >/dev/null
    mv "$var/tsa.pem.tmp" "$var/tsa.pem"
    rm -f "$var/tsa.csr" "$var/tsa-ext.cnf"
  fi
  [ -s "$var/demo.pdf" ] || cp cmd/signd/testdata/contract.pdf "$var/demo.pdf"
}

# demo_usage VAR BASE_URL CRED: the demo's secrets and a CSC service flow
# against BASE_URL, on stderr.
demo_usage() {
  local var=$1 base=$2 cred=$3 secret
  secret=$(cat "$var/demo-client.secret")
  cat >&2 <<INFO
  user           demo
  password       $(cat "$var/demo-password")
  signing PIN    $(cat "$var/demo-pin")
  client_id      demo-client
  client_secret  $secret
  redirect_uri   http://127.0.0.1:9000/callback
  credential     $cred

Try, in another terminal:
  curl -s $base/readyz
  curl -s -X POST -H 'Content-Type: application/json' -d '{}' $base/csc/v1/info
  curl -s $base/.well-known/openid-configuration

A CSC service flow: open this in a browser and log in as demo (nothing
listens on :9000, so copy the code from the address bar after the redirect):
  $base/oauth2/authorize?response_type=code&client_id=demo-client&redirect_uri=http%3A%2F%2F127.0.0.1%3A9000%2Fcallback&scope=service&state=demo&ui_locales=en
then
  curl -s -u demo-client:$secret -d grant_type=authorization_code \\
    -d redirect_uri=http://127.0.0.1:9000/callback -d code=CODE $base/oauth2/token
  curl -s -X POST -H "Authorization: Bearer ACCESS_TOKEN" -H 'Content-Type: application/json' \\
    -d '{}' $base/csc/v1/credentials/list
INFO
}
