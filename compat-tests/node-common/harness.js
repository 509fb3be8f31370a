// Shared by the Node.js client suites' scenario files (kafkajs, confluent-js): the environment
// suite.sh exports, the matrix row each scenario writes, and small waiting helpers. No client
// library here: each suite's lib.js adds its own clients.
'use strict'

const fs = require('node:fs')
const crypto = require('node:crypto')
const { test, after } = require('node:test')

/** The environment suite.sh exports; a scenario run without it fails with a clear message. */
function env(name) {
  const v = process.env[name]
  if (!v) throw new Error(`${name} is not set: run the suite with its run.sh`)
  return v
}

/** The suite's broker (its PLAINTEXT listener). */
const brokers = () => env('SUITE_BROKERS').split(',')

/** A topic name no other scenario (or earlier run against the same data dir) uses. */
const uniqueName = prefix => `${prefix}-${crypto.randomBytes(4).toString('hex')}`

/**
 * Writes this scenario's row to the suite's matrix file: client, scenario, result, note.
 * Tabs and newlines in the note would break the table, so they become spaces.
 */
function matrixRow(scenario, result, note) {
  const clean = String(note || '').replace(/[\t\r\n]+/g, ' ').slice(0, 300)
  fs.appendFileSync(env('SUITE_MATRIX'), `${env('SUITE_CLIENT')}\t${scenario}\t${result}\t${clean}\n`)
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

const sleep = ms => new Promise(r => setTimeout(r, ms))

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
    await sleep(100)
  }
}

/** Values that occur more than once in `values`. */
function duplicates(values) {
  const seen = new Set()
  const dups = new Set()
  for (const v of values) (seen.has(v) ? dups : seen).add(v)
  return [...dups]
}

module.exports = { env, brokers, uniqueName, matrixRow, scenario, waitFor, duplicates }
