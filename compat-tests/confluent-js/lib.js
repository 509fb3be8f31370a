// Shared by the scenario files: clients of Confluent's JavaScript client for the broker that
// run.sh started, in its KafkaJS-compatible API (and its node-rdkafka-style one), on top of
// ../node-common/harness.js (the environment, the matrix rows, waiting helpers).
'use strict'

const crypto = require('node:crypto')
const confluent = require('@confluentinc/kafka-javascript')
const { env, brokers, uniqueName, scenario, waitFor } = require('../node-common/harness')

const { Kafka, logLevel } = confluent.KafkaJS

// The client logs retried errors; a scenario's assertions say what went wrong, so it stays
// quiet unless CONFLUENT_JS_LOG_LEVEL asks for more (e.g. DEBUG).
const level = logLevel[process.env.CONFLUENT_JS_LOG_LEVEL || 'NOTHING']

/**
 * A KafkaJS-API client for the suite's broker (or `kafkaJS.brokers`), a fresh client id each
 * time. `kafkaJS` holds KafkaJS-style options, `rdkafka` librdkafka properties for every
 * producer, consumer and admin made from it.
 */
function kafka(kafkaJS = {}, rdkafka = {}) {
  return new Kafka({
    kafkaJS: {
      clientId: `sluice-confluent-js-${crypto.randomBytes(3).toString('hex')}`,
      logLevel: level,
      ...kafkaJS,
      brokers: kafkaJS.brokers || brokers(),
    },
    ...rdkafka,
  })
}

/**
 * A consumer of `client` in group `groupId` that starts at the beginning of a partition with
 * no committed offset, and commits what it consumed every half second (librdkafka's 5 s
 * would be most of a scenario's time when it waits for the commits).
 */
const consumerOf = (client, groupId, kafkaJS = {}, rdkafka = {}) =>
  client.consumer({ kafkaJS: { groupId, fromBeginning: true, autoCommitInterval: 500, ...kafkaJS }, ...rdkafka })

/**
 * A connected admin of `client` and a new topic of `numPartitions`, for a scenario's start;
 * resolves to {client, admin, topic} once the topic's partitions have leaders. The scenario
 * disconnects the admin.
 */
async function withTopic(prefix, numPartitions, client = kafka()) {
  const topic = uniqueName(prefix)
  const admin = client.admin()
  await admin.connect()
  await admin.createTopics({ topics: [{ topic, numPartitions }] })
  // The client has no waitForLeaders: the metadata must show a leader for every partition.
  await waitFor(`leaders for ${topic}`, async () => {
    const [t] = await admin.fetchTopicMetadata({ topics: [topic] })
    return t.partitions.length === numPartitions && t.partitions.every(p => p.leader >= 0)
  })
  return { client, admin, topic }
}

/** A message as the scenarios compare it: strings for key and value, headers as strings. */
function plain(partition, message) {
  const headers = {}
  for (const [k, v] of Object.entries(message.headers || {})) headers[k] = String(v)
  return {
    partition,
    offset: Number(message.offset),
    key: message.key && message.key.toString(),
    value: message.value && message.value.toString(),
    headers,
  }
}

/** Runs `consumer` on `topic` until `done(received)` holds; returns every message (see plain())
 * in arrival order. Stops (disconnects) the consumer. */
async function consumeUntil(consumer, topic, done, ms = 20000) {
  const received = []
  await consumer.connect()
  await consumer.subscribe({ topics: [topic] })
  await consumer.run({ eachMessage: async ({ partition, message }) => { received.push(plain(partition, message)) } })
  try {
    await waitFor(`records on ${topic} (have ${received.length})`, () => done(received), ms)
  } finally {
    await consumer.disconnect()
  }
  return received
}

/** The error's name, code and message, for assertions on how the client refused something. */
const describeError = e => `${e && e.name} ${e && e.type} ${e && e.code} ${e && e.message}`

module.exports = { confluent, env, brokers, kafka, consumerOf, uniqueName, withTopic, scenario, waitFor, consumeUntil, describeError }
