// A leader killed under load: a three-node `sluice dev-cluster` (min.insync.replicas=2), a
// one-partition topic with RF=3, an idempotent acks=all producer sending numbered records one
// batch at a time, and kill -9 of the partition's leader once a first share of them is
// acknowledged. librdkafka retries against the new leader; afterwards every acknowledged record
// is read back exactly once (and no record at all is there twice). (The client's createTopics
// has no replica assignment, so the leader is wherever the controller put it; the note says
// whether it was the active controller too.)
'use strict'

const assert = require('node:assert/strict')
const fs = require('node:fs')
const path = require('node:path')
const { env, kafka, consumerOf, uniqueName, scenario, waitFor, consumeUntil } = require('../lib')
const { devCluster, activeController, stopCluster, sendThroughKill, checkReadBack } = require('../../node-common/dev-cluster')

scenario('leader-kill', async () => {
  const dir = fs.mkdtempSync(path.join(env('SUITE_WORK'), 'leader-kill-'))
  const cluster = await devCluster(dir)
  try {
    const client = kafka({ brokers: cluster.bootstrap })
    const topic = uniqueName('leader-kill')
    const admin = client.admin()
    await admin.connect()
    await admin.createTopics({
      topics: [{ topic, numPartitions: 1, replicationFactor: 3, configEntries: [{ name: 'min.insync.replicas', value: '2' }] }],
    })
    const partition = async () => (await admin.fetchTopicMetadata({ topics: [topic] }))[0].partitions[0]
    await waitFor('all three replicas in sync', async () => (await partition()).isr.length === 3)
    const leader = (await partition()).leader
    const controller = await waitFor('an active controller', () => activeController(cluster))

    const producer = client.producer({ kafkaJS: { idempotent: true, acks: -1 } })
    await producer.connect()
    const { acked, ackedAtKill, failedSends } = await sendThroughKill({
      send: values => producer.send({ topic, messages: values.map(value => ({ value })) }),
      kill: () => process.kill(cluster.pids[leader], 'SIGKILL'),
    })
    await producer.disconnect()
    const after = await partition()
    assert.notEqual(after.leader, leader, 'a new leader was elected')

    const [{ high, low }] = await admin.fetchTopicOffsets(topic)
    await admin.disconnect()
    const inLog = Number(high) - Number(low)
    const got = await consumeUntil(consumerOf(client, uniqueName('leader-kill-g')), topic, r => r.length >= inLog, 30000)
    checkReadBack(acked, got.map(r => r.value))
    const role = leader === controller ? ' (the active controller too)' : ''
    return `RF=3, min.insync.replicas=2, kill -9 of leader node ${leader}${role} after ${ackedAtKill} acks: ` +
      `${acked.length} acknowledged (${failedSends} sends failed), all read back once; new leader ${after.leader}`
  } finally {
    await stopCluster(cluster)
  }
}, { timeout: 60000 })
