#!/usr/bin/env bash
# demo.sh — `make demo`: a working signd on this machine in one command.
#
# Installs SoftHSM2 and OpenSSL when missing (scripts/install-deps.sh: apt-get,
# root or sudo), builds
# bin/signd, creates under ./var a SoftHSM2 token, a config, a demo user, a
# demo OAuth client and a signing credential enrolled with a development CA,
# then starts the daemon in the foreground. Running it again reuses all of it.
# Everything lives in ./var; `rm -rf var` starts over.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
var=$root/var
bin=$root/bin/signd

say() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }
randsecret() { openssl rand -base64 "$1" | tr -d '/+=\n' | cut -c1-"$2"; }

# 1. Packages (the same script `make test` and CI use).
bash scripts/install-deps.sh --no-browser
command -v go >/dev/null 2>&1 || { echo "demo.sh: Go is not installed (https://go.dev/dl/)" >&2; exit 1; }

# 2. Build.
say "building bin/signd and bin/signd-pdf"
make -s build
go build -o "$root/bin/signd-pdf" ./cmd/signd-pdf

# 3. Token and PINs (generated once, kept in ./var, mode 0600).
mkdir -p "$var"
chmod 0700 "$var"
umask 077
[ -s "$var/pkcs11.pin" ] || randsecret 24 16 >"$var/pkcs11.pin"
[ -s "$var/pkcs11-so.pin" ] || randsecret 24 16 >"$var/pkcs11-so.pin"
say "SoftHSM2 token 'signd' in var/softhsm"
conf_line=$(SOFTHSM_USER_PIN=$(cat "$var/pkcs11.pin") SOFTHSM_SO_PIN=$(cat "$var/pkcs11-so.pin") \
  softhsm-test/init-token.sh "$var/softhsm" signd)
export "${conf_line?}"

# 4. Config.
cfg=$var/signd.yaml
if [ ! -s "$cfg" ]; then
  cat >"$cfg" <<YAML
# signd demo configuration (made by make demo). See README for every key.
server:
  listen: 127.0.0.1:8443
  base_url: http://127.0.0.1:8443
  admin_socket: $var/signd.sock
store:
  path: $var/signd.db
pkcs11:
  module: /usr/lib/softhsm/libsofthsm2.so
  token_label: signd
  pin_file: $var/pkcs11.pin
log:
  format: text
csc:
  timestamp:
    enabled: true
    policy: 1.3.6.1.4.1.99999.1.1
YAML
fi
signd() { "$bin" --config "$cfg" "$@"; }

# 5. Demo user.
[ -s "$var/demo-password" ] || randsecret 24 16 >"$var/demo-password"
[ -s "$var/demo-pin" ] || printf '%06d\n' $(( $(od -An -N4 -tu4 /dev/urandom) % 1000000 )) >"$var/demo-pin"
if ! signd user show demo >/dev/null 2>&1; then
  say "creating user demo"
  signd user add demo --password-file "$var/demo-password" --pin-file "$var/demo-pin" \
    --email demo@example.test --email-verified >/dev/null
fi

# 6. Demo client.
if ! signd client show demo-client >/dev/null 2>&1; then
  say "registering client demo-client"
  [ -s "$var/demo-client.secret" ] || randsecret 64 43 >"$var/demo-client.secret"
  signd client add demo-client --name "signd demo client" \
    --redirect-uri http://127.0.0.1:9000/callback --secret-file "$var/demo-client.secret" \
    --scope service --scope credential --scope openid --scope email >/dev/null
fi

# 7. Credential.
cred=$(signd credential list --user demo 2>/dev/null | awk '$3 == "enabled" {print $1; exit}')
if [ -z "$cred" ]; then
  say "enrolling a signing key for demo (development CA in var/dev-ca)"
  cred=$(scripts/enroll-key.sh --config "$cfg" --signd "$bin" --user demo --dev-ca "$var/dev-ca" \
    --subject "CN=Demo User,O=signd demo,C=NL" | tail -n 1)
fi

# 8. Time-stamping key (signatures/timestamp), certified by the same
# development CA with the critical id-kp-timeStamping RFC 3161 asks for.
if [ ! -s "$var/tsa.pem" ]; then
  say "enrolling the time-stamping key (development CA in var/dev-ca)"
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

cat >&2 <<INFO

signd demo is set up (everything under ./var; rm -rf var to start over).

  user           demo
  password       $(cat "$var/demo-password")
  signing PIN    $(cat "$var/demo-pin")
  client_id      demo-client
  client_secret  $(cat "$var/demo-client.secret")
  redirect_uri   http://127.0.0.1:9000/callback
  credential     $cred

Try, in another terminal:
  curl -s http://127.0.0.1:8443/readyz
  curl -s -X POST -H 'Content-Type: application/json' -d '{}' http://127.0.0.1:8443/csc/v1/info
  curl -s http://127.0.0.1:8443/.well-known/openid-configuration

A CSC service flow: open this in a browser and log in as demo (nothing
listens on :9000, so copy the code from the address bar after the redirect):
  http://127.0.0.1:8443/oauth2/authorize?response_type=code&client_id=demo-client&redirect_uri=http%3A%2F%2F127.0.0.1%3A9000%2Fcallback&scope=service&state=demo&ui_locales=en
then
  curl -s -u demo-client:$(cat "$var/demo-client.secret") -d grant_type=authorization_code \\
    -d redirect_uri=http://127.0.0.1:9000/callback -d code=CODE http://127.0.0.1:8443/oauth2/token
  curl -s -X POST -H "Authorization: Bearer ACCESS_TOKEN" -H 'Content-Type: application/json' \\
    -d '{}' http://127.0.0.1:8443/csc/v1/credentials/list

To start signd yourself later (the token's config must be in the environment):
  export SOFTHSM2_CONF=$SOFTHSM2_CONF
  bin/signd --config var/signd.yaml serve

Sign a PDF through signd (PDF signature with a signature time-stamp from
signd's TSA; the tool prints two URLs to open in a browser, log in as demo,
and enter the signing PIN on the second):
  bin/signd-pdf --url http://127.0.0.1:8443 --client-id demo-client \\
    --client-secret-file var/demo-client.secret --redirect-uri http://127.0.0.1:9000/callback \\
    --credential $cred --in var/demo.pdf --out var/demo-signed.pdf --name "Demo User" --reason "I agree"
  pdfsig var/demo-signed.pdf   # trusts the signature once var/dev-ca/ca.pem is in an NSS database (-nssdir)

The admin CLI talks to the running daemon over var/signd.sock:
  bin/signd --config var/signd.yaml credential show $cred
  bin/signd --config var/signd.yaml audit verify

Starting signd in the foreground (Ctrl-C stops it).
INFO
exec "$bin" --config "$cfg" serve
