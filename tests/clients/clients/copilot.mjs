// copilot.mjs — GitHub Copilot CLI driven headless (`copilot -p … --output-format json`)
// in its offline BYOK mode (no GitHub login) against the fake OpenAI Chat API, holdline put
// in by `holdline-mcp install --client copilot` (~/.copilot/mcp-config.json).

import { join } from 'node:path';
import { baseEnv, holdlineInstall, holdlineInstallRemote, patchJson } from '../harness.mjs';

export const name = 'copilot';
export const pkg = '@github/copilot';
export const version = '1.0.102';
export const interrupt = 'SIGINT';
/**
 * Measured: in BYOK offline mode Copilot CLI 1.0.102 gives the model a result's text and
 * its structuredContent JSON, and drops image blocks (also with COPILOT_MODEL=gpt-4o and
 * COPILOT_PROVIDER_MODEL_ID=gpt-4o). The bridge saves a reply's images in the workspace
 * instead and names the files.
 */
export const expects = { images: 'file', why: 'Copilot CLI in BYOK offline mode drops the image blocks of MCP results: the image is saved in the workspace and the model gets its path' };

export async function prepare(ctx) {
  const config = join(ctx.home, '.copilot', 'mcp-config.json');
  if (ctx.remote) await holdlineInstallRemote('copilot', { home: ctx.home, project: ctx.project, ...ctx.remote });
  else await holdlineInstall('copilot', { home: ctx.home, hubUrl: ctx.hubUrl, project: ctx.project });
  patchJson(config, (c) => {
    const entry = c.mcpServers.holdline;
    if (ctx.remote) Object.assign(entry.headers, ctx.remote.headers);
    else entry.env = { ...entry.env, ...ctx.bridgeEnv };
    return c;
  });
  const bin = join(ctx.installDir, 'node_modules', '.bin', 'copilot');
  return {
    cmd: bin,
    args: ['-p', ctx.prompt, '--allow-all-tools', '--output-format', 'json'],
    cwd: ctx.project,
    env: baseEnv(ctx.home, {
      COPILOT_OFFLINE: 'true',
      COPILOT_PROVIDER_BASE_URL: `${ctx.modelUrl}/v1`,
      COPILOT_PROVIDER_TYPE: 'openai',
      COPILOT_PROVIDER_API_KEY: 'dummy',
      COPILOT_MODEL: 'fake-model',
      // The CLI unpacks itself (~235 MB) on first start: once, next to the installed package.
      COPILOT_PKG_CACHE_HOME: join(ctx.installDir, 'pkg-cache'),
    }),
  };
}
