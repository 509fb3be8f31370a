package kafkago

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/sasl/scram"

	"sluice/compat/gokit"
)

// TestSaslTLS: against a one-node `dev-cluster --security sasl_ssl`, kafka-go's Client,
// Writer and Reader work over TLS with SCRAM-SHA-512; a wrong password is refused.
func TestSaslTLS(t *testing.T) {
	suite.Matrix.Scenario(t, gokit.SaslTLS, "SASL_SSL: SCRAM-SHA-512 over TLS (dev-cluster --security sasl_ssl); wrong password refused")
	d := gokit.DevClusterFor(t, 1, "--security", "sasl_ssl")
	tlsConfig, err := d.TLSConfig()
	if err != nil {
		t.Fatal(err)
	}
	mech, err := scram.Mechanism(scram.SHA512, "admin", d.AdminPassword)
	if err != nil {
		t.Fatal(err)
	}
	tr := &kafka.Transport{TLS: tlsConfig, SASL: mech}
	cl := admin(d.Bootstrap, tr)
	topic := gokit.Name("sasl-tls")
	createTopic(t, cl, topic, 1, 1)
	w := writer(d.Bootstrap, topic, tr)
	want := []string{"s0", "s1", "s2", "s3", "s4"}
	var msgs []kafka.Message
	for _, v := range want {
		msgs = append(msgs, kafka.Message{Value: []byte(v)})
	}
	if err := w.WriteMessages(gokit.Ctx(t, 30*time.Second), msgs...); err != nil {
		t.Fatalf("write: %v", err)
	}
	w.Close()
	dialer := &kafka.Dialer{Timeout: 10 * time.Second, TLS: tlsConfig, SASLMechanism: mech}
	var got []string
	for _, m := range readPartition(t, d.Bootstrap, topic, 0, len(want), dialer) {
		got = append(got, string(m.Value))
	}
	if !slices.Equal(got, want) {
		t.Fatalf("read %v, want %v", got, want)
	}

	bad, err := scram.Mechanism(scram.SHA512, "admin", "wrong-"+d.AdminPassword)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = admin(d.Bootstrap, &kafka.Transport{TLS: tlsConfig, SASL: bad}).Metadata(ctx, &kafka.MetadataRequest{})
	if err == nil || !isSASLFailure(err) {
		t.Fatalf("a wrong password: %v, want SASL_AUTHENTICATION_FAILED", err)
	}
}

func isSASLFailure(err error) bool {
	return err != nil && errors.Is(err, kafka.SASLAuthenticationFailed)
}
