// remote-entry.test.mjs — `holdline-mcp install --client X --url URL --key KEY` read back by
// each real client's own config reader (`claude mcp get`, `codex mcp get --json`,
// `gemini mcp list`, `qwen mcp list`, `copilot mcp get --json`, `opencode mcp list`,
// Cline's own settings loader, `cn -p`): the entry parses as a Streamable HTTP server with
// the `Authorization: Bearer KEY` header. Where the reader also connects, a recorder on
// 127.0.0.1 (answering 401, as a hub does for a wrong key) checks the header really went out.
// HOLDLINE_CLIENTS=claude-code,codex picks some.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createServer } from 'node:http';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { MCP_BIN, RUNS, baseEnv, installPackage } from './harness.mjs';

const run = promisify(execFile);
const KEY = 'hlk_remoteEntryTestKeyAAAAbbbbCCCCddddEEEEf';

/** Every request the readers send: method, path, Authorization. Answers 401 like a hub. */
function startRecorder() {
  const seen = [];
  const server = createServer((req, res) => {
    seen.push({ method: req.method, path: req.url, auth: req.headers.authorization });
    req.resume();
    res.writeHead(401, { 'content-type': 'application/json' });
    res.end('{"jsonrpc":"2.0","id":null,"error":{"code":-32001,"message":"wrong key"}}');
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => {
    resolve({ url: `http://127.0.0.1:${server.address().port}/mcp`, seen, close: () => server.close() });
  }));
}

/**
 * Runs a reader; its exit code does not matter (a refused key is a failed server to them).
 * Answers `{ stdout, all }`: what a JSON reader prints is read from `stdout` alone (a client
 * may warn on stderr, e.g. Codex under /tmp), what a listing prints from `all`.
 */
async function readBoth(cmd, args, opts) {
  try {
    const { stdout, stderr } = await run(cmd, args, { timeout: 90_000, maxBuffer: 1 << 24, ...opts });
    return { stdout, all: stdout + stderr };
  } catch (e) {
    if (e.killed) throw new Error(`${cmd} ${args.join(' ')} did not finish: ${e.stdout}${e.stderr}`);
    return { stdout: e.stdout ?? '', all: `${e.stdout ?? ''}${e.stderr ?? ''}` };
  }
}

/** Everything a reader printed, both streams. */
const read = async (cmd, args, opts) => (await readBoth(cmd, args, opts)).all;

