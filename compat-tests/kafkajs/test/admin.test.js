// kafkajs's admin client: create topics (with configs, twice, with a bad config), describe
// the cluster and topic metadata, describe and alter configs, add partitions, list and describe
// groups, fetch and set a group's offsets, fetch topic offsets (also by timestamp), delete
// records, groups and topics.
'use strict'

const assert = require('node:assert/strict')
const { ConfigResourceTypes } = require('kafkajs')
const { kafka, consumerOf, uniqueName, scenario, waitFor, consumeUntil } = require('../lib')

const configOf = (resource, name) => resource.configEntries.find(c => c.configName === name)

scenario('admin', async () => {
  const client = kafka()
  const admin = client.admin()
  await admin.connect()
  const topic = uniqueName('admin')
  const compacted = uniqueName('admin-compacted')

  const cluster = await admin.describeCluster()
  assert.equal(cluster.brokers.length, 1, 'brokers in describeCluster')
  assert.ok(cluster.clusterId, 'cluster id')

  assert.equal(await admin.createTopics({
    waitForLeaders: true,
    topics: [
      { topic, numPartitions: 2, configEntries: [{ name: 'retention.ms', value: '3600000' }] },
      { topic: compacted, numPartitions: 1, configEntries: [{ name: 'cleanup.policy', value: 'compact' }] },
    ],
  }), true, 'createTopics of new topics')
  // Kafka answers TOPIC_ALREADY_EXISTS, which kafkajs reports as false.
  assert.equal(await admin.createTopics({ topics: [{ topic }] }), false, 'createTopics of an existing topic')
  await assert.rejects(
    admin.createTopics({ topics: [{ topic: uniqueName('bad'), configEntries: [{ name: 'cleanup.policy', value: 'sideways' }] }] }),
    e => e.name === 'KafkaJSAggregateError' && e.errors[0].type === 'INVALID_CONFIG',
    'a bad config value is INVALID_CONFIG')
  const topics = await admin.listTopics()
  assert.ok(topics.includes(topic) && topics.includes(compacted), 'listTopics shows both')

  const described = await admin.describeConfigs({
    includeSynonyms: false,
    resources: [
      { type: ConfigResourceTypes.TOPIC, name: topic, configNames: ['retention.ms', 'cleanup.policy'] },
      { type: ConfigResourceTypes.TOPIC, name: compacted },
      { type: ConfigResourceTypes.BROKER, name: '1', configNames: ['num.partitions'] },
    ],
  })
  const [t1, t2, broker] = described.resources
  assert.equal(configOf(t1, 'retention.ms').configValue, '3600000')
  assert.equal(configOf(t1, 'retention.ms').isDefault, false)
  assert.equal(configOf(t1, 'cleanup.policy').configValue, 'delete')
  assert.equal(configOf(t1, 'cleanup.policy').isDefault, true)
  assert.equal(configOf(t2, 'cleanup.policy').configValue, 'compact')
  assert.equal(configOf(broker, 'num.partitions').configValue, '3', 'the broker runs with num.partitions=3')

  await admin.alterConfigs({
    validateOnly: false,
    resources: [{ type: ConfigResourceTypes.TOPIC, name: topic, configEntries: [{ name: 'retention.ms', value: '7200000' }] }],
  })
  const altered = await admin.describeConfigs({
    includeSynonyms: false,
    resources: [{ type: ConfigResourceTypes.TOPIC, name: topic, configNames: ['retention.ms'] }],
  })
  assert.equal(configOf(altered.resources[0], 'retention.ms').configValue, '7200000', 'alterConfigs took')

  await admin.createPartitions({ topicPartitions: [{ topic, count: 4 }] })
  await waitFor('four partitions in the metadata', async () => {
    const { topics: [m] } = await admin.fetchTopicMetadata({ topics: [topic] })
    return m.partitions.length === 4 && m.partitions.every(p => p.leader === 1)
  })

  const producer = client.producer()
  await producer.connect()
  const start = Date.now()
  await producer.send({ topic, acks: -1, messages: Array.from({ length: 40 }, (_, i) => ({ partition: i % 4, value: `v${i}` })) })
  await producer.disconnect()
  const ends = await admin.fetchTopicOffsets(topic)
  assert.deepEqual(ends.map(p => [p.partition, p.low, p.high]).sort(), [[0, '0', '10'], [1, '0', '10'], [2, '0', '10'], [3, '0', '10']])
  const byTime = await admin.fetchTopicOffsetsByTimestamp(topic, start - 60000)
  assert.deepEqual(byTime.map(p => p.offset), ['0', '0', '0', '0'], 'offsets by a timestamp before every record')

  // A group that consumed the topic, then stopped: listed, described, its offsets fetched.
  const groupId = uniqueName('admin-g')
  await consumeUntil(consumerOf(client, { groupId }), topic, r => r.length >= 40)
  await waitFor('the group to commit', async () => {
    const [o] = await admin.fetchOffsets({ groupId, topics: [topic] })
    return o.partitions.every(p => p.offset === '10')
  })
  const { groups } = await admin.listGroups()
  assert.deepEqual(groups.filter(g => g.groupId === groupId), [{ groupId, protocolType: 'consumer' }], 'listGroups')
  const { groups: [desc] } = await admin.describeGroups([groupId])
  assert.equal(desc.state, 'Empty', 'a group whose consumer left is Empty')
  assert.equal(desc.protocolType, 'consumer')

  // kafkajs sets offsets through a paused consumer of its own, which waits out one 5 s fetch.
  await admin.setOffsets({ groupId, topic, partitions: [{ partition: 0, offset: '3' }] })
  const [after] = await admin.fetchOffsets({ groupId, topics: [topic] })
  assert.equal(after.partitions.find(p => p.partition === 0).offset, '3', 'setOffsets')

  await admin.deleteTopicRecords({ topic, partitions: [{ partition: 1, offset: '6' }] })
  const trimmed = await admin.fetchTopicOffsets(topic)
  assert.equal(trimmed.find(p => p.partition === 1).low, '6', 'deleteTopicRecords moved the log start')

  await admin.deleteGroups([groupId])
  assert.equal((await admin.listGroups()).groups.some(g => g.groupId === groupId), false, 'deleteGroups')

  await admin.deleteTopics({ topics: [topic, compacted] })
  await waitFor('the topics to be gone', async () => {
    const left = await admin.listTopics()
    return !left.includes(topic) && !left.includes(compacted)
  })
  await admin.disconnect()
  return 'createTopics (configs, existing, INVALID_CONFIG), describeCluster, describeConfigs, alterConfigs, ' +
    'createPartitions, listGroups, describeGroups, fetchOffsets, setOffsets, fetchTopicOffsets(+ByTimestamp), ' +
    'deleteTopicRecords, deleteGroups, deleteTopics'
})
