# lib-ca.sh — sourced by scripts/enroll-key.sh and scripts/provision.sh: the
# CA's part of an enrollment, with openssl.

# ca_sign WORK CA_CERT CA_KEY DAYS signs WORK/csr.pem with the CA into
# WORK/leaf.pem, a signing certificate (digitalSignature, nonRepudiation)
# valid for DAYS days with a random serial. It returns 1 when the CSR's own
# signature does not verify, 2 when the CA did not sign it (openssl's last
# line about it is in WORK/openssl.err); the caller says which.
ca_sign() {
  cat >"$1/ext.cnf" <<EXT
basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature,nonRepudiation
subjectKeyIdentifier=hash
authorityKeyIdentifier=keyid
EXT
  openssl req -verify -noout -in "$1/csr.pem" >/dev/null 2>&1 || return 1
  openssl x509 -req -in "$1/csr.pem" -CA "$2" -CAkey "$3" -sha256 -days "$4" \
    -set_serial "0x$(openssl rand -hex 16)" -extfile "$1/ext.cnf" -out "$1/leaf.pem" 2>"$1/openssl.err" || return 2
}
