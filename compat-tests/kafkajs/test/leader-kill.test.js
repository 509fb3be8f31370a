// A leader killed under load: a three-node `sluice dev-cluster` (min.insync.replicas=2), a
// topic with RF=3 led by the active controller, an idempotent acks=all producer sending
// numbered records one batch at a time, and kill -9 of the partition's leader (the controller
// with it) once a first share of them is acknowledged. The
// producer carries on against the new leader; afterwards every acknowledged record is read
// back exactly once (and no record at all is there twice). One partition: a send() spanning
// partitions on two brokers meets a kafkajs bug of its own that loses acknowledged records on
// Apache Kafka too (client-bugs/retry-skips-answered-broker.js).
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
    const client = kafka({ brokers: cluster.bootstrap, retry: { initialRetryTime: 200, retries: 12, maxRetryTime: 2000 } })
    const topic = uniqueName('leader-kill')
    const admin = client.admin()
    await admin.connect()
    // The partition's first replica (its preferred leader) is the active controller, so the
    // kill takes both: the metadata quorum elects a new controller, which elects a new leader.
    const controller = await waitFor('an active controller', () => activeController(cluster))
    const replicas = [controller, ...[1, 2, 3].filter(n => n !== controller)]
    await admin.createTopics({
      topics: [{ topic, replicaAssignment: [{ partition: 0, replicas }], configEntries: [{ name: 'min.insync.replicas', value: '2' }] }],
      waitForLeaders: true,
    })
    const leaderOf = async () => {
      const { topics: [t] } = await admin.fetchTopicMetadata({ topics: [topic] })
      return t.partitions[0]
    }
    await waitFor('all three replicas in sync', async () => (await leaderOf()).isr.length === 3)
    const leader = (await leaderOf()).leader
    assert.equal(leader, controller, 'the partition is led by the active controller')
    assert.equal(await activeController(cluster), leader, 'the leader is still the active controller')

    const producer = client.producer({ idempotent: true, maxInFlightRequests: 1 })
    await producer.connect()
    const { acked, ackedAtKill, failedSends } = await sendThroughKill({
      send: values => producer.send({ topic, acks: -1, messages: values.map(value => ({ value })) }),
      kill: () => process.kill(cluster.pids[leader], 'SIGKILL'),
    })
    await producer.disconnect()
    const after = await leaderOf()
    assert.notEqual(after.leader, leader, 'a new leader was elected')

    const [{ high, low }] = await admin.fetchTopicOffsets(topic)
    await admin.disconnect()
    const inLog = Number(high) - Number(low)
    const got = await consumeUntil(consumerOf(client, { groupId: uniqueName('leader-kill-g') }), topic,
      r => r.length >= inLog, 30000)
    checkReadBack(acked, got.map(r => r.value))
    return `RF=3, min.insync.replicas=2, kill -9 of leader node ${leader} (the active controller too) after ${ackedAtKill} acks: ` +
      `${acked.length} acknowledged (${failedSends} sends failed), all read back once; new leader ${after.leader}`
  } finally {
    await stopCluster(cluster)
  }
}, { timeout: 55000 })
