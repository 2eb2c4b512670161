// qwen.mjs — Qwen Code driven headless (`qwen -p … --yolo`) against the fake OpenAI Chat
// API (OPENAI_BASE_URL), holdline put in by `holdline-mcp install --client qwen`
// (~/.qwen/settings.json, QWEN.md). Qwen defers MCP tools: the
// model reviews one with `tool_search` `select:…` and calls it through `tool_call`.

import { join } from 'node:path';
import { baseEnv, holdlineInstall, holdlineInstallRemote, patchJson } from '../harness.mjs';

export const name = 'qwen';
export const pkg = '@qwen-code/qwen-code';
export const version = '0.24.4';
export const interrupt = 'SIGINT';
export const expects = { images: true };

export const brainHooks = {
  resolve(conv, bare, args) {
    if (!conv.tools.includes('tool_call')) return null;
    const full = `mcp__holdline__${bare}`;
    const reviewed = conv.messages.some((m) => m.toolCalls?.some((c) => c.name === 'tool_search' && String(c.args?.query ?? '').includes(full)));
    if (!reviewed) return { name: 'tool_search', args: { query: `select:${full}` }, bare: null };
    return { name: 'tool_call', args: { name: full, arguments: args }, bare };
  },
};

export async function prepare(ctx) {
  const settings = join(ctx.home, '.qwen', 'settings.json');
  if (ctx.remote) await holdlineInstallRemote('qwen', { home: ctx.home, project: ctx.project, ...ctx.remote, args: ['--trust'] });
  else await holdlineInstall('qwen', { home: ctx.home, hubUrl: ctx.hubUrl, project: ctx.project, bridgeEnv: ctx.bridgeEnv, args: ctx.installArgs });
  patchJson(settings, (s) => {
    const entry = s.mcpServers.holdline;
    if (ctx.remote) Object.assign(entry.headers, ctx.remote.headers);
    else entry.env = { ...entry.env, ...ctx.bridgeEnv };
    entry.timeout = ctx.clientTimeoutSec * 1000;
    s.security = { ...s.security, auth: { selectedType: 'openai' } };
    s.privacy = { usageStatisticsEnabled: false };
    s.general = { ...s.general, disableAutoUpdate: true, disableUpdateNag: true };
    // HOLDLINE_CLIENTS_HOOK_CAP=8: Qwen's own cap on stop blocks in a row instead of
    // install's 100, to see hooks.test.mjs fail at the 8th reply.
    const cap = process.env.HOLDLINE_CLIENTS_HOOK_CAP;
    if (cap && !ctx.remote) s.stopHookBlockingCap = Number(cap);
    return s;
  });
  const bin = join(ctx.installDir, 'node_modules', '.bin', 'qwen');
  return {
    cmd: process.execPath,
    args: [bin, '-p', ctx.prompt, '--yolo'],
    cwd: ctx.project,
    env: baseEnv(ctx.home, {
      OPENAI_BASE_URL: `${ctx.modelUrl}/v1`,
      OPENAI_API_KEY: 'dummy',
      // Qwen passes images only to models it knows take them (defaultModalities: gpt-* do);
      // with another name an image becomes the text "[image: image/png]".
      OPENAI_MODEL: 'gpt-4o',
      QWEN_CODE_SUPPRESS_YOLO_WARNING: '1',
    }),
  };
}
