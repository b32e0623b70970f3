#!/usr/bin/env bash
# The main job: builds and installs cykafka into .venv, then runs the demo pipeline against an embedded broker and
# verifies every record with an independent consumer. Extra arguments go to `cykafka demo` (see --help).
export CYKAFKA_EXTRAS="${CYKAFKA_EXTRAS:-dev,spark}"  # the demo is a Spark pipeline
source "$(dirname "$0")/env.sh"
# Spark's Python workers put their working directory first on sys.path: run away from the source tree, whose cykafka/
# would shadow the installed package (as scripts/test.sh runs pytest from tests/)
mkdir -p "$ROOT/build/demo" && cd "$ROOT/build/demo"
exec cykafka demo "$@"
