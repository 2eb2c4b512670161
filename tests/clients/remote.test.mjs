// remote.test.mjs — the real clients against the hub's MCP endpoint `/mcp` over Streamable
// HTTP: no bridge process, only the remote entry (URL + `Authorization: Bearer KEY`) that
// `holdline-mcp install --client X --url … --key …` writes, with a key from `holdline-hub
// key create`. Same scenarios as run.test.mjs (scenarios.mjs); each wait call asks for
// WAIT_SEC (`timeoutSec`), the client's own limit is REMOTE_CLIENT_TIMEOUT_SEC where its
// entry has one. The entry also carries X-Forwarded-For / X-Real-IP / Forwarded headers
// claiming another address, and the hub's environment a HOLDLINE_HOST_ID: the binding's
// host must be neither.
//
// Clients: HOLDLINE_REMOTE_CLIENTS (default: every driver), within HOLDLINE_CLIENTS when set.
// The revoked-key scenario runs for REVOKE_CLIENT.

import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { CLAIMED_ADDRESS, GRACE_SEC, GRACE_SLACK_MS, GUIDANCE, MCP_PATH, REMOTE_CLIENT_TIMEOUT_SEC, ROUNDS, drivers, holdlineResults, judgeLeaving, judgePicks, knownOpts, needs, scenarios } from './scenarios.mjs';

/** The client whose key is revoked mid-wait (a light native binary). */
const REVOKE_CLIENT = 'codex';
/** The client whose waits are bounded by its entry's Holdline-Max-Wait-Sec header. */
const HEADER_CLIENT = 'codex';
const remoteOnly = (process.env.HOLDLINE_REMOTE_CLIENTS || '').split(',').map((s) => s.trim()).filter(Boolean);
const remoteDrivers = drivers.filter((d) => !remoteOnly.length || remoteOnly.includes(d.name));

