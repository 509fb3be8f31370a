# Sourced by run.sh (needs its tool, pass, fail, $bootstrap, $out, $err): Kafka 4.4's
# kafka-client-metrics (org.apache.kafka.tools.ClientMetricsCommand) on client-metrics resources.
CLIENT_METRICS=org.apache.kafka.tools.ClientMetricsCommand

if tool "$CLIENT_METRICS" --bootstrap-server "$bootstrap" --alter --name cli-sub --metrics org.apache.kafka.producer. \
        --interval 2000 --match 'client_id=cli-.*' >"$out" 2>"$err" \
    && grep -qx "Altered client metrics config for cli-sub." "$out"; then
    pass "ClientMetricsCommand --alter --name cli-sub --metrics … --interval 2000 --match client_id=cli-.*"
else
    fail "ClientMetricsCommand --alter --name cli-sub --metrics … --interval 2000 --match client_id=cli-.*" "$out" "$err"
fi

if tool "$CLIENT_METRICS" --bootstrap-server "$bootstrap" --describe --name cli-sub >"$out" 2>"$err" \
    && grep -qE "interval.ms=2000" "$out" && grep -qE "metrics=org.apache.kafka.producer." "$out" \
    && grep -qE "match=client_id=cli-\.\*" "$out"; then
    pass "ClientMetricsCommand --describe --name cli-sub shows its metrics, interval and match"
else
    fail "ClientMetricsCommand --describe --name cli-sub shows its metrics, interval and match" "$out" "$err"
fi

if tool "$CLIENT_METRICS" --bootstrap-server "$bootstrap" --list >"$out" 2>"$err" && grep -qx "cli-sub" "$out"; then
    pass "ClientMetricsCommand --list shows cli-sub"
else
    fail "ClientMetricsCommand --list shows cli-sub" "$out" "$err"
fi

if ! tool "$CLIENT_METRICS" --bootstrap-server "$bootstrap" --alter --name cli-bad --interval 5 >"$out" 2>"$err" \
    && grep -qF "Invalid value 5 for interval.ms, interval must be between 100 and 3600000 (1 hour)" "$out" "$err"; then
    pass "ClientMetricsCommand --interval 5 refused with Kafka's INVALID_REQUEST reason"
else
    fail "ClientMetricsCommand --interval 5 refused with Kafka's INVALID_REQUEST reason" "$out" "$err"
fi
