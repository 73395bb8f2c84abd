#!/usr/bin/env bash
# install-deps.sh — install what signd's build, tests and demo need on a
# Debian or Ubuntu machine, when it is missing: SoftHSM2 (the PKCS#11 token
# of tests and the demo), OpenSSL (test CA, signature checks), gcc and make
# (cgo), curl, Chromium with a font (the headless browser test) and promtool
# (the alert rules' tests).
#
# `make test`, `make demo` and CI (.ci/run) all call this one script. It uses
# apt-get, as root or through sudo, and does nothing when everything is
# there. Go itself is not installed here (https://go.dev/dl/).
#
#   scripts/install-deps.sh            everything `make test` needs
#   scripts/install-deps.sh --no-browser   without Chromium and promtool (the demo)
#   scripts/install-deps.sh --tokens   also the other PKCS#11 tokens of
#       `make test-tokens`: opencryptoki's software token, and tpm2-pkcs11
#       over a software TPM (swtpm, tpm2-abrmd, a D-Bus daemon)
set -euo pipefail

browser=1
tokens=0
for arg in "$@"; do
  case $arg in
    --no-browser) browser=0 ;;
    --tokens) tokens=1 ;;
    *) echo "install-deps.sh: unknown argument $arg" >&2; exit 2 ;;
  esac
done

need=()
{ [ -e /usr/lib/softhsm/libsofthsm2.so ] && command -v softhsm2-util >/dev/null 2>&1; } || need+=(softhsm2)
command -v openssl >/dev/null 2>&1 || need+=(openssl)
command -v gcc >/dev/null 2>&1 || need+=(gcc libc6-dev)
command -v make >/dev/null 2>&1 || need+=(make)
command -v curl >/dev/null 2>&1 || need+=(curl)
# jq: scripts/provision.sh, the provisioning API's example client (tested).
command -v jq >/dev/null 2>&1 || need+=(jq)
# pdfsig validates the PDF signatures of cmd/signd-pdf's test; certutil
# makes the NSS database that holds the test CA it trusts.
command -v pdfsig >/dev/null 2>&1 || need+=(poppler-utils)
command -v certutil >/dev/null 2>&1 || need+=(libnss3-tools)
# systemd-analyze checks packaging/signd.service, systemd-sysusers makes the
# package's user in the package test (a container's systemd is not PID 1:
# nothing is started).
{ command -v systemd-analyze >/dev/null 2>&1 && command -v systemd-sysusers >/dev/null 2>&1; } || need+=(systemd)
if [ "$browser" = 1 ]; then
  command -v chromium >/dev/null 2>&1 || need+=(chromium fonts-dejavu-core)
  # promtool checks and unit-tests packaging/prometheus/signd-alerts.yaml
  # (cmd/signd's monitoring test), a `make test` tool like Chromium.
  # Debian ships it only in the prometheus package, whose server is
  # stopped and disabled again below.
  command -v promtool >/dev/null 2>&1 || need+=(prometheus)
fi

if [ "$tokens" = 1 ]; then
  { [ -e /usr/lib/x86_64-linux-gnu/pkcs11/libopencryptoki.so ] && command -v pkcsslotd >/dev/null 2>&1; } || need+=(opencryptoki)
  command -v swtpm >/dev/null 2>&1 || need+=(swtpm)
  command -v tpm2-abrmd >/dev/null 2>&1 || need+=(tpm2-abrmd)
  command -v tpm2_ptool >/dev/null 2>&1 || need+=(libtpm2-pkcs11-tools)
  [ -e /usr/lib/x86_64-linux-gnu/pkcs11/libtpm2_pkcs11.so ] || need+=(libtpm2-pkcs11-1)
  [ -e /usr/lib/x86_64-linux-gnu/libtss2-tcti-tabrmd.so.0 ] || need+=(libtss2-tcti-tabrmd0)
  [ -e /usr/lib/x86_64-linux-gnu/libtss2-tcti-swtpm.so.0 ] || need+=(libtss2-tcti-swtpm0)
  { command -v dbus-daemon >/dev/null 2>&1 && command -v dbus-send >/dev/null 2>&1; } || need+=(dbus-daemon dbus-bin)
fi

if [ ${#need[@]} -eq 0 ]; then
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "install-deps.sh: missing ${need[*]}, and this is not a Debian/Ubuntu machine: install them by hand" >&2
  exit 1
fi
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null 2>&1 || { echo "install-deps.sh: missing ${need[*]}: run as root or install sudo" >&2; exit 1; }
  sudo="sudo"
fi
echo "install-deps.sh: installing ${need[*]}" >&2
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${need[@]}"
# The prometheus package starts its server where systemd runs: signd only
# wanted promtool.
if printf '%s\n' "${need[@]}" | grep -qx prometheus && [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then
  $sudo systemctl disable --now prometheus.service >/dev/null 2>&1 || true
fi
