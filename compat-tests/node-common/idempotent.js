// The idempotent scenario for any Node.js client: two idempotent producers in turn, the first
// with every send() started before the first is answered, the second awaiting each one; every
// record is in the log exactly once (high watermarks, then read back), and in the order the
// producer numbered it. The suite's test file supplies the client's side.
'use strict'

const assert = require('node:assert/strict')
const { checkOnceInOrder } = require('./checks')

const sendsPerRound = 40
const perSend = 10

/**
 * Runs the scenario; resolves to the start of its note. The client's side:
 * - `newProducer()`: an idempotent acks=all producer (not connected yet);
 * - `send(producer, messages)`: sends [{key, value}], resolving when acknowledged;
 * - `offsets()`: the topic's partitions as [{low, high}];
 * - `readBack(count)`: resolves to the topic's first `count` records, [{key, value}];
 * - `orderGroup(key, round, send)`: the records whose order the producer promises, e.g. a key
 *   (round 0 or 1, send the number of the send() call that carried the record).
 */
async function idempotentRounds({ newProducer, send, offsets, readBack, orderGroup }) {
  const expected = []
  for (let round = 0; round < 2; round++) {
    const producer = newProducer()
    await producer.connect()
    const sends = []
    for (let s = 0; s < sendsPerRound; s++) {
      const messages = Array.from({ length: perSend }, (_, i) => {
        const n = (round * sendsPerRound + s) * perSend + i
        return { key: `k${n % 7}`, value: String(n) }
      })
      expected.push(...messages)
      const sent = send(producer, messages)
      if (round === 0) sends.push(sent)
      else await sent
    }
    await Promise.all(sends)
    await producer.disconnect()
  }

  const inLog = (await offsets()).reduce((n, p) => n + Number(p.high) - Number(p.low), 0)
  assert.equal(inLog, expected.length, 'records in the log (high watermarks)')
  const got = await readBack(expected.length)
  checkOnceInOrder(got, expected.length, (key, n) => {
    const s = Math.floor(n / perSend)
    return orderGroup(key, Math.floor(s / sendsPerRound), s)
  })
  return `${expected.length} records from 2 idempotent producers (${sendsPerRound} concurrent sends, ` +
    `${sendsPerRound} sequential): each once in the log`
}

module.exports = { idempotentRounds }
