// hooks.test.mjs — a model that forgets holdline, in the clients whose lifecycle hooks
// holdline answers (Claude Code `-p`, Codex `exec`, Qwen Code `-p`, Gemini CLI `-p`). The fake model never calls a tool: it
// answers in plain text and ends its turn. Without hooks (`install --no-hooks`, what every
// install wrote before hooks) the run just ends: nothing waits at the hub, and the person's
// reply reaches nobody. With `holdline-mcp install --client X` (which writes the Stop hook)
// each end of turn becomes a question at the hub; the test answers through the person's API
// (`POST /api/reply`, as the panel does) and the reply must reach the model exactly once, as
// its next input; after HOOK_REPLIES replies (above Claude Code's default cap of 8
// consecutive stop blocks, which install turns off) the person picks "Let it finish" and the
// run ends.
// P1/P2: the model asks to run a shell command (`touch <marker>`) that needs the person's
// permission; with `install --permissions` the client's `PermissionRequest` hook asks at
// the hub, and the test answers Allow (the command runs, the model reads its output) or
// Deny (it does not run, the model reads the denial).
//
//   cd tests/clients && HOLDLINE_CLIENTS=claude-code,codex,qwen,gemini node --test hooks.test.mjs

import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { drivers, needs, withClient } from './scenarios.mjs';
import { RUNS, baseEnv, holdlineInstall, installDriver, waitFor, within } from './harness.mjs';

/** The clients whose hooks holdline answers. */
const HOOK_CLIENTS = ['claude-code', 'codex', 'qwen', 'gemini'];
/** Replies through the hook before "Let it finish": one more than Claude Code's default cap. */
const HOOK_REPLIES = Number(process.env.HOLDLINE_CLIENTS_HOOK_REPLIES || 9);
/** The one option of a stop question. */
const LET_IT_FINISH = 'Let it finish';
/** How long one step (the client's next model call, a hook's question) may take. */
const STEP_MS = 60_000;

/** The sessions of this run's hub; the hook makes at most one. */
async function onlySession(hub) {
  const all = await hub.sessions();
  assert.ok(all.length <= 1, `one session for the chat, got ${all.length}: ${JSON.stringify(all.map((s) => s.threadId))}`);
  return all[0] ?? null;
}

const questionsOf = (history) => history.messages.filter((m) => m.role === 'assistant');

/** Throws once the client has exited: a step it should have reached never came. */
function running(client, what) {
  if (!client.running()) throw new Error(`the client exited (${client.child.exitCode ?? client.child.signalCode}) before ${what}`);
  return false;
}

/** Waits for the hook's question number `n` (the session waiting with n agent messages). */
async function question(hub, client, n) {
  return waitFor(`question ${n} at the hub`, async () => {
    running(client, `question ${n}`);
    const s = await onlySession(hub);
    if (s?.status !== 'waiting') return null;
    const history = await hub.session(s.token);
    return questionsOf(history).length === n ? { token: s.token, history } : null;
  }, STEP_MS);
}

function forgetfulRun(driver, installArgs) {
  const scenario = installArgs.length ? 'forget-nohooks' : 'forget';
  return withClient(driver, scenario, async ({ hub, client, brain }, out) => {
    out.markers = [];
    if (installArgs.length) {
      out.exit = await within(client.exited, STEP_MS);
      out.session = await onlySession(hub);
      return;
    }
    for (let i = 1; i <= HOOK_REPLIES; i++) {
      const { token } = await question(hub, client, i);
      out.token = token;
      const marker = `MANGO-${i}-${Math.random().toString(36).slice(2, 8)}`;
      out.markers.push(marker);
      out.replies = i;
      await hub.reply(token, `${marker}: looks good, go on.`);
      await waitFor(`reply ${i} to reach the model`, () => brain.turns.some((t) => !t.side && t.lastUser?.includes(marker)) || running(client, `reply ${i} reached the model`), STEP_MS);
    }
    const last = await question(hub, client, HOOK_REPLIES + 1);
    out.lastOptions = questionsOf(last.history).at(-1).options;
    await hub.pick(last.token, [0]);
    out.exit = await within(client.exited, STEP_MS);
    out.history = await hub.session(last.token);
  }, 'stdio', { forget: true, installArgs });
}

