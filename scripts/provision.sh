#!/usr/bin/env bash
# provision.sh — onboard a signer through signd's provisioning API: user,
# signing PIN, key, CSR, certificate, chain; no shell on the signd box.
#
# Usage:
#   scripts/provision.sh --api URL --cert F --key F --cacert F \
#       --user USERNAME --password-file F --pin-file F \
#       --ca-cert F --ca-key F [options]
#
# Steps, each one request to the API (docs/API.md, "Provisioning API"):
# POST /users (the password), PUT /users/NAME/pin, POST /credentials (a
# key pair in the HSM; the answer holds the CSR), the CSR signed by the CA
# with openssl (stands in for the TSP's CA), POST /credentials/ID/chain.
# Prints the credential ID as the last line of stdout.
#
#   --api URL           https://host:port of admin.api_listen
#   --cert F --key F    this onboarding system's client certificate and key
#                       (PEM), of admin.api_client_ca, holding the
#                       administrator and security_officer roles
#   --cacert F          the CA of the API's server certificate (PEM)
#   --user NAME         the new user
#   --password-file F   the user's password (first line); - = stdin
#   --pin-file F        the user's signing PIN (first line)
#   --email ADDR        the user's e-mail address
#   --subject DN        certificate subject (default CN=<username>)
#   --key-type T        rsa-2048 (default), rsa-3072, rsa-4096, ec-p256, ec-p384, ec-p521
#   --ca-cert F --ca-key F
#                       the CA that signs the certificate (PEM)
#   --days N            certificate validity in days (default 365)
#   -h, --help          this text
#
# Secrets go to curl on its standard input, never on a command line (ps).
# Needs curl, jq and openssl. A refusal prints the API's {"kind","message"}.
set -euo pipefail
# shellcheck source=scripts/lib-ca.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib-ca.sh"

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }
die() { echo "provision.sh: $*" >&2; exit 1; }
bad() { echo "provision.sh: $*" >&2; echo "Run with --help for usage." >&2; exit 2; }

api="" cert="" key="" cacert="" user="" pwfile="" pinfile="" email="" subject="" algo="rsa-2048" cacrt="" cakey="" days=365
while [ $# -gt 0 ]; do
  case $1 in
    --api|--cert|--key|--cacert|--user|--password-file|--pin-file|--email|--subject|--key-type|--ca-cert|--ca-key|--days)
      [ $# -ge 2 ] || bad "$1 needs a value"
      case $1 in
        --api) api=$2 ;; --cert) cert=$2 ;; --key) key=$2 ;; --cacert) cacert=$2 ;; --user) user=$2 ;;
        --password-file) pwfile=$2 ;; --pin-file) pinfile=$2 ;; --email) email=$2 ;; --subject) subject=$2 ;;
        --key-type) algo=$2 ;; --ca-cert) cacrt=$2 ;; --ca-key) cakey=$2 ;; --days) days=$2 ;;
      esac
      shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) bad "unknown argument: $1" ;;
  esac
done
for v in api cert key cacert user pwfile pinfile cacrt cakey; do
  [ -n "${!v}" ] || bad "missing --$(echo "$v" | sed 's/pwfile/password-file/; s/pinfile/pin-file/; s/cacrt/ca-cert/; s/cakey/ca-key/')"
done
case $api in https://*) ;; *) bad "--api must be an https:// URL" ;; esac
case $days in ''|*[!0-9]*) bad "--days must be a positive number" ;; esac
for f in "$cert" "$key" "$cacert" "$pinfile" "$cacrt" "$cakey"; do [ -r "$f" ] || die "$f is not readable"; done
[ "$pwfile" = - ] || [ -r "$pwfile" ] || die "$pwfile is not readable"
for c in curl jq openssl; do command -v $c >/dev/null 2>&1 || die "$c not found"; done
[ -n "$subject" ] || subject="CN=$user"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(umask 077 && head -n 1 -- "$( [ "$pwfile" = - ] && echo /dev/stdin || echo "$pwfile")" >"$work/password" && head -n 1 -- "$pinfile" >"$work/pin")

# call METHOD PATH: the JSON body on stdin (none for an empty stdin), the
# answer on stdout; an error answer is printed and ends the script.
call() {
  local status
  status=$(curl -sS --tlsv1.2 --cacert "$cacert" --cert "$cert" --key "$key" -X "$1" \
    -H 'Content-Type: application/json' --data-binary @- -o "$work/answer" -w '%{http_code}' "${api%/}/admin/api/v1$2") ||
    die "$1 $2: the API could not be reached, or refused this client's certificate"
  if [ "$status" != 200 ]; then
    die "$1 $2: $status $(jq -r '"\(.kind): \(.message)"' "$work/answer" 2>/dev/null || cat "$work/answer")"
  fi
  cat "$work/answer"
}

# 1. The user with the password, 2. the signing PIN.
jq -n --arg u "$user" --rawfile p "$work/password" --arg e "$email" \
  '{username: $u, password: ($p | rtrimstr("\n"))} + (if $e != "" then {email: $e} else {} end)' | call POST /users >/dev/null
jq -n --rawfile p "$work/pin" '{secret: ($p | rtrimstr("\n"))}' | call PUT "/users/$user/pin" >/dev/null

# 3. The key pair in the HSM and its CSR.
jq -n --arg u "$user" --arg s "$subject" --arg a "$algo" '{user: $u, subject: $s, algo: $a}' |
  call POST /credentials >"$work/credential.json"
id=$(jq -r .credential.id "$work/credential.json")
jq -r .csr_pem "$work/credential.json" >"$work/csr.pem"

# 4. The certificate (here openssl; a TSP sends the CSR to its CA).
ca_sign "$work" "$cacrt" "$cakey" "$days" || case $? in
  1) die "the CSR of credential $id does not verify; the credential stays pending" ;;
  *) die "the CA did not sign the CSR of credential $id: $(tail -n 1 "$work/openssl.err"); the credential stays pending" ;;
esac

# 5. The chain back: the credential is enabled.
cat "$work/leaf.pem" "$cacrt" | jq -Rs '{chain_pem: .}' | call POST "/credentials/$id/chain" >/dev/null

echo "provision.sh: $user onboarded, credential $id enabled" >&2
echo "$id"
