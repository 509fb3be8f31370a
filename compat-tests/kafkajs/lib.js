// Shared by the scenario files: kafkajs clients for the broker that run.sh started, on top of
// ../node-common/harness.js (the environment, the matrix rows, waiting helpers).
'use strict'

const crypto = require('node:crypto')
const { Kafka, logLevel } = require('kafkajs')
const { env, brokers, uniqueName, scenario, waitFor } = require('../node-common/harness')

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

module.exports = { env, kafka, consumerOf, uniqueName, withTopic, scenario, waitFor, consumeUntil }
