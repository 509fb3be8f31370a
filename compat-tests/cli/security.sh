# Sourced by run.sh (it uses its tool, pass, fail, free_port, port_open, stop_broker, $pid, $tmp):
# Kafka's kafka-configs (SCRAM users) and kafka-acls against a second broker whose one listener
# is SASL_SSL (TLS with a PEM keystore, then SASL PLAIN or SCRAM-SHA-512), with StandardAuthorizer
# and User:admin the only super user. Every tool runs with --command-config pointing at a SASL_SSL
# client config; results are checked by listing and by clients being allowed or refused.

ACLS=org.apache.kafka.tools.AclCommand
PERF=org.apache.kafka.tools.ProducerPerformance

stop_broker
ssl="$tmp/ssl"
mkdir -p "$ssl"
if ! (cd "$ssl" &&
    openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 2 -subj "/CN=sluice cli test ca" &&
    openssl req -newkey rsa:2048 -nodes -keyout broker.key -out broker.csr -subj /CN=localhost &&
    printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' >broker.ext &&
    openssl x509 -req -in broker.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out broker.pem -days 2 \
        -extfile broker.ext &&
    cat broker.key broker.pem >broker-keystore.pem) >"$tmp/openssl.log" 2>&1; then
    fail "openssl makes the certificates of the SASL_SSL broker" "$tmp/openssl.log"
    return
fi

sport="$(free_port)"
sbootstrap="127.0.0.1:$sport"
slog="$tmp/sluice-secured.log"
# A single node has no inter-broker links, so SASL on its only listener needs no broker login.
"$SLUICE_BIN" serve --data-dir "$tmp/data-secured" --node-id 1 \
    --set "listeners=SASL_SSL://$sbootstrap" --set "advertised.listeners=SASL_SSL://$sbootstrap" \
    --set security.inter.broker.protocol=SASL_SSL \
    --set ssl.keystore.type=PEM --set "ssl.keystore.location=$ssl/broker-keystore.pem" \
    --set ssl.truststore.type=PEM --set "ssl.truststore.location=$ssl/ca.pem" \
    --set sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-512 \
    --set 'listener.name.sasl_ssl.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_admin="admin-plain";' \
    --set authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer \
    --set super.users=User:admin \
    </dev/null >"$slog" 2>&1 &
pid=$!
ready=0
for _ in $(seq 1 $((start_timeout * 10))); do
    if ! kill -0 "$pid" 2>/dev/null; then break; fi
    if port_open "$sport"; then ready=1; break; fi
    sleep 0.1
done
if [ "$ready" -ne 1 ]; then
    fail "the SASL_SSL broker starts on $sbootstrap" "$slog"
    return
fi
echo "sluice pid $pid serving SASL_SSL on $sbootstrap (log: $slog)"

client_conf() { # file mechanism user password
    local module=scram.ScramLoginModule
    [ "$2" = PLAIN ] && module=plain.PlainLoginModule
    cat >"$1" <<EOF
security.protocol=SASL_SSL
ssl.truststore.type=PEM
ssl.truststore.location=$ssl/ca.pem
sasl.mechanism=$2
sasl.jaas.config=org.apache.kafka.common.security.$module required username="$3" password="$4";
EOF
}
client_conf "$tmp/plain-admin.properties" PLAIN admin admin-plain
client_conf "$tmp/admin.properties" SCRAM-SHA-512 admin admin-secret
client_conf "$tmp/alice.properties" SCRAM-SHA-512 alice alice-secret
client_conf "$tmp/bob.properties" SCRAM-SHA-512 bob bob-secret
as() { # user: the bootstrap and --command-config arguments of that user
    echo "--bootstrap-server $sbootstrap --command-config $tmp/$1.properties"
}

# ---- kafka-configs: SCRAM users. The PLAIN super user (the listener's JAAS) makes admin's SCRAM
# credential; from then on admin logs in with SCRAM-SHA-512 and makes the others.
completed() { grep -q "Completed updating config for user $1." "$out"; }
if tool "$CONFIGS" $(as plain-admin) --alter --entity-type users --entity-name admin \
        --add-config 'SCRAM-SHA-512=[password=admin-secret]' >"$out" 2>"$err" && completed admin \
    && tool "$CONFIGS" $(as admin) --alter --entity-type users --entity-name alice \
        --add-config 'SCRAM-SHA-512=[iterations=8192,password=alice-secret]' >"$out" 2>"$err" && completed alice \
    && tool "$CONFIGS" $(as admin) --alter --entity-type users --entity-name bob \
        --add-config 'SCRAM-SHA-512=[password=bob-secret]' >"$out" 2>"$err" && completed bob; then
    pass "SASL_SSL ConfigCommand: SCRAM-SHA-512 users admin (over PLAIN), then alice and bob (as SCRAM admin)"
