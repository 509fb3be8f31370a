// Shared by the scenario files: the broker that run.sh started (read from the environment),
// kafkajs clients for it, the matrix row each scenario writes, and small waiting helpers.
'use strict'

const fs = require('node:fs')
const crypto = require('node:crypto')
const { test, after } = require('node:test')
const { Kafka, logLevel } = require('kafkajs')

/** The environment run.sh exports; a scenario run without it fails with a clear message. */
function env(name) {
  const v = process.env[name]
  if (!v) throw new Error(`${name} is not set: run the suite with compat-tests/kafkajs/run.sh`)
  return v
}

const brokers = () => env('KAFKAJS_BROKERS').split(',')

// kafkajs logs every retried error at ERROR; a scenario's assertions say what went wrong,
// so the client stays quiet unless KAFKAJS_LOG_LEVEL asks for it (e.g. DEBUG).
const level = logLevel[process.env.KAFKAJS_LOG_LEVEL || 'NOTHING']

/** A kafkajs client for the suite's broker (or `config.brokers`), a fresh client id each time. */
function kafka(config = {}) {
  return new Kafka({
    clientId: `sluice-kafkajs-${crypto.randomBytes(3).toString('hex')}`,
    logLevel: level,
    retry: { initialRetryTime: 100, retries: 10 },
    ...config,
    brokers: config.brokers || brokers(),
  })
}

/**
 * A consumer of `client` that long-polls for half a second, not kafkajs's 5 s: kafkajs
 * heartbeats and leaves its group only between fetches, so a rebalance or a disconnect waits
 * for the fetch in flight.
 */
const consumerOf = (client, config) => client.consumer({ maxWaitTimeInMs: 500, heartbeatInterval: 500, ...config })

/** A topic name no other scenario (or earlier run against the same data dir) uses. */
const uniqueName = prefix => `${prefix}-${crypto.randomBytes(4).toString('hex')}`

/**
 * A connected admin of `client` and a new topic of `numPartitions` (leaders elected), for a
 * scenario's start: resolves to {client, admin, topic}; the scenario disconnects the admin.
 */
async function withTopic(prefix, numPartitions, client = kafka()) {
  const topic = uniqueName(prefix)
  const admin = client.admin()
  await admin.connect()
  await admin.createTopics({ topics: [{ topic, numPartitions }], waitForLeaders: true })
  return { client, admin, topic }
}

/**
 * Writes this scenario's row to the suite's matrix file: kafkajs, scenario, result, note.
 * Tabs and newlines in the note would break the table, so they become spaces.
 */
function matrixRow(scenario, result, note) {
  const clean = String(note || '').replace(/[\t\r\n]+/g, ' ').slice(0, 300)
  fs.appendFileSync(env('KAFKAJS_MATRIX'), `kafkajs\t${scenario}\t${result}\t${clean}\n`)
}

/**
 * One matrix scenario as a node:test test. `body` returns the note for the row (what was
 * checked); a throw marks the row failed with the error's message and fails the test.
 */
function scenario(name, body, { timeout = 45000 } = {}) {
  test(name, { timeout }, async t => {
    try {
      const note = await body(t)
      // Finished, but after node's timeout had failed the test.
      if (t.signal.aborted) throw new Error(`timed out after ${timeout} ms`)
      matrixRow(name, 'pass', note)
    } catch (e) {
      matrixRow(name, 'fail', e && e.message)
      throw e
    }
  })
}

// A scenario that timed out leaves its clients (or a child process) running, and node's test
// runner waits for a file's process to end: once the file's tests are done, its process gets
// five seconds to close what it opened, then exits with the result already reported.
after(() => {
  setTimeout(() => process.exit(), 5000).unref()
})

/** Polls `check` (async, truthy when done) until it holds, else throws `what` after `ms`. */
async function waitFor(what, check, ms = 20000) {
  const deadline = Date.now() + ms
  let last
  for (;;) {
    try {
      last = await check()
      if (last) return last
    } catch (e) {
      last = e
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what} (last: ${last})`)
    await new Promise(r => setTimeout(r, 100))
  }
}

/** Runs `consumer` on `topic` until `done(received)` holds; returns every message's
 * {partition, offset, key, value, headers} in arrival order. Stops (disconnects) the consumer. */
async function consumeUntil(consumer, topic, done, ms = 20000) {
  const received = []
  await consumer.connect()
  await consumer.subscribe({ topics: [topic], fromBeginning: true })
  await consumer.run({
    eachMessage: async ({ partition, message }) => {
      received.push({
        partition,
        offset: Number(message.offset),
        key: message.key && message.key.toString(),
        value: message.value && message.value.toString(),
        headers: message.headers,
      })
    },
  })
  try {
    await waitFor(`records on ${topic} (have ${received.length})`, () => done(received), ms)
  } finally {
    await consumer.disconnect()
  }
  return received
}

/** Values that occur more than once in `values`. */
function duplicates(values) {
  const seen = new Set()
  const dups = new Set()
  for (const v of values) (seen.has(v) ? dups : seen).add(v)
  return [...dups]
}

module.exports = { env, kafka, consumerOf, uniqueName, withTopic, matrixRow, scenario, waitFor, consumeUntil, duplicates }
