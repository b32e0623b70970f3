# Sourced by scripts/demo.sh and scripts/test.sh: creates .venv with Python >= 3.11, installs the build tools and
# cykafka with the extras in $CYKAFKA_EXTRAS (a real, non-editable install: tests run against what a user gets).
set -euo pipefail
# stunnel4 terminates TLS in front of the test broker (tests/test_security_tls.py); installed when missing and root
if ! command -v stunnel4 >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq stunnel4) >/dev/null 2>&1 \
        || echo "warning: could not install stunnel4; the TLS tests will skip" >&2
fi
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PYTHON="${PYTHON:-python3}"
"$PYTHON" -c 'import sys; assert sys.version_info >= (3, 11), "cykafka needs Python >= 3.11"'
if [ ! -x .venv/bin/python ]; then
    "$PYTHON" -m venv .venv
fi
VENV="$ROOT/.venv"
PIP=("$VENV/bin/python" -m pip install --quiet --disable-pip-version-check)
"${PIP[@]}" "setuptools>=77" "cython>=3.0"  # as pyproject's build-system
"${PIP[@]}" --no-build-isolation ".[${CYKAFKA_EXTRAS:-dev}]"
export PATH="$VENV/bin:$PATH"
