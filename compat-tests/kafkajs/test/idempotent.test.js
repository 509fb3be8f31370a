// Idempotent producers (InitProducerId, sequence numbers per partition): one with many sends
// in flight at once, then a second one awaiting each send; every record is in the log exactly
// once, and in the order the producer numbered it. (kafkajs numbers concurrent send() calls in
// the order they take its broker lock, not the order they were called, so for the first
// producer only the order inside each call is checked.)
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
    const producer = client.producer({ idempotent: true, maxInFlightRequests: 1 })
    await producer.connect()
    // Every send is started before the first is answered: kafkajs queues and batches
    // them, and the broker must take each sequence once and in order.
    const sends = []
    for (let s = 0; s < sendsPerRound; s++) {
      const messages = Array.from({ length: perSend }, (_, i) => {
        const n = (round * sendsPerRound + s) * perSend + i
        return { key: `k${n % 7}`, value: String(n) }
      })
      expected.push(...messages)
      const sent = producer.send({ topic, acks: -1, messages })
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

  const got = await consumeUntil(consumerOf(client, { groupId: uniqueName('idem-g') }), topic,
    r => r.length >= expected.length)
  // Each key lives on one partition. Its values from one send() call (first producer), and
  // all its values (second producer) were numbered in increasing order.
  const firstSends = sendsPerRound * perSend
  checkOnceInOrder(got, expected.length, (key, n) => `${key} ${n < firstSends ? `send ${Math.floor(n / perSend)}` : 'second producer'}`)
  return `${expected.length} records from 2 idempotent producers (${sendsPerRound} concurrent sends, ` +
    `${sendsPerRound} sequential): each once in the log, in sequence order per partition`
})
