#!/usr/bin/env bash
# The launcher of a Kafka install, for the tools librdkafka's tests run from $KAFKA_PATH/bin:
# runs a class with $CLASSPATH and every jar in ../libs (Kafka's jars from Maven Central,
# linked there by compat-tests/librdkafka/run).
home="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# A small heap and the C1 compiler only: these tools are short-lived.
exec java ${KAFKA_HEAP_OPTS:--Xmx256m} -XX:TieredStopAtLevel=1 -cp "${CLASSPATH:+$CLASSPATH:}$home/libs/*" "$@"
