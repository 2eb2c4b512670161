// continue.mjs — Continue CLI (`cn -p --auto --config config.yaml …`) against the fake
// OpenAI Chat API; the model and holdline's `mcpServers` entry are in the config.yaml the
// run is given.

import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { baseEnv, holdlineInstall } from '../harness.mjs';

export const name = 'continue';
export const pkg = '@continuedev/cli';
export const version = '1.5.47';
export const interrupt = 'SIGINT';
/**
 * Continue CLI 1.5.47 hands the model `JSON.stringify(result.content)` as the tool message
 * (src/tools/index.tsx): text blocks as JSON text, an image as its base64 in that text,
 * never an image part; structuredContent is dropped.
 */
export const expects = { images: false, why: 'Continue CLI gives the model a result\'s content array as JSON text; an image arrives as base64 text, not an image part' };

/** The installer has an entry for Continue (issue 16): flip when it has landed on main. */
const VIA_INSTALLER = false;

const q = (s) => JSON.stringify(String(s));

export async function prepare(ctx) {
  const config = join(ctx.project, 'config.yaml');
  const model = [
    'name: holdline-test',
    'version: 1.0.0',
    'schema: v1',
    'models:',
    '  - name: fake',
    '    provider: openai',
    '    model: fake-model',
    `    apiBase: ${q(`${ctx.modelUrl}/v1`)}`,
    '    apiKey: dummy',
    '    roles: [chat]',
    '    capabilities: [tool_use, image_input]',
    '',
  ].join('\n');
  if (VIA_INSTALLER) await holdlineInstall('continue', { home: ctx.home, hubUrl: ctx.hubUrl, project: ctx.project });
  const env = { HOLDLINE_HUB: ctx.hubUrl, ...ctx.bridgeEnv };
  const entry = [
    'mcpServers:',
    '  - name: holdline',
    `    command: ${q(ctx.mcpBin)}`,
    '    args: []',
    '    env:',
    ...Object.entries(env).map(([k, v]) => `      ${k}: ${q(v)}`),
    '',
  ].join('\n');
  writeFileSync(config, model + entry);
  const bin = join(ctx.installDir, 'node_modules', '.bin', 'cn');
  return {
    cmd: bin,
    args: ['-p', '--auto', '--config', config, ctx.prompt],
    cwd: ctx.project,
    env: baseEnv(ctx.home, {}),
  };
}
