#!/usr/bin/env bash
# Exports the committed source tree (git archive HEAD) into DIR for a clean
# build in the build image, plus the verified mbedTLS source tarball from
# build/vendor (run vendor/fetch-mbedtls.sh once with network to get it), so
# the build itself needs no network.
#   docker/build/export-source.sh DIR
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
dir=${1:?usage: export-source.sh DIR}
mkdir -p "$dir/build/vendor"
git -C "$root" archive --format=tar HEAD | tar -x -C "$dir"
"$root/vendor/fetch-mbedtls.sh" "$root/build/vendor" >/dev/null
cp "$root"/build/vendor/mbedtls_*.orig.tar.* "$dir/build/vendor/"
