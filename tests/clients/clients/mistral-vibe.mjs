// mistral-vibe.mjs — Mistral Vibe (`vibe -p … --auto-approve`, PyPI `mistral-vibe`, needs
// Python ≥ 3.12: python.mjs brings one) against the fake OpenAI Chat API as a "generic"
// provider, holdline put in by `holdline-mcp install --client mistral-vibe`
// (~/.vibe/config.toml `[[mcp_servers]]`, ~/.vibe/AGENTS.md). Vibe names MCP tools
// `<server>_<tool>`.

import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { baseEnv, holdlineInstall, holdlineInstallRemote } from '../harness.mjs';
import { installPythonPackage } from '../python.mjs';

export const name = 'mistral-vibe';
export const pkg = 'mistral-vibe';
export const version = '3.0.3';
export const interrupt = 'SIGINT';
/**
 * Measured: Vibe 3.0.3's `run_typescript` returns the call's `structuredContent` (else its
 * text) as the program's value and never an image. The bridge saves a reply's images in the
 * workspace instead and names the files (`reply.imageNote` in the JSON the model reads).
 */
export const expects = { images: 'file', why: 'Vibe\'s code mode hands the model a result\'s structuredContent as the program\'s value, never an image: the image is saved in the workspace and the model gets its path' };
/** mistral-vibe 3.0.3 pins certifi==2026.10.19, which PyPI replaced by 2026.10.19.post1. */
export const install = () => installPythonPackage(pkg, version, { overrides: ['certifi==2026.10.19.post1'], bin: 'vibe' });

/**
 * Vibe 3.0.3's Unified Harness shows the model no MCP tool directly: it finds one with
 * `search_tool_functions` (`details` gives its declaration) and calls it from a
 * `run_typescript` program as `tools.holdline.<tool>(args)`; the program's return value is
 * the result the model reads.
 */
export const brainHooks = {
  resolve(conv, bare, args) {
    if (!conv.tools.includes('run_typescript')) return null;
    const calls = conv.messages.flatMap((m) => m.toolCalls ?? []);
    const searched = calls.find((c) => c.name === 'search_tool_functions' && c.args?.mode === 'best_match' && c.args?.query === `holdline ${bare}`);
    if (!searched) return { name: 'search_tool_functions', args: { mode: 'best_match', query: `holdline ${bare}` }, bare: null };
    // The exact name best_match gave (`<group>.<tool>`), read from its result.
    const found = conv.messages.find((m) => m.role === 'tool' && m.toolCallId === searched.id)?.text ?? '';
    const fn = found.match(new RegExp(`[\\w-]+\\.${bare}\\b`))?.[0];
    if (!fn) return { kind: 'text', text: `search_tool_functions found no ${bare}: ${found.slice(0, 300)}` };
    if (!calls.some((c) => c.name === 'search_tool_functions' && c.args?.mode === 'details' && c.args?.functions?.includes(fn))) {
      return { name: 'search_tool_functions', args: { mode: 'details', functions: [fn] }, bare: null };
    }
    const code = `async function main() {\n  return await tools.${fn}(${JSON.stringify(args ?? {})});\n}`;
    return { name: 'run_typescript', args: { code }, bare };
  },
};

/** TOML string (JSON's escapes are TOML's for what we write). */
const str = (s) => JSON.stringify(String(s));

export async function prepare(ctx) {
  const config = join(ctx.home, '.vibe', 'config.toml');
  if (ctx.remote) await holdlineInstallRemote('mistral-vibe', { home: ctx.home, project: ctx.project, ...ctx.remote });
  else await holdlineInstall('mistral-vibe', { home: ctx.home, hubUrl: ctx.hubUrl, project: ctx.project, bridgeEnv: ctx.bridgeEnv });
  let text = readFileSync(config, 'utf8').replace(/tool_timeout_sec = \d+/, `tool_timeout_sec = ${ctx.clientTimeoutSec}`);
  if (ctx.remote) {
    const extra = Object.entries(ctx.remote.headers).map(([k, v]) => `${str(k)} = ${str(v)}, `).join('');
    text = text.replace(/headers = \{ /, `headers = { ${extra}`);
  }
  // Top-level keys go before the first table; the provider and model after the rest.
  text = [
    'active_model = "fake"',
    'enable_telemetry = false',
    'enable_update_checks = false',
    'enable_auto_update = false',
    'enable_notifications = false',
    'enable_connectors = false',
    '',
    text,
    '[[providers]]',
    'name = "fake"',
    `api_base = ${str(`${ctx.modelUrl}/v1`)}`,
    'api_key_env_var = "FAKE_API_KEY"',
    'backend = "generic"',
    '',
    '[[models]]',
    'name = "fake-model"',
    'provider = "fake"',
    'alias = "fake"',
    'supports_images = true',
    '',
  ].join('\n');
  writeFileSync(config, text);
  return {
    cmd: join(ctx.installDir, 'bin', 'vibe'),
    args: ['-p', ctx.prompt, '--auto-approve', '--trust', '--output', 'json'],
    cwd: ctx.project,
    env: baseEnv(ctx.home, { FAKE_API_KEY: 'dummy' }),
  };
}