/** The JSON a reader printed on stdout (from its first `{` or `[`); stderr is only for the message. */
async function readJson(cmd, args, opts) {
  const { stdout, all } = await readBoth(cmd, args, opts);
  const start = stdout.search(/[[{]/);
  try {
    return { got: JSON.parse(stdout.slice(Math.max(start, 0))), out: all };
  } catch (e) {
    throw new Error(`${cmd} printed no JSON on stdout (${e.message}): ${all}`);
  }
}

/**
 * Per client: the package, extra install flags, and `check(ctx)` that runs the client's reader
 * and asserts; `connects` when the reader opens the server (then the recorder must see the key).
 */
const readers = {
  'claude-code': {
    pkg: '@anthropic-ai/claude-code', version: '2.1.332', connects: true,
    async check({ bin, home, project, url }) {
      const env = baseEnv(home, { DISABLE_AUTOUPDATER: '1', CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1', DISABLE_TELEMETRY: '1' });
      const out = await read(bin('.bin/claude'), ['mcp', 'get', 'holdline'], { env, cwd: project });
      assert.match(out, /Type: http/, out);
      assert.ok(out.includes(`URL: ${url}`), out);
      assert.ok(out.includes(`Authorization: Bearer ${KEY}`), out);
    },
  },
  codex: {
    pkg: '@openai/codex', version: '0.171.0', connects: false,
    env: (home) => ({ CODEX_HOME: join(home, '.codex') }),
    async check({ bin, home, project, url }) {
      const env = baseEnv(home, { CODEX_HOME: join(home, '.codex') });
      const { got, out } = await readJson(bin('.bin/codex'), ['mcp', 'get', 'holdline', '--json'], { env, cwd: project });
      assert.equal(got.transport.type, 'streamable_http', out);
      assert.equal(got.transport.url, url);
      assert.equal(got.transport.http_headers.Authorization, `Bearer ${KEY}`);
      assert.equal(got.transport.http_headers['Holdline-Max-Wait-Sec'], '3570');
      assert.equal(got.tool_timeout_sec, 3600);
    },
  },
  gemini: {
    pkg: '@google/gemini-cli', version: '0.61.0', connects: true, args: ['--trust'],
    async check({ bin, home, project, url }) {
      const out = await read(process.execPath, [bin('.bin/gemini'), 'mcp', 'list'], { env: baseEnv(home), cwd: project });
      assert.ok(out.includes(`holdline: ${url} (http)`), out);
      assert.doesNotMatch(out, /Disabled|untrusted/, out);
    },
  },
  qwen: {
    pkg: '@qwen-code/qwen-code', version: '0.24.4', connects: true, args: ['--trust'],
    async check({ bin, home, project, url }) {
      const out = await read(process.execPath, [bin('.bin/qwen'), 'mcp', 'list'], { env: baseEnv(home), cwd: project });
      assert.ok(out.includes(`holdline: ${url} (http)`), out);
    },
  },
  copilot: {
    pkg: '@github/copilot', version: '1.0.102', connects: false,
    async check({ bin, dir, home, project, url }) {
      const env = baseEnv(home, { COPILOT_OFFLINE: 'true', COPILOT_PKG_CACHE_HOME: join(dir, 'pkg-cache') });
      const { got: all, out } = await readJson(bin('.bin/copilot'), ['mcp', 'get', 'holdline', '--json', '--show-secrets'], { env, cwd: project });
      const got = all.holdline;
      assert.equal(got.type, 'http', out);
      assert.equal(got.url, url);
      assert.equal(got.headers.Authorization, `Bearer ${KEY}`);
      assert.equal(got.enabled, true);
    },
  },
  opencode: {
    pkg: 'opencode-ai', version: '1.18.33', connects: true,
    async check({ bin, home, project, url }) {
      const env = baseEnv(home, {
        OPENCODE_DISABLE_MODELS_FETCH: '1', OPENCODE_DISABLE_AUTOUPDATE: '1',
        OPENCODE_DISABLE_LSP_DOWNLOAD: '1', OPENCODE_DISABLE_DEFAULT_PLUGINS: '1',
      });
      const out = await read(bin('opencode-linux-x64/bin/opencode'), ['mcp', 'list'], { env, cwd: project });
      assert.match(out, /holdline/, out);
      assert.ok(out.includes(url), out);
      // opencode tried the server and was refused: it read the entry as a remote one.
      assert.match(out, /401/, out);
    },
  },
  kilo: {
    pkg: '@kilocode/cli-linux-x64', version: '7.7.7', connects: true,
    async check({ bin, home, project, url }) {
      const env = baseEnv(home, {
        KILO_DISABLE_MODELS_FETCH: '1', KILO_DISABLE_AUTOUPDATE: '1',
        KILO_DISABLE_LSP_DOWNLOAD: '1', KILO_DISABLE_DEFAULT_PLUGINS: '1',
      });
      const out = await read(bin('@kilocode/cli-linux-x64/bin/kilo'), ['mcp', 'list'], { env, cwd: project });
      assert.match(out, /holdline/, out);
      assert.ok(out.includes(url), out);
      // Kilo (opencode's MCP code) tried the server and was refused: a remote entry.
      assert.match(out, /401/, out);
    },
  },
  droid: {
    pkg: '@factory/cli-linux-x64', version: '0.225.2', connects: true,
    async check({ bin, home, project }) {
      const out = await read(bin('@factory/cli-linux-x64/bin/droid'), ['mcp', 'list'], { env: baseEnv(home), cwd: project });
      // `droid mcp list` connects to each server and names its transport.
      assert.match(out, /holdline\s+http\b/, out);
    },
  },
  cline: {
    pkg: 'cline', version: '3.0.65', connects: false,
    async check({ dir, home, url }) {
      // Cline has no listing command: its own loader (@cline/core) reads the settings file.
      const file = join(home, '.cline', 'data', 'settings', 'cline_mcp_settings.json');
      const script = join(dir, `holdline-read-${process.pid}.mjs`);
      writeFileSync(script, 'import { resolveMcpServerRegistrations as r } from "@cline/core";\n'
        + 'console.log(JSON.stringify(r({ filePath: process.argv[2] })));\n');
      try {
        const { got: all, out } = await readJson(process.execPath, [script, file], { env: baseEnv(home), cwd: dir });
        const got = all.find((s) => s.name === 'holdline');
        assert.equal(got.transport.type, 'streamableHttp', out);
        assert.equal(got.transport.url, url);
        assert.equal(got.transport.headers.Authorization, `Bearer ${KEY}`);
        assert.equal(got.timeoutSeconds, 3600);
        assert.equal(got.disabled, false);
      } finally {
        rmSync(script, { force: true });
      }
    },
  },
  continue: {
    pkg: '@continuedev/cli', version: '1.5.47', connects: true,
    config: (home) => {
      // cn needs a model to start; port 9 is closed, cn stops at the refused MCP server first.
      const file = join(home, 'cn.yaml');
      writeFileSync(file, 'name: remote-entry\nversion: 1.0.0\nschema: v1\nmodels:\n  - name: m\n    provider: openai\n'
        + '    model: fake-model\n    apiBase: http://127.0.0.1:9/v1\n    apiKey: dummy\n');
      return file;
    },
    async check({ bin, home, project, config }) {
      const out = await read(bin('.bin/cn'), ['-p', '--auto', '--config', config, 'hi'], { env: baseEnv(home), cwd: project });
      assert.match(out, /holdline: Streamable HTTP error/, out);
    },
  },
};

const selected = (process.env.HOLDLINE_CLIENTS || '').split(',').map((s) => s.trim()).filter(Boolean);
/** Named like run.test.mjs's run folders (time first), so its pruning counts this one too. */
const runDir = join(RUNS, `${new Date().toISOString().replace(/[:.]/g, '-')}-remote-entry`);

describe('the remote entry, read by each client', () => {
  let recorder;
  before(async () => { recorder = await startRecorder(); });
  after(() => recorder.close());

  for (const [name, r] of Object.entries(readers)) {
    if (selected.length && !selected.includes(name)) continue;
    it(`${name} reads an HTTP server with the Authorization header`, async () => {
      const dir = await installPackage(r.pkg, r.version);
      const home = join(runDir, name, 'home');
      const project = join(runDir, name, 'project');
      rmSync(join(runDir, name), { recursive: true, force: true });
      mkdirSync(project, { recursive: true });
      mkdirSync(home, { recursive: true });
      const url = `${recorder.url}?client=${name}`;
      const config = r.config?.(home);
      const args = ['install', '--client', name, '--url', url, '--key', KEY, '--project', project,
        ...(r.args ?? []), ...(config ? ['--config', config] : [])];
      const env = { ...baseEnv(home), ...(r.env?.(home) ?? {}) };
      const { stderr } = await run(MCP_BIN, args, { env, cwd: project });
      assert.ok(!stderr.includes(KEY), `install printed the key: ${stderr}`);
      const bin = (rel) => join(dir, 'node_modules', ...rel.split('/'));
      await r.check({ bin, dir, home, project, url, config });
      if (r.connects) {
        const mine = recorder.seen.filter((s) => s.path === `/mcp?client=${name}`);
        assert.ok(mine.length > 0, `${name} never reached the URL`);
        assert.ok(mine.every((s) => s.auth === `Bearer ${KEY}`), JSON.stringify(mine));
      }
    });
  }
});
