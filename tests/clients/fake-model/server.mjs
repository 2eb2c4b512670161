// server.mjs — the fake model: one HTTP server on 127.0.0.1 that speaks every model API
// the real clients use, routes each request by path to its adapter (anthropic.mjs,
// responses.mjs, gemini.mjs, chat.mjs when present), lets the brain decide the agent's
// next action, and appends every request body to <dir>/model-requests.jsonl.
//
//   import { startFakeModel } from './server.mjs';
//   const model = await startFakeModel({ dir, brain: { title: 'x', hooks } });
//   model.url      // http://127.0.0.1:PORT
//   model.brain    // the brain: .turns, .results, .waitCalls()
//   await model.close();
//
// Run alone (debugging a client by hand): node server.mjs [dir]  → prints the URL.

import { createServer } from 'node:http';
import { appendFileSync, existsSync, mkdirSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { createBrain } from './brain.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const ADAPTER_FILES = ['anthropic.mjs', 'responses.mjs', 'gemini.mjs', 'chat.mjs'];

let adaptersPromise;
/** Every adapter module present next to this file: `{ name, matches(method, url), handle(ctx) }`. */
export function loadAdapters() {
  adaptersPromise ??= (async () => {
    const out = [];
    for (const f of ADAPTER_FILES) {
      const p = join(here, f);
      if (existsSync(p)) out.push(await import(pathToFileURL(p).href));
    }
    return out;
  })();
  return adaptersPromise;
}

export async function startFakeModel({ dir, brain: knobs = {}, port = 0 } = {}) {
  if (dir) mkdirSync(dir, { recursive: true });
  const adapters = await loadAdapters();
  const brain = createBrain({ dir, ...knobs });
  const log = (entry) => { if (dir) appendFileSync(join(dir, 'model-requests.jsonl'), JSON.stringify(entry) + '\n'); };
  const requests = [];
  const server = createServer(async (req, res) => {
    const url = new URL(req.url, 'http://127.0.0.1');
    const chunks = [];
    for await (const c of req) chunks.push(c);
    const raw = Buffer.concat(chunks).toString('utf8');
    let body = null;
    try { body = raw ? JSON.parse(raw) : null; } catch { body = raw; }
    const entry = { at: Date.now(), method: req.method, path: url.pathname + url.search, body };
    requests.push(entry);
    log(entry);
    const adapter = adapters.find((a) => a.matches(req.method, url));
    if (!adapter) {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: `fake model: no adapter for ${req.method} ${url.pathname}` } }));
      return;
    }
    try {
      await adapter.handle({ req, res, url, body, brain, entry });
    } catch (e) {
      entry.adapterError = String(e?.stack ?? e);
      log({ at: Date.now(), adapterError: entry.adapterError, path: entry.path });
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: `fake model adapter failed: ${e?.message ?? e}` } }));
    }
  });
  server.keepAliveTimeout = 1000;
  await new Promise((r) => server.listen(port, '127.0.0.1', r));
  const url = `http://127.0.0.1:${server.address().port}`;
  return {
    url,
    port: server.address().port,
    brain,
    requests,
    async close() {
      server.closeAllConnections?.();
      await new Promise((r) => server.close(r));
    },
  };
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const dir = process.argv[2] ?? process.cwd();
  const m = await startFakeModel({ dir });
  console.log(m.url);
}