/** The shell command the model asks to run in the permission runs: it leaves this file. */
const MARKER = 'holdline-permission-marker';
/** What the permission question's options are, in order (their index is the pick). */
const ALLOW = 0;
const DENY = 1;
/** What the model reads when the person tapped Deny (the hook's own words). */
const DENIED = 'The person denied this tool call through holdline.';
/**
 * The install flags of the permission runs. HOLDLINE_CLIENTS_NO_PERMISSIONS=1: install
 * without `--permissions`, to see P1 and P2 fail (the client decides alone).
 */
const PERMISSIONS = process.env.HOLDLINE_CLIENTS_NO_PERMISSIONS ? [] : ['--permissions'];
/**
 * The client's own command-line flags that make its headless run ask before running a
 * command. Claude Code `-p` asks in its default permission mode. `codex exec` fixes its
 * approval policy at "never" (`-c approval_policy=…` does not change it: a call asking to
 * leave the sandbox is refused without asking); `--approve-for-me` routes approvals to
 * Codex's automatic review, and the hook runs before that review.
 */
const ASKING = { 'claude-code': [], codex: ['--approve-for-me'] };

/**
 * A model that asks to run `touch MARKER` with the client's shell tool, with
 * `install --permissions`: the hook's question at the hub is answered with `pick`
 * (ALLOW or DENY); the model's next turn reports the tool's result and stops, and the
 * Stop hook's question is answered "Let it finish".
 */
function permissionRun(driver, pick) {
  const scenario = pick === ALLOW ? 'permission-allow' : 'permission-deny';
  return withClient(driver, scenario, async ({ hub, client, brain, dir }, out) => {
    const asked = await question(hub, client, 1);
    out.question = questionsOf(asked.history).at(-1);
    out.ranBeforeAnswer = existsSync(join(dir, 'project', MARKER));
    await hub.pick(asked.token, [pick]);
    out.result = await waitFor('the shell tool\'s result to reach the model', () => brain.turns.find((t) => !t.side && t.lastResult)?.lastResult || running(client, 'the tool result reached the model'), STEP_MS);
    const stop = await question(hub, client, 2);
    out.stopOptions = questionsOf(stop.history).at(-1).options;
    await hub.pick(stop.token, [0]);
    out.exit = await within(client.exited, STEP_MS);
    out.ran = existsSync(join(dir, 'project', MARKER));
    out.history = await hub.session(stop.token);
  }, 'stdio', { shell: `touch ${MARKER}`, installArgs: PERMISSIONS, clientArgs: ASKING[driver.name] });
}

/** The model requests of Codex's automatic approval review (none when the hook decided). */
const reviewsOf = (run) => run.brain.turns.filter((x) => /approval assessment/.test(x.lastUser ?? ''));

/** The counts the report gives for a permission run. */
function permissionCounts(run) {
  const turns = run.brain.turns.filter((x) => !x.side && !reviewsOf(run).includes(x));
  const questions = questionsOf(run.history ?? { messages: [] });
  return `${turns.length} model turns, ${reviewsOf(run).length} automatic reviews, ${questions.filter((q) => q.origin === 'permission').length} permission question(s) offering ${JSON.stringify(run.question?.options?.map((o) => o.label))}, ${questions.length} question(s) in all, command ran: ${run.ran}, tool result ${JSON.stringify(run.result?.text?.slice(0, 120))} (error ${run.result?.isError}), exit ${JSON.stringify(run.exit)}`;
}

