#!/usr/bin/env bash
# mypy --strict over the source tree as it installs: a tree of links,
# build/typecheck/cykafka/{errors,protocol,core,ports,adapters}, mirrors setup.py's package_dir so mypy sees one
# package `cykafka` (the compiled core through its .pyi stubs).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
TREE="$ROOT/build/typecheck"
rm -rf "$TREE" && mkdir -p "$TREE/cykafka"
for f in "$ROOT"/cykafka/*; do ln -s "$f" "$TREE/cykafka/"; done
for d in errors protocol core ports adapters; do ln -s "$ROOT/$d" "$TREE/cykafka/$d"; done
cd "$TREE" && mypy --config-file "$ROOT/pyproject.toml" --cache-dir "$ROOT/build/mypy_cache" -p cykafka
