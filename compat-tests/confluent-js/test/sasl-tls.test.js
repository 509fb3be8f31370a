// SASL_SSL: TLS to the broker's SASL_SSL listener (its certificate checked against the CA
// suite.sh made), then a SCRAM login: SCRAM-SHA-512 (alice) and SCRAM-SHA-256 (bob), the users
// the broker was started with. Each produces and consumes over that listener; a wrong password,
// a mechanism the user has no credential for, and a client that skips TLS are refused.
'use strict'

const assert = require('node:assert/strict')
const { confluent, env, kafka, consumerOf, uniqueName, withTopic, scenario, consumeUntil, describeError } = require('../lib')

const saslBrokers = () => env('SUITE_SASL_BROKERS').split(',')
const secure = sasl => kafka({ brokers: saslBrokers(), ssl: true, sasl }, { 'ssl.ca.location': env('SUITE_CA') })

async function roundtrip(client, label) {
  const { admin, topic } = await withTopic(`sasl-${label}`, 1, client)
  // Metadata over this listener names this listener's address, not the PLAINTEXT one.
  const [t] = await admin.fetchTopicMetadata({ topics: [topic] })
  assert.deepEqual([`${t.partitions[0].leaderNode.host}:${t.partitions[0].leaderNode.port}`], saslBrokers())
  await admin.disconnect()
  const producer = client.producer({ kafkaJS: { acks: -1 } })
  await producer.connect()
  await producer.send({ topic, messages: Array.from({ length: 20 }, (_, i) => ({ value: `${label}-${i}` })) })
  await producer.disconnect()
  const got = await consumeUntil(consumerOf(client, uniqueName(`sasl-${label}-g`)), topic, r => r.length >= 20)
  assert.deepEqual(got.map(r => r.value), Array.from({ length: 20 }, (_, i) => `${label}-${i}`))
}

/**
 * A node-rdkafka-style Producer with librdkafka's `config` is refused: its first error event
 * (librdkafka's error callback) must pass `check`. Resolves to the error's text. The KafkaJS
 * API cannot tell: its connect() does not poll for error events, so it fails only when its
 * metadata request times out (30 s), as "Broker transport failure"; here the test polls.
 */
function refused(config, what, check) {
  return new Promise((resolve, reject) => {
    const producer = new confluent.Producer({ 'bootstrap.servers': saslBrokers().join(','), ...config })
    let done = false
    const finish = (err, text) => {
      if (done) return
      done = true
      clearTimeout(timer)
      clearInterval(poll)
      const end = () => (err ? reject(err) : resolve(text))
      if (producer.isConnected()) producer.disconnect(end)
      else end()
    }
    const timer = setTimeout(() => finish(new Error(`${what}: no error in 15 s`)), 15000)
    const logs = []
    producer.on('event.log', l => logs.push(l.message))
    producer.on('event.error', e => {
      const text = `${e.message}: ${e.stack.split('\n')[0]} (logged: ${logs.join(' | ')})`
      finish(check(text) ? null : new Error(`${what}: ${text}`), text)
    })
    producer.connect({ timeout: 3000 }, () => {})
    // The handle exists once connect() has started its metadata request.
    const poll = setInterval(() => { if (producer.isConnected()) producer.poll() }, 100)
  })
}

const scram = (mechanism, username, password) => ({
  'security.protocol': 'sasl_ssl', 'ssl.ca.location': env('SUITE_CA'),
  'sasl.mechanisms': mechanism, 'sasl.username': username, 'sasl.password': password,
})

scenario('sasl-tls', async () => {
  await roundtrip(secure({ mechanism: 'scram-sha-512', username: 'alice', password: 'alice-secret' }), 'sha512')
  await roundtrip(secure({ mechanism: 'scram-sha-256', username: 'bob', password: 'bob-secret' }), 'sha256')
  // librdkafka's error event says only "Authentication failure"; its log says why.
  const authFailed = e => /Authentication failure .*invalid credentials/.test(e)
  // Each refusal waits out its connect()'s 3 s metadata request before it is released: all at once.
  await Promise.all([
    refused(scram('SCRAM-SHA-512', 'alice', 'wrong'), 'a wrong password', authFailed),
    refused(scram('SCRAM-SHA-256', 'alice', 'alice-secret'), 'alice has no SCRAM-SHA-256 credential', authFailed),
    refused(scram('PLAIN', 'alice', 'alice-secret'), 'PLAIN is not enabled',
      e => /Authentication failure .*Unsupported SASL mechanism/.test(e)),
    // No TLS at all: the broker reads no TLS handshake and closes the connection.
    refused({}, 'plaintext to the SASL_SSL listener', e => /connection closed by peer|Transport|timed out/i.test(e)),
  ])
  return 'SASL_SSL with the CA checked: SCRAM-SHA-512 and SCRAM-SHA-256 produce/consume; wrong password, ' +
    'missing credential, disabled PLAIN and a non-TLS client refused (node-rdkafka-style Producer\'s error events)'
})
