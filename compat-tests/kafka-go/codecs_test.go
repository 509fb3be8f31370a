package kafkago

import (
	"fmt"
	"strings"
	"testing"

	"github.com/segmentio/kafka-go"

	"sluice/compat/gokit"
)

// TestProduceConsumeCodecs writes keyed records with headers through an acks=all Writer with
// each codec kafka-go has, and reads them back unchanged and in order.
func TestProduceConsumeCodecs(t *testing.T) {
	codecs := []kafka.Compression{0, kafka.Gzip, kafka.Snappy, kafka.Lz4, kafka.Zstd}
	names := []string{"none", "gzip", "snappy", "lz4", "zstd"}
	suite.Matrix.Scenario(t, gokit.Codecs, "acks=all; "+strings.Join(names, ", "))
	cl := admin([]string{suite.Broker.Addr}, nil)
	for i, codec := range codecs {
		t.Run(names[i], func(t *testing.T) {
			topic := gokit.Name("codec-" + names[i])
			createTopic(t, cl, topic, 1, 1)
			w := writer([]string{suite.Broker.Addr}, topic, nil)
			w.Compression = codec
			const n = 100
			value := func(j int) string { return fmt.Sprintf("%s-%04d-%s", names[i], j, strings.Repeat("x", 200)) }
			var msgs []kafka.Message
			for j := 0; j < n; j++ {
				msgs = append(msgs, kafka.Message{Key: []byte(fmt.Sprintf("k%d", j)), Value: []byte(value(j)),
					Headers: []kafka.Header{{Key: "h", Value: []byte(fmt.Sprint(j))}}})
			}
			if err := w.WriteMessages(gokit.Ctx(t, 30e9), msgs...); err != nil {
				t.Fatalf("write with %s: %v", names[i], err)
			}
			w.Close()
			for j, m := range readPartition(t, []string{suite.Broker.Addr}, topic, 0, n, nil) {
				if m.Offset != int64(j) || string(m.Key) != fmt.Sprintf("k%d", j) || string(m.Value) != value(j) {
					t.Fatalf("record %d: offset %d key %q value %.20q", j, m.Offset, m.Key, m.Value)
				}
				if len(m.Headers) != 1 || m.Headers[0].Key != "h" || string(m.Headers[0].Value) != fmt.Sprint(j) {
					t.Fatalf("record %d headers: %v", j, m.Headers)
				}
			}
		})
	}
}
