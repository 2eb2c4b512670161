// anthropic.mjs — the fake model's Anthropic Messages API (Claude Code):
// POST /v1/messages (stream or not), POST /v1/messages/count_tokens.

import { linkToolResults } from './brain.mjs';
import { id, sendJson, sendSse } from './sse.mjs';

export const name = 'anthropic';

export function matches(method, url) {
  return method === 'POST' && url.pathname.startsWith('/v1/messages');
}

function blocks(content) {
  return typeof content === 'string' ? [{ type: 'text', text: content }] : (content ?? []);
}

/** The neutral conversation of a Messages request. */
export function toConversation(body) {
  const tools = (body.tools ?? []).map((t) => t.name).filter(Boolean);
  const messages = [];
  for (const m of body.messages ?? []) {
    const bs = blocks(m.content);
    if (m.role === 'assistant') {
      const text = bs.filter((b) => b.type === 'text').map((b) => b.text).join('\n');
      const toolCalls = bs.filter((b) => b.type === 'tool_use').map((b) => ({ id: b.id, name: b.name, args: b.input ?? {} }));
      messages.push({ role: 'assistant', text, toolCalls });
      continue;
    }
    for (const b of bs.filter((x) => x.type === 'tool_result')) {
      const inner = blocks(b.content);
      messages.push({
        role: 'tool',
        toolCallId: b.tool_use_id,
        text: inner.filter((x) => x.type === 'text').map((x) => x.text).join('\n'),
        images: inner.filter((x) => x.type === 'image').length,
        isError: !!b.is_error,
      });
    }
    const text = bs.filter((b) => b.type === 'text').map((b) => b.text).join('\n');
    const images = bs.filter((b) => b.type === 'image').length;
    if (text || images) messages.push({ role: 'user', text, images });
  }
  return linkToolResults({ tools, messages });
}

export async function handle({ res, url, body, brain }) {
  if (url.pathname.endsWith('/count_tokens')) return sendJson(res, { input_tokens: 100 });
  const conv = toConversation(body);
  const action = conv.tools.length ? brain.decide(conv, { api: name }) : brain.side(conv, { api: name });
  const msgId = id('msg_');
  const block = action.kind === 'tool'
    ? { type: 'tool_use', id: id('toolu_'), name: action.name, input: action.args }
    : { type: 'text', text: action.text };
  const stop = action.kind === 'tool' ? 'tool_use' : 'end_turn';
  const usage = { input_tokens: 100, output_tokens: 20, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 };
  if (!body.stream) {
    return sendJson(res, { id: msgId, type: 'message', role: 'assistant', model: body.model, content: [block], stop_reason: stop, stop_sequence: null, usage });
  }
  const start = action.kind === 'tool' ? { ...block, input: {} } : { type: 'text', text: '' };
  const delta = action.kind === 'tool'
    ? { type: 'input_json_delta', partial_json: JSON.stringify(action.args) }
    : { type: 'text_delta', text: action.text };
  sendSse(res, [
    { event: 'message_start', data: { type: 'message_start', message: { id: msgId, type: 'message', role: 'assistant', model: body.model, content: [], stop_reason: null, stop_sequence: null, usage: { ...usage, output_tokens: 1 } } } },
    { event: 'content_block_start', data: { type: 'content_block_start', index: 0, content_block: start } },
    { event: 'content_block_delta', data: { type: 'content_block_delta', index: 0, delta } },
    { event: 'content_block_stop', data: { type: 'content_block_stop', index: 0 } },
    { event: 'message_delta', data: { type: 'message_delta', delta: { stop_reason: stop, stop_sequence: null }, usage: { output_tokens: 20 } } },
    { event: 'message_stop', data: { type: 'message_stop' } },
  ]);
}
