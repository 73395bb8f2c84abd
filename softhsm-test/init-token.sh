#!/usr/bin/env bash
# init-token.sh — create a SoftHSM2 token inside a directory of its own.
#
# Usage: softhsm-test/init-token.sh DIR LABEL
#   The user PIN and SO PIN are read from the environment variables
#   SOFTHSM_USER_PIN and SOFTHSM_SO_PIN; no process this script starts gets
#   them on its command line (where every local user could read them).
#
# Writes DIR/softhsm2.conf (file backend, tokendir DIR/tokens) and creates a
# token labelled LABEL in the first free slot. When a token with that label
# already exists in DIR it is reused and nothing is changed (exit 0).
# Prints one line: SOFTHSM2_CONF=<absolute path of the config>.
# Never touches /etc/softhsm or /var/lib/softhsm. Needs Go (the work is done
# by softhsm-test/cmd/init-token over PKCS#11: softhsm2-util --init-token
# only takes PINs on its command line or from a terminal).
set -euo pipefail

usage() {
  sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

[ $# -eq 2 ] || usage
dir=$1
label=$2
[ -n "$label" ] || { echo "init-token.sh: empty token label" >&2; exit 2; }
[ -n "${SOFTHSM_USER_PIN:-}" ] || { echo "init-token.sh: set SOFTHSM_USER_PIN" >&2; exit 2; }
[ -n "${SOFTHSM_SO_PIN:-}" ] || { echo "init-token.sh: set SOFTHSM_SO_PIN" >&2; exit 2; }
go=${GO:-go}
command -v "$go" >/dev/null 2>&1 || {
  echo "init-token.sh: Go not found (https://go.dev/dl/; or set GO)" >&2
  exit 1
}

mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
CGO_ENABLED=1 exec "$go" run ./softhsm-test/cmd/init-token "$dir" "$label"
