package compat

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"sluice/compat/gokit"
)

// TestSaslTLS: against a one-node `dev-cluster --security sasl_ssl` (TLS with the cluster's own
// CA, SCRAM-SHA-512), franz-go creates a topic, produces and consumes; a wrong password fails
// with SASL_AUTHENTICATION_FAILED, and a client without TLS gets nowhere.
func TestSaslTLS(t *testing.T) {
	suite.Matrix.Scenario(t, gokit.SaslTLS, "SASL_SSL: SCRAM-SHA-512 over TLS (dev-cluster --security sasl_ssl); wrong password refused")
	d := gokit.DevClusterFor(t, 1, "--security", "sasl_ssl")
	if d.AdminPassword == "" {
		t.Fatalf("dev-cluster printed no admin password")
	}
	tlsConfig, err := d.TLSConfig()
	if err != nil {
		t.Fatal(err)
	}
	secure := func(password string) []kgo.Opt {
		return []kgo.Opt{kgo.DialTLSConfig(tlsConfig.Clone()),
			kgo.SASL(scram.Auth{User: "admin", Pass: password}.AsSha512Mechanism())}
	}
	adm := adminOn(t, d.Bootstrap, secure(d.AdminPassword)...)
	topic := gokit.Name("sasl-tls")
	createTopicRF(t, adm, topic, 1, 1, nil)
	prod := client(t, d.Bootstrap, secure(d.AdminPassword)...)
	want := []string{"s0", "s1", "s2", "s3", "s4"}
	for _, v := range want {
		if err := prod.ProduceSync(gokit.Ctx(t, 20*time.Second), &kgo.Record{Topic: topic, Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
	}
	if got := values(readPartition(t, d.Bootstrap, topic, 0, len(want), 30*time.Second, secure(d.AdminPassword)...)); !slices.Equal(got, want) {
		t.Fatalf("consumed %v, want %v", got, want)
	}

	wrong := adminOn(t, d.Bootstrap, append(secure("wrong-"+d.AdminPassword), kgo.RequestRetries(0))...)
	if _, err := wrong.ListTopics(gokit.Ctx(t, 15*time.Second)); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Fatalf("a wrong password: %v, want SASL_AUTHENTICATION_FAILED", err)
	}
	plain := adminOn(t, d.Bootstrap, kgo.RequestRetries(0), kgo.Dialer((&net.Dialer{Timeout: 3 * time.Second}).DialContext))
	if topics, err := plain.ListTopics(gokit.Ctx(t, 10*time.Second)); err == nil {
		t.Fatalf("a PLAINTEXT client listed the SASL_SSL listener's topics: %v", fmt.Sprint(topics.Names()))
	}
}
