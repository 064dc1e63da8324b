#!/usr/bin/env bash
# Real containers (podman + runc): the images of docker/ built offline, the
# init container installing into a volume, glibc (distroless shape) and musl
# (alpine shape) images FROM scratch run profiled with LD_PRELOAD, a
# read-only root filesystem, no network, as nobody (65534), writing pprof
# files to a mounted volume; and the same programs with the library baked
# into the image (docker/bundled).  Checks: valid profiles (go tool pprof
# -raw) with the expected functions, and the application's stdout, stderr
# and exit status unchanged.
#
# podman runs on private configuration and storage under a temp directory
# (CONTAINERS_CONF, CONTAINERS_STORAGE_CONF, --root/--runroot/tmp_dir):
# nothing global is changed.  If podman cannot run here, that is a FAIL.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD="$ROOT/build"
WL="$BUILD/workloads"
TAG="test-$$"
TMP=$(mktemp -d /tmp/stowaway-containers.XXXXXX)
chmod 0755 "$TMP"
n_failed=0

pass() { echo "PASS $1"; }
fail() {
	echo "FAIL $1${2:+: $2}"
	n_failed=$((n_failed + 1))
}
check() { # check NAME COMMAND...
	local name="$1"
	shift
	if "$@"; then pass "$name"; else fail "$name"; fi
}

# podman with this test's configuration and storage only.
ROOTLESS=0
[ "$(id -u)" -eq 0 ] || ROOTLESS=1
pm() {
	podman --root "$TMP/storage" --runroot "$TMP/run" --storage-driver vfs "$@"
}
cleanup() {
	if command -v podman >/dev/null 2>&1 && [ -f "$TMP/containers.conf" ]; then
		pm pod rm -a -f >/dev/null 2>&1
		pm rm -a -f >/dev/null 2>&1
		pm volume rm -a -f >/dev/null 2>&1
		pm rmi -a -f >/dev/null 2>&1
		# Rootless storage holds files owned by sub-uids: remove them inside
		# the user namespace.
		[ "$ROOTLESS" -eq 0 ] || pm unshare rm -rf "$TMP/storage" >/dev/null 2>&1
	fi
	rm -rf "$TMP"
}
trap cleanup EXIT

# ---- prerequisites: a FAIL, never a silent skip --------------------------------
prereq_ok=1
for tool in podman runc go readelf musl-gcc; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		fail "prerequisite_$tool" "$tool not found (make deps installs tests/deps/containers.txt)"
		prereq_ok=0
	fi
done
for f in "$BUILD/stowaway" "$BUILD/libstowaway.so" "$WL/hello" "$WL/hello-musl" "$WL/demo"; do
	if [ ! -f "$f" ]; then
		fail "prerequisite_built" "$f missing (make test-build)"
		prereq_ok=0
	fi
done
[ "$prereq_ok" -eq 1 ] || exit 1

# runc (crun is not in Debian 12's default set), no default ulimits (the
# host's hard limits can be below podman's defaults), cgroupfs (no systemd
# needed), file events and locks under the temp dir.
mkdir -p "$TMP/tmpdir" "$TMP/cni"
cat >"$TMP/containers.conf" <<EOF
[containers]
default_ulimits = []
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
events_logfile_path = "$TMP/tmpdir/events.log"
tmp_dir = "$TMP/tmpdir"
[network]
network_config_dir = "$TMP/cni"
EOF
cat >"$TMP/storage.conf" <<EOF
[storage]
driver = "vfs"
graphroot = "$TMP/storage"
runroot = "$TMP/run"
EOF
export CONTAINERS_CONF="$TMP/containers.conf"
export CONTAINERS_STORAGE_CONF="$TMP/storage.conf"
export GOCACHE="$TMP/gocache" GOFLAGS="" PPROF_TMPDIR="$TMP/pproftmp" HOME="$TMP/home"
mkdir -p "$TMP/home" "$TMP/pproftmp"

