// continue.mjs — Continue CLI (`cn -p --auto --config ~/.continue/config.yaml …`) against the
// fake OpenAI Chat API: the model and holdline's `mcpServers` item live in the config.yaml
// the installer writes. YAML is read and written with the js-yaml the CLI itself installs.

import { createRequire } from 'node:module';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
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

export async function prepare(ctx) {
  const yaml = createRequire(join(ctx.installDir, 'package.json'))('js-yaml');
  const config = join(ctx.home, '.continue', 'config.yaml');
  if (VIA_INSTALLER) await holdlineInstall('continue', { home: ctx.home, hubUrl: ctx.hubUrl, project: ctx.project });
  else {
    mkdirSync(dirname(config), { recursive: true });
    writeFileSync(config, yaml.dump({ mcpServers: [{ name: 'holdline', command: ctx.mcpBin, args: [], env: { HOLDLINE_HUB: ctx.hubUrl } }] }));
  }
  const doc = existsSync(config) ? yaml.load(readFileSync(config, 'utf8')) ?? {} : {};
  const entry = doc.mcpServers.find((s) => s.name === 'holdline');
  entry.env = { ...entry.env, ...ctx.bridgeEnv };
  Object.assign(doc, {
    name: doc.name ?? 'holdline-test',
    version: doc.version ?? '1.0.0',
    schema: doc.schema ?? 'v1',
    models: [{
      name: 'fake',
      provider: 'openai',
      model: 'fake-model',
      apiBase: `${ctx.modelUrl}/v1`,
      apiKey: 'dummy',
      roles: ['chat'],
      capabilities: ['tool_use', 'image_input'],
    }],
  });
  writeFileSync(config, yaml.dump(doc));
  const bin = join(ctx.installDir, 'node_modules', '.bin', 'cn');
  return {
    cmd: bin,
    args: ['-p', '--auto', '--config', config, ctx.prompt],
    cwd: ctx.project,
    env: baseEnv(ctx.home, {}),
  };
}
