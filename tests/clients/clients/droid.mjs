// droid.mjs — Factory Droid CLI driven headless (`droid exec -o json …`) with a BYOK custom
// model (~/.factory/settings.json `customModels`, provider `generic-chat-completion-api`)
// against the fake OpenAI Chat API: no Factory login, nothing but loopback. holdline put
// in by `holdline-mcp install --client droid` (~/.factory/mcp.json, ~/.factory/AGENTS.md).
//
// The package is the platform one, `@factory/cli-linux-x64`: `@factory/cli` only links it
// in its postinstall, and for 0.225.1 the Linux x64 binary on npm is 0.225.2.

import { join } from 'node:path';
import { baseEnv, holdlineInstall, holdlineInstallRemote, patchJson } from '../harness.mjs';

export const name = 'droid';
export const pkg = '@factory/cli-linux-x64';
export const version = '0.225.2';
export const interrupt = 'SIGINT';
export const expects = { images: true };

/**
 * Droid defers MCP tools (`holdline___X` in the "Deferred tools:" reminder): the model
 * loads one with `ToolSearch` `select:<name>` first, then calls it by that name.
 */
export const brainHooks = {
  resolve(conv, bare) {
    if (!conv.tools.includes('ToolSearch')) return null;
    const query = `select:holdline___${bare}`;
    const asked = conv.messages.some((m) => m.toolCalls?.some((c) => c.name === 'ToolSearch' && c.args?.query === query));
    // Asked before and still not loaded: call it by name, the client answers what is wrong.
    if (asked) return { name: `holdline___${bare}`, args: undefined };
    return { name: 'ToolSearch', args: { query } };
  },
};

export async function prepare(ctx) {
  const config = join(ctx.home, '.factory', 'mcp.json');
  if (ctx.remote) await holdlineInstallRemote('droid', { home: ctx.home, project: ctx.project, ...ctx.remote });
  else await holdlineInstall('droid', { home: ctx.home, hubUrl: ctx.hubUrl, project: ctx.project });
  patchJson(config, (c) => {
    const entry = c.mcpServers.holdline;
    if (ctx.remote) Object.assign(entry.headers, ctx.remote.headers);
    else entry.env = { ...entry.env, ...ctx.bridgeEnv };
    return c;
  });
  patchJson(join(ctx.home, '.factory', 'settings.json'), (s) => ({
    ...s,
    customModels: [{
      model: 'fake-model',
      displayName: 'Fake',
      baseUrl: `${ctx.modelUrl}/v1`,
      apiKey: 'dummy',
      provider: 'generic-chat-completion-api',
      maxOutputTokens: 4096,
      noImageSupport: false,
    }],
  }));
  const bin = join(ctx.installDir, 'node_modules', '@factory', 'cli-linux-x64', 'bin', 'droid');
  return {
    cmd: bin,
    args: ['exec', '-m', 'custom:Fake-0', '-o', 'json', ctx.prompt],
    cwd: ctx.project,
    env: baseEnv(ctx.home, {}),
  };
}
