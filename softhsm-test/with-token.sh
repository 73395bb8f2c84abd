#!/usr/bin/env bash
# with-token.sh — run a command with a token brought up for it.
#
# Usage: softhsm-test/with-token.sh opencryptoki|tpm2 COMMAND [ARG...]
#
# Brings the token up in a fresh temporary directory (opencryptoki.sh or
# tpm2.sh up), runs COMMAND with its variables in the environment
# (SIGND_TEST_PKCS11_MODULE, _LABEL, _PIN and what the module needs), tears
# it down whatever COMMAND did, and exits with COMMAND's status. Every run
# gets a fresh token: the tests leave keys behind on a token that outlives
# them, and a second run on it would find their labels taken.
set -euo pipefail
[ $# -ge 2 ] || { sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
kind=$1
shift
here=$(cd "$(dirname "$0")" && pwd)
case $kind in
  opencryptoki | tpm2) ;;
  *) echo "with-token.sh: unknown token $kind (opencryptoki or tpm2)" >&2; exit 2 ;;
esac
dir=$(mktemp -d "${TMPDIR:-/tmp}/signd-$kind-XXXXXX")
trap '"$here/$kind.sh" down "$dir"; rm -rf "$dir"' EXIT
"$here/$kind.sh" up "$dir"
set +e
(
  # shellcheck disable=SC1091
  . "$dir/token.env"
  "$@"
)
status=$?
set -e
exit $status
