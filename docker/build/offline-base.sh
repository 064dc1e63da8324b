#!/usr/bin/env bash
# Makes the base of the build image without a registry: a minimal Debian 12
# root filesystem with the toolchain, built by mmdebstrap from the Debian
# mirror this machine uses, imported into podman as IMAGE.
#   docker/build/offline-base.sh IMAGE [MIRROR]
# Needs root (or a user namespace for mmdebstrap --mode=unshare), mmdebstrap
# and podman.  SOURCE_DATE_EPOCH fixes the file dates inside the tarball.
set -euo pipefail
image=${1:?usage: offline-base.sh IMAGE [MIRROR]}
mirror=${2:-http://deb.debian.org/debian}
work=$(mktemp -d /tmp/stowaway-base.XXXXXX)
trap 'rm -rf "$work"' EXIT
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-1700000000}
mmdebstrap --variant=apt --format=tar \
	--include=make,gcc,libc6-dev,binutils,musl-tools,musl-dev,linux-libc-dev,bzip2,coreutils \
	--aptopt='Acquire::Languages "none"' --dpkgopt='path-exclude=/usr/share/{doc,man,locale}/*' \
	bookworm "$work/rootfs.tar" "$mirror"
podman import --change 'CMD ["/bin/bash"]' --change 'ENV LC_ALL=C.UTF-8' "$work/rootfs.tar" "$image"
