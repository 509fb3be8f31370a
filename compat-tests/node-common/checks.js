// What the Node.js suites' scenarios check on the records they read back, the same for every
// client: each function throws an assertion error naming what went wrong.
'use strict'

const assert = require('node:assert/strict')
const { duplicates } = require('./harness')

/**
 * produce-consume-codecs: every `sent` record ({key, value, headers} of strings) came back in
 * `got` ({key, value, headers} with string values), and each key's records (one partition)
 * in the order they were sent.
 */
function checkByKey(sent, got) {
  assert.equal(got.length, sent.length, 'records read back')
  const byKey = new Map()
  for (const r of got) {
    if (!byKey.has(r.key)) byKey.set(r.key, [])
    byKey.get(r.key).push(r)
  }
  for (const m of sent) {
    const r = (byKey.get(m.key) || []).shift()
    assert.ok(r, `missing ${m.value.slice(0, 24)}`)
    assert.equal(r.value, m.value)
    for (const [k, v] of Object.entries(m.headers)) assert.equal(String(r.headers[k]), v, `header ${k} of ${m.value.slice(0, 24)}`)
  }
}

/**
 * idempotent: `got` ({key, value}, values numbered from 0) holds `count` distinct records, none
 * twice, and within each group (`groupOf(key, n)`, e.g. the key) increasing numbers.
 */
function checkOnceInOrder(got, count, groupOf) {
  const values = got.map(r => r.value)
  assert.deepEqual(duplicates(values), [], 'records written twice')
  assert.equal(new Set(values).size, count, 'distinct records read back')
  const last = new Map()
  for (const r of got) {
    const n = Number(r.value)
    const at = groupOf(r.key, n)
    assert.ok(!(last.get(at) > n), `${at}: ${n} after ${last.get(at)}`)
    last.set(at, n)
  }
}

/**
 * transactions: a read_committed consumer saw the three committed transactions' `perTxn`
 * records each and nothing else; a read_uncommitted one also saw the aborted and the fenced
 * transaction's records, but none of the send the fenced producer was refused.
 */
function checkTransactionsReadBack(readCommitted, readUncommitted, perTxn) {
  const values = readCommitted.map(r => r.value)
  assert.deepEqual(values.filter(v => !v.startsWith('committed-')), [], 'aborted records seen by read_committed')
  assert.equal(values.length, 3 * perTxn, 'committed records seen by read_committed')
  const count = label => readUncommitted.filter(r => r.value.startsWith(`${label}-`)).length
  assert.deepEqual([count('aborted'), count('fenced'), count('fenced-late')], [perTxn, perTxn, 0],
    'aborted and fenced records in the log for read_uncommitted, the refused send not')
}

module.exports = { checkByKey, checkOnceInOrder, checkTransactionsReadBack }
