#!/usr/bin/env bash
# Install the Debian packages the build and tests need, only when missing.
# Idempotent and quick when everything is present.
set -euo pipefail
need=()
command -v iverilog >/dev/null 2>&1 || need+=(iverilog)
command -v tshark   >/dev/null 2>&1 || need+=(tshark)
command -v faketime >/dev/null 2>&1 || need+=(faketime)
dpkg -s libfaketime >/dev/null 2>&1 || need+=(libfaketime)   # LD_PRELOAD .so for the Squid interop tests
command -v ip       >/dev/null 2>&1 || need+=(iproute2)
command -v iptables >/dev/null 2>&1 || need+=(iptables)      # the lab caches' interception rule (wccp lab)
command -v perl     >/dev/null 2>&1 || need+=(perl)
command -v g++      >/dev/null 2>&1 || need+=(g++)
command -v make     >/dev/null 2>&1 || need+=(make)
if [ ${#need[@]} -eq 0 ]; then
  exit 0
fi
echo "setup-system: installing ${need[*]}"
if [ "$(id -u)" != 0 ]; then
  SUDO=sudo
else
  SUDO=
fi
export DEBIAN_FRONTEND=noninteractive
# -o APT::Sandbox::User=root: apt keeps root's privileges for downloads and signature checks,
# for a machine whose /dev/null its _apt user cannot write (see scripts/build-squid.sh)
$SUDO apt-get -o APT::Sandbox::User=root update -qq
$SUDO apt-get -o APT::Sandbox::User=root install -y -qq --no-install-recommends "${need[@]}" >/dev/null
