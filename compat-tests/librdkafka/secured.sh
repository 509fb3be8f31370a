# Sourced by ./run: the "secured" scenario, for the tests listed in tests.secured (librdkafka's
# SASL and SSL tests, which skip themselves on a plaintext broker).
#
# Three nodes, as 0142_reauthentication creates a topic with three replicas. Each node's client
# listener (CLIENT) is SASL_SSL: TLS with a PEM keystore, then SCRAM-SHA-512 (user rdkafka,
# made with Kafka's kafka-configs over the plaintext INTERNAL listener) and KIP-368
# re-authentication every $secured_reauth_ms ms. Brokers and controllers talk over plaintext
# listeners of their own. test.conf logs in over SASL_SSL with a client certificate, and the SSL_*
# environment that librdkafka's trivup sets up (0097_ssl_verify reads it) names the same
# certificate, key and CA in the other encodings the tests load.

secured_reauth_ms=5000
secured_password=rdkafka-secret
secured_key_password=client-key-secret
secured_env=()

# The CA, the brokers' certificate and the client's (PEM, DER and PKCS#12), made once per run.
# The brokers' key is RSA-4096, whose slower signature makes it less likely that the server's
# first flight arrives while librdkafka is still inside its first SSL_connect(): a certificate it
# refuses there is reported as a connect failure (_TRANSPORT), not as the _SSL error
# 0097_ssl_verify expects. Less likely only: a client thread off the CPU for longer still loses
# the race, which is why 0097 stays in tests.exclusions (see the reason there).
make_secured_certs() { # dir
    (
        cd "$1" || exit 1
        openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 2 -subj "/CN=sluice librdkafka test ca" &&
            openssl req -newkey rsa:4096 -nodes -keyout broker.key -out broker.csr -subj /CN=localhost &&
            printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' >broker.ext &&
            openssl x509 -req -in broker.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out broker.pem -days 2 -extfile broker.ext &&
            cat broker.key broker.pem >broker-keystore.pem &&
            openssl req -newkey rsa:2048 -nodes -keyout client-plain.key -out client.csr -subj /CN=rdkafka &&
            printf 'extendedKeyUsage=clientAuth\n' >client.ext &&
            openssl x509 -req -in client.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out client.pem -days 2 -extfile client.ext &&
            openssl pkcs8 -topk8 -in client-plain.key -out client.key -v2 aes-256-cbc -passout "pass:$secured_key_password" &&
            openssl x509 -in client.pem -outform DER -out client.der &&
            openssl pkey -in client-plain.key -outform DER -out client.key.der &&
            openssl x509 -in ca.pem -outform DER -out ca.der &&
            openssl pkcs12 -export -in client.pem -inkey client-plain.key -certfile ca.pem -out client.p12 \
                -passout "pass:$secured_key_password"
    ) >"$1/openssl.log" 2>&1
}

