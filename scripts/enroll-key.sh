#!/usr/bin/env bash
# enroll-key.sh — enroll a signing key for a user, end to end.
#
# Usage:
#   scripts/enroll-key.sh --user USERNAME --dev-ca DIR [options]
#   scripts/enroll-key.sh --user USERNAME --ca-cert F --ca-key F [--ca-chain F] [options]
#
# Steps: generate a key pair inside the HSM token and a CSR
# (`signd credential create`), have the CSR signed by a CA with openssl,
# import the chain (`signd credential import-cert`), print the credential ID
# as the last line of stdout.
#
# CA (one of):
#   --dev-ca DIR        throwaway development CA in DIR, created when absent
#                       (DIR/ca.key, DIR/ca.pem). Never for production.
#   --ca-cert F --ca-key F
#                       the CA that signs the certificate (PEM); when it is not
#                       a self-signed root add --ca-chain F with the rest of
#                       the chain up to the root (PEM, issuer first).
# Options:
#   --key-type T        rsa-2048 (default), rsa-3072, rsa-4096, ec-p256, ec-p384, ec-p521
#   --algo T            the older name of --key-type (deprecated)
#   --label L           HSM key label (default signd-<credential ID>)
#   --subject DN        certificate subject (default CN=<username>)
#   --days N            certificate validity in days (default 365)
#   --config F          signd config file (passed on to signd)
#   --signd PATH        signd binary (default: bin/signd, else signd on PATH)
#   -h, --help          this text
#
# The CA key passphrase, if any, is asked by openssl on the terminal.
# On a failure after the key exists, the credential is left disabled (never
# enabled without a certificate) and the script says what is left behind.
set -euo pipefail
# shellcheck source=scripts/lib-ca.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib-ca.sh"

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }
die() { echo "enroll-key.sh: $*" >&2; exit 1; }
bad() { echo "enroll-key.sh: $*" >&2; echo "Run with --help for usage." >&2; exit 2; }

user="" devca="" cacert="" cakey="" cachain="" algo="rsa-2048" label="" subject="" days=365 config="" signd=""
while [ $# -gt 0 ]; do
  case $1 in
    --user|--dev-ca|--ca-cert|--ca-key|--ca-chain|--algo|--key-type|--label|--subject|--days|--config|--signd)
      [ $# -ge 2 ] || bad "$1 needs a value"
      case $1 in
        --user) user=$2 ;; --dev-ca) devca=$2 ;; --ca-cert) cacert=$2 ;; --ca-key) cakey=$2 ;;
        --ca-chain) cachain=$2 ;; --algo|--key-type) algo=$2 ;; --label) label=$2 ;; --subject) subject=$2 ;;
        --days) days=$2 ;; --config) config=$2 ;; --signd) signd=$2 ;;
      esac
      shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) bad "unknown argument: $1" ;;
  esac
done

[ -n "$user" ] || bad "--user is required"
if [ -n "$devca" ]; then
  [ -z "$cacert$cakey$cachain" ] || bad "--dev-ca excludes --ca-cert, --ca-key and --ca-chain"
else
  [ -n "$cacert" ] && [ -n "$cakey" ] || bad "give --dev-ca DIR, or both --ca-cert and --ca-key"
  [ -r "$cacert" ] || die "CA certificate $cacert is not readable"
  [ -r "$cakey" ] || die "CA key $cakey is not readable"
  [ -z "$cachain" ] || [ -r "$cachain" ] || die "CA chain $cachain is not readable"
fi
case $days in ''|*[!0-9]*) bad "--days must be a positive number" ;; esac
[ "$days" -ge 1 ] && [ "$days" -le 3650 ] || bad "--days must be between 1 and 3650"
command -v openssl >/dev/null 2>&1 || die "openssl not found (apt-get install openssl)"

if [ -z "$signd" ]; then
  here=$(cd "$(dirname "$0")/.." && pwd)
  if [ -x "$here/bin/signd" ]; then signd=$here/bin/signd; else signd=$(command -v signd || true); fi
fi
[ -n "$signd" ] && [ -x "$signd" ] || die "signd binary not found (run make build, or pass --signd)"
sargs=()
[ -z "$config" ] || sargs+=(--config "$config")

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# 1. CA
if [ -n "$devca" ]; then
  mkdir -p "$devca"
  cacert=$devca/ca.pem cakey=$devca/ca.key
  if [ ! -s "$cacert" ] || [ ! -s "$cakey" ]; then
    echo "enroll-key.sh: creating development CA in $devca" >&2
    (umask 077 && openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:3072 -out "$cakey" 2>/dev/null) ||
      die "creating the development CA key failed"
    openssl req -x509 -new -key "$cakey" -sha256 -days 3650 -out "$cacert" \
      -subj "/O=signd development CA/CN=signd dev root $(date -u +%Y%m%d%H%M%S)" \
      -addext "basicConstraints=critical,CA:TRUE" \
      -addext "keyUsage=critical,keyCertSign,cRLSign" \
      -addext "subjectKeyIdentifier=hash" >/dev/null 2>&1 || die "creating the development CA certificate failed"
  fi
fi

# 2. Key pair and CSR in the HSM.
cargs=(credential create --user "$user" --key-type "$algo" --csr-out "$work/csr.pem")
[ -z "$label" ] || cargs+=(--label "$label")
[ -z "$subject" ] || cargs+=(--subject "$subject")
out=$("$signd" "${sargs[@]}" "${cargs[@]}") || die "signd credential create failed; nothing was enrolled"
id=$(printf '%s\n' "$out" | tail -n 1)
[ -n "$id" ] || die "signd credential create printed no credential ID"

fail() {
  echo "enroll-key.sh: $*" >&2
  if "$signd" "${sargs[@]}" credential disable "$id" >/dev/null 2>&1; then
    echo "enroll-key.sh: credential $id is left DISABLED, without a certificate; its key pair stays in the token (see: signd credential show $id)" >&2
  else
    echo "enroll-key.sh: credential $id is left PENDING (not usable for signing), without a certificate; disable it with: signd credential disable $id" >&2
  fi
  exit 1
}

# 3. Certificate from the CA.
ca_sign "$work" "$cacert" "$cakey" "$days" || case $? in
  1) fail "the CSR made by the HSM key does not verify" ;;
  *) fail "the CA did not sign the CSR: $(tail -n 1 "$work/openssl.err")" ;;
esac

# 4. Chain: leaf, CA, rest of the chain.
cat "$work/leaf.pem" "$cacert" >"$work/chain.pem"
[ -z "$cachain" ] || cat "$cachain" >>"$work/chain.pem"
"$signd" "${sargs[@]}" credential import-cert "$id" --chain "$work/chain.pem" >/dev/null ||
  fail "importing the certificate chain failed"

echo "enroll-key.sh: credential $id enrolled for $user and enabled" >&2
echo "$id"
