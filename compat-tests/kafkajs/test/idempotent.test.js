// Idempotent producers (InitProducerId, sequence numbers per partition): one with many sends
// in flight at once, then a second one awaiting each send; every record is in the log exactly
// once, and in the order the producer numbered it (../../node-common/idempotent.js). (kafkajs
// numbers concurrent send() calls in the order they take its broker lock, not the order they
// were called, so for the first producer only the order inside each call is checked.)
'use strict'

const { consumerOf, uniqueName, withTopic, scenario, consumeUntil } = require('../lib')
const { idempotentRounds } = require('../../node-common/idempotent')

scenario('idempotent', async () => {
  const { client, admin, topic } = await withTopic('idem', 3)
  try {
    const note = await idempotentRounds({
      newProducer: () => client.producer({ idempotent: true, maxInFlightRequests: 1 }),
      // Every send of the first producer is started before the first is answered: kafkajs
      // queues and batches them, and the broker must take each sequence once and in order.
      send: (producer, messages) => producer.send({ topic, acks: -1, messages }),
      offsets: () => admin.fetchTopicOffsets(topic),
      readBack: count => consumeUntil(consumerOf(client, { groupId: uniqueName('idem-g') }), topic, r => r.length >= count),
      orderGroup: (key, round, send) => (round === 0 ? `${key} send ${send}` : `${key} second producer`),
    })
    return `${note}, in sequence order per partition`
  } finally {
    await admin.disconnect()
  }
})