/** The hook's question: the permission origin, the tool and its command, Allow and Deny first. */
function assertPermissionQuestion(run) {
  assert.equal(run.question.origin, 'permission', `the question is labelled a permission request: ${JSON.stringify(run.question)}`);
  assert.ok(run.question.content.includes(`touch ${MARKER}`), `the question shows the command: ${run.question.content}`);
  assert.deepEqual(run.question.options.slice(0, 2).map((o) => o.label), ['Allow', 'Deny']);
  assert.deepEqual(run.stopOptions?.map((o) => o.label), [LET_IT_FINISH], 'after the tool\'s result the stop is asked as usual');
  assert.equal(reviewsOf(run).length, 0, 'the person\'s answer decided: no automatic review asked the model');
}

/**
 * Codex's own view of the hooks in `home`: `codex app-server`'s `hooks/list` for `cwd`
 * (each hook's key, event, trust status), asked over its JSON-RPC on stdio.
 */
async function codexHooks(driver, home, cwd) {
  const bin = join(await installDriver(driver), 'node_modules', '.bin', 'codex');
  const child = spawn(bin, ['app-server'], { env: baseEnv(home, { CODEX_HOME: join(home, '.codex') }), stdio: ['pipe', 'pipe', 'ignore'] });
  const send = (m) => child.stdin.write(JSON.stringify({ jsonrpc: '2.0', ...m }) + '\n');
  const listed = new Promise((resolve) => {
    createInterface({ input: child.stdout }).on('line', (line) => {
      const m = JSON.parse(line);
      if (m.id === 2) resolve(m.result?.data?.[0] ?? m);
    });
  });
  send({ id: 1, method: 'initialize', params: { clientInfo: { name: 'holdline-test', version: '1' } } });
  send({ method: 'initialized' });
  send({ id: 2, method: 'hooks/list', params: { cwds: [cwd] } });
  try {
    return await within(listed, STEP_MS);
  } finally {
    child.kill('SIGKILL');
  }
}

