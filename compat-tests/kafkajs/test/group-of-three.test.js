// A consumer group of three (the classic protocol, kafkajs's round-robin assignor): join,
// leave, a member killed -9 whose session expires, restart from the commits; see
// ../../node-common/group-of-three.js. kafkajs reports each member's assignment in its
// GROUP_JOIN event.
'use strict'

const path = require('node:path')
const { consumerOf, uniqueName, withTopic, scenario } = require('../lib')
const { groupOfThree } = require('../../node-common/group-of-three')

const partitions = 6

scenario('group-of-three', async () => {
  const { client, admin, topic } = await withTopic('group3', partitions)
  const groupId = uniqueName('group3-g')
  const producer = client.producer()
  await producer.connect()
  try {
    return await groupOfThree({
      partitions,
      perPhase: 120,
      async startMember(who, onRecord, onAssignment) {
        const c = consumerOf(client, { groupId })
        c.on(c.events.GROUP_JOIN, e => onAssignment(e.payload.memberAssignment[topic] || []))
        await c.connect()
        await c.subscribe({ topics: [topic], fromBeginning: true })
        await c.run({ eachMessage: async ({ partition, message }) => onRecord(partition, message.value.toString()) })
        return c
      },
      memberProcess: [path.join(__dirname, '..', 'group-member.js'), groupId, topic],
      send: messages => producer.send({ topic, acks: -1, messages }),
      ends: () => admin.fetchTopicOffsets(topic),
      committed: async () => (await admin.fetchOffsets({ groupId, topics: [topic] }))[0].partitions,
    })
  } finally {
    await producer.disconnect()
    await admin.disconnect()
  }
})
