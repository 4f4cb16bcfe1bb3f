#!/usr/bin/env bash
# untracked helper: lean bundle of the CLI + named gpu test binaries into carry-dev/
set -eu
cd "$(dirname "$0")/.."
S=$(mktemp -d); mkdir -p "$S/cache"
strip -o "$S/kiln" build/tools/kiln
for t in "$@"; do strip -o "$S/$t" "build/tests/$t"; done
rm -rf carry-dev && mkdir -p carry-dev
tar -C "$S" -cf - . | xz -1 -T2 > carry-dev/bundle.tar.xz
rm -rf "$S"; du -sh carry-dev
