// The client's admin API (KafkaJS-compatible, plus the node-rdkafka-style AdminClient for what
// only it has): create topics (with configs, an existing one, a bad config), list and describe
// topics, add partitions, fetch topic offsets (also by timestamp), list and describe groups,
// fetch a group's offsets and commit new ones, delete records, groups and topics.
// DescribeConfigs and AlterConfigs are n/a: neither API of the client has them.
'use strict'

const assert = require('node:assert/strict')
const { confluent, brokers, kafka, consumerOf, uniqueName, scenario, waitFor, consumeUntil, describeError } = require('../lib')

/** Calls a node-rdkafka-style AdminClient method that takes a callback last, as a promise. */
const call = (admin, method, ...args) => new Promise((resolve, reject) =>
  admin[method](...args, (err, result) => (err ? reject(err) : resolve(result))))

scenario('admin', async () => {
  const client = kafka()
  const admin = client.admin()
  await admin.connect()
  const topic = uniqueName('admin')
  const compacted = uniqueName('admin-compacted')

  assert.equal(await admin.createTopics({
    topics: [
      { topic, numPartitions: 2, configEntries: [{ name: 'retention.ms', value: '3600000' }] },
      { topic: compacted, numPartitions: 1, configEntries: [{ name: 'cleanup.policy', value: 'compact' }] },
    ],
  }), true, 'createTopics of new topics')
  // Kafka answers TOPIC_ALREADY_EXISTS, which the client reports as false.
  assert.equal(await admin.createTopics({ topics: [{ topic }] }), false, 'createTopics of an existing topic')
  await assert.rejects(
    admin.createTopics({ topics: [{ topic: uniqueName('bad'), configEntries: [{ name: 'cleanup.policy', value: 'sideways' }] }] }),
    e => e.name === 'KafkaJSAggregateError' && /INVALID_CONFIG/.test(describeError(e.errors[0])),
    'a bad config value is INVALID_CONFIG')
  const topics = await admin.listTopics()
  assert.ok(topics.includes(topic) && topics.includes(compacted), 'listTopics shows both')

  // Adding partitions is only in the node-rdkafka-style AdminClient.
  const rdkAdmin = confluent.AdminClient.create({ 'bootstrap.servers': brokers().join(',') })
  try {
    await call(rdkAdmin, 'createPartitions', topic, 4, 5000)
    await assert.rejects(call(rdkAdmin, 'createPartitions', topic, 3, 5000), e => /INVALID_PARTITIONS|partition/i.test(describeError(e)),
      'fewer partitions than the topic has')
  } finally {
    rdkAdmin.disconnect()
  }
  await waitFor('four partitions in the metadata', async () => {
    const [m] = await admin.fetchTopicMetadata({ topics: [topic] })
    return m.partitions.length === 4 && m.partitions.every(p => p.leader === 1 && p.isr.length === 1)
  })

  const producer = client.producer({ kafkaJS: { acks: -1 } })
  await producer.connect()
  const start = Date.now()
  await producer.send({ topic, messages: Array.from({ length: 40 }, (_, i) => ({ partition: i % 4, value: `v${i}` })) })
  await producer.disconnect()
  const ends = await admin.fetchTopicOffsets(topic)
  assert.deepEqual(ends.map(p => [p.partition, p.low, p.high]).sort(), [[0, '0', '10'], [1, '0', '10'], [2, '0', '10'], [3, '0', '10']])
  const byTime = await admin.fetchTopicOffsetsByTimestamp(topic, start - 60000)
  assert.deepEqual(byTime.map(p => p.offset), ['0', '0', '0', '0'], 'offsets by a timestamp before every record')
  const byLaterTime = await admin.fetchTopicOffsetsByTimestamp(topic, Date.now() + 60000)
  assert.deepEqual(byLaterTime.map(p => p.offset), ['10', '10', '10', '10'], 'offsets by a timestamp after every record')

  // A group that consumed the topic, then stopped: listed, described, its offsets fetched.
  const groupId = uniqueName('admin-g')
  await consumeUntil(consumerOf(client, groupId), topic, r => r.length >= 40)
  await waitFor('the group to commit', async () => {
    const [o] = await admin.fetchOffsets({ groupId, topics: [topic] })
    return o.partitions.length === 4 && o.partitions.every(p => p.offset === '10')
  })
  const { groups } = await admin.listGroups()
  const listed = groups.filter(g => g.groupId === groupId)
  assert.equal(listed.length, 1, 'listGroups shows the group')
  assert.equal(listed[0].protocolType, 'consumer')
  assert.equal(listed[0].state, confluent.KafkaJS.ConsumerGroupStates.EMPTY, 'a group whose consumer left is Empty')
  const { groups: [desc] } = await admin.describeGroups([groupId])
  assert.equal(desc.groupId, groupId)
  assert.equal(desc.state, confluent.KafkaJS.ConsumerGroupStates.EMPTY, 'describeGroups: Empty')
  assert.equal(desc.members.length, 0, 'describeGroups: no members')

  // New offsets committed by a consumer of the group that never joins it (OffsetCommit from
  // a simple consumer), then read back.
  const committer = consumerOf(client, groupId)
  await committer.connect()
  await committer.commitOffsets([{ topic, partition: 0, offset: '3' }])
  await committer.disconnect()
  const [after] = await admin.fetchOffsets({ groupId, topics: [topic] })
  assert.equal(after.partitions.find(p => p.partition === 0).offset, '3', 'commitOffsets')

  await admin.deleteTopicRecords({ topic, partitions: [{ partition: 1, offset: '6' }] })
  const trimmed = await admin.fetchTopicOffsets(topic)
  assert.equal(trimmed.find(p => p.partition === 1).low, '6', 'deleteTopicRecords moved the log start')

  // One unknown group among the ones to delete fails the call, with a report per group.
  const unknown = uniqueName('no-such-group')
  await assert.rejects(admin.deleteGroups([groupId, unknown]), e => {
    const [known, missing] = e.groups
    assert.deepEqual([known.groupId, known.errorCode, missing.groupId], [groupId, 0, unknown], 'deleteGroups reports')
    assert.match(describeError(missing.error), /GROUP_ID_NOT_FOUND/, 'deleteGroups of an unknown group')
    return true
  })
  assert.equal((await admin.listGroups()).groups.some(g => g.groupId === groupId), false, 'deleteGroups')

  await admin.deleteTopics({ topics: [topic, compacted] })
  await waitFor('the topics to be gone', async () => {
    const left = await admin.listTopics()
    return !left.includes(topic) && !left.includes(compacted)
  })
  await admin.disconnect()
  return 'createTopics (configs, existing, INVALID_CONFIG), listTopics, fetchTopicMetadata, createPartitions, ' +
    'fetchTopicOffsets(+ByTimestamp), listGroups, describeGroups, fetchOffsets, commitOffsets, ' +
    'deleteTopicRecords, deleteGroups, deleteTopics; describe/alter configs: not in the client'
})
