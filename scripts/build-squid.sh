#!/usr/bin/env bash
# Build a WCCPv2-capable Squid for the interop tests (tests/test_squid_interop.py).
#
# * PATCHED: Debian's squid 5.7 source package (`apt-get source squid`) plus
#   scripts/squid-wccp-fixes.patch (the two upstream one-line fixes in
#   src/wccp2.cc, see docs/squid.md), configured with the minimum of features,
#   installed atomically into $SQUID_CACHE_ROOT/squid-5.7-wccpfix-<hash>/.
# * UNPATCHED: Debian's binary package (`apt-get download squid`), unpacked with
#   `dpkg-deb -x` into $SQUID_CACHE_ROOT/squid-deb-<version>/ (never installed
#   system-wide: the package would start a service). Missing shared libraries
#   are unpacked next to it (lib/), also with `apt-get download`.
#
# Usage: scripts/build-squid.sh            build what is missing (idempotent)
#        scripts/build-squid.sh --print    print "patched=<dir>" and "debian=<dir>"
# Environment: SQUID_CACHE_ROOT (default /var/cache/wccp-redirector),
#              SQUID_BUILD_JOBS (default nproc).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PATCH="$HERE/squid-wccp-fixes.patch"
CACHE_ROOT="${SQUID_CACHE_ROOT:-/var/cache/wccp-redirector}"
SQUID_UPSTREAM=5.7
# Minimal feature set: only what a forward proxy with WCCPv2 needs. Changing
# this list changes the cache directory name (it is part of the hash).
CONFIGURE_FLAGS=(
  --enable-wccpv2 --disable-wccp
  --disable-loadable-modules --disable-shared --enable-static
  --disable-dependency-tracking --disable-silent-rules
  --disable-strict-error-checking --disable-arch-native
  --disable-esi --disable-icap-client --disable-ecap --disable-snmp --disable-htcp
  --disable-eui --disable-ident-lookups --disable-cache-digests --disable-delay-pools
  --disable-icmp --disable-translation --disable-auto-locale --disable-unlinkd
  --disable-auth --disable-auth-basic --disable-auth-digest --disable-auth-negotiate
  --disable-auth-ntlm --disable-external-acl-helpers --disable-url-rewrite-helpers
  --disable-storeid-rewrite-helpers --disable-security-cert-validators
  --disable-security-cert-generators --disable-log-daemon-helpers
  --enable-storeio=ufs --enable-removal-policies=lru
  --without-openssl --without-gnutls --without-nettle --without-expat --without-libxml2
  --without-mit-krb5 --without-heimdal-krb5 --without-gnugss --without-systemd
  --without-netfilter-conntrack --without-tdb --without-cppunit --without-libcap
  --without-valgrind-debug
)
BUILD_CFLAGS="-O1 -g0"

sha() { sha256sum | cut -c1-12; }
HASH="$( { cat "$PATCH"; printf '%s\n' "${CONFIGURE_FLAGS[@]}" "$BUILD_CFLAGS"; } | sha)"
PATCHED_DIR="$CACHE_ROOT/squid-$SQUID_UPSTREAM-wccpfix-$HASH"

if [ "$(id -u)" != 0 ]; then SUDO=sudo; else SUDO=; fi
# Temporary build directories are removed however the script ends.
CLEANUP=()
cleanup() { local d; for d in "${CLEANUP[@]}"; do rm -rf "$d"; done; }
trap cleanup EXIT
export DEBIAN_FRONTEND=noninteractive
# apt, run as root, drops to its _apt user for downloads and signature checks. Where that user
# cannot write /dev/null (a fresh machine of this workplace had it at mode 0755), apt-key fails,
# every `apt-get update` is refused as unsigned and the deb-src entries never load. apt keeps
# root's privileges instead (an option that has no effect when apt is not run as root).
apt-get() { command apt-get -o APT::Sandbox::User=root "$@"; }