if ! pm info >"$TMP/info.log" 2>&1; then
	fail podman_info "podman cannot run on this machine:"
	sed 's/^/    /' "$TMP/info.log" | tail -n 20
	exit 1
fi
pass podman_info
echo "    podman $(podman --version | awk '{print $3}'), runtime $(grep -A2 'ociRuntime:' "$TMP/info.log" | sed -n 's/.*name: //p'), rootless=$ROOTLESS"

# Common run flags: the production posture.
HARDENED=(--rm --network none --read-only --user 65534:65534 --cap-drop all --security-opt no-new-privileges)

# ---- images, built offline from staged local files --------------------------------
INIT_IMG="localhost/stowaway-init:$TAG"
build_image() { # build_image NAME TAG CTX [ARGS...]
	local name="$1" img="$2" ctx="$3"
	shift 3
	if pm build --pull=never --network=none "$@" -t "$img" "$ctx" >"$TMP/build-$name.log" 2>&1; then
		pass "image_builds_$name"
		return 0
	fi
	fail "image_builds_$name"
	tail -n 15 "$TMP/build-$name.log" | sed 's/^/    /'
	return 1
}

"$ROOT/docker/stage.sh" init "$TMP/ctx-init" "$BUILD/stowaway" "$BUILD/libstowaway.so" || fail stage_init
build_image init "$INIT_IMG" "$TMP/ctx-init" || exit 1

# The init image holds exactly the two files (no shell, no libc).
image_files() { # image_files IMAGE -> sorted regular files and symlinks of all layers
	local img="$1" dir="$TMP/save-$RANDOM"
	mkdir -p "$dir"
	pm save --format docker-archive -o "$dir/img.tar" "$img" >/dev/null 2>&1 || return 1
	tar -xf "$dir/img.tar" -C "$dir" || return 1
	python3 - "$dir" <<'EOF'
import json, sys, tarfile, os
d = sys.argv[1]
names = set()
for layer in json.load(open(os.path.join(d, "manifest.json")))[0]["Layers"]:
    with tarfile.open(os.path.join(d, layer)) as t:
        names.update(m.name.lstrip("./") for m in t.getmembers() if not m.isdir())
print("\n".join(sorted(names)))
EOF
	rm -rf "$dir"
}
check init_image_only_cli_and_library [ "$(image_files "$INIT_IMG" | tr '\n' ' ')" = "opt/stowaway/libstowaway.so opt/stowaway/stowaway " ]
check init_image_user_nonroot [ "$(pm image inspect --format '{{.Config.User}}' "$INIT_IMG")" = "65534:65534" ]

"$ROOT/docker/stage.sh" glibc "$TMP/ctx-glibc" "$WL/hello:hello" "$WL/demo:demo" || fail stage_glibc
"$ROOT/docker/stage.sh" musl "$TMP/ctx-musl" "$WL/hello-musl:hello" "$WL/demo-musl:demo" || fail stage_musl
FLAVORS=()
for flavor in glibc musl; do
	build_image "example_$flavor" "localhost/stowaway-example-$flavor:$TAG" "$TMP/ctx-$flavor" && FLAVORS+=("$flavor")
done
check image_glibc_distroless_shape [ "$(image_files "localhost/stowaway-example-glibc:$TAG" | tr '\n' ' ')" = \
	"app/demo app/hello etc/group etc/passwd lib/x86_64-linux-gnu/libc.so.6 lib64/ld-linux-x86-64.so.2 " ]
check image_musl_alpine_shape [ "$(image_files "localhost/stowaway-example-musl:$TAG" | tr '\n' ' ')" = \
	"app/demo app/hello etc/group etc/passwd lib/ld-musl-x86_64.so.1 " ]

