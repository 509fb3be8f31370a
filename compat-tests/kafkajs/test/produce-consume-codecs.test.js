// acks=-1 producing with each codec kafkajs has (none and gzip built in, snappy through the
// pure-JS kafkajs-snappy); a consumer reads back every key, value and header in order.
'use strict'

const assert = require('node:assert/strict')
const { checkByKey } = require('../../node-common/checks')
const { CompressionTypes, CompressionCodecs } = require('kafkajs')
const SnappyCodec = require('kafkajs-snappy')
const { consumerOf, uniqueName, withTopic, scenario, consumeUntil } = require('../lib')

CompressionCodecs[CompressionTypes.Snappy] = SnappyCodec

const codecs = { none: CompressionTypes.None, gzip: CompressionTypes.GZIP, snappy: CompressionTypes.Snappy }
const perCodec = 60

scenario('produce-consume-codecs', async () => {
  const { client, admin, topic } = await withTopic('codecs', 3)
  await admin.disconnect()

  const producer = client.producer()
  await producer.connect()
  const sent = []
  for (const [name, compression] of Object.entries(codecs)) {
    // Repetitive values, so that a compressed batch is really smaller than its records.
    const messages = Array.from({ length: perCodec }, (_, i) => ({
      key: `${name}-key-${i % 6}`,
      value: `${name}-${i}-${'x'.repeat(200)}`,
      headers: { codec: name, n: String(i) },
    }))
    const meta = await producer.send({ topic, acks: -1, compression, messages })
    assert.equal(meta.length > 0, true, `no partition metadata for ${name}`)
    for (const m of meta) assert.equal(m.errorCode, 0, `${name} to partition ${m.partition}`)
    sent.push(...messages)
  }
  await producer.disconnect()

  const got = await consumeUntil(consumerOf(client, { groupId: uniqueName('codecs-g') }), topic,
    r => r.length >= sent.length)
  checkByKey(sent, got)
  return `acks=-1, ${sent.length} records with keys and headers: none, gzip, snappy (kafkajs-snappy, pure JS); ` +
    'lz4, zstd n/a: kafkajs has no codec for them and the npm ones (kafkajs-lz4, @kafkajs/zstd) are native addons'
})