secured_ports=()
oidc_port=""
oidc_client_id=sluice-oidc-client
oidc_client_secret=sluice-oidc-secret
oidc_env=()
start_secured() {
    local scen=secured d="$tmp/secured" ssl="$tmp/secured/ssl" i voters="" servers=""
    broker_gen=$((broker_gen + 1))
    mkdir -p "$ssl"
    if [ ! -f "$ssl/client.p12" ]; then
        make_secured_certs "$ssl" || { tail -20 "$ssl/openssl.log" >&2; die "openssl could not make the secured scenario's certificates"; }
    fi
    # Client, internal and controller port of nodes 1..3, kept across restarts.
    if [ ${#secured_ports[@]} -eq 0 ]; then
        read -ra secured_ports <<<"$(python3 -c 'import socket
ss = [socket.socket() for _ in range(9)]
for s in ss: s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in ss))')"
    fi
    for i in 1 2 3; do
        voters="${voters:+$voters,}$i@127.0.0.1:${secured_ports[$((3 * i - 1))]}"
        servers="${servers:+$servers,}127.0.0.1:${secured_ports[$((3 * i - 3))]}"
    done
    # The OAuth token endpoint of 0126_oauthbearer_oidc (oidc_server.py); it makes the issuer's
    # JWKS the nodes read at startup, so it starts first, and stops with them.
    [ -n "$oidc_port" ] || oidc_port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
    python3 "$here/oidc_server.py" "$d/oidc" "$oidc_port" "$oidc_client_id" "$oidc_client_secret" \
        >>"$d/oidc.log" 2>&1 &
    local pids="$!" n
    for ((n = 0; n < 300; n++)); do
        [ -f "$d/oidc/jwks.json" ] && grep -q "oidc: serving" "$d/oidc.log" && break
        sleep 0.1
    done
    grep -q "oidc: serving" "$d/oidc.log" || { tail -20 "$d/oidc.log" >&2; die "the OIDC token endpoint did not start"; }
    local jwks="file://$d/oidc/jwks.json" oauth="listener.name.client.oauthbearer"
    for i in 1 2 3; do
        local c="${secured_ports[$((3 * i - 3))]}" p="${secured_ports[$((3 * i - 2))]}"
        local ls="CLIENT://127.0.0.1:$c,INTERNAL://127.0.0.1:$p"
        local blog="$d/node-$i.$broker_gen.log"
        "$SLUICE_BIN" serve --node-id "$i" --data-dir "$d/node-$i" \
            --set "controller.quorum.voters=$voters" \
            --set "listeners=$ls" --set "advertised.listeners=$ls" \
            --set listener.security.protocol.map=CLIENT:SASL_SSL,INTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT \
            --set inter.broker.listener.name=INTERNAL \
            --set ssl.keystore.type=PEM --set "ssl.keystore.location=$ssl/broker-keystore.pem" \
            --set ssl.truststore.type=PEM --set "ssl.truststore.location=$ssl/ca.pem" \
            --set sasl.enabled.mechanisms=SCRAM-SHA-512,OAUTHBEARER \
            --set "$oauth.sasl.jaas.config=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;" \
            --set "$oauth.sasl.server.callback.handler.class=org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler" \
            --set "sasl.oauthbearer.jwks.endpoint.url=$jwks" --set "org.apache.kafka.sasl.oauthbearer.allowed.urls=$jwks" \
            --set "connections.max.reauth.ms=$secured_reauth_ms" \
            --set auto.create.topics.enable=true --set num.partitions=4 \
            --set default.replication.factor=3 --set offsets.topic.replication.factor=3 \
            >"$blog" 2>&1 &
        pids="$pids $!"
        ln -sf "$blog" "$d/node-$i.log"
    done
    bpid[$scen]="${pids# }"
    ln -sf "$d/node-1.log" "$tmp/broker-$scen.log"
    for i in 1 2 3; do
        local n
        for ((n = 0; n < (start_timeout + 20) * 10; n++)); do
            grep -q "sluice ready:" "$d/node-$i.log" && break
            broker_alive "$scen" || break
            sleep 0.1
        done
        grep -q "sluice ready:" "$d/node-$i.log" || { tail -20 "$d/node-$i.log" >&2; die "secured node $i did not start serving"; }
    done
    if [ ! -f "$d/.user-made" ]; then
        timeout 60 java -Xmx256m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -cp "$repo/compat-tests/cli/lib/*" \
            org.apache.kafka.tools.ConfigCommand --bootstrap-server "127.0.0.1:${secured_ports[1]}" \
            --alter --entity-type users --entity-name rdkafka \
            --add-config "SCRAM-SHA-512=[password=$secured_password]" >"$d/configs.log" 2>&1 ||
            { cat "$d/configs.log" >&2; die "kafka-configs could not make the SCRAM user of the secured scenario"; }
        touch "$d/.user-made"
    fi
    # Every node must know the credential before a test logs in there.
    wait_for_scram_login "$servers"
    bservers[$scen]=$servers
    cat >"$tmp/test-$scen.conf" <<EOF2
bootstrap.servers=$servers
broker.address.family=v4
security.protocol=SASL_SSL
sasl.mechanism=SCRAM-SHA-512
sasl.username=rdkafka
sasl.password=$secured_password
ssl.ca.location=$ssl/ca.pem
ssl.certificate.location=$ssl/client.pem
ssl.key.location=$ssl/client.key
ssl.key.password=$secured_key_password
EOF2
    secured_env=(SSL_pkcs="$ssl/client.p12" SSL_password="$secured_key_password"
        SSL_pub_der="$ssl/client.der" SSL_priv_der="$ssl/client.key.der" SSL_ca_der="$ssl/ca.der"
        SSL_pub_pem="$ssl/client.pem" SSL_priv_pem="$ssl/client.key" SSL_all_cas_pem="$ssl/ca.pem")
    # The "oidc" scenario: the same nodes and listener, logging in with OAUTHBEARER tokens from
    # the token endpoint, as trivup's OauthbearerOIDCApp sets up librdkafka's test.conf and
    # environment.
    local token="http://127.0.0.1:$oidc_port"
    cat >"$tmp/test-oidc.conf" <<EOF2
bootstrap.servers=$servers
broker.address.family=v4
security.protocol=SASL_SSL
sasl.mechanism=OAUTHBEARER
sasl.oauthbearer.method=OIDC
sasl.oauthbearer.client.id=$oidc_client_id
sasl.oauthbearer.client.secret=$oidc_client_secret
sasl.oauthbearer.scope=test
sasl.oauthbearer.token.endpoint.url=$token/token
ssl.ca.location=$ssl/ca.pem
EOF2
    oidc_env=(VALID_OIDC_URL="$token/token" INVALID_OIDC_URL="$token/badformat"
        EXPIRED_TOKEN_OIDC_URL="$token/expired" OAUTHBEARER_CLIENT_PRIVATE_KEY="$d/oidc/client.key"
        OAUTHBEARER_CLIENT_PRIVATE_KEY_ENCRYPTED="$d/oidc/client-enc.key"
        OAUTHBEARER_CLIENT_PRIVATE_KEY_PASSWORD="$(cat "$d/oidc/client-enc.password")")
    bservers[oidc]=$servers
    log "secured cluster (SASL_SSL, SCRAM-SHA-512 and OAUTHBEARER) pids ${bpid[$scen]} on $servers; OIDC token endpoint $token"
}

