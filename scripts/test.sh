#!/usr/bin/env bash
# The whole check: builds and installs cykafka into .venv, then ruff, mypy --strict, the API reference (build/api)
# and the full pytest suite.
# Extra arguments go to pytest (e.g. scripts/test.sh -k broker).
export CYKAFKA_EXTRAS="${CYKAFKA_EXTRAS:-dev,spark}"  # the Spark tests run in CI too
source "$(dirname "$0")/env.sh"
echo "== ruff"
ruff check .
echo "== mypy --strict (cykafka, ports, adapters)"
bash scripts/typecheck.sh
echo "== API reference (docs/api: Sphinx autodoc over the installed package, warnings are errors)"
sphinx-build -E -W -q -b html docs/api build/api
echo "== pytest"
# run from tests/ so the source tree's cykafka/ cannot shadow the installed package
cd "$ROOT/tests" && exec pytest -c "$ROOT/pyproject.toml" --rootdir "$ROOT" "$@"
