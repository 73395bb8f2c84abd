#!/usr/bin/env bash
# demo.sh — `make demo`: a working signd on this machine in one command.
#
# Installs SoftHSM2 and OpenSSL when missing (scripts/install-deps.sh: apt-get,
# root or sudo), builds
# bin/signd, creates under ./var a SoftHSM2 token, a config, a demo user, a
# demo OAuth client and a signing credential enrolled with a development CA,
# then starts the daemon in the foreground on 127.0.0.1:8443 (metrics on
# 127.0.0.1:9464), or on free ports it prints when another program holds
# those. Running it again reuses all of it.
# Everything lives in ./var; `rm -rf var` starts over.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
var=$root/var
bin=$root/bin/signd

# shellcheck source=scripts/lib-demo.sh
. scripts/lib-demo.sh

# 1. Packages and 2. build.
demo_build

# The ports: the defaults unless another program listens there (a second
# demo, another signd, a Prometheus exporter on 9464).
demo_ports 8443 9464
listen=127.0.0.1:${ports[0]}
metrics=127.0.0.1:${ports[1]}
base=http://$listen

# 3. Token and PINs (generated once, kept in ./var, mode 0600).
demo_token "$var"

# 4. Config.
cfg=$var/signd.yaml
if [ ! -s "$cfg" ]; then
  {
    cat <<YAML
# signd demo configuration (made by make demo). See docs/CONFIG.md for every key.
server:
  listen: 127.0.0.1:8443
  base_url: http://127.0.0.1:8443
  admin_socket: $var/signd.sock
  metrics_listen: 127.0.0.1:9464
store:
  path: $var/signd.db
YAML
    demo_yaml_token "$var"
  } >"$cfg"
fi
# The config keeps the default ports; ports that moved are set through the
# environment (SIGND_<KEY> overrides the file), for this run only.
env_ports=
if [ "$listen" != 127.0.0.1:8443 ] || [ "$metrics" != 127.0.0.1:9464 ]; then
  export SIGND_SERVER_LISTEN=$listen SIGND_SERVER_BASE_URL=$base SIGND_SERVER_METRICS_LISTEN=$metrics
  env_ports="SIGND_SERVER_LISTEN=$listen SIGND_SERVER_BASE_URL=$base SIGND_SERVER_METRICS_LISTEN=$metrics "
fi

# 5.–8. Demo user, client, credential and time-stamping key.
demo_enroll "$var" "$cfg"

cat >&2 <<INFO

signd demo is set up (everything under ./var; rm -rf var to start over).

INFO
demo_usage "$var" "$base" "$cred"
cat >&2 <<INFO

To start signd yourself later (the token's config must be in the environment):
  export SOFTHSM2_CONF=$SOFTHSM2_CONF
  ${env_ports}bin/signd --config var/signd.yaml serve

Sign a PDF through signd (PDF signature with a signature time-stamp from
signd's TSA; the tool prints two URLs to open in a browser, log in as demo,
and enter the signing PIN on the second):
  bin/signd-pdf --url $base --client-id demo-client \\
    --client-secret-file var/demo-client.secret --redirect-uri http://127.0.0.1:9000/callback \\
    --credential $cred --in var/demo.pdf --out var/demo-signed.pdf --name "Demo User" --reason "I agree"
  pdfsig var/demo-signed.pdf   # trusts the signature once var/dev-ca/ca.pem is in an NSS database (-nssdir)

The admin CLI talks to the running daemon over var/signd.sock:
  bin/signd --config var/signd.yaml credential show $cred
  bin/signd --config var/signd.yaml audit verify

Prometheus metrics: http://$metrics/metrics

Starting signd in the foreground on $base (Ctrl-C stops it).
INFO
exec "$bin" --config "$cfg" serve
