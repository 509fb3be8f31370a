// Idempotent producers (InitProducerId, sequence numbers per partition, up to five batches in
// flight per broker): one with every send started before the first is answered, then a second
// one awaiting each send. Every record is in the log exactly once, and each key's records
// (one partition) in the order they were sent: librdkafka numbers records in produce order.
'use strict'

const assert = require('node:assert/strict')
const { consumerOf, uniqueName, withTopic, scenario, consumeUntil } = require('../lib')
const { checkOnceInOrder } = require('../../node-common/checks')

const rounds = 2 // the first sends concurrently, the second one send at a time
const sendsPerRound = 40
const perSend = 10

scenario('idempotent', async () => {
  const { client, admin, topic } = await withTopic('idem', 3)

  const expected = []
  for (let round = 0; round < rounds; round++) {
    const producer = client.producer({ kafkaJS: { idempotent: true, acks: -1 }, 'linger.ms': 5 })
    await producer.connect()
    const sends = []
    for (let s = 0; s < sendsPerRound; s++) {
      const messages = Array.from({ length: perSend }, (_, i) => {
        const n = (round * sendsPerRound + s) * perSend + i
        return { key: `k${n % 7}`, value: String(n) }
      })
      expected.push(...messages)
      const sent = producer.send({ topic, messages })
      if (round === 0) sends.push(sent)
      else await sent
    }
    await Promise.all(sends)
    await producer.disconnect()
  }

  const offsets = await admin.fetchTopicOffsets(topic)
  await admin.disconnect()
  const inLog = offsets.reduce((n, p) => n + Number(p.high) - Number(p.low), 0)
  assert.equal(inLog, expected.length, 'records in the log (high watermarks)')

  const got = await consumeUntil(consumerOf(client, uniqueName('idem-g')), topic, r => r.length >= expected.length)
  checkOnceInOrder(got, expected.length, key => key)
  return `${expected.length} records from 2 idempotent producers (${sendsPerRound} concurrent sends, ` +
    `${sendsPerRound} sequential): each once in the log, in send order per key`
})
