// brain.mjs — the scripted obedient agent behind every fake model API.
//
// API-neutral: an adapter turns its request into a conversation
//   conv = { tools: [names as the client exposes them],
//            messages: [{ role: 'user'|'assistant'|'tool', text, toolCalls?: [{id, name, args}],
//                         toolCallId?, images?: n, isError? }] }
// and renders the action the brain returns,
//   { kind: 'tool', name, args } | { kind: 'text', text }.
//
// The brain acts only on what the model was given: it finds the token and the `resume`
// value in the text of the last tool result of the conversation, never through a side
// channel. Each decision is recorded in `brain.turns` (and <dir>/brain.jsonl), with what
// the last tool result said, so a check can prove what reached the model.

import { appendFileSync } from 'node:fs';
import { join } from 'node:path';

const TOKEN_RE = /ct_[0-9a-f]{32}/g;
// `"resume":"…"` (JSON), `resume "…"` / `resume: …` / `resume=…` (prose).
const RESUME_RES = [
  /"resume"\s*:\s*"([^"\\]+)"/,
  /\bresume\b[^"\w]{0,4}"([^"\s]+)"/i,
  /\bresume\b\s*[:=]\s*`?([A-Za-z0-9_.:-]{4,})`?/i,
];

/** The holdline tool names the brain calls, by their bare MCP name. */
export const HOLDLINE_TOOLS = ['init_conversation', 'select_conversation', 'wait_for_user_input', 'merge_conversation'];

/** The name under which a client exposes holdline's tool `bare` (`mcp__holdline__x`, `mcp_holdline_x`, `holdline-x`, `x`…). */
export function exposedName(tools, bare) {
  const hits = tools.filter((t) => t === bare || t.endsWith(`_${bare}`) || t.endsWith(`-${bare}`) || t.endsWith(`__${bare}`) || t.endsWith(`.${bare}`));
  return hits.find((t) => t.includes('holdline')) ?? hits[0] ?? null;
}

/** The bare holdline tool name behind a client's name for it, or null. */
export function bareName(name) {
  return HOLDLINE_TOOLS.find((b) => name === b || name.endsWith(`_${b}`) || name.endsWith(`-${b}`) || name.endsWith(`.${b}`)) ?? null;
}

export function findTokens(text) {
  return [...new Set(String(text ?? '').match(TOKEN_RE) ?? [])];
}

export function findResume(text) {
  // A client may hand the result over JSON-encoded (Cline, Continue): `resume \"abc\"` reads
  // as `resume "abc"` to a model, so the escapes go before matching.
  const t = String(text ?? '').replace(/\\+"/g, '"');
  for (const re of RESUME_RES) {
    const m = t.match(re);
    if (m) return m[1];
  }
  return null;
}

/**
 * What kind of holdline result a tool result text is, as a model reading it would tell:
 * an error, "no reply yet", or (from wait_for_user_input) the person's reply.
 */
export function classifyResult(text, isError, bare) {
  const t = String(text ?? '');
  if (isError || /"error"\s*:\s*\{|timed out after|MCP error -?\d+|requires approval|Connection closed|was cancelled|Authentication required|tool call error|timed out awaiting/i.test(t)) return 'error';
  if (/no_reply_yet|no reply yet|No reply:/i.test(t)) return 'no_reply_yet';
  if (bare === 'wait_for_user_input' || /"status"\s*:\s*"replied"/.test(t)) return 'replied';
  if (/ct_[0-9a-f]{32}/.test(t)) return 'token';
  return 'other';
}

/**
 * The scripted agent. Knobs (all optional):
 *   dir            folder for brain.jsonl
 *   title          the chat title passed to init_conversation
 *   finishWord     a reply containing this word makes the agent end its turn (default FINISH)
 *   waitArgs       further arguments of every wait_for_user_input call (e.g. { timeoutSec: 4 })
 *   maxErrors      tool errors tolerated before giving up with a text answer (default 3)
 *   offers         { [step]: { question, options, multiSelect? } }: the wait of that step (1 before
 *                  the first reply, +1 after each) asks `question` and offers `options`
 *   attach         { [step]: [path…] }: the wait of that step passes these `attachments`
 *   forget         the agent never calls a tool: it answers every turn in plain text and
 *                  ends it (a model that forgot the rule; the clients' stop hooks then ask)
 *   shell          a shell command: the agent's first turn runs it with the client's own
 *                  shell tool (hooks.shell), the next one reports the tool's result in plain
 *                  text and ends the turn, every later one is forgetful
 *   hooks.resolve  (conv, bare) => { name, args } | null: how to reach a tool the client
 *                  defers (Claude Code's ToolSearch, Qwen's tool_search / tool_call)
 *   hooks.wrap     (conv, exposed, args) => { name, args }: how to call a resolved tool
 *   hooks.shell    (command) => { name, args }: the client's shell tool call running `command`
 */
export function createBrain(knobs = {}) {
  const finishWord = knobs.finishWord ?? 'FINISH';
  const maxErrors = knobs.maxErrors ?? 3;
  const hooks = knobs.hooks ?? {};
  const brain = {
    turns: [],
    /** Every tool result the model was given, in order, deduplicated by toolCallId. */
    results: [],
    decide(conv, meta = {}) {
      const action = knobs.shell ? shellTurn(conv) : knobs.forget ? forgetful() : decide(conv);
      const last = lastToolResult(conv);
      // The newest user message: what the model takes as its next instruction.
      const lastUser = conv.messages.findLast((m) => m.role === 'user')?.text ?? null;
      const turn = { at: Date.now(), api: meta.api, side: false, tools: conv.tools.length, messages: conv.messages.length, lastResult: last, lastUser, action };
      brain.turns.push(turn);
      if (last && !brain.results.some((r) => r.key === last.key)) brain.results.push(last);
      if (knobs.dir) appendFileSync(join(knobs.dir, 'brain.jsonl'), JSON.stringify(turn) + '\n');
      return action;
    },
    /** A request that is not the agent's turn (title, summary, token count…): answered with plain text. */
    side(conv, meta = {}) {
      const turn = { at: Date.now(), api: meta.api, side: true, messages: conv.messages.length, action: { kind: 'text', text: 'OK' } };
      brain.turns.push(turn);
      if (knobs.dir) appendFileSync(join(knobs.dir, 'brain.jsonl'), JSON.stringify(turn) + '\n');
      return turn.action;
    },
    /** Wait calls the agent has made so far. */
    waitCalls() {
      return brain.turns.filter((t) => t.action.kind === 'tool' && t.action.bare === 'wait_for_user_input');
    },
  };

  /** The forgetful agent's answer: plain text that ends its turn, numbered by its turns. */
  function forgetful() {
    const n = brain.turns.filter((t) => !t.side).length + 1;
    return { kind: 'text', text: `Turn ${n} done: I checked the fake repository and stop here.` };
  }

  /**
   * The shell agent's answer: the command first, then the shell tool's result reported in
   * plain text (the turn ends), then forgetful turns.
   */
  function shellTurn(conv) {
    const n = brain.turns.filter((t) => !t.side).length;
    if (n === 0) {
      const shell = hooks.shell?.(knobs.shell);
      if (!shell) return { kind: 'text', text: 'This client has no shell tool the test knows.' };
      return { kind: 'tool', ...shell, bare: null };
    }
    const result = lastToolResult(conv);
    if (n === 1 && result) return { kind: 'text', text: `The command gave: ${result.text}` };
    return forgetful();
  }

  function call(conv, bare, args) {
    const exposed = exposedName(conv.tools, bare);
    let out;
    if (exposed) out = hooks.wrap ? hooks.wrap(conv, exposed, args) : { name: exposed, args };
    else out = hooks.resolve?.(conv, bare, args) ?? null;
    if (!out) return { kind: 'text', text: `I cannot find the tool ${bare} (tools: ${conv.tools.join(', ')}).` };
    // `bare` only when the call is the holdline tool itself, not a step towards it.
    // A hook that wraps the call (Qwen's `tool_call`) names the tool it reaches as `bare`.
    return { kind: 'tool', ...out, bare: 'bare' in out ? out.bare : (out.name ? bareName(out.name) : null) };
  }

  function decide(conv) {
    const results = conv.messages.filter((m) => m.role === 'tool');
    const holdlineResults = results.filter((m) => m.bare);
    const last = conv.messages.at(-1);
    // A deferred-tool step (e.g. ToolSearch) just answered: go on with the plan.
    const errors = holdlineResults.filter((m) => classifyResult(m.text, m.isError, m.bare) === 'error').length;
    if (errors >= maxErrors) return { kind: 'text', text: `Giving up after ${errors} tool errors.` };

    // The token: the newest one any holdline result handed over.
    let token = null;
    for (const m of holdlineResults) {
      const t = findTokens(m.text);
      if (t.length) token = t.at(-1);
    }
    if (!token) {
      if (holdlineResults.some((m) => m.bare === 'init_conversation')) return { kind: 'text', text: 'init_conversation gave me no token.' };
      return call(conv, 'init_conversation', { cursorTitle: knobs.title ?? 'holdline real-client test' });
    }
    const lastHoldline = holdlineResults.at(-1);
    const lastKind = classifyResult(lastHoldline.text, lastHoldline.isError, lastHoldline.bare);
    const replies = holdlineResults.filter((m) => m.bare === 'wait_for_user_input' && classifyResult(m.text, m.isError, m.bare) === 'replied');
    const step = replies.length + 1;
    const offer = knobs.offers?.[step];
    const message = `Step ${step} done: checked the fake repository. ${offer ? offer.question : 'Next I will wait for your word.'}`;
    const resume = findResume(lastHoldline.text);
    const args = { token, message, ...knobs.waitArgs };
    if (offer) Object.assign(args, { options: offer.options }, offer.multiSelect ? { multiSelect: true } : {});
    if (knobs.attach?.[step]) args.attachments = knobs.attach[step];
    // HOLDLINE_CLIENTS_NO_RESUME=1: identical re-calls, to see a client's loop detector.
    if (resume && !process.env.HOLDLINE_CLIENTS_NO_RESUME) args.resume = resume;
    if (lastHoldline.bare === 'wait_for_user_input' && lastKind === 'replied') {
      const replyText = lastHoldline.text;
      if (replyText.includes(finishWord)) return { kind: 'text', text: `Finished as asked (step ${step - 1}).` };
    }
    void last;
    return call(conv, 'wait_for_user_input', args);
  }

  return brain;
}

function lastToolResult(conv) {
  for (let i = conv.messages.length - 1; i >= 0; i--) {
    const m = conv.messages[i];
    if (m.role === 'tool') {
      return { key: m.toolCallId ?? `${i}`, name: m.name, bare: m.bare, text: m.text, images: m.images ?? 0, isError: !!m.isError, kind: classifyResult(m.text, m.isError, m.bare) };
    }
    if (m.role === 'user' && m.text) return null;
  }
  return null;
}

/**
 * Fills in `name` and `bare` of every tool message from the assistant call it answers,
 * so adapters only need to set `toolCallId`.
 */
export function linkToolResults(conv) {
  const calls = new Map();
  for (const m of conv.messages) for (const c of m.toolCalls ?? []) calls.set(c.id, c);
  for (const m of conv.messages) {
    if (m.role !== 'tool') continue;
    const c = calls.get(m.toolCallId);
    if (c && !m.name) m.name = c.name;
    if (m.name && !m.bare) m.bare = bareName(m.name);
    if (c && m.bare == null && c.args && typeof c.args === 'object') {
      // Deferred calls (Qwen's tool_call {name, arguments}) name the real tool in their args.
      const inner = c.args.name ?? c.args.tool_name ?? c.args.toolName;
      if (typeof inner === 'string') m.bare = bareName(inner);
      // Code-mode calls (Vibe's run_typescript) name the real tool in their program.
      const called = typeof c.args.code === 'string' ? c.args.code.match(/tools\.[\w-]+\.(\w+)\(/) : null;
      if (m.bare == null && called) m.bare = bareName(called[1]);
    }
  }
  return conv;
}
