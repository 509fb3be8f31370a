# Sourced by run.sh (needs its tool, pass, fail, $bootstrap, $out, $err): Kafka 4.4's
# kafka-features (org.apache.kafka.tools.FeatureCommand) against the broker run.sh started.
FEATURES=org.apache.kafka.tools.FeatureCommand

# Prints the FinalizedVersionLevel `describe` shows for feature $1.
finalized_level() {
    tool "$FEATURES" --bootstrap-server "$bootstrap" describe >"$out" 2>"$err" || return 1
    grep -E "^Feature: $1[[:space:]]" "$out" | sed -E 's/.*FinalizedVersionLevel: ([^[:space:]]+).*/\1/'
}

if tool "$FEATURES" --bootstrap-server "$bootstrap" describe >"$out" 2>"$err" \
    && grep -qE "^Feature: metadata.version[[:space:]]+SupportedMinVersion: 3.3-IV3[[:space:]]+SupportedMaxVersion: 4.4-IV2[[:space:]]+FinalizedVersionLevel: 4.4-IV2" "$out" \
    && grep -qE "^Feature: transaction.version[[:space:]]+SupportedMinVersion: 0[[:space:]]+SupportedMaxVersion: 2[[:space:]]+FinalizedVersionLevel: 2" "$out" \
    && grep -qE "^Feature: group.version[[:space:]]+SupportedMinVersion: 0[[:space:]]+SupportedMaxVersion: 1[[:space:]]+FinalizedVersionLevel: 1" "$out" \
    && grep -qE "^Feature: kraft.version[[:space:]]+SupportedMinVersion: 0[[:space:]]+SupportedMaxVersion: 1[[:space:]]+FinalizedVersionLevel: 1" "$out" \
    && ! grep -qE "^Feature: (share|streams).version" "$out"; then
    pass "FeatureCommand describe: metadata.version 4.4-IV2, transaction.version 2, group.version 1, kraft.version 1; no share/streams levels claimed"
else
    fail "FeatureCommand describe: metadata.version 4.4-IV2, transaction.version 2, group.version 1, kraft.version 1; no share/streams levels claimed" "$out" "$err"
fi

if tool "$FEATURES" --bootstrap-server "$bootstrap" downgrade --feature transaction.version=1 --dry-run >"$out" 2>"$err" \
    && grep -qx "transaction.version can be downgraded to 1." "$out" && [ "$(finalized_level transaction.version)" = 2 ]; then
    pass "FeatureCommand downgrade --feature transaction.version=1 --dry-run: accepted, level still 2"
else
    fail "FeatureCommand downgrade --feature transaction.version=1 --dry-run: accepted, level still 2" "$out" "$err"
fi

if tool "$FEATURES" --bootstrap-server "$bootstrap" downgrade --feature transaction.version=1 >"$out" 2>"$err" \
    && grep -qx "transaction.version was downgraded to 1." "$out" && [ "$(finalized_level transaction.version)" = 1 ]; then
    pass "FeatureCommand downgrade --feature transaction.version=1, then describe shows 1"
else
    fail "FeatureCommand downgrade --feature transaction.version=1, then describe shows 1" "$out" "$err"
fi

if tool "$FEATURES" --bootstrap-server "$bootstrap" upgrade --feature transaction.version=2 >"$out" 2>"$err" \
    && grep -qx "transaction.version was upgraded to 2." "$out" && [ "$(finalized_level transaction.version)" = 2 ]; then
    pass "FeatureCommand upgrade --feature transaction.version=2, then describe shows 2"
else
    fail "FeatureCommand upgrade --feature transaction.version=2, then describe shows 2" "$out" "$err"
fi

# Bad input: Kafka's INVALID_UPDATE_VERSION reasons, and the tool exits non-zero.
refused() {
    local what="$1" want="$2"
    shift 2
    if ! tool "$FEATURES" --bootstrap-server "$bootstrap" "$@" >"$out" 2>"$err" && grep -qF "$want" "$out"; then
        pass "FeatureCommand $what refused: $want"
    else
        fail "FeatureCommand $what refused: $want" "$out" "$err"
    fi
}
refused "upgrade --feature group.version=5" \
    "Could not upgrade group.version to 5. Invalid update version 5 for feature group.version. Local controller 1 only supports versions 0-1" \
    upgrade --feature group.version=5
refused "upgrade --feature share.version=1" \
    "Invalid update version 1 for feature share.version. Local controller 1 does not support this feature." \
    upgrade --feature share.version=1
refused "downgrade --metadata 3.9" \
    "Unsupported metadata.version downgrade from 33 to 21. Refusing to perform the requested downgrade because it might delete metadata information." \
    downgrade --metadata 3.9
refused "downgrade --unsafe --metadata 4.4-IV1" \
    "Unsupported metadata.version downgrade from 33 to 32. Unsafe metadata downgrade is not supported in this version." \
    downgrade --unsafe --metadata 4.4-IV1
if [ "$(finalized_level metadata.version)" = 4.4-IV2 ]; then
    pass "FeatureCommand: metadata.version still 4.4-IV2 after the refused downgrades"
else
    fail "FeatureCommand: metadata.version still 4.4-IV2 after the refused downgrades" "$out" "$err"
fi
