// acks=all producing with every codec the client's librdkafka has (none, gzip, snappy, lz4,
// zstd), through both of its APIs: the KafkaJS-compatible one (a producer per codec, as it sets
// compression per producer, not per send) and the node-rdkafka-style Producer with delivery
// reports. A KafkaJS-API consumer reads back every key, value and header in order, and a
// node-rdkafka-style KafkaConsumer reads the second half again.
'use strict'

const assert = require('node:assert/strict')
const { checkByKey } = require('../../node-common/checks')
const { confluent, brokers, consumerOf, uniqueName, withTopic, scenario, consumeUntil } = require('../lib')

const { CompressionTypes } = confluent.KafkaJS
const codecs = Object.values(CompressionTypes) // none, gzip, snappy, lz4, zstd
const perCodec = 40

// Repetitive values, so that a compressed batch is really smaller than its records.
const records = (api, codec) => Array.from({ length: perCodec }, (_, i) => ({
  key: `${api}-${codec}-key-${i % 6}`,
  value: `${api}-${codec}-${i}-${'x'.repeat(200)}`,
  headers: { codec, n: String(i) },
}))

/** Sends each codec's records with a KafkaJS-API producer of that codec. */
async function sendKafkaJS(client, topic) {
  const sent = []
  for (const codec of codecs) {
    const producer = client.producer({ kafkaJS: { acks: -1, compression: codec } })
    await producer.connect()
    const messages = records('kjs', codec)
    // send() turns the values into Buffers in place: the copy keeps them as sent, strings.
    sent.push(...messages.map(m => ({ ...m, headers: { ...m.headers } })))
    const meta = await producer.send({ topic, messages })
    assert.equal(meta.length > 0, true, `no partition metadata for ${codec}`)
    for (const m of meta) assert.equal(m.errorCode, 0, `${codec} to partition ${m.partition}`)
    await producer.disconnect()
  }
  return sent
}

/** Sends each codec's records with a node-rdkafka-style Producer, waiting for every delivery report. */
function sendRdkafka(topic, codec) {
  const messages = records('rdk', codec)
  return new Promise((resolve, reject) => {
    const producer = new confluent.Producer({
      'bootstrap.servers': brokers().join(','), acks: 'all', 'compression.codec': codec, dr_cb: true, 'linger.ms': 20,
    })
    let delivered = 0
    const fail = e => { producer.disconnect(); reject(e) }
    producer.on('delivery-report', (err, report) => {
      if (err) return fail(new Error(`delivery of ${codec} record to p${report.partition}: ${err.message}`))
      if (++delivered === messages.length) producer.disconnect(() => resolve(messages))
    })
    producer.on('event.error', fail)
    producer.setPollInterval(50)
    producer.connect({}, err => {
      if (err) return fail(err)
      for (const m of messages) {
        const headers = Object.entries(m.headers).map(([k, v]) => ({ [k]: v }))
        producer.produce(topic, null, Buffer.from(m.value), m.key, Date.now(), undefined, headers)
      }
    })
  })
}

/** Reads `count` records of `topic` with a node-rdkafka-style KafkaConsumer (its flowing mode). */
function readRdkafka(topic, count) {
  return new Promise((resolve, reject) => {
    const got = []
    const consumer = new confluent.KafkaConsumer({
      'bootstrap.servers': brokers().join(','), 'group.id': uniqueName('codecs-rdk-g'), 'enable.auto.commit': false,
    }, { 'auto.offset.reset': 'earliest' })
    const timer = setTimeout(() => { consumer.disconnect(); reject(new Error(`KafkaConsumer read ${got.length} of ${count}`)) }, 20000)
    consumer.on('ready', () => { consumer.subscribe([topic]); consumer.consume() })
    consumer.on('data', m => {
      got.push({ key: m.key && m.key.toString(), value: m.value.toString() })
      if (got.length === count) {
        clearTimeout(timer)
        consumer.disconnect(() => resolve(got))
      }
    })
    consumer.on('event.error', e => { clearTimeout(timer); consumer.disconnect(); reject(e) })
    consumer.connect()
  })
}

scenario('produce-consume-codecs', async () => {
  const { client, admin, topic } = await withTopic('codecs', 3)
  await admin.disconnect()

  const sent = await sendKafkaJS(client, topic)
  for (const codec of codecs) sent.push(...await sendRdkafka(topic, codec))

  const got = await consumeUntil(consumerOf(client, uniqueName('codecs-g')), topic, r => r.length >= sent.length)
  checkByKey(sent, got)

  const rdk = sent.filter(m => m.key.startsWith('rdk-'))
  const again = await readRdkafka(topic, sent.length)
  const values = new Set(again.map(r => r.value))
  for (const m of rdk) assert.ok(values.has(m.value), `KafkaConsumer missed ${m.value.slice(0, 24)}`)
  return `acks=all, ${sent.length} records with keys and headers, ${perCodec} per codec and API: ${codecs.join(', ')}, ` +
    'from KafkaJS-API producers and node-rdkafka-style Producers; read back by a KafkaJS-API consumer and a KafkaConsumer'
})
