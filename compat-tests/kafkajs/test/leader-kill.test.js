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
const { spawn } = require('node:child_process')
const fs = require('node:fs')
const net = require('node:net')
const path = require('node:path')
const { env, kafka, consumerOf, uniqueName, scenario, waitFor, consumeUntil, duplicates } = require('../lib')

const perSend = 10
const sendsBeforeKill = 15
const sendsAfterKill = 25

const portFree = port => new Promise(resolve => {
  const s = net.createServer().once('error', () => resolve(false))
  s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)))
})

// dev-cluster's node i uses base+i-1, base+100+i-1 and base+200+i-1; the ports are drawn below
// Linux's ephemeral range (32768 up), where clients' own connections would take them.
async function freeBase() {
  for (let attempt = 0; attempt < 50; attempt++) {
    const base = 20000 + Math.floor(Math.random() * 12000)
    const ports = [0, 1, 2].flatMap(i => [base + i, base + 100 + i, base + 200 + i])
    if ((await Promise.all(ports.map(portFree))).every(Boolean)) return base
  }
  throw new Error('no free ports for the dev-cluster')
}

/** Starts the cluster; resolves to {proc, bootstrap, pids: {nodeId: pid}} once every node is up.
 * A port taken between the check and the start makes the cluster exit: then it tries other ports. */
async function devCluster(dir) {
  for (let attempt = 1; ; attempt++) {
    try {
      return await devClusterOn(await freeBase(), fs.mkdtempSync(path.join(dir, 'cluster-')))
    } catch (e) {
      if (attempt === 3) throw e
    }
  }
}

async function devClusterOn(base, dir) {
  const proc = spawn(env('SLUICE_BIN'), ['dev-cluster', '--brokers', '3', '--base-port', String(base), '--data-dir', dir,
    '--set', 'min.insync.replicas=2',
    // A killed node is fenced after the session timeout; Kafka's 9 s would be most of the suite's time.
    '--set', 'broker.session.timeout.ms=3000', '--set', 'broker.heartbeat.interval.ms=500',
    '--set', 'group.initial.rebalance.delay.ms=0'], { stdio: ['ignore', 'pipe', 'pipe'] })
  let out = ''
  proc.stdout.on('data', d => { out += d })
  proc.stderr.on('data', d => { out += d })
  const cluster = { proc, pids: {}, http: {} }
  const deadline = Date.now() + 20000
  for (;;) {
    for (const m of out.matchAll(/^node (\d+) pid (\d+) listening \S+ http (\S+)/gm)) {
      cluster.pids[m[1]] = Number(m[2])
      cluster.http[m[1]] = m[3]
    }
    if (Object.keys(cluster.pids).length === 3) break
    // A node that could not start (its port taken) exits, and the cluster is no good.
    if (proc.exitCode !== null || /exited/.test(out) || Date.now() > deadline) {
      await stopCluster(cluster)
      throw new Error(`dev-cluster did not start: ${out.slice(-1000)}`)
    }
    await new Promise(r => setTimeout(r, 100))
  }
  cluster.bootstrap = out.match(/^bootstrap servers: (\S+)/m)[1].split(',')
  return cluster
}

/** The node that is the active controller, from the nodes' /metrics (Metadata's controller id
 * is any live broker, as in Kafka's KRaft mode, so it cannot tell). */
async function activeController(cluster) {
  for (const [node, http] of Object.entries(cluster.http)) {
    const metrics = await (await fetch(`http://${http}/metrics`)).text()
    if (/^sluice_active_controller 1$/m.test(metrics)) return Number(node)
  }
  return undefined
}

async function stopCluster(cluster) {
  if (cluster.proc.exitCode === null) {
    let timer
    const exited = new Promise(resolve => cluster.proc.once('exit', resolve))
    cluster.proc.kill('SIGTERM')
    await Promise.race([exited, new Promise(resolve => { timer = setTimeout(resolve, 15000) })])
    clearTimeout(timer)
  }
  for (const pid of Object.values(cluster.pids)) {
    try { process.kill(pid, 'SIGKILL') } catch { /* already gone */ }
  }
}

scenario('leader-kill', async () => {
  const dir = fs.mkdtempSync(path.join(env('KAFKAJS_WORK'), 'leader-kill-'))
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
    const acked = []
    let failedSends = 0
    for (let s = 0; s < sendsBeforeKill + sendsAfterKill; s++) {
      if (s === sendsBeforeKill) process.kill(cluster.pids[leader], 'SIGKILL')
      const values = Array.from({ length: perSend }, (_, i) => String(s * perSend + i))
      try {
        await producer.send({ topic, acks: -1, messages: values.map(value => ({ value })) })
        acked.push(...values)
      } catch (e) {
        // Not acknowledged: these may or may not be in the log, and are not checked.
        failedSends++
      }
    }
    await producer.disconnect()
    const after = await leaderOf()
    assert.notEqual(after.leader, leader, 'a new leader was elected')
    assert.ok(acked.length > sendsBeforeKill * perSend, `records acknowledged after the kill (failed sends: ${failedSends})`)

    const [{ high, low }] = await admin.fetchTopicOffsets(topic)
    await admin.disconnect()
    const inLog = Number(high) - Number(low)
    const got = await consumeUntil(consumerOf(client, { groupId: uniqueName('leader-kill-g') }), topic,
      r => r.length >= inLog, 30000)
    const values = got.map(r => r.value)
    assert.deepEqual(duplicates(values), [], 'records in the log twice')
    const have = new Set(values)
    const lost = acked.filter(v => !have.has(v))
    assert.deepEqual(lost, [], 'acknowledged records lost')
    return `RF=3, min.insync.replicas=2, kill -9 of leader node ${leader} (the active controller too) after ${sendsBeforeKill * perSend} acks: ` +
      `${acked.length} acknowledged (${failedSends} sends failed), all read back once; new leader ${after.leader}`
  } finally {
    await stopCluster(cluster)
  }
}, { timeout: 55000 })
