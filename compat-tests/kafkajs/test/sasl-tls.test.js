// SASL_SSL: TLS to the broker's SASL_SSL listener (its certificate checked against the CA
// run.sh made), then a SCRAM login: SCRAM-SHA-512 (alice) and SCRAM-SHA-256 (bob), the users
// the broker was started with. Each produces and consumes over that listener; a wrong password,
// a mechanism the user has no credential for, and a client that skips TLS are refused.
'use strict'

const assert = require('node:assert/strict')
const fs = require('node:fs')
const { env, kafka, consumerOf, uniqueName, withTopic, scenario, consumeUntil } = require('../lib')

const secure = sasl => kafka({
  brokers: env('SUITE_SASL_BROKERS').split(','),
  ssl: { ca: [fs.readFileSync(env('SUITE_CA'))] },
  sasl,
  retry: { retries: 0 },
  connectionTimeout: 3000,
})

async function roundtrip(client, label) {
  const { admin, topic } = await withTopic(`sasl-${label}`, 1, client)
  // Metadata over this listener names this listener's address, not the PLAINTEXT one.
  const { brokers } = await admin.describeCluster()
  assert.deepEqual(brokers.map(b => `${b.host}:${b.port}`), env('SUITE_SASL_BROKERS').split(','))
  await admin.disconnect()
  const producer = client.producer()
  await producer.connect()
  await producer.send({ topic, acks: -1, messages: Array.from({ length: 20 }, (_, i) => ({ value: `${label}-${i}` })) })
  await producer.disconnect()
  const got = await consumeUntil(consumerOf(client, { groupId: uniqueName(`sasl-${label}-g`) }), topic, r => r.length >= 20)
  assert.deepEqual(got.map(r => r.value), Array.from({ length: 20 }, (_, i) => `${label}-${i}`))
}

async function refused(client, what, check) {
  const admin = client.admin()
  await assert.rejects(admin.connect(), check, what)
  await admin.disconnect()
}

scenario('sasl-tls', async () => {
  await roundtrip(secure({ mechanism: 'scram-sha-512', username: 'alice', password: 'alice-secret' }), 'sha512')
  await roundtrip(secure({ mechanism: 'scram-sha-256', username: 'bob', password: 'bob-secret' }), 'sha256')
  const authFailed = e => e.name === 'KafkaJSSASLAuthenticationError'
  await refused(secure({ mechanism: 'scram-sha-512', username: 'alice', password: 'wrong' }), 'a wrong password', authFailed)
  await refused(secure({ mechanism: 'scram-sha-256', username: 'alice', password: 'alice-secret' }),
    'alice has no SCRAM-SHA-256 credential', authFailed)
  await refused(secure({ mechanism: 'plain', username: 'alice', password: 'alice-secret' }),
    'PLAIN is not enabled', e => e.type === 'UNSUPPORTED_SASL_MECHANISM')
  // No TLS at all: the handshake never completes, so the connection fails.
  await refused(kafka({ brokers: env('SUITE_SASL_BROKERS').split(','), retry: { retries: 0 }, connectionTimeout: 2000, requestTimeout: 2000 }),
    'plaintext to the SASL_SSL listener', e => /connection|timeout/i.test(e.message))
  return 'SASL_SSL with the CA checked: SCRAM-SHA-512 and SCRAM-SHA-256 produce/consume; wrong password, ' +
    'missing credential, disabled PLAIN and a non-TLS client refused'
})
