// codex.mjs — Codex CLI driven headless (`codex exec --json`) against the fake OpenAI
// Responses API, holdline put in by `holdline-mcp install --client codex`
// ($CODEX_HOME/config.toml, AGENTS.md). The provider lines go in front of the installer's
// table; Codex's short per-call limit is a `-c` override, so the entry stays as written.

import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { baseEnv, holdlineInstall, holdlineInstallRemote } from '../harness.mjs';

export const name = 'codex';
export const pkg = '@openai/codex';
export const version = '0.171.0';
export const interrupt = 'SIGINT';
export const expects = { images: true };

export const brainHooks = {
  /**
   * Codex's shell tool, asking to run outside its sandbox: the call that needs the person's
   * approval under `approval_policy = "on-request"`.
   */
  shell: (cmd) => ({ name: 'exec_command', args: { cmd, sandbox_permissions: 'require_escalated', justification: 'The test asks for this command.' } }),
};

export async function prepare(ctx) {
  const codexHome = join(ctx.home, '.codex');
  if (ctx.remote) await holdlineInstallRemote('codex', { home: ctx.home, project: ctx.project, ...ctx.remote, env: { CODEX_HOME: codexHome } });
  else await holdlineInstall('codex', { home: ctx.home, hubUrl: ctx.hubUrl, project: ctx.project, bridgeEnv: ctx.bridgeEnv, args: ctx.installArgs, env: { CODEX_HOME: codexHome } });
  const file = join(codexHome, 'config.toml');
  const provider = [
    'model = "fake-model"',
    'model_provider = "fake"',
    '',
    '[model_providers.fake]',
    'name = "fake"',
    `base_url = "${ctx.modelUrl}/v1"`,
    'wire_api = "responses"',
    'env_key = "FAKE_API_KEY"',
    'request_max_retries = 0',
    'stream_max_retries = 0',
    '',
  ].join('\n');
  let installed = readFileSync(file, 'utf8');
  // HOLDLINE_CLIENTS_HOOK_UNTRUSTED=1: without the trust record install writes, to see Codex
  // skip the hook and hooks.test.mjs fail.
  if (process.env.HOLDLINE_CLIENTS_HOOK_UNTRUSTED) installed = installed.replace(/^\[hooks\.state\.[^\n]*\ntrusted_hash = [^\n]*\n/gm, '');
  writeFileSync(file, provider + installed);
  // Codex's own per-call limit, low but above the bridge's short waits.
  const overrides = ['-c', `mcp_servers.holdline.tool_timeout_sec=${ctx.clientTimeoutSec}`];
  // The remote entry's further headers (the test's), beside the installer's Authorization.
  if (ctx.remote?.headers) {
    for (const [k, v] of Object.entries(ctx.remote.headers)) overrides.push('-c', `mcp_servers.holdline.http_headers.${k}="${v}"`);
  }
  const bin = join(ctx.installDir, 'node_modules', '.bin', 'codex');
  return {
    cmd: bin,
    args: ['exec', '--skip-git-repo-check', '--json', ...overrides, ...(ctx.clientArgs ?? []), ctx.prompt],
    cwd: ctx.project,
    env: baseEnv(ctx.home, { CODEX_HOME: codexHome, FAKE_API_KEY: 'dummy' }),
  };
}
