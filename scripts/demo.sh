#!/usr/bin/env bash
# The main job: builds and installs cykafka into .venv, then runs the demo pipeline against an embedded broker and
# verifies every record with an independent consumer. Extra arguments go to `cykafka demo` (see --help).
export CYKAFKA_EXTRAS="${CYKAFKA_EXTRAS:-dev,spark}"  # the demo is a Spark pipeline
source "$(dirname "$0")/env.sh"
exec cykafka demo "$@"
