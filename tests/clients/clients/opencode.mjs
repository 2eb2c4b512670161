// opencode.mjs — opencode driven headless (`opencode run --format json …`, the platform
// binary) against the fake OpenAI Chat API through its bundled @ai-sdk/openai-compatible
// provider (the project's opencode.json), holdline put in by `holdline-mcp install --client
// opencode` (the global ~/.config/opencode/opencode.json `mcp` table, AGENTS.md); offline switches on. Permissions stay at
// opencode's defaults (MCP tools allowed), as a person's setup has them. Its forks (Kilo
// Code CLI) are driven by the same steps, `openCodeFamily`, with their own names.

import { join } from 'node:path';
import { baseEnv, holdlineInstall, holdlineInstallRemote, patchJson } from '../harness.mjs';

export const name = 'opencode';
export const pkg = 'opencode-ai';
export const version = '1.18.33';
export const interrupt = 'SIGINT';
export const expects = { images: true };

/**
 * An opencode-like client's run: `client` (install's name, its config folder and file
 * name), `schema` (its config's `$schema`), `bin` (the binary under the install dir) and
 * `env` (its offline switches).
 */
export async function openCodeFamily(ctx, { client, schema, bin, env }) {
  const global = join(ctx.home, '.config', client, `${client}.json`);
  if (ctx.remote) await holdlineInstallRemote(client, { home: ctx.home, project: ctx.project, ...ctx.remote });
  else await holdlineInstall(client, { home: ctx.home, hubUrl: ctx.hubUrl, project: ctx.project });
  patchJson(global, (c) => {
    const entry = c.mcp.holdline;
    if (ctx.remote) Object.assign(entry.headers, ctx.remote.headers);
    else entry.environment = { ...entry.environment, ...ctx.bridgeEnv };
    return c;
  });
  patchJson(join(ctx.project, `${client}.json`), () => ({
    $schema: schema,
    provider: {
      fake: {
        npm: '@ai-sdk/openai-compatible',
        name: 'Fake',
        options: { baseURL: `${ctx.modelUrl}/v1`, apiKey: 'dummy' },
        models: { 'fake-model': { name: 'Fake model', tool_call: true, attachment: true, modalities: { input: ['text', 'image'], output: ['text'] } } },
      },
    },
    model: 'fake/fake-model',
    small_model: 'fake/fake-model',
    autoupdate: false,
    share: 'disabled',
  }));
  return {
    cmd: join(ctx.installDir, 'node_modules', ...bin),
    args: ['run', '--format', 'json', ctx.prompt],
    cwd: ctx.project,
    env: baseEnv(ctx.home, env),
  };
}

export function prepare(ctx) {
  return openCodeFamily(ctx, {
    client: 'opencode',
    schema: 'https://opencode.ai/config.json',
    bin: ['opencode-linux-x64', 'bin', 'opencode'],
    env: {
      OPENCODE_DISABLE_MODELS_FETCH: '1',
      OPENCODE_DISABLE_AUTOUPDATE: '1',
      OPENCODE_DISABLE_LSP_DOWNLOAD: '1',
      OPENCODE_DISABLE_DEFAULT_PLUGINS: '1',
      // opencode npm-installs @opencode-ai/plugin into its config folder on every start (in
      // the background; a failure is only a warning): offline, so a run reaches no registry.
      npm_config_offline: 'true',
    },
  });
}