describe(`real clients over ${MCP_PATH} (Streamable HTTP)`, { concurrency: true }, () => {
  for (const driver of remoteDrivers) {
    describe(`${driver.name} ${driver.version} over ${MCP_PATH}`, { concurrency: true }, () => {
      const s = scenarios(driver, 'remote', { revoke: driver.name === REVOKE_CLIENT, header: driver.name === HEADER_CLIENT });

      it('R1. delivers the reply once over /mcp: stored once, given to the model once', knownOpts(driver, 'R1'), async (t) => {
        const r = needs(await s.reply, 'the reply');
        t.diagnostic(`agent key ${r.key.name}; ${r.seconds} s`);
        const msgs = r.history.messages;
        assert.equal(msgs.filter((m) => m.role === 'assistant' && m.content.startsWith('Step 1 done')).length, 1, "the agent's report is stored once");
        assert.equal(msgs.filter((m) => m.role === 'user' && m.content.includes(r.marker)).length, 1, 'the reply is stored once');
        const seen = r.brain.results.filter((x) => x.text?.includes(r.marker));
        assert.equal(seen.length, 1, `the model got the reply in exactly one tool result (got ${seen.length})`);
        assert.match(seen[0].text, GUIDANCE, 'the reply as the model got it carries the reminder');
        assert.ok(r.exit, 'the client ended its turn after FINISH');
        assert.equal(r.exit.code, 0, `the client exited 0 (got ${JSON.stringify(r.exit)})`);
      });

      it(`R2. waits across ≥ ${ROUNDS} calls, each ended by the hub before the client's own ${REMOTE_CLIENT_TIMEOUT_SEC} s limit: none identical, no error`, knownOpts(driver, 'R2'), async (t) => {
        const r = await s.reply;
        const brain = r.brain;
        const errors = brain.results.filter((x) => x.kind === 'error');
        assert.deepEqual(errors.map((x) => x.text.slice(0, 300)), [], 'no tool error reached the model (a call the client timed out would be one)');
        const LOOP = /loop detected|Potential loop|Loop detection halted|consecutive identical calls|repeat breaker/i;
        assert.doesNotMatch(r.log ?? '', LOOP, 'no loop detector stopped the client');
        needs(r, 're-calls');
        const calls = r.callsBeforeReply;
        assert.ok(calls.length >= ROUNDS, `${calls.length} wait calls before the reply`);
        for (let i = 1; i < calls.length; i++) assert.notDeepEqual(calls[i], calls[i - 1], `wait call ${i + 1} differs from call ${i} (resume)`);
        const noReply = holdlineResults(brain, 'wait_for_user_input').filter((w) => w.kind === 'no_reply_yet');
        assert.ok(noReply.length >= ROUNDS - 1, `each early wait ended with "no reply yet" (${noReply.length})`);
        for (const w of noReply) assert.match(w.text, GUIDANCE, `"no reply yet" as the model got it says to call again: ${w.text.slice(0, 200)}`);
        t.diagnostic(`${calls.length} wait calls before the reply, ${brain.waitCalls().length} in all, over ${r.seconds} s`);
      });

      it('R3. Ctrl-C mid-wait: the session leaves waiting within the grace period after the signal or the client exits; a later reply is queued and reaches the next turn', knownOpts(driver, 'R3'), async (t) => {
        const c = needs(await s.ctrlC, 'Ctrl-C');
        t.diagnostic(judgeLeaving(c));
        assert.equal(c.later.queued, true, `a reply after Ctrl-C answers queued:true (got ${JSON.stringify(c.later)})`);
        assert.equal(c.restartToken, c.token, 'the restarted agent found the same session');
        const got = c.brain.results.filter((x) => x.text?.includes(c.marker));
        assert.equal(got.length, 1, `the queued reply reached the model once (got ${got.length})`);
      });

      it("R4. the binding's host is the address the hub saw (127.0.0.1), not one the caller or the hub's environment claims", knownOpts(driver, 'R4'), async () => {
        const r = needs(await s.reply, 'the binding');
        const session = r.waiting;
        assert.equal(session.hostIp, '127.0.0.1', `hostIp (claimed: ${CLAIMED_ADDRESS}, hub environment: hub-environment-host)`);
        assert.ok(session.bindingKey.endsWith('@127.0.0.1'), `bindingKey ${session.bindingKey}`);
      });

      it("R7. a pick among the agent's options reaches the model over /mcp (one, then several)", knownOpts(driver, 'R7'), async (t) => {
        const r = needs(await s.reply, 'the picks');
        t.diagnostic(judgePicks(r));
      });

      if (driver.name === HEADER_CLIENT) {
        it(`R6. the entry's Holdline-Max-Wait-Sec header bounds each wait under the client's own ${REMOTE_CLIENT_TIMEOUT_SEC} s limit`, knownOpts(driver, 'R6'), async (t) => {
          const r = await s.header;
          const errors = r.brain.results.filter((x) => x.kind === 'error');
          assert.deepEqual(errors.map((x) => x.text.slice(0, 200)), [], 'no tool error reached the model (a call the client timed out would be one)');
          needs(r, 'waits bounded by the header');
          assert.ok(r.callsBeforeReply.length >= ROUNDS, `${r.callsBeforeReply.length} wait calls before the reply`);
          assert.ok(r.callsBeforeReply.every((a) => a.timeoutSec === undefined), 'the agent asked for no limit of its own');
          const noReply = holdlineResults(r.brain, 'wait_for_user_input').filter((w) => w.kind === 'no_reply_yet');
          assert.ok(noReply.length >= ROUNDS - 1, `each early wait ended with "no reply yet" (${noReply.length})`);
          t.diagnostic(`${r.callsBeforeReply.length} wait calls before the reply over ${r.seconds} s`);
        });
      }

      if (driver.name === REVOKE_CLIENT) {
        it('R5. a revoked key locks the client out: the wait closes at once, the model is told of a failure, no new wait', knownOpts(driver, 'R5'), async (t) => {
          const v = needs(await s.revoke, 'the revoked key');
          const kinds = v.resultsAfter.map((x) => x.kind);
          t.diagnostic(`session left waiting ${v.leftAfterMs} ms after \`key revoke\`; then ${kinds.length} results (${[...new Set(kinds)].join(', ') || 'none'}), the first: ${v.resultsAfter[0]?.text.slice(0, 160)}; client exit ${JSON.stringify(v.exit)}`);
          assert.ok(v.leftAfterMs !== null, `the session still waiting ${GRACE_SEC} s (+${GRACE_SLACK_MS} ms) after the revoke`);
          assert.ok(v.resultsAfter.length >= 1, 'the model was given a result after the revoke');
          assert.ok(v.resultsAfter.every((x) => x.kind === 'error' || !/no_reply_yet|replied/.test(x.kind)), `no wait went on for the model: ${JSON.stringify(v.resultsAfter.slice(0, 5).map((x) => [x.kind, x.text.slice(0, 120)]))}`);
          assert.ok(v.resultsAfter.some((x) => x.kind === 'error' || /revoked|unauthori[sz]ed|401|not valid/i.test(x.text)), `the model was told of a failure: ${JSON.stringify(v.resultsAfter.slice(0, 5).map((x) => x.text.slice(0, 200)))}`);
          assert.notEqual(v.statusAfter, 'waiting', 'the client\'s later calls made no wait');
          assert.equal(v.later.queued, true, 'a reply after the revoke is queued');
          assert.ok(v.exit, 'the client ended its turn (the agent stopped after the failures)');
        });
      }
    });
  }
});
