// chat.mjs — the fake model's OpenAI Chat Completions API (Qwen Code, Cline CLI, opencode,
// Copilot CLI, Continue CLI): POST …/chat/completions, streamed (SSE chunks ending in
// `data: [DONE]`) or as one JSON body, exactly as the request asks; GET …/models.
// It only reshapes: every decision is the brain's.

import { linkToolResults } from './brain.mjs';
import { id, sendJson } from './sse.mjs';

export const name = 'chat';

export function matches(method, url) {
  return (method === 'POST' && url.pathname.endsWith('/chat/completions'))
    || (method === 'GET' && url.pathname.endsWith('/models'));
}

/** The parts of a message `content`: a string is one text part. */
function parts(content) {
  if (content == null) return [];
  if (typeof content === 'string') return [{ type: 'text', text: content }];
  if (Array.isArray(content)) return content.map((p) => (typeof p === 'string' ? { type: 'text', text: p } : p ?? {}));
  return [{ type: 'text', text: JSON.stringify(content) }];
}

const IMAGE_PARTS = new Set(['image_url', 'image', 'input_image']);

function textOf(content) {
  return parts(content).filter((p) => p.type === 'text' || p.type === 'input_text').map((p) => p.text ?? '').join('\n');
}

function imagesOf(content) {
  return parts(content).filter((p) => IMAGE_PARTS.has(p.type)).length;
}

function parseArgs(raw) {
  if (raw == null || raw === '') return {};
  if (typeof raw === 'object') return raw;
  try { return JSON.parse(raw); } catch { return { _unparsed: String(raw) }; }
}

/**
 * The neutral conversation of a Chat Completions request. A client that cannot put an
 * image into a `tool` message sends it in a `user` message right after the tool results
 * (opencode: "Attached media from tool result:", Qwen Code: "(attached media from previous
 * tool call)", Droid: "Image content from tool result:", then the image); such images count for the tool result before them, since
 * that is the result they came with.
 */
export function toConversation(body) {
  const tools = (body.tools ?? []).map((t) => t?.function?.name ?? t?.name).filter(Boolean);
  const messages = [];
  for (const m of body.messages ?? []) {
    const text = textOf(m.content);
    const images = imagesOf(m.content);
    if (m.role === 'assistant') {
      const toolCalls = (m.tool_calls ?? []).map((c) => ({ id: c.id, name: c.function?.name, args: parseArgs(c.function?.arguments) }));
      messages.push({ role: 'assistant', text, toolCalls });
    } else if (m.role === 'tool') {
      messages.push({ role: 'tool', toolCallId: m.tool_call_id, text, images });
    } else if (m.role === 'user') {
      const prev = messages.at(-1);
      if (images && prev?.role === 'tool' && (!text.trim() || /attached media from|image content from tool result/i.test(text))) prev.images += images;
      else messages.push({ role: 'user', text, images });
    } else {
      messages.push({ role: 'system', text });
    }
  }
  return linkToolResults({ tools, messages });
}

const USAGE = { prompt_tokens: 100, completion_tokens: 20, total_tokens: 120 };

/** The assistant message of an action, in Chat Completions shape. */
function assistantMessage(action) {
  if (action.kind === 'tool') {
    return {
      role: 'assistant',
      content: null,
      tool_calls: [{ id: id('call_'), type: 'function', function: { name: action.name, arguments: JSON.stringify(action.args ?? {}) } }],
    };
  }
  return { role: 'assistant', content: action.text ?? '' };
}

/** The whole (non-streamed) response body. */
export function completion(action, model) {
  const message = assistantMessage(action);
  return {
    id: id('chatcmpl-'),
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model: model ?? 'fake-model',
    choices: [{ index: 0, message, logprobs: null, finish_reason: message.tool_calls ? 'tool_calls' : 'stop' }],
    usage: USAGE,
  };
}

/** The streamed response as chunk objects (each one `data:` line, before `[DONE]`). */
export function completionChunks(action, model, includeUsage) {
  const base = { id: id('chatcmpl-'), object: 'chat.completion.chunk', created: Math.floor(Date.now() / 1000), model: model ?? 'fake-model' };
  const chunk = (delta, finish = null) => ({ ...base, choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }] });
  const message = assistantMessage(action);
  const out = [];
  if (message.tool_calls) {
    const call = message.tool_calls[0];
    const args = call.function.arguments;
    out.push(chunk({ role: 'assistant', content: null }));
    out.push(chunk({ tool_calls: [{ index: 0, id: call.id, type: 'function', function: { name: call.function.name, arguments: '' } }] }));
    // The arguments in two pieces, as models stream them.
    const half = Math.ceil(args.length / 2);
    for (const piece of [args.slice(0, half), args.slice(half)]) {
      if (piece) out.push(chunk({ tool_calls: [{ index: 0, function: { arguments: piece } }] }));
    }
    out.push(chunk({}, 'tool_calls'));
  } else {
    out.push(chunk({ role: 'assistant', content: '' }));
    out.push(chunk({ content: message.content }));
    out.push(chunk({}, 'stop'));
  }
  if (includeUsage) out.push({ ...base, choices: [], usage: USAGE });
  return out;
}

/** Does this request belong to the agent's turn, or is it a side request (title, summary)? */
function agentTurn(conv) {
  return conv.tools.length > 0;
}

export async function handle({ res, body, brain, req }) {
  if (req.method === 'GET') {
    return sendJson(res, { object: 'list', data: [{ id: 'fake-model', object: 'model', created: 0, owned_by: 'holdline-tests' }] });
  }
  const conv = toConversation(body ?? {});
  // A test may hold the model's answer (`brain.hold(conv)`), e.g. to act while no call runs.
  if (brain.hold) await brain.hold(conv);
  const action = agentTurn(conv) ? brain.decide(conv, { api: name }) : brain.side(conv, { api: name });
  if (!body?.stream) return sendJson(res, completion(action, body?.model));
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
  for (const c of completionChunks(action, body.model, body.stream_options?.include_usage === true)) {
    res.write(`data: ${JSON.stringify(c)}\n\n`);
  }
  res.end('data: [DONE]\n\n');
}
