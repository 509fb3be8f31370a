#!/usr/bin/env bash
# Fetches Apache Kafka's tools (kafka-tools 4.4.0 and its runtime dependencies, from Maven
# Central) into compat-tests/cli/lib, once; again only when pom.xml changes.
# Used by cli/run.sh and by compat-tests/kafka-home (the KAFKA_PATH librdkafka's tests use).
set -u
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
lib="$here/lib"
kafka_version=4.4.0
stamp="$(sha256sum "$here/pom.xml" | cut -d' ' -f1)"
if [ -f "$lib/kafka-tools-$kafka_version.jar" ] && [ "$(cat "$lib/.pom-sha256" 2>/dev/null)" = "$stamp" ]; then
    exit 0
fi
echo "fetching kafka-tools $kafka_version and dependencies into $lib ..."
rm -rf "$lib"
mvn -q -B -ntp -f "$here/pom.xml" dependency:copy-dependencies || exit 1
echo "$stamp" >"$lib/.pom-sha256"
