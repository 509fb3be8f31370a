// A consumer group of three (the classic protocol, librdkafka's range assignor): join, leave,
// a member killed -9 whose session expires, restart from the commits; see
// ../../node-common/group-of-three.js. The KafkaJS API has no join event: each member's
// assignment() is polled.
'use strict'

const path = require('node:path')
const { consumerOf, uniqueName, withTopic, scenario } = require('../lib')
const { partitionsOf } = require('../group-member')
const { groupOfThree } = require('../../node-common/group-of-three')

const partitions = 6

scenario('group-of-three', async () => {
  const { client, admin, topic } = await withTopic('group3', partitions)
  const groupId = uniqueName('group3-g')
  const producer = client.producer({ kafkaJS: { acks: -1 } })
  await producer.connect()
  try {
    return await groupOfThree({
      partitions,
      perPhase: 120,
      async startMember(who, onRecord, onAssignment) {
        const c = consumerOf(client, groupId, { heartbeatInterval: 500 })
        await c.connect()
        await c.subscribe({ topics: [topic] })
        await c.run({ eachMessage: async ({ partition, message }) => onRecord(partition, message.value.toString()) })
        const poll = setInterval(() => onAssignment(partitionsOf(c.assignment(), topic)), 100)
        return { disconnect: async () => { clearInterval(poll); await c.disconnect() } }
      },
      memberProcess: [path.join(__dirname, '..', 'group-member.js'), groupId, topic],
      send: messages => producer.send({ topic, messages }),
      ends: () => admin.fetchTopicOffsets(topic),
      committed: async () => (await admin.fetchOffsets({ groupId, topics: [topic] }))[0].partitions,
    })
  } finally {
    await producer.disconnect()
    await admin.disconnect()
  }
}, { timeout: 60000 })