# ---- path 2: the init container installs into a volume (an emptyDir: mode 0777) ----
LIBVOL="$TMP/vol-stowaway"
mkdir -p "$LIBVOL"
chmod 0777 "$LIBVOL"
pm run "${HARDENED[@]}" -v "$LIBVOL:/target" "$INIT_IMG" >"$TMP/init.out" 2>&1
rc=$?
check init_container_exit_0 [ "$rc" -eq 0 ]
check init_container_installs_library cmp -s "$LIBVOL/libstowaway.so" "$BUILD/libstowaway.so"
check init_container_installs_cli cmp -s "$LIBVOL/stowaway" "$BUILD/stowaway"
check init_container_files_only [ "$(ls -A "$LIBVOL" | tr '\n' ' ')" = "libstowaway.so stowaway " ]
check init_container_runs_as_nobody [ "$(stat -c %u "$LIBVOL/libstowaway.so")" = 65534 ] # rootful: uid seen as is
[ "$ROOTLESS" -eq 0 ] || echo "    (rootless: the uid check above compares mapped ids)"
# A second run (pod restart) replaces the files in place.
pm run "${HARDENED[@]}" -v "$LIBVOL:/target" "$INIT_IMG" >/dev/null 2>&1
check init_container_rerun_exit_0 [ $? -eq 0 ]

