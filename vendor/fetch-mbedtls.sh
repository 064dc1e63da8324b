#!/usr/bin/env bash
# Fetches the mbedTLS source pinned in vendor/mbedtls.pin from Debian and
# unpacks it into OUT_DIR (default build/vendor).
#
# No third-party source is committed and no mirror is named here: the
# deb-src entry is derived from the Debian mirror this machine already uses
# (/etc/apt/sources.list.d/*.sources or /etc/apt/sources.list), apt runs on
# a private state directory (the system's apt state is untouched), and the
# upstream tarball is checked against the pinned SHA-256 before unpacking.
# Any Debian revision of the pinned upstream version is accepted: the
# checksum pins the source itself.
set -euo pipefail

cd "$(dirname "$0")/.."
# shellcheck source=vendor/mbedtls.pin
. vendor/mbedtls.pin
UPSTREAM_VERSION=$MBEDTLS_VERSION
ORIG_SHA256=$MBEDTLS_ORIG_SHA256
SUITE=$MBEDTLS_SUITE

out_dir="${1:-build/vendor}"
dest="$out_dir/mbedtls-$UPSTREAM_VERSION"
stamp="$dest/.stowaway-unpacked"
[ -f "$stamp" ] && exit 0
mkdir -p "$out_dir"
out_abs="$(cd "$out_dir" && pwd)"

die() {
	echo "fetch-mbedtls: $*" >&2
	exit 1
}

verify() {
	[ -f "$1" ] && echo "$ORIG_SHA256  $1" | sha256sum --check --status
}

# The first Debian archive URI configured on this machine (not -security).
debian_mirror() {
	if [ -n "${STOWAWAY_DEBIAN_MIRROR:-}" ]; then
		echo "$STOWAWAY_DEBIAN_MIRROR"
		return
	fi
	local f uri
	for f in /etc/apt/sources.list.d/*.sources; do
		[ -f "$f" ] || continue
		# deb822 stanzas: pair each URIs field with its Suites field.
		uri=$(awk '
			/^[ \t]*$/ { if (u != "" && s !~ /-security/) { print u; exit } u = ""; s = "" }
			/^URIs:/ { u = $2 }
			/^Suites:/ { s = $0 }
			END { if (u != "" && s !~ /-security/) print u }' "$f" | head -n1)
		if [ -n "$uri" ]; then
			echo "$uri"
			return
		fi
	done
	if [ -f /etc/apt/sources.list ]; then
		uri=$(awk '$1 == "deb" {
			i = 2; if ($i ~ /^\[/) { while ($i !~ /\]$/) i++; i++ }
			if ($(i + 1) !~ /-security/) { print $i; exit } }' /etc/apt/sources.list)
		if [ -n "$uri" ]; then
			echo "$uri"
			return
		fi
	fi
	die "no Debian archive configured in /etc/apt (set STOWAWAY_DEBIAN_MIRROR)"
}

tarball=$(ls "$out_abs"/mbedtls_"$UPSTREAM_VERSION".orig.tar.* 2>/dev/null | head -n1 || true)
if [ -z "$tarball" ] || ! verify "$tarball"; then
	command -v apt-get >/dev/null || die "apt-get is required to fetch the mbedTLS source"
	mirror=$(debian_mirror)
	apt_dir="$out_abs/apt"
	mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial" "$apt_dir/sources.list.d"
	keyring=/usr/share/keyrings/debian-archive-keyring.gpg
	[ -f "$keyring" ] || die "$keyring is missing (install debian-archive-keyring)"
	echo "deb-src [signed-by=$keyring] $mirror $SUITE main" >"$apt_dir/sources.list"
	apt_opts=(
		-o "Dir::Etc::SourceList=$apt_dir/sources.list"
		-o "Dir::Etc::SourceParts=$apt_dir/sources.list.d"
		-o "Dir::State::Lists=$apt_dir/lists"
		-o "Dir::Cache=$apt_dir/cache"
		-o "APT::Sandbox::User=root"
		-o "Debug::NoLocking=1"
	)
	echo "fetch-mbedtls: reading the $SUITE source index from $mirror"
	apt-get -q "${apt_opts[@]}" update >"$apt_dir/update.log" 2>&1 ||
		die "apt-get update failed (see $apt_dir/update.log)"
	version=$(apt-cache "${apt_opts[@]}" showsrc mbedtls 2>/dev/null |
		awk -v up="$UPSTREAM_VERSION" '$1 == "Version:" && index($2, up "-") == 1 { print $2 }' |
		sort -V | tail -n1)
	[ -n "$version" ] || die "Debian $SUITE no longer carries mbedtls $UPSTREAM_VERSION"
	echo "fetch-mbedtls: downloading mbedtls=$version source"
	(cd "$out_abs" && apt-get -q "${apt_opts[@]}" source --download-only "mbedtls=$version" \
		>"$apt_dir/source.log" 2>&1) || die "apt-get source failed (see $apt_dir/source.log)"
	tarball=$(ls "$out_abs"/mbedtls_"$UPSTREAM_VERSION".orig.tar.* | head -n1)
	verify "$tarball" || die "checksum mismatch for $tarball"
fi
rm -rf "$dest"
tar -xf "$tarball" -C "$out_abs"
[ -f "$dest/include/mbedtls/version.h" ] || die "unexpected layout in $tarball"
touch "$stamp"
echo "fetch-mbedtls: mbedtls $UPSTREAM_VERSION unpacked in $dest"
