package compat

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"sluice/compat/gokit"
)

// TestProduceConsumeCodecs sends keyed records with headers at acks=all (franz-go's idempotence
// off, so this is the plain producer) with each codec franz-go has, lingering so that each
// compressed batch holds several records, and reads every one back unchanged and in order.
func TestProduceConsumeCodecs(t *testing.T) {
	codecs := []struct {
		name  string
		codec kgo.CompressionCodec
	}{
		{"none", kgo.NoCompression()}, {"gzip", kgo.GzipCompression()}, {"snappy", kgo.SnappyCompression()},
		{"lz4", kgo.Lz4Compression()}, {"zstd", kgo.ZstdCompression()},
	}
	var names []string
	for _, c := range codecs {
		names = append(names, c.name)
	}
	suite.Matrix.Scenario(t, gokit.Codecs, "acks=all; "+strings.Join(names, ", "))
	addrs := []string{suite.Broker.Addr}
	adm := adminOn(t, addrs)
	for _, c := range codecs {
		t.Run(c.name, func(t *testing.T) {
			topic := gokit.Name("codec-" + c.name)
			createTopicRF(t, adm, topic, 1, 1, nil)
			prod := client(t, addrs, kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DisableIdempotentWrite(),
				kgo.ProducerBatchCompression(c.codec), kgo.ProducerLinger(20*time.Millisecond),
				kgo.RecordPartitioner(kgo.ManualPartitioner()))
			const n = 100
			// Compressible values, so the codecs really shrink something.
			value := func(i int) string { return fmt.Sprintf("%s-%04d-%s", c.name, i, strings.Repeat("x", 200)) }
			var recs []*kgo.Record
			for i := 0; i < n; i++ {
				recs = append(recs, &kgo.Record{Topic: topic, Key: []byte(fmt.Sprintf("k%d", i)), Value: []byte(value(i)),
					Headers: []kgo.RecordHeader{{Key: "h", Value: []byte(fmt.Sprint(i))}}})
			}
			if err := prod.ProduceSync(gokit.Ctx(t, 30*time.Second), recs...).FirstErr(); err != nil {
				t.Fatalf("produce with %s: %v", c.name, err)
			}
			got := readPartition(t, addrs, topic, 0, n, 30*time.Second)
			if len(got) != n {
				t.Fatalf("read back %d of %d records", len(got), n)
			}
			for i, r := range got {
				if r.Offset != int64(i) || string(r.Key) != fmt.Sprintf("k%d", i) || string(r.Value) != value(i) {
					t.Fatalf("record %d: offset %d key %q value %.20q", i, r.Offset, r.Key, r.Value)
				}
				if len(r.Headers) != 1 || r.Headers[0].Key != "h" || string(r.Headers[0].Value) != fmt.Sprint(i) {
					t.Fatalf("record %d headers: %v", i, r.Headers)
				}
			}
		})
	}
}

// TestIdempotentProducer produces with franz-go's idempotent producer (its default: a producer
// id, sequence numbers, up to five requests in flight) to three partitions and reads every record
// back exactly once, in the order sent to its partition; each log ends at the count sent.
func TestIdempotentProducer(t *testing.T) {
	suite.Matrix.Scenario(t, gokit.Idempotent, "idempotent producer (the default), 3 partitions, each record once in order")
	addrs := []string{suite.Broker.Addr}
	adm := adminOn(t, addrs)
	topic := gokit.Name("idempotent")
	createTopicRF(t, adm, topic, 3, 1, nil)
	prod := client(t, addrs, kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(time.Millisecond), kgo.MaxBufferedRecords(10000))
	const n = 3000
	var recs []*kgo.Record
	for i := 0; i < n; i++ {
		recs = append(recs, &kgo.Record{Topic: topic, Partition: int32(i % 3), Value: []byte(fmt.Sprint(i))})
	}
	if err := prod.ProduceSync(gokit.Ctx(t, 60*time.Second), recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	if id, epoch, err := prod.ProducerID(gokit.Ctx(t, 10*time.Second)); err != nil || id < 0 || epoch < 0 {
		t.Fatalf("producer id %d epoch %d: %v", id, epoch, err)
	}
	ends, err := adm.ListEndOffsets(gokit.Ctx(t, 10*time.Second), topic)
	if err != nil {
		t.Fatal(err)
	}
	for p := int32(0); p < 3; p++ {
		end, _ := ends.Lookup(topic, p)
		got := readPartition(t, addrs, topic, p, n/3, 30*time.Second)
		if end.Offset != n/3 || len(got) != n/3 {
			t.Fatalf("partition %d ends at %d (%v), read %d records; want %d", p, end.Offset, end.Err, len(got), n/3)
		}
		for i, r := range got {
			if want := fmt.Sprint(int(p) + 3*i); string(r.Value) != want {
				t.Fatalf("partition %d offset %d: %q, want %q", p, r.Offset, r.Value, want)
			}
		}
	}
}
