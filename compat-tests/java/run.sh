#!/usr/bin/env bash
# Runs the Java (kafka-clients 4.4.0) compatibility tests against a sluice binary.
#
#   compat-tests/java/run.sh [extra maven args, e.g. -Dtest=AdminTest]
#
# SLUICE_BIN overrides the broker binary (default: <repo>/target/release/sluice).
# Each test class starts and stops its own broker; broker logs land in target/sluice-logs/.
# Exits with Maven's exit code; prints "java: N passed, M failed, K skipped" at the end.
set -u
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

if [ -n "${SLUICE_BIN:-}" ]; then
    # Absolute, so a path relative to the caller's directory still works inside the Maven project.
    case "$SLUICE_BIN" in
        /*) ;;
        *) SLUICE_BIN="$PWD/$SLUICE_BIN" ;;
    esac
    export SLUICE_BIN
    echo "java: using SLUICE_BIN=$SLUICE_BIN"
fi
cd "$here"

rm -rf target/surefire-reports
mvn -B -q -ntp -Dsurefire.printSummary=true test "$@"
rc=$?

tests=0; failures=0; errors=0; skipped=0
for report in target/surefire-reports/TEST-*.xml; do
    [ -f "$report" ] || continue
    header="$(grep -m1 -o '<testsuite [^>]*>' "$report")"
    attr() { printf '%s' "$header" | sed -n "s/.* $1=\"\([0-9]*\)\".*/\1/p"; }
    tests=$((tests + $(attr tests)))
    failures=$((failures + $(attr failures)))
    errors=$((errors + $(attr errors)))
    skipped=$((skipped + $(attr skipped)))
done
failed=$((failures + errors))
passed=$((tests - failed - skipped))
if [ "$rc" -ne 0 ] && [ "$tests" -eq 0 ]; then
    echo "java: maven exited $rc before any test ran"
fi
echo "java: ${passed} passed, ${failed} failed, ${skipped} skipped"
exit "$rc"
