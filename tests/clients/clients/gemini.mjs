// gemini.mjs — Gemini CLI driven headless (`gemini -p … --yolo`) against the fake Gemini
// API (GOOGLE_GEMINI_BASE_URL), holdline put in by `holdline-mcp install --client gemini`
// (~/.gemini/settings.json, GEMINI.md); API-key auth and a trusted project folder, since
// headless Gemini refuses other auth and runs stdio servers only in trusted folders.

import { join } from 'node:path';
import { baseEnv, holdlineInstall, patchJson } from '../harness.mjs';

export const name = 'gemini';
export const pkg = '@google/gemini-cli';
export const version = '0.61.0';
export const interrupt = 'SIGINT';
export const expects = { images: true };

export async function prepare(ctx) {
  await holdlineInstall('gemini', { home: ctx.home, hubUrl: ctx.hubUrl, project: ctx.project });
  patchJson(join(ctx.home, '.gemini', 'settings.json'), (s) => {
    const entry = s.mcpServers.holdline;
    entry.env = { ...entry.env, ...ctx.bridgeEnv };
    entry.timeout = ctx.clientTimeoutSec * 1000;
    s.security = { ...s.security, auth: { selectedType: 'gemini-api-key' } };
    s.privacy = { usageStatisticsEnabled: false };
    s.general = { ...s.general, disableAutoUpdate: true, disableUpdateNag: true };
    return s;
  });
  patchJson(join(ctx.home, '.gemini', 'trustedFolders.json'), (t) => ({ ...t, [ctx.project]: 'TRUST_FOLDER' }));
  const bin = join(ctx.installDir, 'node_modules', '.bin', 'gemini');
  return {
    cmd: process.execPath,
    args: [bin, '-p', ctx.prompt, '--yolo', '--model', 'gemini-2.5-pro'],
    cwd: ctx.project,
    env: baseEnv(ctx.home, { GOOGLE_GEMINI_BASE_URL: ctx.modelUrl, GEMINI_API_KEY: 'dummy' }),
  };
}
