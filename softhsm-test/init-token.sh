#!/usr/bin/env bash
# init-token.sh — create a SoftHSM2 token inside a directory of its own.
#
# Usage: softhsm-test/init-token.sh DIR LABEL
#   The user PIN and SO PIN are read from the environment variables
#   SOFTHSM_USER_PIN and SOFTHSM_SO_PIN (never from argv of this script).
#
# Writes DIR/softhsm2.conf (file backend, tokendir DIR/tokens) and creates a
# token labelled LABEL in the first free slot. When a token with that label
# already exists in DIR it is reused and nothing is changed (exit 0).
# Prints one line: SOFTHSM2_CONF=<absolute path of the config>.
# Never touches /etc/softhsm or /var/lib/softhsm.
set -euo pipefail

usage() {
  sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

[ $# -eq 2 ] || usage
dir=$1
label=$2
[ -n "$label" ] || { echo "init-token.sh: empty token label" >&2; exit 2; }
: "${SOFTHSM_USER_PIN:?init-token.sh: set SOFTHSM_USER_PIN}"
: "${SOFTHSM_SO_PIN:?init-token.sh: set SOFTHSM_SO_PIN}"
command -v softhsm2-util >/dev/null 2>&1 || {
  echo "init-token.sh: softhsm2-util not found (apt-get install softhsm2)" >&2
  exit 1
}

here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$dir/tokens"
dir=$(cd "$dir" && pwd)
chmod 0700 "$dir/tokens"
conf="$dir/softhsm2.conf"
sed "s|@TOKENDIR@|$dir/tokens|" "$here/softhsm2.conf.tmpl" >"$conf"
chmod 0600 "$conf"
export SOFTHSM2_CONF=$conf

if softhsm2-util --show-slots 2>/dev/null | grep -Eq "^[[:space:]]*Label:[[:space:]]+$label[[:space:]]*$"; then
  echo "SOFTHSM2_CONF=$conf"
  exit 0
fi

softhsm2-util --init-token --free --label "$label" \
  --pin "$SOFTHSM_USER_PIN" --so-pin "$SOFTHSM_SO_PIN" >/dev/null
echo "SOFTHSM2_CONF=$conf"
