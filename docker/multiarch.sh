#!/usr/bin/env bash
# Builds the init image and the example images for amd64 and arm64 from
# the same Containerfiles and combines each pair in a multi-architecture
# manifest (docs/containers.md, "Mixed clusters").  Both images are FROM
# scratch with copied files only, so no emulation is needed to build them.
#
#   docker/multiarch.sh VERSION
#       needs build/ (make) and build/aarch64/ (make ARCH=aarch64), plus the
#       workloads build/workloads/{hello,demo}{,-musl} and build/aarch64/workloads/{hello,demo}{,-musl}
#   result: localhost/stowaway-init:VERSION,
#           localhost/stowaway-example-glibc:VERSION and
#           localhost/stowaway-example-musl:VERSION, each a manifest list
#           with linux/amd64 and linux/arm64 entries
# PODMAN (default: podman) is the command to run, e.g. with private storage.
set -euo pipefail
cd "$(dirname "$0")/.."
read -r -a pm <<<"${PODMAN:-podman}"
version=${1:?usage: docker/multiarch.sh VERSION}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

build_pair() { # build_pair NAME STAGE-ARGS-AMD64 -- STAGE-ARGS-ARM64
	local name=$1 ref="localhost/$1:$version"
	shift
	local amd=() arm=() side=amd
	for a in "$@"; do
		if [ "$a" = "--" ]; then side=arm; continue; fi
		if [ "$side" = amd ]; then amd+=("$a"); else arm+=("$a"); fi
	done
	docker/stage.sh "${amd[0]}" "$tmp/$name-amd64" "${amd[@]:1}"
	docker/stage.sh "${arm[0]}" "$tmp/$name-arm64" "${arm[@]:1}"
	"${pm[@]}" build -q --pull=never --network=none --platform linux/amd64 -t "$ref-amd64" "$tmp/$name-amd64" >/dev/null
	"${pm[@]}" build -q --pull=never --network=none --platform linux/arm64 -t "$ref-arm64" "$tmp/$name-arm64" >/dev/null
	"${pm[@]}" manifest rm "$ref" >/dev/null 2>&1 || "${pm[@]}" rmi "$ref" >/dev/null 2>&1 || true
	"${pm[@]}" manifest create "$ref" >/dev/null
	"${pm[@]}" manifest add "$ref" "containers-storage:$ref-amd64" >/dev/null
	"${pm[@]}" manifest add "$ref" "containers-storage:$ref-arm64" >/dev/null
	echo "$ref"
}

build_pair stowaway-init init build/stowaway build/libstowaway.so -- \
	init build/aarch64/stowaway build/aarch64/libstowaway.so
build_pair stowaway-example-glibc glibc build/workloads/hello:hello build/workloads/demo:demo -- \
	glibc build/aarch64/workloads/hello:hello build/aarch64/workloads/demo:demo
build_pair stowaway-example-musl musl build/workloads/hello-musl:hello build/workloads/demo-musl:demo -- \
	musl build/aarch64/workloads/hello-musl:hello build/aarch64/workloads/demo-musl:demo
