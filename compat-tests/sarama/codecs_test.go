package sarama

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"sluice/compat/gokit"
)

var codecs = []sarama.CompressionCodec{
	sarama.CompressionNone, sarama.CompressionGZIP, sarama.CompressionSnappy,
	sarama.CompressionLZ4, sarama.CompressionZSTD,
}

// TestProduceConsumeCodecs sends keyed records with headers at acks=all with each codec sarama
// has, in batches of several records, and reads every one back unchanged and in order.
func TestProduceConsumeCodecs(t *testing.T) {
	var names []string
	for _, c := range codecs {
		names = append(names, c.String())
	}
	suite.Matrix.Scenario(t, gokit.Codecs, "acks=all; "+strings.Join(names, ", "))
	for _, codec := range codecs {
		t.Run(codec.String(), func(t *testing.T) {
			c := config()
			c.Producer.Compression = codec
			// Batch records so that each compressed batch holds several.
			c.Producer.Flush.Messages = 10
			c.Producer.Flush.Frequency = 50 * time.Millisecond
			topic := gokit.Name("codec-" + codec.String())
			createTopic(t, []string{suite.Broker.Addr}, c, topic, 1, 1, nil)
			prod, err := sarama.NewAsyncProducer([]string{suite.Broker.Addr}, c)
			if err != nil {
				t.Fatal(err)
			}
			const n = 100
			// Compressible values, so the codecs really shrink something.
			value := func(i int) string { return fmt.Sprintf("%s-%04d-%s", codec, i, strings.Repeat("x", 200)) }
			for i := 0; i < n; i++ {
				prod.Input() <- &sarama.ProducerMessage{
					Topic: topic, Partition: 0, Key: sarama.StringEncoder(fmt.Sprintf("k%d", i)),
					Value:   sarama.StringEncoder(value(i)),
					Headers: []sarama.RecordHeader{{Key: []byte("h"), Value: []byte(fmt.Sprint(i))}},
				}
			}
			for i := 0; i < n; i++ {
				select {
				case <-prod.Successes():
				case e := <-prod.Errors():
					t.Fatalf("produce with %s: %v", codec, e.Err)
				case <-time.After(30 * time.Second):
					t.Fatalf("%d of %d acknowledged within 30 s", i, n)
				}
			}
			if err := prod.Close(); err != nil {
				t.Fatal(err)
			}
			got := consumeAll(t, []string{suite.Broker.Addr}, config(), topic, 0, n, 30*time.Second)
			if len(got) != n {
				t.Fatalf("read back %d of %d records", len(got), n)
			}
			for i, m := range got {
				if m.Offset != int64(i) || string(m.Key) != fmt.Sprintf("k%d", i) || string(m.Value) != value(i) {
					t.Fatalf("record %d: offset %d key %q value %.20q", i, m.Offset, m.Key, m.Value)
				}
				if len(m.Headers) != 1 || string(m.Headers[0].Key) != "h" || string(m.Headers[0].Value) != fmt.Sprint(i) {
					t.Fatalf("record %d headers: %v", i, m.Headers)
				}
			}
		})
	}
}
