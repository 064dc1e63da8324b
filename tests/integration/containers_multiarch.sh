#!/usr/bin/env bash
# The multi-architecture images (docker/multiarch.sh): the init image and the
# glibc and musl examples, built for amd64 and arm64 from the same Containerfiles on
# private podman storage, each combined in a manifest that holds both.
source "$(dirname "$0")/lib.sh"
for need in podman readelf qemu-aarch64-static; do
	command -v "$need" >/dev/null || { fail "multiarch: $need is installed"; finish; }
done
for f in build/aarch64/libstowaway.so build/aarch64/stowaway build/aarch64/workloads/demo-musl build/workloads/demo-musl \
	build/aarch64/workloads/demo build/workloads/demo build/aarch64/workloads/hello build/workloads/hello; do
	[ -e "$ROOT/$f" ] || { fail "multiarch: $f was built (make test-build)"; finish; }
done
export PODMAN="podman --root $TMP/storage --runroot $TMP/run --storage-driver vfs"
cleanup_storage() { $PODMAN rmi -a -f >/dev/null 2>&1; rm -rf "$TMP"; }
trap cleanup_storage EXIT
out=$("$ROOT/docker/multiarch.sh" test 2>&1)
rc=$?
check "multiarch: docker/multiarch.sh builds every image for both architectures" test "$rc" = 0
[ "$rc" = 0 ] || echo "$out" | tail -5
for img in stowaway-init stowaway-example-glibc stowaway-example-musl; do
	arches=$($PODMAN manifest inspect "localhost/$img:test" 2>/dev/null | grep '"architecture"' | tr -d ' ",' | sort | tr '\n' ' ')
	check "multiarch: $img manifest holds amd64 and arm64 ($arches)" test "$arches" = "architecture:amd64 architecture:arm64 "
	a=$($PODMAN image inspect --format '{{.Architecture}}' "localhost/$img:test-arm64" 2>/dev/null)
	check "multiarch: $img arm64 image says arm64 ($a)" test "$a" = arm64
done
# The arm64 init image carries the aarch64 files, the amd64 one the x86-64 files.
for arch in amd64 arm64; do
	c=$($PODMAN create "localhost/stowaway-init:test-$arch" 2>/dev/null)
	mkdir -p "$TMP/$arch"
	$PODMAN cp "$c:/opt/stowaway/libstowaway.so" "$TMP/$arch/" >/dev/null 2>&1
	want=$([ "$arch" = arm64 ] && echo AArch64 || echo X86-64)
	check "multiarch: init image $arch holds the $want library" bash -c \
		"readelf -h '$TMP/$arch/libstowaway.so' | grep -q 'Machine:.*$want'"
	$PODMAN rm -f "$c" >/dev/null 2>&1
done
# The arm64 example file systems run their program with their own loader and
# libraries (qemu-user with the staged root as its library prefix; for glibc
# nothing on this host could stand in for them).
for kind in glibc musl; do
	sfx=$([ "$kind" = musl ] && echo -musl)
	"$ROOT/docker/stage.sh" "$kind" "$TMP/ctx-$kind" "$ROOT/build/aarch64/workloads/hello$sfx:hello" >/dev/null 2>&1
	got=$(env -i QEMU_LD_PREFIX="$TMP/ctx-$kind/rootfs" qemu-aarch64-static "$TMP/ctx-$kind/rootfs/app/hello" a 3 2>&1)
	rc=$?
	check "multiarch: the arm64 $kind example runs with its staged root as library prefix (exit $rc)" bash -c \
		"test '$rc' = 3 && grep -q '^hello 3 a' <<<'$got'"
done
finish
