#!/usr/bin/env bash
# Make sure the Squid binaries used by tests/test_squid_interop.py exist:
# returns at once when both are cached, otherwise builds them once
# (scripts/build-squid.sh; ~7 min on 2 cores for the patched build).
# Prints "patched=<dir>" and "debian=<dir>" on stdout.
# Concurrent callers wait for each other (flock).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CACHE_ROOT="${SQUID_CACHE_ROOT:-/var/cache/wccp-redirector}"
dirs="$("$HERE/build-squid.sh" --print)"
patched="$(sed -n 's/^patched=//p' <<<"$dirs")"
debian="$(sed -n 's/^debian=//p' <<<"$dirs")"
ready() { [ -x "$patched/sbin/squid" ] && [ -x "$debian/usr/sbin/squid" ]; }
if ! ready; then
  mkdir -p "$CACHE_ROOT"
  exec 9>"$CACHE_ROOT/.build.lock"
  flock 9
  if ! ready; then
    "$HERE/build-squid.sh" all >&2
  fi
fi
ready || { echo "ensure-squid: build did not produce $patched and $debian" >&2; exit 1; }
echo "patched=$patched"
echo "debian=$debian"
