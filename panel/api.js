// api.js — the only code in the panel that talks to the hub: JSON calls to
// /api/* (cookie auth, same origin), their errors as ApiError, and the SSE
// stream of session changes with reconnection.

/**
 * An error answer from the hub (`{"error":{code,message}}`) or a network failure
 * (status 0); `currentQuestion` (`{seq, preview}`) comes with `STALE_QUESTION`.
 */
export class ApiError extends Error {
  constructor(status, code, message, currentQuestion = null) {
    super(message || code);
    this.status = status;
    this.code = code;
    this.currentQuestion = currentQuestion;
  }
}

async function call(method, path, body) {
  const init = { method, credentials: 'same-origin', headers: {} };
  if (body !== undefined) {
    init.headers['content-type'] = 'application/json';
    init.body = typeof body === 'string' ? body : JSON.stringify(body);
  }
  let res;
  try {
    res = await fetch(path, init);
  } catch (e) {
    throw new ApiError(0, 'NETWORK', e.message || 'network error');
  }
  const text = await res.text();
  let data = null;
  if (text) {
    try { data = JSON.parse(text); } catch { data = null; }
  }
  if (!res.ok) {
    const err = data && data.error ? data.error : {};
    throw new ApiError(res.status, err.code || `HTTP_${res.status}`, err.message || res.statusText, err.currentQuestion || null);
  }
  return data;
}

const enc = encodeURIComponent;

export const api = {
  login: (key) => call('POST', '/api/login', { key }),
  logout: () => call('POST', '/api/logout', {}),
  /** Ends every panel login (every browser, also after a restart of the hub). */
  logoutEverywhere: () => call('POST', '/api/logout/everywhere', {}),
  whoami: () => call('GET', '/api/whoami'),
  /** `{ok, version, sessions, waiting, uptimeMs, mongo}`; `mongo` is null when sync is off. */
  healthz: () => call('GET', '/healthz'),
  sessions: ({ status = '', q = '', limit = 200, cursor = '' } = {}) => {
    const p = new URLSearchParams();
    if (status) p.set('status', status);
    if (q) p.set('q', q);
    if (cursor) p.set('cursor', cursor);
    p.set('limit', String(limit));
    return call('GET', `/api/sessions?${p}`);
  },
  session: (token, { before = null, limit = 50 } = {}) => {
    const p = new URLSearchParams({ limit: String(limit) });
    if (before !== null && before !== undefined) p.set('before', String(before));
    return call('GET', `/api/sessions/${enc(token)}?${p}`);
  },
  /** Where `q` occurs in one session: `{hits: [{seq, role, at, snippet}]}`, newest first. */
  find: (token, q, limit = 1) => call('GET', `/api/sessions/${enc(token)}/find?${new URLSearchParams({ q, limit: String(limit) })}`),
  /**
   * `body` is sent as prepared (already JSON text) so the caller can size-check it first.
   * With `inReplyTo` (the question on screen) the hub refuses it, 409 `STALE_QUESTION`,
   * when the agent has asked something newer.
   */
  reply: (json) => call('POST', '/api/reply', json),
  config: (token, fields) => call('POST', '/api/session/config', { token, ...fields }),
  archive: (token) => call('POST', `/api/sessions/${enc(token)}/archive`, {}),
  restore: (token) => call('POST', `/api/sessions/${enc(token)}/restore`, {}),
  /** The person's merge: no binding check; answers the target session. */
  merge: (fromToken, toToken) => call('POST', `/api/sessions/${enc(fromToken)}/merge`, { toToken }),
  templates: () => call('GET', '/api/templates'),
  saveTemplates: (templates) => call('PUT', '/api/templates', { templates }),
  /** `{keys: [{name, createdAt, lastUsedAt}]}`: the agent keys (never their text). */
  keys: () => call('GET', '/api/keys'),
  /** Revokes an agent key: refused at once, its open waits end. */
  /** Hands a session to the agent key `key` (`null`: the hub's secret); answers the session. */
  handOver: (token, key) => call('POST', `/api/sessions/${enc(token)}/owner`, { key }),
  revokeKey: (name) => call('DELETE', `/api/keys/${enc(name)}`),
  /** Web Push: `{publicKey, enabled, subscriptions, subscribed?}` (`subscribed` of `endpoint`, when given). */
  pushKey: (endpoint = '') => call('GET', `/api/push/key${endpoint ? `?${new URLSearchParams({ endpoint })}` : ''}`),
  pushSubscribe: (subscription) => call('POST', '/api/push/subscriptions', subscription),
  pushUnsubscribe: (endpoint) => call('DELETE', '/api/push/subscriptions', { endpoint }),
  /** A test push to every subscribed browser: `{sent, error?}`. */
  pushTest: () => call('POST', '/api/push/test', {}),
};

/**
 * Follows `GET /api/events`. `onSession(session)` for each change;
 * `onState(live)` when the stream opens or drops; `onReconnect()` when it
 * first opens, and again after a drop, so the caller refetches what it may have missed.
 * EventSource retries network errors by itself; when it gives up (e.g. a
 * 401 or the hub answering non-SSE during a restart) we start a new one.
 */
export function followEvents({ onSession, onState, onReconnect, onUnauthorized }) {
  let es = null;
  let dropped = false;
  let timer = null;
  let stopped = false;
  let backoff = 1000;
  let first = true;

  function open() {
    if (stopped) return;
    es = new EventSource('/api/events', { withCredentials: true });
    es.addEventListener('open', () => {
      backoff = 1000;
      onState(true);
      // Also on the first open: a change between the caller's first fetch
      // and the stream opening (e.g. a session synced in from another hub)
      // would otherwise stay unseen until the next change to it.
      if (dropped || first) {
        dropped = false;
        first = false;
        onReconnect();
      }
    });
    es.addEventListener('session', (ev) => {
      let s;
      try { s = JSON.parse(ev.data); } catch { return; }
      if (s && s.token) onSession(s);
    });
    // The hub says this client missed events (it was slow): refetch everything.
    es.addEventListener('resync', () => onReconnect());
    es.addEventListener('error', () => {
      dropped = true;
      onState(false);
      if (es.readyState === EventSource.CLOSED) {
        es.close();
        clearTimeout(timer);
        timer = setTimeout(async () => {
          try {
            await api.whoami();
          } catch (e) {
            if (e.status === 401) { onUnauthorized(); return; }
          }
          open();
        }, backoff);
        backoff = Math.min(backoff * 2, 15000);
      }
    });
  }
  open();
  return () => {
    stopped = true;
    clearTimeout(timer);
    if (es) es.close();
  };
}
