#!/usr/bin/env bash
# Fetches the jars a pom.xml names (Apache Kafka 4.4.0 artifacts and their runtime dependencies,
# from Maven Central, through the local Maven cache) into DIR/lib, once; again only when DIR's
# pom.xml changes.
#
#   compat-tests/cli/fetch-lib.sh [DIR]     # DIR defaults to compat-tests/cli (kafka-tools)
#
# Used by cli/run.sh and compat-tests/kafka-home (the KAFKA_PATH librdkafka's tests use) for
# Kafka's tools, and by connect/run.sh for Kafka Connect.
set -u
here="$(cd "${1:-$(dirname "${BASH_SOURCE[0]}")}" && pwd)"
lib="$here/lib"
stamp="$(sha256sum "$here/pom.xml" | cut -d' ' -f1)"
if [ "$(cat "$lib/.pom-sha256" 2>/dev/null)" = "$stamp" ]; then
    exit 0
fi
echo "fetching the jars $here/pom.xml names into $lib ..."
rm -rf "$lib"
mvn -q -B -ntp -f "$here/pom.xml" dependency:copy-dependencies || exit 1
echo "$stamp" >"$lib/.pom-sha256"
