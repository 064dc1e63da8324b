#!/usr/bin/env bash
# Stages a podman/docker build context from local files only, so that the
# images build offline (FROM scratch, no registry).
#
#   docker/stage.sh init  CTX STOWAWAY LIBSTOWAWAY_SO
#       CTX/Containerfile (docker/init), CTX/stowaway, CTX/libstowaway.so
#   docker/stage.sh glibc CTX PROGRAM[:NAME]...
#       CTX/rootfs/app/NAME (default: the program's file name), the glibc loader and every library that
#       ldd lists, at the same paths as on this machine (distroless shape)
#   docker/stage.sh musl  CTX PROGRAM[:NAME]...
#       CTX/rootfs/app/NAME... and musl's loader at its PT_INTERP path,
#       e.g. /lib/ld-musl-x86_64.so.1 (alpine shape); musl's libc.so is the
#       loader itself, so any other DT_NEEDED entry is an error
# Both application shapes get CTX/Containerfile (docker/example) and a
# minimal /etc/passwd and /etc/group with root and nobody (65534).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)

die() {
	echo "stage: $*" >&2
	exit 1
}
usage() {
	die "usage: stage.sh init CTX STOWAWAY LIBSTOWAWAY_SO | stage.sh glibc|musl CTX PROGRAM[:NAME]..."
}

# Copies host file SRC (symlinks followed) to CTX/rootfs at path DEST.
put() { # put SRC DEST
	mkdir -p "$rootfs$(dirname "$2")"
	cp -L "$1" "$rootfs$2"
	chmod 0755 "$rootfs$2"
}

interpreter_of() { # the PT_INTERP path of an ELF file, empty for static
	readelf -l -W "$1" | sed -n 's/.*\[Requesting program interpreter: \(.*\)\]$/\1/p'
}

# glibc for aarch64 programs on an x86-64 build machine (`ldd` cannot run
# them): every DT_NEEDED library, found in the cross toolchain's sysroot and
# installed where an arm64 Debian has it (/lib/aarch64-linux-gnu, one of the
# loader's built-in directories), and the loader at its PT_INTERP path.
A64_SYSROOT=/usr/aarch64-linux-gnu/lib
stage_glibc_deps_aarch64() { # stage_glibc_deps_aarch64 PROGRAM
	local interp todo=("$1") seen=" " f lib
	interp=$(interpreter_of "$1")
	[ -n "$interp" ] || die "$1 has no program interpreter (static?)"
	[ -f "$A64_SYSROOT/$(basename "$interp")" ] || die "$1: $interp not in $A64_SYSROOT (libc6-dev-arm64-cross)"
	put "$A64_SYSROOT/$(basename "$interp")" "$interp"
	# Each library is queued once; the set of libraries bounds the loop.
	while [ "${#todo[@]}" -gt 0 ]; do
		f=${todo[0]}
		todo=("${todo[@]:1}")
		for lib in $(readelf -d -W "$f" | sed -n 's/.*(NEEDED).*\[\(.*\)\]$/\1/p'); do
			case "$seen" in *" $lib "*) continue ;; esac
			seen="$seen$lib "
			[ "$lib" = "$(basename "$interp")" ] && continue
			[ -f "$A64_SYSROOT/$lib" ] || die "$1: $lib not found in $A64_SYSROOT"
			put "$A64_SYSROOT/$lib" "/lib/aarch64-linux-gnu/$lib"
			todo+=("$A64_SYSROOT/$lib")
		done
	done
}

# glibc: everything `ldd` resolves, at the same absolute path.
stage_glibc_deps() { # stage_glibc_deps PROGRAM
	if readelf -h "$1" | grep -q 'Machine:.*AArch64'; then
		stage_glibc_deps_aarch64 "$1"
		return
	fi
	local line path
	local listing
	listing=$(ldd "$1") || die "ldd $1 failed (not a dynamic glibc program?)"
	while IFS= read -r line; do
		case "$line" in
		*"not found"*) die "$1: $line" ;;
		*"=> /"*) path=$(echo "$line" | sed 's/.*=> \(\/[^ ]*\).*/\1/') ;;
		*linux-vdso*) continue ;;
		[[:space:]]/*) path=$(echo "$line" | sed 's/^[[:space:]]*\(\/[^ ]*\).*/\1/') ;;
		*) die "$1: cannot read ldd line: $line" ;;
		esac
		put "$path" "$path"
	done <<<"$listing"
	local interp
	interp=$(interpreter_of "$1")
	[ -n "$interp" ] || die "$1 has no program interpreter (static?)"
	[ -f "$rootfs$interp" ] || die "$1: ldd did not list its loader $interp"
}

# musl: the loader is the C library; only libc.so may be needed.
stage_musl_deps() { # stage_musl_deps PROGRAM
	local interp needed
	interp=$(interpreter_of "$1")
	case "$interp" in
	*/ld-musl-*) ;;
	*) die "$1: interpreter '$interp' is not musl's loader" ;;
	esac
	needed=$(readelf -d -W "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]$/\1/p' | grep -v '^libc\.so$' || true)
	[ -z "$needed" ] || die "$1 needs more than musl's libc: $needed"
	put "$interp" "$interp"
}

[ $# -ge 3 ] || usage
kind=$1
ctx=$2
shift 2
mkdir -p "$ctx"
case "$kind" in
init)
	[ $# -eq 2 ] || usage
	cp "$here/init/Containerfile" "$ctx/Containerfile"
	cp -L "$1" "$ctx/stowaway"
	cp -L "$2" "$ctx/libstowaway.so"
	chmod 0755 "$ctx/stowaway" "$ctx/libstowaway.so"
	interp=$(interpreter_of "$ctx/stowaway")
	[ -z "$interp" ] || die "$1 is dynamically linked ($interp); the init image needs the static CLI"
	;;
glibc | musl)
	rootfs="$ctx/rootfs"
	rm -rf "$rootfs"
	mkdir -p "$rootfs/app" "$rootfs/etc"
	cp "$here/example/Containerfile" "$ctx/Containerfile"
	printf 'root:x:0:0:root:/:/sbin/nologin\nnobody:x:65534:65534:nobody:/:/sbin/nologin\n' >"$rootfs/etc/passwd"
	printf 'root:x:0:\nnogroup:x:65534:\n' >"$rootfs/etc/group"
	chmod 0644 "$rootfs/etc/passwd" "$rootfs/etc/group"
	for arg in "$@"; do
		prog=${arg%%:*}
		name=$(basename "$prog")
		[ "$prog" = "$arg" ] || name=${arg#*:}
		[ -x "$prog" ] || die "$prog is not an executable file"
		put "$prog" "/app/$name"
		"stage_${kind}_deps" "$prog"
	done
	;;
*) usage ;;
esac
