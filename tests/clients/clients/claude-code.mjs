// claude-code.mjs — Claude Code driven headless (`claude -p … --output-format stream-json`)
// against the fake Anthropic Messages API, holdline put in by `holdline-mcp install
// --client claude-code` (~/.claude.json, ~/.claude/CLAUDE.md).

import { join } from 'node:path';
import { baseEnv, holdlineInstall, holdlineInstallRemote, patchJson } from '../harness.mjs';

export const name = 'claude-code';
export const pkg = '@anthropic-ai/claude-code';
export const version = '2.1.332';
/** Ctrl-C in the terminal; Claude Code itself stops its stdio servers with SIGINT too. */
export const interrupt = 'SIGINT';
export const expects = { images: true };

const TOOLS = ['init_conversation', 'select_conversation', 'wait_for_user_input', 'merge_conversation'];

/** Claude Code defers MCP tools: the model loads one with `ToolSearch` `select:<name>` first. */
export const brainHooks = {
  resolve(conv, bare) {
    if (!conv.tools.includes('ToolSearch')) return null;
    const query = `select:mcp__holdline__${bare}`;
    const asked = conv.messages.some((m) => m.toolCalls?.some((c) => c.name === 'ToolSearch' && c.args?.query === query));
    // Asked before and still not loaded: call it by name, the client answers what is wrong.
    if (asked) return { name: `mcp__holdline__${bare}`, args: undefined };
    return { name: 'ToolSearch', args: { query, max_results: 1 } };
  },
  /** Claude Code's shell tool. */
  shell: (command) => ({ name: 'Bash', args: { command, description: 'Run the command the test asks for' } }),
};

export async function prepare(ctx) {
  if (ctx.remote) await holdlineInstallRemote('claude-code', { home: ctx.home, project: ctx.project, ...ctx.remote });
  else await holdlineInstall('claude-code', { home: ctx.home, hubUrl: ctx.hubUrl, project: ctx.project, bridgeEnv: ctx.bridgeEnv, args: ctx.installArgs });
  patchJson(join(ctx.home, '.claude.json'), (c) => {
    // Claude Code's own per-call limit (ms), low but above the bridge's short waits.
    c.mcpServers.holdline.timeout = ctx.clientTimeoutSec * 1000;
    if (ctx.remote) Object.assign(c.mcpServers.holdline.headers, ctx.remote.headers);
    c.hasCompletedOnboarding = true;
    c.projects = { [ctx.project]: { hasTrustDialogAccepted: true, allowedTools: [] } };
    return c;
  });
  // HOLDLINE_CLIENTS_HOOK_CAP=8: Claude Code's own cap on stop blocks in a row instead of
  // install's 0, to see hooks.test.mjs fail at the 9th reply.
  const cap = process.env.HOLDLINE_CLIENTS_HOOK_CAP;
  if (cap && !ctx.remote) patchJson(join(ctx.home, '.claude', 'settings.json'), (s) => ({ ...s, env: { ...s.env, CLAUDE_CODE_STOP_HOOK_BLOCK_CAP: cap } }));
  const bin = join(ctx.installDir, 'node_modules', '.bin', 'claude');
  return {
    cmd: bin,
    args: ['-p', ctx.prompt, '--output-format', 'stream-json', '--verbose', '--model', 'claude-sonnet-4-5',
      '--allowedTools', TOOLS.map((t) => `mcp__holdline__${t}`).join(','), ...(ctx.clientArgs ?? [])],
    cwd: ctx.project,
    env: baseEnv(ctx.home, {
      ANTHROPIC_BASE_URL: ctx.modelUrl,
      ANTHROPIC_API_KEY: 'dummy',
      DISABLE_AUTOUPDATER: '1',
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
      DISABLE_TELEMETRY: '1',
      DISABLE_ERROR_REPORTING: '1',
    }),
  };
}
