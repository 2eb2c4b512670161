// continue.mjs — Continue CLI (`cn -p --auto --config ~/.continue/config.yaml …`) against the
// fake OpenAI Chat API: holdline's `mcpServers` item is put in by `holdline-mcp install
// --client continue` (~/.continue/config.yaml); the model is added to the same file. YAML
// is read and written with the js-yaml the CLI itself installs.

import { createRequire } from 'node:module';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { baseEnv, holdlineInstall, holdlineInstallRemote } from '../harness.mjs';

export const name = 'continue';
export const pkg = '@continuedev/cli';
export const version = '1.5.47';
export const interrupt = 'SIGINT';
/**
 * Continue CLI 1.5.47 hands the model `JSON.stringify(result.content)` as the tool message
 * (src/tools/index.tsx): text blocks as JSON text, an image as its base64 in that text,
 * never an image part; structuredContent is dropped. The bridge saves a reply's images in
 * the workspace instead and names the files.
 */
export const expects = { images: 'file', why: 'Continue CLI gives the model a result\'s content array as JSON text (an image block would be base64 text): the image is saved in the workspace and the model gets its path' };

export async function prepare(ctx) {
  const yaml = createRequire(join(ctx.installDir, 'package.json'))('js-yaml');
  const config = join(ctx.home, '.continue', 'config.yaml');
  if (ctx.remote) await holdlineInstallRemote('continue', { home: ctx.home, project: ctx.project, ...ctx.remote });
  else await holdlineInstall('continue', { home: ctx.home, hubUrl: ctx.hubUrl, project: ctx.project });
  const doc = yaml.load(readFileSync(config, 'utf8'));
  const entry = doc.mcpServers.find((s) => s.name === 'holdline');
  if (ctx.remote) Object.assign(entry.requestOptions.headers, ctx.remote.headers);
  else entry.env = { ...entry.env, ...ctx.bridgeEnv };
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