describe('a model that forgets the tool, caught by the client\'s hooks', { concurrency: true }, () => {
  for (const driver of drivers.filter((d) => HOOK_CLIENTS.includes(d.name))) {
    describe(`${driver.name} ${driver.version}`, { concurrency: false }, () => {
      let without;
      let withHooks;

      it('H0. without hooks the turn ends and nothing waits: the person\'s reply reaches nobody', async (t) => {
        without = needs(await forgetfulRun(driver, ['--no-hooks']), 'the run without hooks');
        const turns = without.brain.turns.filter((x) => !x.side);
        assert.ok(without.exit, 'the client ended by itself');
        assert.equal(without.exit.code, 0, `the client exited 0 (${JSON.stringify(without.exit)})`);
        assert.equal(without.session, null, 'no session, no question: there is nothing the person could answer');
        t.diagnostic(`without hooks: ${turns.length} model turn(s), 0 questions at the hub, exit ${without.exit.code}`);
      });

      it(`H1. with install's Stop hook each stop asks the person, ${HOOK_REPLIES} replies reach the model once each, "Let it finish" ends the run`, async (t) => {
        withHooks = needs(await forgetfulRun(driver, []), 'the run with hooks');
        const turns = withHooks.brain.turns.filter((x) => !x.side);
        const questions = questionsOf(withHooks.history);
        const stored = withHooks.history.messages.filter((m) => m.role === 'user');
        const delivered = withHooks.markers.map((m) => turns.filter((x) => x.lastUser?.includes(m)).length);
        t.diagnostic(`${driver.name}: ${turns.length} model turns, ${questions.length} stops asked at the hub, ${withHooks.markers.length} replies sent, delivered as the next input ${JSON.stringify(delivered)} times, ${stored.length} replies stored; exit ${JSON.stringify(withHooks.exit)}`);
        assert.deepEqual(withHooks.lastOptions?.map((o) => o.label), [LET_IT_FINISH], 'a stop question offers "Let it finish"');
        assert.deepEqual(delivered, withHooks.markers.map(() => 1), 'each reply is the model\'s next input exactly once');
        for (const [i, m] of withHooks.markers.entries()) {
          const at = turns.findIndex((x) => x.lastUser?.includes(m));
          assert.equal(at, i + 1, `reply ${i + 1} is the input of model turn ${i + 2}`);
        }
        assert.equal(turns.length, HOOK_REPLIES + 1, 'one model turn per stop: no turn without a reply to answer');
        assert.equal(questions.length, HOOK_REPLIES + 1, 'every stop is one question at the hub');
        for (const [i, q] of questions.entries()) assert.equal(q.content, `Turn ${i + 1} done: I checked the fake repository and stop here.`, 'the question is the model\'s own last message');
        assert.ok(withHooks.exit, '"Let it finish" lets the client end its run');
        assert.equal(withHooks.exit.code, 0, `the client exited 0 (${JSON.stringify(withHooks.exit)})`);
        assert.equal(withHooks.history.status === 'waiting', false, 'nothing waits after the run');
      });

      // The permission runs need the client's shell tool in the fake model's hands (its
      // driver's `shell`): Claude Code and Codex. Gemini CLI has no permission event; Qwen
      // Code's hook is written by --permissions but not driven here.
      if (driver.shell) {
        it('P1. install --permissions: the shell command\'s permission is asked at the hub, Allow runs it and the model reads its result', async (t) => {
          const run = needs(await permissionRun(driver, ALLOW), 'the run answered Allow');
          t.diagnostic(`${driver.name} allow: ${permissionCounts(run)}; question ${JSON.stringify(run.question?.content?.slice(0, 200))}`);
          assertPermissionQuestion(run);
          assert.equal(run.ranBeforeAnswer, false, 'the command waits for the answer');
          assert.equal(run.ran, true, 'Allow: the command ran (the marker file exists)');
          assert.equal(run.result.isError, false, `the model reads the command's result, not an error: ${run.result.text}`);
          assert.ok(!run.result.text.includes(DENIED), 'no denial reached the model');
          assert.equal(run.exit?.code, 0, `the client exited 0 (${JSON.stringify(run.exit)})`);
        });

        it('P2. install --permissions: Deny at the hub keeps the command from running and the model reads the denial', async (t) => {
          const run = needs(await permissionRun(driver, DENY), 'the run answered Deny');
          t.diagnostic(`${driver.name} deny: ${permissionCounts(run)}`);
          assertPermissionQuestion(run);
          assert.equal(run.ran, false, 'Deny: the command did not run (no marker file)');
          assert.ok(run.result.text.includes(DENIED), `the model reads the denial: ${run.result.text}`);
          assert.equal(run.exit?.code, 0, `the client exited 0 (${JSON.stringify(run.exit)})`);
        });
      }

      if (driver.name === 'codex') {
        it('H2. install --permissions: Codex itself lists both of holdline\'s hooks as trusted', async (t) => {
          const dir = join(RUNS, 'codex-hooks-trust');
          rmSync(dir, { recursive: true, force: true });
          const home = join(dir, 'home');
          const project = join(dir, 'project');
          mkdirSync(project, { recursive: true });
          await holdlineInstall('codex', { home, hubUrl: 'http://127.0.0.1:9', project, args: ['--permissions'], env: { CODEX_HOME: join(home, '.codex') } });
          const listed = await codexHooks(driver, home, project);
          assert.ok(listed?.hooks, `hooks/list answered: ${JSON.stringify(listed)}`);
          const seen = listed.hooks.map((h) => [h.eventName, h.trustStatus]);
          t.diagnostic(`hooks/list: ${JSON.stringify(seen)}; warnings ${JSON.stringify(listed.warnings)}`);
          assert.deepEqual(seen.sort(), [['permissionRequest', 'trusted'], ['stop', 'trusted']]);
          assert.deepEqual(listed.warnings, []);
        });
      }
    });
  }
});
