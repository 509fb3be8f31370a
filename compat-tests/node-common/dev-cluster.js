// A three-node `sluice dev-cluster` for the Node.js suites' leader-kill scenarios: started on
// free ports, its nodes' pids and HTTP addresses read from its output, the active controller
// found from the nodes' /metrics, and stopped (every node) at the end; and the scenario's load
// and its check, which do not depend on the client.
'use strict'

const assert = require('node:assert/strict')
const { spawn } = require('node:child_process')
const fs = require('node:fs')
const net = require('node:net')
const path = require('node:path')
const { env, duplicates } = require('./harness')

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

/** Starts the cluster in a new directory under `dir`; resolves to {proc, bootstrap, pids: {nodeId: pid},
 * http: {nodeId: address}} once every node is up. A port taken between the check and the start
 * makes the cluster exit: then it tries other ports. */
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

/** Stops the cluster: SIGTERM to dev-cluster (15 s to end), then SIGKILL to any node left. */
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

/** The leader-kill load: `before` + `after` sends of `perSend` numbered records, one at a time
 * through `send(values)` (resolving once acknowledged), with `kill()` called before send number
 * `before`. Resolves to {acked: the acknowledged values, ackedAtKill: how many then, failedSends}. */
async function sendThroughKill({ send, kill, perSend = 10, before = 15, after = 25 }) {
  const acked = []
  let failedSends = 0
  let ackedAtKill = 0
  for (let s = 0; s < before + after; s++) {
    if (s === before) {
      ackedAtKill = acked.length
      kill()
    }
    const values = Array.from({ length: perSend }, (_, i) => String(s * perSend + i))
    try {
      await send(values)
      acked.push(...values)
    } catch (e) {
      // Not acknowledged: these may or may not be in the log, and are not checked.
      failedSends++
    }
  }
  assert.ok(acked.length > ackedAtKill, `records acknowledged after the kill (failed sends: ${failedSends})`)
  return { acked, ackedAtKill, failedSends }
}

/** No value is in the log (`values`, read back) twice, and every acknowledged one is there. */
function checkReadBack(acked, values) {
  assert.deepEqual(duplicates(values), [], 'records in the log twice')
  const have = new Set(values)
  assert.deepEqual(acked.filter(v => !have.has(v)), [], 'acknowledged records lost')
}

module.exports = { devCluster, activeController, stopCluster, sendThroughKill, checkReadBack }
