#!/usr/bin/env bash
# Apache Kafka by hand, on 127.0.0.1 until Ctrl-C (jars from Maven Central, cached): the broker the tests use.
#   bash scripts/kafka.sh                 one KRaft node (broker+controller), PLAINTEXT
#   bash scripts/kafka.sh --nodes 3       three nodes, replication factor 3, min.insync.replicas 2
#   bash scripts/kafka.sh --security      + SSL, SASL_PLAINTEXT, SASL_SSL listeners, SCRAM/PLAIN users, an authorizer
#   bash scripts/kafka.sh --version 4.0.2 --feature transaction.version=1
# It prints the bootstrap addresses, then waits; every JVM it started is killed when it ends.
source "$(dirname "$0")/env.sh"
exec python "$ROOT/tests/apache_kafka.py" "$@"