else
    fail "SASL_SSL ConfigCommand: SCRAM-SHA-512 users admin (over PLAIN), then alice and bob (as SCRAM admin)" "$out" "$err"
fi
user_line() { grep -E "^SCRAM credential configs for user-principal '$1' are " "$out"; }
if tool "$CONFIGS" $(as admin) --describe --entity-type users >"$out" 2>"$err" \
    && user_line alice | grep -q "SCRAM-SHA-512=iterations=8192" && user_line bob | grep -q "SCRAM-SHA-512=iterations=4096" \
    && user_line admin | grep -q "SCRAM-SHA-512"; then
    pass "SASL_SSL ConfigCommand --describe --entity-type users: admin, alice (8192 iterations), bob (4096)"
else
    fail "SASL_SSL ConfigCommand --describe --entity-type users: admin, alice (8192 iterations), bob (4096)" "$out" "$err"
fi

for t in orders.eu orders.secret; do
    if ! tool "$TOPIC_CMD" $(as admin) --create --topic "$t" --partitions 1 --replication-factor 1 >"$out" 2>"$err"; then
        fail "SASL_SSL TopicCommand --create $t as admin" "$out" "$err"
    fi
done

# ---- kafka-acls: --producer / --consumer convenience ACLs on a prefix, a DENY, a group, a
# transactional id. (--resource-pattern-type applies to every resource of one command, so the
# group and the transactional id are prefixes too.)
acl_line() { # principal operation permission
    grep -qE "^[[:space:]]*\(principal=$1, host=\*, operation=$2, permissionType=$3\)" "$out"
}
if tool "$ACLS" $(as admin) --add --allow-principal User:alice --producer --topic orders. \
        --resource-pattern-type prefixed --transactional-id alice-tx >"$out" 2>"$err" \
    && tool "$ACLS" $(as admin) --add --deny-principal User:alice --operation Write --topic orders.secret >"$out" 2>"$err" \
    && tool "$ACLS" $(as admin) --add --allow-principal User:bob --consumer --topic orders. \
        --resource-pattern-type prefixed --group billing >"$out" 2>"$err"; then
    pass "SASL_SSL AclCommand --add: --producer with --transactional-id, a DENY, --consumer with --group"
else
    fail "SASL_SSL AclCommand --add: --producer with --transactional-id, a DENY, --consumer with --group" "$out" "$err"
fi
if tool "$ACLS" $(as admin) --list --topic orders. --resource-pattern-type prefixed >"$out" 2>"$err" \
    && acl_line User:alice WRITE ALLOW && acl_line User:alice DESCRIBE ALLOW && acl_line User:alice CREATE ALLOW \
    && acl_line User:bob READ ALLOW && acl_line User:bob DESCRIBE ALLOW \
    && [ "$(grep -c 'principal=' "$out")" -eq 5 ]; then
    pass "SASL_SSL AclCommand --list on the prefix: alice WRITE/DESCRIBE/CREATE, bob READ/DESCRIBE"
else
    fail "SASL_SSL AclCommand --list on the prefix: alice WRITE/DESCRIBE/CREATE, bob READ/DESCRIBE" "$out" "$err"
fi
if tool "$ACLS" $(as admin) --list >"$out" 2>"$err" \
    && grep -q "resourceType=TRANSACTIONAL_ID, name=alice-tx, patternType=PREFIXED" "$out" \
    && grep -q "resourceType=GROUP, name=billing, patternType=PREFIXED" "$out" \
    && grep -q "resourceType=TOPIC, name=orders.secret, patternType=LITERAL" "$out" \
    && acl_line User:alice WRITE DENY && [ "$(grep -c 'principal=' "$out")" -eq 9 ]; then
    pass "SASL_SSL AclCommand --list: the transactional id and group (prefixed too, as Kafka's tool makes them), the DENY (9 ACLs)"
else
    fail "SASL_SSL AclCommand --list: the transactional id, the group and the DENY (9 ACLs)" "$out" "$err"
fi

