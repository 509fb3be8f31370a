package sarama

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/xdg-go/scram"

	"sluice/compat/gokit"
)

// scramClient is sarama's SCRAMClient over xdg-go/scram (sarama leaves the SCRAM algorithm
// to the application).
type scramClient struct{ conv *scram.ClientConversation }

func (c *scramClient) Begin(user, password, authzID string) error {
	cl, err := scram.SHA512.NewClient(user, password, authzID)
	if err != nil {
		return err
	}
	c.conv = cl.NewConversation()
	return nil
}

func (c *scramClient) Step(challenge string) (string, error) { return c.conv.Step(challenge) }
func (c *scramClient) Done() bool                            { return c.conv.Done() }

// secureConfig is config() over TLS (trusting the cluster's CA) with SASL/SCRAM-SHA-512.
func secureConfig(t *testing.T, d *gokit.DevCluster, password string) *sarama.Config {
	t.Helper()
	tlsConfig, err := d.TLSConfig()
	if err != nil {
		t.Fatal(err)
	}
	c := config()
	c.Net.TLS.Enable = true
	c.Net.TLS.Config = tlsConfig
	c.Net.SASL.Enable = true
	c.Net.SASL.Mechanism = sarama.SASLTypeSCRAMSHA512
	c.Net.SASL.User = "admin"
	c.Net.SASL.Password = password
	c.Net.SASL.SCRAMClientGeneratorFunc = func() sarama.SCRAMClient { return &scramClient{} }
	c.Metadata.Retry.Max = 1
	return c
}

// TestSaslTLS: against a one-node `dev-cluster --security sasl_ssl` (TLS with the cluster's
// own CA, SCRAM-SHA-512), sarama creates a topic, produces and consumes; a wrong password fails
// with SASL_AUTHENTICATION_FAILED, and a client without TLS gets nowhere.
func TestSaslTLS(t *testing.T) {
	suite.Matrix.Scenario(t, gokit.SaslTLS, "SASL_SSL: SCRAM-SHA-512 over TLS (dev-cluster --security sasl_ssl); wrong password refused")
	d := gokit.DevClusterFor(t, 1, "--security", "sasl_ssl")
	if d.AdminPassword == "" {
		t.Fatalf("dev-cluster printed no admin password")
	}
	c := secureConfig(t, d, d.AdminPassword)
	topic := gokit.Name("sasl-tls")
	createTopic(t, d.Bootstrap, c, topic, 1, 1, nil)
	prod, err := sarama.NewSyncProducer(d.Bootstrap, c)
	if err != nil {
		t.Fatalf("producer: %v", err)
	}
	want := []string{"s0", "s1", "s2", "s3", "s4"}
	for _, v := range want {
		if _, _, err := prod.SendMessage(&sarama.ProducerMessage{Topic: topic, Partition: 0, Value: sarama.StringEncoder(v)}); err != nil {
			t.Fatalf("produce: %v", err)
		}
	}
	prod.Close()
	if got := values(consumeAll(t, d.Bootstrap, c, topic, 0, len(want), 30*time.Second)); !slices.Equal(got, want) {
		t.Fatalf("consumed %v, want %v", got, want)
	}

	_, err = sarama.NewClient(d.Bootstrap, secureConfig(t, d, "wrong-"+d.AdminPassword))
	if !errors.Is(err, sarama.ErrSASLAuthenticationFailed) {
		t.Fatalf("a wrong password: %v, want SASL_AUTHENTICATION_FAILED", err)
	}
	plain := config()
	plain.Net.DialTimeout = 3 * time.Second
	plain.Net.ReadTimeout = 3 * time.Second
	plain.Metadata.Retry.Max = 0
	if cl, err := sarama.NewClient(d.Bootstrap, plain); err == nil {
		cl.Close()
		t.Fatalf("a PLAINTEXT client connected to the SASL_SSL listener")
	}
}
