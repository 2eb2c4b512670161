// sse.mjs — what every adapter needs to answer: server-sent events, JSON, ids.

import { randomBytes } from 'node:crypto';

export function id(prefix) {
  return `${prefix}${randomBytes(12).toString('hex')}`;
}

/** Writes `events` ({event?, data}) as one SSE response and ends it. */
export function sendSse(res, events) {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
  for (const e of events) {
    if (e.event) res.write(`event: ${e.event}\n`);
    res.write(`data: ${typeof e.data === 'string' ? e.data : JSON.stringify(e.data)}\n\n`);
  }
  res.end();
}

export function sendJson(res, value, status = 200) {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(value));
}

/** A value matching a JSON schema's shape, for side requests that ask for structured output. */
export function sampleFor(schema, key = '') {
  if (!schema || typeof schema !== 'object') return 'ok';
  const type = String(schema.type ?? '').toLowerCase();
  if (Array.isArray(schema.enum) && schema.enum.length) {
    // A "who speaks next" check must hand the turn back to the user, never loop the model.
    if (key === 'next_speaker' && schema.enum.includes('user')) return 'user';
    return schema.enum[0];
  }
  if (type === 'object' || schema.properties) {
    const out = {};
    for (const [k, v] of Object.entries(schema.properties ?? {})) out[k] = sampleFor(v, k);
    return out;
  }
  if (type === 'array') return [];
  if (type === 'boolean') return false;
  if (type === 'number' || type === 'integer') return 0;
  return 'ok';
}
