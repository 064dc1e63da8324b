#!/usr/bin/env bash
# Installs what the build and the tests need on a fresh Debian 12 machine.
# Package lists live in tests/deps/*.txt (one package per line, # comments),
# so each area of the project declares its own needs.
# Usage: tests/deps.sh [AREA...]   (tests/deps/AREA.txt only; none: every list)
set -eu
cd "$(dirname "$0")/.."
lists=()
for area in "$@"; do
	lists+=("tests/deps/$area.txt")
done
[ "${#lists[@]}" -gt 0 ] || lists=(tests/deps/*.txt)
mapfile -t wanted < <(cat "${lists[@]}" | sed 's/#.*//' | tr -s ' \t' '\n' | grep -v '^$' | sort -u)
missing=()
for p in "${wanted[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ "${#missing[@]}" -eq 0 ]; then
	exit 0
fi
echo "stowaway deps: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
# Packages of another architecture (name:arch) need it enabled in dpkg
# (multiarch) before apt-get update; adding it again is a no-op.
for arch in $(printf '%s\n' "${missing[@]}" | sed -n 's/^[^:]*:\([a-z0-9]*\)$/\1/p' | sort -u); do
	dpkg --print-foreign-architectures | grep -qx "$arch" || $SUDO dpkg --add-architecture "$arch"
done
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