ensure_deb_src() {
  # apt-get source needs a deb-src entry for this release.
  local srcs
  srcs="$(apt-cache showsrc squid 2>/dev/null || true)"
  if grep -q '^Package: squid' <<<"$srcs"; then
    return 0
  fi
  . /etc/os-release
  local codename="${VERSION_CODENAME:?no VERSION_CODENAME in /etc/os-release}"
  local signed="Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg"
  if ! command -v gpgv >/dev/null 2>&1 || [ ! -f /usr/share/keyrings/debian-archive-keyring.gpg ]; then
    signed="Trusted: yes"
  fi
  echo "build-squid: adding deb-src entries for $codename"
  $SUDO tee /etc/apt/sources.list.d/wccp-redirector-src.sources >/dev/null <<EOF
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: $codename $codename-updates
Components: main
$signed

Types: deb-src
URIs: http://deb.debian.org/debian-security
Suites: $codename-security
Components: main
$signed
EOF
  $SUDO apt-get update -qq
}

debian_version() {
  apt-cache policy squid | awk '/Candidate:/ && !v {v = $2} END {print v}'
}

DEB_VERSION="$(debian_version)"
if [ -z "$DEB_VERSION" ]; then            # empty package lists (fresh container)
  $SUDO apt-get update -qq >&2
  DEB_VERSION="$(debian_version)"
fi
[ -n "$DEB_VERSION" ] || { echo "build-squid: apt knows no squid package" >&2; exit 1; }
DEBIAN_DIR="$CACHE_ROOT/squid-deb-${DEB_VERSION//[:~]/_}"

if [ "${1:-}" = "--print" ]; then
  echo "patched=$PATCHED_DIR"
  echo "debian=$DEBIAN_DIR"
  exit 0
fi

$SUDO mkdir -p "$CACHE_ROOT"

