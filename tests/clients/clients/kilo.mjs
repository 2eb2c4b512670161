// kilo.mjs — Kilo Code CLI (an opencode fork) driven headless (`kilo run --format json …`,
// the platform binary) against the fake OpenAI Chat API through its bundled
// @ai-sdk/openai-compatible provider (the project's kilo.json), holdline put in by
// `holdline-mcp install --client kilo` (the global ~/.config/kilo/kilo.json `mcp` table,
// ~/.config/kilo/AGENTS.md); offline switches on. Permissions stay at Kilo's defaults (MCP
// tools allowed), as a person's setup has them.
//
// The package is the platform one, `@kilocode/cli-linux-x64`: `@kilocode/cli` only fetches
// it in its postinstall, and 7.7.7 is the newest release whose Linux x64 binary is on npm.

import { join } from 'node:path';
import { baseEnv, holdlineInstall, holdlineInstallRemote, patchJson } from '../harness.mjs';

export const name = 'kilo';
export const pkg = '@kilocode/cli-linux-x64';
export const version = '7.7.7';
export const interrupt = 'SIGINT';
export const expects = { images: true };

export async function prepare(ctx) {
  const global = join(ctx.home, '.config', 'kilo', 'kilo.json');
  if (ctx.remote) await holdlineInstallRemote('kilo', { home: ctx.home, project: ctx.project, ...ctx.remote });
  else await holdlineInstall('kilo', { home: ctx.home, hubUrl: ctx.hubUrl, project: ctx.project });
  patchJson(global, (c) => {
    const entry = c.mcp.holdline;
    if (ctx.remote) Object.assign(entry.headers, ctx.remote.headers);
    else entry.environment = { ...entry.environment, ...ctx.bridgeEnv };
    return c;
  });
  patchJson(join(ctx.project, 'kilo.json'), () => ({
    $schema: 'https://app.kilo.ai/config.json',
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
  const bin = join(ctx.installDir, 'node_modules', '@kilocode', 'cli-linux-x64', 'bin', 'kilo');
  return {
    cmd: bin,
    args: ['run', '--format', 'json', ctx.prompt],
    cwd: ctx.project,
    env: baseEnv(ctx.home, {
      KILO_DISABLE_MODELS_FETCH: '1',
      KILO_DISABLE_AUTOUPDATE: '1',
      KILO_DISABLE_LSP_DOWNLOAD: '1',
      KILO_DISABLE_DEFAULT_PLUGINS: '1',
      KILO_DISABLE_SHARE: '1',
      KILO_DISABLE_SESSION_INGEST: '1',
      KILO_DISABLE_CODEBASE_INDEXING: '1',
      npm_config_offline: 'true',
    }),
  };
}
