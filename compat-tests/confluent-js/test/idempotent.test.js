// Idempotent producers (InitProducerId, sequence numbers per partition, up to five batches in
// flight per broker): one with every send started before the first is answered, then a second
// one awaiting each send (../../node-common/idempotent.js). Every record is in the log exactly
// once, and each key's records (one partition) in the order they were sent: librdkafka numbers
// records in produce order.
'use strict'

const { consumerOf, uniqueName, withTopic, scenario, consumeUntil } = require('../lib')
const { idempotentRounds } = require('../../node-common/idempotent')

scenario('idempotent', async () => {
  const { client, admin, topic } = await withTopic('idem', 3)
  try {
    const note = await idempotentRounds({
      newProducer: () => client.producer({ kafkaJS: { idempotent: true, acks: -1 }, 'linger.ms': 5 }),
      send: (producer, messages) => producer.send({ topic, messages }),
      offsets: () => admin.fetchTopicOffsets(topic),
      readBack: count => consumeUntil(consumerOf(client, uniqueName('idem-g')), topic, r => r.length >= count),
      orderGroup: key => key,
    })
    return `${note}, in send order per key`
  } finally {
    await admin.disconnect()
  }
})