# Logs in to each node in turn with librdkafka (the suite's Python client, if there is one) until
# each answers; without it, gives the nodes a moment to apply the credential.
wait_for_scram_login() { # servers
    local py="$repo/compat-tests/.venv/bin/python"
    if [ ! -x "$py" ]; then
        sleep 2
        return
    fi
    "$py" - "$1" "$tmp/secured/ssl/ca.pem" "$secured_password" <<'EOF' || die "SCRAM login to the secured cluster failed"
import sys, time
from confluent_kafka.admin import AdminClient
servers, ca, password = sys.argv[1:]
for server in servers.split(","):
    deadline = time.time() + 20
    while True:
        a = AdminClient({"bootstrap.servers": server, "security.protocol": "SASL_SSL", "ssl.ca.location": ca,
                         "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "rdkafka", "sasl.password": password})
        try:
            a.list_topics(timeout=3)
            break
        except Exception as e:
            if time.time() > deadline:
                sys.exit(f"{server}: {e}")
            time.sleep(0.2)
EOF
}

# The "oidc" scenario runs on the secured cluster (start_secured writes its test.conf).
start_oidc() {
    broker_alive secured || { start_secured; bgen[secured]=$((${bgen[secured]:-0} + 1)); }
    bpid[oidc]=${bpid[secured]}
}
