// kilo.mjs — Kilo Code CLI (an opencode fork) driven headless (`kilo run --format json …`,
// the platform binary) by opencode's steps (`openCodeFamily`): the fake OpenAI Chat API
// through its bundled @ai-sdk/openai-compatible provider (the project's kilo.json), holdline
// put in by `holdline-mcp install --client kilo` (the global ~/.config/kilo/kilo.json `mcp`
// table, ~/.config/kilo/AGENTS.md); offline switches on. Permissions stay at Kilo's
// defaults (MCP tools allowed), as a person's setup has them.
//
// The package is the platform one, `@kilocode/cli-linux-x64`: `@kilocode/cli` only fetches
// it in its postinstall, and 7.7.7 is the newest release whose Linux x64 binary is on npm.

import { openCodeFamily } from './opencode.mjs';

export const name = 'kilo';
export const pkg = '@kilocode/cli-linux-x64';
export const version = '7.7.7';
export const interrupt = 'SIGINT';
export const expects = { images: true };

export function prepare(ctx) {
  return openCodeFamily(ctx, {
    client: 'kilo',
    schema: 'https://app.kilo.ai/config.json',
    bin: ['@kilocode', 'cli-linux-x64', 'bin', 'kilo'],
    env: {
      KILO_DISABLE_MODELS_FETCH: '1',
      KILO_DISABLE_AUTOUPDATE: '1',
      KILO_DISABLE_LSP_DOWNLOAD: '1',
      KILO_DISABLE_DEFAULT_PLUGINS: '1',
      KILO_DISABLE_SHARE: '1',
      KILO_DISABLE_SESSION_INGEST: '1',
      KILO_DISABLE_CODEBASE_INDEXING: '1',
      npm_config_offline: 'true',
    },
  });
}
