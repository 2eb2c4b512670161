// openhands.mjs — OpenHands CLI (`openhands --headless --json -t …`, PyPI `openhands`, needs
// Python 3.12 exactly: python.mjs brings Ubuntu 24.04's) against the fake OpenAI Chat API
// through LiteLLM (`LLM_MODEL=openai/…`, `LLM_BASE_URL`, `LLM_API_KEY`, read because of
// `--override-with-envs`), with a local workspace (no Docker), holdline put in by
// `holdline-mcp install --client openhands` (~/.openhands/mcp.json, the rule in
// ~/.openhands/skills/holdline.md).

import { baseEnv, holdlineInstall, holdlineInstallRemote, patchJson } from '../harness.mjs';
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { installPythonPackage } from '../python.mjs';

export const name = 'openhands';
export const pkg = 'openhands';
export const version = '1.16.0';
export const interrupt = 'SIGINT';
/**
 * Measured: OpenHands hands the model a result's image blocks only when LiteLLM knows the
 * model has vision; its `clientInfo.name` is `mcp` (the Python SDK's default, as Vibe's), for
 * which the bridge saves a reply's images in the workspace and names the files.
 */
export const expects = { images: 'file', why: 'OpenHands (clientInfo `mcp`, as Mistral Vibe) shows the model images only for models LiteLLM lists with vision: the image is saved in the workspace and the model gets its path, which its file_editor opens' };
/**
 * OpenHands' default agent runs an LLM security analyzer: every tool it shows the model has a
 * required `security_risk` (LOW / MEDIUM / HIGH), and a call without it is refused with
 * "Failed to provide security_risk field" before it reaches the MCP server. The agent pops
 * the field before the call: holdline's tools never see it. Headless mode approves every
 * risk (no gate).
 */
export const brainHooks = {
  wrap: (conv, exposed, args) => ({ name: exposed, args: { ...args, security_risk: 'LOW' } }),
};
export const install = () => installPythonPackage(pkg, version, { python: '3.12', bin: 'openhands' });

export async function prepare(ctx) {
  const config = join(ctx.home, '.openhands', 'mcp.json');
  if (ctx.remote) await holdlineInstallRemote('openhands', { home: ctx.home, project: ctx.project, ...ctx.remote });
  else await holdlineInstall('openhands', { home: ctx.home, hubUrl: ctx.hubUrl, project: ctx.project, bridgeEnv: ctx.bridgeEnv });
  // fastmcp's per-request `timeout` (ms): the client's own limit the scenarios set.
  patchJson(config, (c) => {
    const entry = c.mcpServers.holdline;
    if (ctx.remote) Object.assign(entry.headers, ctx.remote.headers);
    entry.timeout = ctx.clientTimeoutSec * 1000;
    return c;
  });
  // Its terminal tool runs in a tmux server when `tmux -V` works, and that server can outlive
  // the run (one was left after a normal exit): a `tmux` that fails makes it use plain
  // subprocesses instead.
  const bin = join(ctx.home, 'bin');
  mkdirSync(bin, { recursive: true });
  writeFileSync(join(bin, 'tmux'), '#!/bin/sh\nexit 127\n');
  chmodSync(join(bin, 'tmux'), 0o755);
  const env = baseEnv(ctx.home, {
    LLM_MODEL: 'openai/fake-model',
    LLM_API_KEY: 'dummy',
    LLM_BASE_URL: `${ctx.modelUrl}/v1`,
    LITELLM_LOCAL_MODEL_COST_MAP: 'True',
    OPENHANDS_SUPPRESS_BANNER: '1',
  });
  env.PATH = `${bin}:${env.PATH ?? '/usr/bin:/bin'}`;
  return {
    cmd: join(ctx.installDir, 'bin', 'openhands'),
    args: ['--headless', '--json', '--override-with-envs', '-t', ctx.prompt],
    cwd: ctx.project,
    env,
  };
}
