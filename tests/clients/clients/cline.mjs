// cline.mjs — Cline CLI driven headless (`cline --json …`) against the fake OpenAI Chat API
// (provider `openai-compatible`, set with `cline auth`), holdline put in by `holdline-mcp
// install --client cline`; the CLI reads ~/.cline/data/settings/cline_mcp_settings.json.
// CLINE_SESSION_BACKEND_MODE=local keeps the run in this process group: by default the CLI
// also starts a background "hub" daemon in its own session that outlives the run.

import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { baseEnv, holdlineInstall, holdlineInstallRemote, patchJson } from '../harness.mjs';

export const name = 'cline';
export const pkg = 'cline';
export const version = '3.0.65';
export const interrupt = 'SIGINT';
/**
 * Measured: Cline CLI 3.0.65 gives the model the whole CallToolResult as JSON text, so an
 * image block would arrive as base64 inside that text, never as an image part: the bridge
 * saves a reply's images in the workspace instead and names the files.
 */
export const expects = { images: 'file', why: 'Cline CLI gives the model the whole CallToolResult as JSON text (an image block would be base64 text): the image is saved in the workspace and the model gets its path' };

export async function prepare(ctx) {
  const env = baseEnv(ctx.home, { CLINE_SESSION_BACKEND_MODE: 'local' });
  const settings = join(ctx.home, '.cline', 'data', 'settings', 'cline_mcp_settings.json');
  if (ctx.remote) await holdlineInstallRemote('cline', { home: ctx.home, project: ctx.project, ...ctx.remote });
  else await holdlineInstall('cline', { home: ctx.home, hubUrl: ctx.hubUrl, project: ctx.project });
  patchJson(settings, (s) => {
    const entry = s.mcpServers.holdline;
    if (ctx.remote) Object.assign(entry.headers, ctx.remote.headers);
    else entry.env = { ...entry.env, ...ctx.bridgeEnv };
    entry.timeout = ctx.clientTimeoutSec;
    return s;
  });
  const bin = join(ctx.installDir, 'node_modules', '.bin', 'cline');
  await promisify(execFile)(bin, ['auth', '-p', 'openai-compatible', '-k', 'dummy', '-m', 'fake-model', '-b', `${ctx.modelUrl}/v1`], { env, cwd: ctx.project, timeout: 60_000 });
  return { cmd: bin, args: ['--json', ctx.prompt], cwd: ctx.project, env };
}