# ---- judging profiles ----------------------------------------------------------------
# valid_profiles NAME DIR SERVICE [KINDS]: every kind of KINDS (default: the
# four) present, every file named SERVICE.PID.KIND.SEQ.pb.gz, owned by 65534,
# parsed by go tool pprof -raw; the raw dumps of each kind are concatenated
# into DIR.KIND.raw.  A process writes at its exit only the kinds it has
# samples of: hello, a few milliseconds, is sure of none but the allocations
# it is run to sample every one of (STOWAWAY_ALLOC_SAMPLE_BYTES=1).
valid_profiles() {
	local name="$1" dir="$2" service="$3" kinds="${4:-cpu wall alloc heap}" f base kind bad=""
	for kind in cpu wall alloc heap; do
		: >"$dir.$kind.raw"
	done
	for kind in $kinds; do
		ls "$dir/$service".*."$kind".*.pb.gz >/dev/null 2>&1 || bad="$bad missing-$kind"
	done
	for f in "$dir"/*; do
		[ -e "$f" ] || {
			bad="$bad no-files"
			break
		}
		base=$(basename "$f")
		kind=$(echo "$base" | sed -n "s/^$service\.[0-9]*\.\(cpu\|wall\|alloc\|heap\)\.[0-9]*\.[0-9a-f]\{8\}\.pb\.gz\$/\1/p")
		if [ -z "$kind" ]; then
			bad="$bad unexpected-file:$base"
			continue
		fi
		[ "$ROOTLESS" -eq 1 ] || [ "$(stat -c %u "$f")" = 65534 ] || bad="$bad owner:$base"
		if ! go tool pprof -raw "$f" >>"$dir.$kind.raw" 2>"$TMP/pprof.err"; then
			bad="$bad invalid:$base"
			sed 's/^/    /' "$TMP/pprof.err"
		fi
	done
	if [ -z "$bad" ]; then
		pass "$name"
	else
		fail "$name" "$bad"
	fi
}
raw_has() { # raw_has RAWFILE FUNCTION: a sampled location is in FUNCTION (or a gcc clone of it)
	grep -Eq "^ +[0-9]+: 0x[0-9a-f]+ M=[0-9]+ $2(\.[a-z]+\.[0-9]+)? " "$1"
}

PRELOAD_ENV=(-e LD_PRELOAD=/opt/stowaway/libstowaway.so -e DD_PROFILING_ENABLED=true
	-e STOWAWAY_OUTPUT_DIR=/profiles)
outvol() { # outvol NAME -> a fresh output directory writable by nobody
	mkdir -p "$TMP/out/$1"
	chown 65534:65534 "$TMP/out/$1" 2>/dev/null || chmod 0777 "$TMP/out/$1"
	echo "$TMP/out/$1"
}
# run_app NAME IMAGE [PODMAN-ARGS...] -- CMD...: stdout, stderr, status in $TMP/NAME.*
run_app() {
	local name="$1"
	shift
	pm run "${HARDENED[@]}" "$@" >"$TMP/$name.stdout" 2>"$TMP/$name.stderr"
	echo $? >"$TMP/$name.rc"
}
same_output() { # same_output REF GOT [stdout]: stdout, stderr (unless "stdout") and exit status identical
	if cmp -s "$TMP/$1.stdout" "$TMP/$2.stdout" && cmp -s "$TMP/$1.rc" "$TMP/$2.rc" &&
		{ [ "${3:-}" = stdout ] || cmp -s "$TMP/$1.stderr" "$TMP/$2.stderr"; }; then
		return 0
	fi
	echo "    $1 vs $2:"
	diff "$TMP/$1.stdout" "$TMP/$2.stdout" | sed 's/^/      stdout /'
	diff "$TMP/$1.stderr" "$TMP/$2.stderr" | sed 's/^/      stderr /'
	echo "      status $(cat "$TMP/$1.rc") vs $(cat "$TMP/$2.rc")"
	return 1
}

for flavor in "${FLAVORS[@]}"; do
	img="localhost/stowaway-example-$flavor:$TAG"
	# Reference: the image as shipped, without the library.
	run_app "ref-$flavor" "$img" /app/hello one 3
	check "app_${flavor}_runs_without_library" bash -c "[ \"\$(cat '$TMP/ref-$flavor.rc')\" = 3 ] &&
		grep -qx 'hello 3 one' '$TMP/ref-$flavor.stdout' && grep -qx 'thread ok' '$TMP/ref-$flavor.stdout'"

	# Init-container injection: library volume read-only, output volume, LD_PRELOAD.
	out=$(outvol "hello-$flavor")
	run_app "hello-$flavor" -v "$LIBVOL:/opt/stowaway:ro" -v "$out:/profiles" "${PRELOAD_ENV[@]}" \
		-e DD_SERVICE="hello-$flavor" -e STOWAWAY_ALLOC_SAMPLE_BYTES=1 "$img" /app/hello one 3
	check "app_${flavor}_output_unchanged_with_library" same_output "ref-$flavor" "hello-$flavor"
	valid_profiles "app_${flavor}_hello_profiles_valid" "$out" "hello-$flavor" alloc

	# A program that works: periodic profiles (1 s) with the functions it runs.
	out=$(outvol "demo-$flavor")
	run_app "demo-$flavor" -v "$LIBVOL:/opt/stowaway:ro" -v "$out:/profiles" "${PRELOAD_ENV[@]}" \
		-e DD_SERVICE="demo-$flavor" -e DD_PROFILING_UPLOAD_PERIOD=1 "$img" /app/demo 3
	if [ "$(cat "$TMP/demo-$flavor.rc")" = 0 ] && grep -q '^demo: small ' "$TMP/demo-$flavor.stdout" &&
		[ ! -s "$TMP/demo-$flavor.stderr" ]; then
		pass "app_${flavor}_demo_exit_0"
	else
		fail "app_${flavor}_demo_exit_0"
		# What the failing run said, for the log: status, both streams, the files it wrote.
		echo "    demo-$flavor: status $(cat "$TMP/demo-$flavor.rc"); output and files:"
		head -c 1200 "$TMP/demo-$flavor.stdout" "$TMP/demo-$flavor.stderr" | sed 's/^/      /'
		ls -la "$out" | sed 's/^/      /'
		pm ps -a --format '{{.Names}} {{.Status}}' 2>&1 | tail -n 5 | sed 's/^/      podman: /'
	fi
	valid_profiles "app_${flavor}_demo_profiles_valid" "$out" "demo-$flavor"
	ncpu=$(ls "$out"/demo-"$flavor".*.cpu.*.pb.gz 2>/dev/null | wc -l)
	check "app_${flavor}_demo_periodic_files" [ "$ncpu" -ge 2 ]
	check "app_${flavor}_cpu_hash_block" raw_has "$out.cpu.raw" hash_block
	check "app_${flavor}_cpu_count_primes" raw_has "$out.cpu.raw" count_primes
	check "app_${flavor}_wall_nap" raw_has "$out.wall.raw" nap
	check "app_${flavor}_alloc_make_large" raw_has "$out.alloc.raw" make_large
	check "app_${flavor}_heap_make_large" raw_has "$out.heap.raw" make_large

	# A container restart starts the program again as pid 1 with the same
	# service and output volume: the first run's profiles must survive.
	if [ "$flavor" = glibc ]; then
		out=$(outvol "restart-$flavor")
		for run in 1 2; do
			run_app "restart-$flavor-$run" -v "$LIBVOL:/opt/stowaway:ro" -v "$out:/profiles" "${PRELOAD_ENV[@]}" \
				-e DD_SERVICE=restart -e STOWAWAY_ALLOC_SAMPLE_BYTES=1 "$img" /app/hello one 3
		done
		# both runs' files (by runtime id), each with its allocation profile
		n=$(ls "$out" | grep '^restart\.1\.alloc\.' | cut -d. -f5 | sort -u | wc -l)
		check "restart_keeps_previous_profiles" [ "$n" -eq 2 ]
		echo "    after two runs: $(ls "$out" | tr '\n' ' ')"
	fi

	# No network, no output directory: the agent exporter's connection fails;
	# the program must not notice (a warning on stderr is allowed).
	run_app "agent-$flavor" -v "$LIBVOL:/opt/stowaway:ro" -e LD_PRELOAD=/opt/stowaway/libstowaway.so \
		-e DD_PROFILING_ENABLED=true -e DD_AGENT_HOST=127.0.0.1 \
		"$img" /app/hello one 3
	check "app_${flavor}_agent_unreachable_output_unchanged" same_output "ref-$flavor" "agent-$flavor" stdout

	# ---- path 1: the library copied into the image (docker/bundled) --------------------
	bimg="localhost/stowaway-example-$flavor-bundled:$TAG"
	if build_image "bundled_$flavor" "$bimg" "$ROOT/docker/bundled" \
		--build-arg APP_IMAGE="$img" --build-arg STOWAWAY_IMAGE="$INIT_IMG"; then
		out=$(outvol "bundled-$flavor")
		run_app "bundled-$flavor" -v "$out:/profiles" -e STOWAWAY_OUTPUT_DIR=/profiles \
			-e DD_SERVICE="bundled-$flavor" -e STOWAWAY_ALLOC_SAMPLE_BYTES=1 "$bimg" /app/hello one 3
		check "bundled_${flavor}_output_unchanged" same_output "ref-$flavor" "bundled-$flavor"
		valid_profiles "bundled_${flavor}_profiles_valid" "$out" "bundled-$flavor" alloc
	fi
done
[ "${#FLAVORS[@]}" -eq 2 ] || fail example_images_built "${FLAVORS[*]}"

# ---- the Kubernetes examples, run by `podman kube play` ---------------------------
# Each Deployment's pod template becomes a Pod (podman 4.3 restarts init
# containers of Deployments forever), with restartPolicy Never, the local
# images, and the demo as the application's command.  podman applies the
# init container, the emptyDir, the downward API env, runAsUser and the
# read-only root filesystem; it ignores subPathExpr and cannot resolve
# status.hostIP (replaced by 127.0.0.1: with --network none the agent
# upload fails, which the application must not notice).
kube_pod() { # kube_pod DEPLOYMENT-YAML OUT-YAML APP-IMAGE
	python3 - "$1" "$2" "$INIT_IMG" "$3" <<'PY'
import sys, yaml
src, dst, init_img, app_img = sys.argv[1:5]
out = []
for d in yaml.safe_load_all(open(src)):
    if d and d.get("kind") == "Deployment":
        t = d["spec"]["template"]
        spec = t["spec"]
        spec["restartPolicy"] = "Never"
        spec["initContainers"][0]["image"] = init_img
        spec["containers"][0]["image"] = app_img
        spec["containers"][0]["command"] = ["/app/demo", "2"]
        # podman has no node: status.hostIP becomes a literal address.
        for e in spec["containers"][0]["env"]:
            if e.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") == "status.hostIP":
                e.pop("valueFrom")
                e["value"] = "127.0.0.1"
        d = {"apiVersion": "v1", "kind": "Pod", "metadata": dict(t["metadata"], name="shop"), "spec": spec}
    if d:
        out.append(d)
yaml.safe_dump_all(out, open(dst, "w"))
PY
}
# The application image as root (USER 0): the manifests' runAsUser must win.
mkdir -p "$TMP/ctx-root"
printf 'FROM localhost/stowaway-example-glibc:%s\nUSER 0:0\n' "$TAG" >"$TMP/ctx-root/Containerfile"
build_image example_glibc_root "localhost/stowaway-example-glibc-root:$TAG" "$TMP/ctx-root"
for manifest in deployment deployment-airgapped; do
	name=kube_${manifest//-/_}
	app_img="localhost/stowaway-example-glibc-root:$TAG"
	if ! kube_pod "$ROOT/docker/kubernetes/$manifest.yaml" "$TMP/$manifest.pod.yaml" "$app_img"; then
		fail "${name}_converts"
		continue
	fi
	if ! pm kube play --network none "$TMP/$manifest.pod.yaml" >"$TMP/$name.log" 2>&1; then
		fail "${name}_plays"
		tail -n 10 "$TMP/$name.log" | sed 's/^/    /'
		pm pod rm -f shop >/dev/null 2>&1
		pm volume rm -f -a >/dev/null 2>&1
		continue
	fi
	pass "${name}_plays"
	rc=$(timeout 60 podman --root "$TMP/storage" --runroot "$TMP/run" --storage-driver vfs wait shop-app 2>&1)
	check "${name}_app_exit_0" [ "$rc" = 0 ]
	pm logs shop-app >"$TMP/$name.stdout" 2>"$TMP/$name.stderr"
	# stderr: empty when air-gapped; the agent variant may warn that the
	# upload failed (no network here).
	check "${name}_app_output" bash -c "grep -q '^demo: small ' '$TMP/$name.stdout' &&
		{ [ $manifest = deployment ] || [ ! -s '$TMP/$name.stderr' ]; }"
	sed 's/^/    stderr: /' "$TMP/$name.stderr"
	pm inspect shop-app --format '{{range .Config.Env}}{{println .}}{{end}}' >"$TMP/$name.env" 2>&1
	check "${name}_downward_api_env" bash -c "grep -qx DD_SERVICE=shop '$TMP/$name.env' &&
		grep -qx DD_ENV=prod '$TMP/$name.env' && grep -qx DD_VERSION=1.4.2 '$TMP/$name.env' &&
		grep -qx LD_PRELOAD=/opt/stowaway/libstowaway.so '$TMP/$name.env'"
	posture=$(pm inspect shop-app --format '{{.Config.User}} {{.HostConfig.ReadonlyRootfs}}' 2>&1)
	check "${name}_runs_as_nobody_read_only" [ "$posture" = "65534:65534 true" ]
	echo "    user, read-only: $posture"
	if [ "$manifest" = deployment ]; then
		check "${name}_agent_host_set" grep -qx 'DD_AGENT_HOST=127.0.0.1' "$TMP/$name.env"
	else
		vol=$(pm volume inspect shop-profiles --format '{{.Mountpoint}}' 2>/dev/null)
		if [ -n "$vol" ] && [ -d "$vol" ]; then
			valid_profiles "${name}_profiles_in_volume" "$vol" shop
			check "${name}_cpu_hash_block" raw_has "$vol.cpu.raw" hash_block
		else
			fail "${name}_profiles_in_volume" "no volume shop-profiles"
		fi
	fi
	pm pod rm -f shop >/dev/null 2>&1
	pm volume rm -f -a >/dev/null 2>&1
done

[ "$n_failed" -eq 0 ]
