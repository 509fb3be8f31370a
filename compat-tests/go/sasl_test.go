package compat

// SASL with franz-go against one broker with a PLAINTEXT listener (the admin door) and a
// SASL_PLAINTEXT one: SCRAM-SHA-512 for a user made with kadm's AlterUserSCRAMs, and
// OAUTHBEARER with unsecured (alg: none) JWTs the test builds, which Kafka's default server
// callback handler accepts. A wrong password and an expired token fail with
// SASL_AUTHENTICATION_FAILED.

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"sluice/compat/gokit"
)

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// unsecuredJWT is an alg:none JWT for sub that expires expIn from now.
func unsecuredJWT(t *testing.T, sub string, expIn time.Duration) string {
	t.Helper()
	enc := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return base64.RawURLEncoding.EncodeToString(b)
	}
	now := time.Now()
	claims := map[string]any{"sub": sub, "iat": now.Add(-time.Minute).Unix(), "exp": now.Add(expIn).Unix(), "scope": "kafka"}
	return enc(map[string]string{"alg": "none"}) + "." + enc(claims) + "."
}

// roundtrip produces five records to a new topic and consumes them back, all as mech.
func saslRoundtrip(t *testing.T, adm *kadm.Client, addr string, mech sasl.Mechanism) {
	t.Helper()
	topic := fmt.Sprintf("sasl-%s-%d", strings.ToLower(mech.Name()), time.Now().UnixNano())
	createTopic(t, adm, topic, 1)
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.SASL(mech), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var recs []*kgo.Record
	for i := 0; i < 5; i++ {
		recs = append(recs, &kgo.Record{Topic: topic, Value: []byte(fmt.Sprintf("v%d", i))})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce as %s: %v", mech.Name(), err)
	}
	var got []string
	for len(got) < 5 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %v before the deadline", got)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("fetch as %s: %v", mech.Name(), err) })
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	if want := "[v0 v1 v2 v3 v4]"; fmt.Sprint(got) != want {
		t.Fatalf("consumed %v, want %s", got, want)
	}
}

// loginFails checks that a client logging in with mech gets SASL_AUTHENTICATION_FAILED.
func loginFails(t *testing.T, addr string, mech sasl.Mechanism) error {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.SASL(mech), kgo.RequestRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	_, err = kadm.NewClient(cl).ListTopics(ctx)
	if !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Fatalf("login with %s: got %v, want SASL_AUTHENTICATION_FAILED", mech.Name(), err)
	}
	return err
}

func TestSASLScramAndOAuthBearer(t *testing.T) {
	suite.Matrix.Scenario(t, gokit.SaslTLS, "SASL_PLAINTEXT: SCRAM-SHA-512 (a user made with kadm) and OAUTHBEARER; wrong password and expired token refused")
	plain, secured := freePort(t), freePort(t)
	b := launchBroker(t,
		fmt.Sprintf("listeners=PLAINTEXT://127.0.0.1:%d,SASL_PLAINTEXT://127.0.0.1:%d", plain, secured),
		"inter.broker.listener.name=PLAINTEXT",
		"sasl.enabled.mechanisms=SCRAM-SHA-512,OAUTHBEARER",
		"listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;")
	adm := newAdmin(t, b)
	addr := fmt.Sprintf("127.0.0.1:%d", secured)

	t.Run("SCRAM-SHA-512", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		res, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "gopher", Mechanism: kadm.ScramSha512, Iterations: 4096, Password: "gopher-secret"}})
		if err != nil {
			t.Fatal(err)
		}
		if err := res.Error(); err != nil {
			t.Fatal(err)
		}
		saslRoundtrip(t, adm, addr, scram.Auth{User: "gopher", Pass: "gopher-secret"}.AsSha512Mechanism())
		loginFails(t, addr, scram.Auth{User: "gopher", Pass: "wrong"}.AsSha512Mechanism())
	})

	t.Run("OAUTHBEARER", func(t *testing.T) {
		saslRoundtrip(t, adm, addr, oauth.Auth{Token: unsecuredJWT(t, "gopher", time.Hour)}.AsMechanism())
		err := loginFails(t, addr, oauth.Auth{Token: unsecuredJWT(t, "gopher", -time.Minute)}.AsMechanism())
		if !strings.Contains(err.Error(), "invalid_token") {
			t.Fatalf("an expired token's error does not carry the broker's JSON: %v", err)
		}
	})
}