# ---- clients decide: alice writes the prefix but not the DENYed topic; bob reads in his group only.
produce_as() { # user topic lines...
    local user=$1 topic=$2
    shift 2
    printf '%s\n' "$@" | tool "$PRODUCER" $(as "$user") --topic "$topic" >"$out" 2>"$err"
}
if produce_as alice orders.eu eu-1 eu-2 && ! grep -qE "ERROR|Exception" "$out" "$err"; then
    pass "SASL_SSL ConsoleProducer as alice writes orders.eu (prefixed --producer ACL)"
else
    fail "SASL_SSL ConsoleProducer as alice writes orders.eu (prefixed --producer ACL)" "$out" "$err"
fi
produce_as alice orders.secret secret-1
if grep -q "TopicAuthorizationException" "$err"; then
    pass "SASL_SSL ConsoleProducer as alice to orders.secret: TopicAuthorizationException (the DENY wins)"
else
    fail "SASL_SSL ConsoleProducer as alice to orders.secret: TopicAuthorizationException (the DENY wins)" "$out" "$err"
fi
consume_as() { # user group topic max
    tool "$CONSUMER" $(as "$1") --group "$2" --topic "$3" --from-beginning --max-messages "$4" --timeout-ms 20000 \
        >"$out" 2>"$err"
}
if consume_as bob billing orders.eu 2 && [ "$(cat "$out")" = "$(printf 'eu-1\neu-2')" ]; then
    pass "SASL_SSL ConsoleConsumer as bob in group billing reads orders.eu (--consumer ACL)"
else
    fail "SASL_SSL ConsoleConsumer as bob in group billing reads orders.eu (--consumer ACL)" "$out" "$err"
fi
# (The tool logs the error and exits 0.)
consume_as bob strangers orders.eu 1
if grep -q "GroupAuthorizationException: Not authorized to access group: strangers" "$out" "$err"; then
    pass "SASL_SSL ConsoleConsumer as bob in group strangers: GroupAuthorizationException"
else
    fail "SASL_SSL ConsoleConsumer as bob in group strangers: GroupAuthorizationException" "$out" "$err"
fi
perf_as() { # user transactional-id
    tool "$PERF" $(as "$1") --topic orders.eu --num-records 20 --record-size 10 --throughput -1 \
        --transactional-id "$2" --transaction-duration-ms 1000 >"$out" 2>"$err"
}
if perf_as alice alice-tx && grep -q "20 records sent" "$out"; then
    pass "SASL_SSL ProducerPerformance as alice with --transactional-id alice-tx commits 20 records"
else
    fail "SASL_SSL ProducerPerformance as alice with --transactional-id alice-tx commits 20 records" "$out" "$err"
fi
if ! perf_as alice other-tx && grep -q "TransactionalIdAuthorizationException" "$out" "$err"; then
    pass "SASL_SSL ProducerPerformance as alice with --transactional-id other-tx: TransactionalIdAuthorizationException"
else
    fail "SASL_SSL ProducerPerformance as alice with --transactional-id other-tx: TransactionalIdAuthorizationException" "$out" "$err"
fi

# ---- --remove: without the DENY, the prefixed ALLOW lets alice write orders.secret.
if tool "$ACLS" $(as admin) --remove --force --deny-principal User:alice --operation Write --topic orders.secret \
        >"$out" 2>"$err" \
    && tool "$ACLS" $(as admin) --list --topic orders.secret >"$out" 2>"$err" && ! grep -q "principal=" "$out" \
    && produce_as alice orders.secret secret-2 && ! grep -qE "ERROR|Exception" "$out" "$err"; then
    pass "SASL_SSL AclCommand --remove of the DENY: alice writes orders.secret"
else
    fail "SASL_SSL AclCommand --remove of the DENY: alice writes orders.secret" "$out" "$err"
fi

# ---- kafka-configs --delete-config: bob can no longer log in.
if tool "$CONFIGS" $(as admin) --alter --entity-type users --entity-name bob --delete-config SCRAM-SHA-512 \
        >"$out" 2>"$err" \
    && ! tool "$TOPIC_CMD" $(as bob) --list >"$out" 2>"$err" && grep -q "SaslAuthenticationException" "$out" "$err"; then
    pass "SASL_SSL ConfigCommand --delete-config SCRAM-SHA-512 for bob: his next login fails"
else
    fail "SASL_SSL ConfigCommand --delete-config SCRAM-SHA-512 for bob: his next login fails" "$out" "$err"
fi

if kill -0 "$pid" 2>/dev/null; then
    pass "the SASL_SSL sluice still running after the tool runs"
else
    wait "$pid"; rc=$?
    pid=""
    fail "the SASL_SSL sluice still running after the tool runs (it exited with code $rc)" "$slog"
fi
