#!/usr/bin/env bash
# Runs rust-rdkafka (the `rdkafka` crate, pinned in Cargo.lock) against a sluice binary and writes
# its client matrix rows to target/test-logs/matrix-rdkafka.tsv.
#
#   compat-tests/rdkafka/run.sh
#
# The crate links librdkafka dynamically: the one compat-tests/librdkafka/run builds from the
# rdkafka-sys crate's source and caches (`--build-only`: built once, a few minutes), found
# through a pkg-config file written here. SLUICE_BIN overrides the broker binary. Prints
# PASS:/FAIL: lines and "rdkafka: N passed, M failed".
set -u
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
if [ -n "${SLUICE_BIN:-}" ]; then
    case "$SLUICE_BIN" in /*) ;; *) SLUICE_BIN="$PWD/$SLUICE_BIN" ;; esac
    export SLUICE_BIN
fi
die() { echo "rdkafka: $*"; echo "rdkafka: 0 passed, 1 failed"; exit 1; }

"$repo/compat-tests/librdkafka/run" --build-only >/dev/null || die "building librdkafka failed (compat-tests/librdkafka/run --build-only)"
version="$(sed -n 's/^RDKAFKA_SYS_VERSION="${RDKAFKA_SYS_VERSION:-\([^}]*\)}".*/\1/p' "$repo/compat-tests/librdkafka/run")"
lib="${SLUICE_CACHE:-$HOME/.cache/sluice}/librdkafka-${RDKAFKA_SYS_VERSION:-$version}/src"
[ -f "$lib/librdkafka.so.1" ] || die "no librdkafka.so.1 in $lib"
pc="$here/target/pkgconfig"
mkdir -p "$pc"
cat >"$pc/rdkafka.pc" <<PC
libdir=$lib
includedir=$lib
Name: librdkafka
Description: librdkafka as built by compat-tests/librdkafka/run
Version: ${version##*+}
Cflags: -I\${includedir}
Libs: -L\${libdir} -lrdkafka
PC
export PKG_CONFIG_PATH="$pc${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
export LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
cd "$here"
cargo build --release --locked -q 2>&1 | tail -20
[ "${PIPESTATUS[0]}" -eq 0 ] || die "cargo build failed"
exec target/release/sluice-compat-rdkafka
