// gemini.mjs — Gemini CLI driven headless (`gemini -p … --yolo`) against the fake Gemini
// API (GOOGLE_GEMINI_BASE_URL), holdline put in by `holdline-mcp install --client gemini`
// --trust (~/.gemini/settings.json, GEMINI.md, the project in trustedFolders.json: Gemini
// starts stdio servers only in trusted folders); API-key auth, since headless Gemini
// refuses the others.

import { join } from 'node:path';
import { baseEnv, holdlineInstall, holdlineInstallRemote, patchJson } from '../harness.mjs';

export const name = 'gemini';
export const pkg = '@google/gemini-cli';
export const version = '0.61.0';
export const interrupt = 'SIGINT';
export const expects = { images: true };

export async function prepare(ctx) {
  if (ctx.remote) await holdlineInstallRemote('gemini', { home: ctx.home, project: ctx.project, ...ctx.remote, args: ['--trust'] });
  else await holdlineInstall('gemini', { home: ctx.home, hubUrl: ctx.hubUrl, project: ctx.project, bridgeEnv: ctx.bridgeEnv, args: ['--trust', ...(ctx.installArgs ?? [])] });
  patchJson(join(ctx.home, '.gemini', 'settings.json'), (s) => {
    // Gemini's own per-call limit (ms), low but above the bridge's short waits.
    s.mcpServers.holdline.timeout = ctx.clientTimeoutSec * 1000;
    if (ctx.remote) Object.assign(s.mcpServers.holdline.headers, ctx.remote.headers);
    s.security = { ...s.security, auth: { selectedType: 'gemini-api-key' } };
    s.privacy = { usageStatisticsEnabled: false };
    s.general = { ...s.general, disableAutoUpdate: true, disableUpdateNag: true };
    return s;
  });
  const bin = join(ctx.installDir, 'node_modules', '.bin', 'gemini');
  return {
    cmd: process.execPath,
    args: [bin, '-p', ctx.prompt, '--yolo', '--model', 'gemini-2.5-pro'],
    cwd: ctx.project,
    env: baseEnv(ctx.home, { GOOGLE_GEMINI_BASE_URL: ctx.modelUrl, GEMINI_API_KEY: 'dummy' }),
  };
}