build_patched() {
  [ -x "$PATCHED_DIR/sbin/squid" ] && return 0
  local t0=$SECONDS
  local need=()
  for p in g++ make pkg-config perl dpkg-dev xz-utils patch autoconf automake libtool libltdl-dev; do
    dpkg -s "$p" >/dev/null 2>&1 || need+=("$p")
  done
  if [ ${#need[@]} -gt 0 ]; then
    echo "build-squid: installing build tools ${need[*]}"
    $SUDO apt-get update -qq
    $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
  fi
  ensure_deb_src
  local work
  work="$(mktemp -d "$CACHE_ROOT/.build.XXXXXX")"
  CLEANUP+=("$work")
  echo "build-squid: fetching Debian source package squid into $work"
  (cd "$work" && apt-get source -qq "squid=$DEB_VERSION" >/dev/null 2>&1 || apt-get source -qq squid >/dev/null)
  local src
  src="$(find "$work" -maxdepth 1 -mindepth 1 -type d -name "squid-$SQUID_UPSTREAM*" | head -n1)"
  [ -n "$src" ] || { echo "build-squid: no squid-$SQUID_UPSTREAM source tree" >&2; return 1; }
  (cd "$src" && patch -p1 --forward < "$PATCH")
  # Debian's patches edit Makefile.am files (e.g. the gopher removal in the
  # CVE-2023-46728 fix) and rely on dh_autoreconf: regenerate the same way.
  echo "build-squid: autoreconf"
  (cd "$src" && autoreconf -fi >"$work/autoreconf.log" 2>&1) \
     || { tail -n 40 "$work/autoreconf.log" >&2; return 1; }
  echo "build-squid: configure"
  (cd "$src" && CFLAGS="$BUILD_CFLAGS" CXXFLAGS="$BUILD_CFLAGS" \
     ./configure --prefix="$PATCHED_DIR" "${CONFIGURE_FLAGS[@]}" >"$work/configure.log" 2>&1) \
     || { tail -n 40 "$work/configure.log" >&2; return 1; }
  echo "build-squid: make (this takes several minutes)"
  local jobs="${SQUID_BUILD_JOBS:-$(nproc)}"
  # Only what running squid needs: compat, lib, src (the daemon), errors, icons.
  (cd "$src" && for d in compat lib src errors icons; do
       make -j"$jobs" -C "$d" all >"$work/make-$d.log" 2>&1 \
         || { tail -n 40 "$work/make-$d.log" >&2; exit 1; }
     done)
  local stage="$work/stage"
  (cd "$src" && for d in src errors icons; do
       make -C "$d" install DESTDIR="$stage" >"$work/install-$d.log" 2>&1 \
         || { tail -n 40 "$work/install-$d.log" >&2; exit 1; }
     done)
  "$stage$PATCHED_DIR/sbin/squid" -v | head -n1
  echo "patch-sha256-12=$HASH built-in=$((SECONDS - t0))s on $(nproc) cores" \
    > "$stage$PATCHED_DIR/BUILD-INFO"
  # Atomic install: the final directory appears only when complete.
  rm -rf "$PATCHED_DIR.tmp"
  mv "$stage$PATCHED_DIR" "$PATCHED_DIR.tmp"
  mv -T "$PATCHED_DIR.tmp" "$PATCHED_DIR"
  echo "build-squid: installed $PATCHED_DIR in $((SECONDS - t0)) s"
}

fetch_debian() {
  [ -x "$DEBIAN_DIR/usr/sbin/squid" ] && return 0
  local work
  work="$(mktemp -d "$CACHE_ROOT/.deb.XXXXXX")"
  CLEANUP+=("$work")
  chmod 755 "$work"
  local root="$work/root"
  mkdir -p "$root"
  # squid: the daemon; squid-common: icons, mime.conf; squid-langpack: the
  # error page templates (usr/share/squid/errors is a link to them).
  (cd "$work" && { apt-get download -qq "squid=$DEB_VERSION" "squid-common=$DEB_VERSION" squid-langpack >/dev/null 2>&1 || \
     { $SUDO apt-get update -qq && apt-get download -qq squid squid-common squid-langpack >/dev/null; }; })
  for d in "$work"/squid_*.deb "$work"/squid-common_*.deb "$work"/squid-langpack_*.deb; do
    dpkg-deb -x "$d" "$root"
  done
  # Shared libraries the binary needs that this machine lacks (libecap3,
  # libnetfilter-conntrack3, libltdl7, ...): unpack the library packages of
  # squid's dependency closure that are not installed next to it (lib/; run
  # with LD_LIBRARY_PATH) -- never install them system-wide.
  local todo=(squid) seen=" squid " pkgs=() p dep
  while [ ${#todo[@]} -gt 0 ]; do
    p="${todo[0]}"; todo=("${todo[@]:1}")
    for dep in $(apt-cache depends "$p" 2>/dev/null | awk '$1 ~ /^\|?Depends:$/ && $2 ~ /^lib/ {print $2}' | tr -d '<>'); do
      case "$seen" in *" $dep "*) continue ;; esac
      seen="$seen$dep "
      if ! dpkg -s "$dep" 2>/dev/null | grep -q '^Status: install ok installed'; then
        pkgs+=("$dep"); todo+=("$dep")
      fi
    done
  done
  if [ ${#pkgs[@]} -gt 0 ]; then
    echo "build-squid: unpacking libraries ${pkgs[*]} for Debian's squid"
    (cd "$work" && apt-get download -qq "${pkgs[@]}" >/dev/null 2>&1)
    mkdir -p "$work/libroot" "$root/lib"
    for d in "$work"/*.deb; do
      case "$d" in */squid_*|*/squid-common_*|*/squid-langpack_*) continue ;; esac
      dpkg-deb -x "$d" "$work/libroot"
    done
    find "$work/libroot" -name '*.so*' -exec cp -a {} "$root/lib/" \;
  fi
  if LD_LIBRARY_PATH="$root/lib" ldd "$root/usr/sbin/squid" | grep -q 'not found'; then
    echo "build-squid: Debian squid still misses libraries:" >&2
    LD_LIBRARY_PATH="$root/lib" ldd "$root/usr/sbin/squid" | grep 'not found' >&2
    return 1
  fi
  echo "$DEB_VERSION" > "$root/DEB-VERSION"
  rm -rf "$DEBIAN_DIR.tmp"
  mv "$root" "$DEBIAN_DIR.tmp"
  mv -T "$DEBIAN_DIR.tmp" "$DEBIAN_DIR"
  echo "build-squid: unpacked Debian squid $DEB_VERSION into $DEBIAN_DIR"
}

what="${1:-all}"
case "$what" in
  all) fetch_debian; build_patched ;;
  patched) build_patched ;;
  debian) fetch_debian ;;
  *) echo "usage: $0 [--print|all|patched|debian]" >&2; exit 2 ;;
esac
