// responses.mjs — the fake model's OpenAI Responses API (Codex CLI): POST /v1/responses, SSE.
// Codex groups MCP tools in namespaces (`{type:"namespace", name:"mcp__holdline", tools:[…]}`);
// the brain sees them as `mcp__holdline__<tool>` and a call is rendered back with its namespace.

import { linkToolResults } from './brain.mjs';
import { id, sendJson, sendSse } from './sse.mjs';

export const name = 'responses';

export function matches(method, url) {
  return method === 'POST' && /\/responses$/.test(url.pathname);
}

function toolNames(tools) {
  const out = [];
  for (const t of tools ?? []) {
    if (t.type === 'namespace' && Array.isArray(t.tools)) {
      for (const inner of t.tools) out.push(`${t.name}__${inner.name}`.replace(/____/, '__'));
    } else if (t.name) out.push(t.name);
  }
  return out;
}

function fullName(item) {
  return item.namespace ? `${item.namespace}__${item.name}`.replace(/____/, '__') : item.name;
}

function textOf(content) {
  if (typeof content === 'string') return content;
  return (content ?? []).filter((c) => /text/.test(c.type)).map((c) => c.text).join('\n');
}

function imagesOf(content) {
  if (typeof content === 'string') return 0;
  return (content ?? []).filter((c) => /image/.test(c.type)).length;
}

export function toConversation(body) {
  const messages = [];
  const input = typeof body.input === 'string' ? [{ type: 'message', role: 'user', content: body.input }] : (body.input ?? []);
  for (const item of input) {
    const type = item.type ?? (item.role ? 'message' : undefined);
    if (type === 'message') {
      if (item.role === 'assistant') messages.push({ role: 'assistant', text: textOf(item.content), toolCalls: [] });
      else if (item.role === 'user') messages.push({ role: 'user', text: textOf(item.content), images: imagesOf(item.content) });
    } else if (type === 'function_call') {
      let args = {};
      try { args = JSON.parse(item.arguments || '{}'); } catch { args = { raw: item.arguments }; }
      const prev = messages.at(-1);
      const call = { id: item.call_id, name: fullName(item), args };
      if (prev?.role === 'assistant') prev.toolCalls.push(call);
      else messages.push({ role: 'assistant', text: '', toolCalls: [call] });
    } else if (type === 'function_call_output') {
      const out = item.output;
      const content = typeof out === 'string' ? out : (out?.content ?? out);
      messages.push({
        role: 'tool',
        toolCallId: item.call_id,
        text: typeof content === 'string' ? content : textOf(content),
        images: typeof content === 'string' ? 0 : imagesOf(content),
        isError: out?.success === false,
      });
    }
  }
  return linkToolResults({ tools: toolNames(body.tools), messages });
}

export async function handle({ res, body, brain }) {
  const conv = toConversation(body);
  const action = conv.tools.length ? brain.decide(conv, { api: name }) : brain.side(conv, { api: name });
  const respId = id('resp_');
  let item;
  if (action.kind === 'tool') {
    const m = action.name.match(/^(mcp__[^_].*?)__(.+)$/);
    const namespaced = m && (body.tools ?? []).some((t) => t.type === 'namespace' && t.name === m[1]);
    item = { type: 'function_call', id: id('fc_'), call_id: id('call_'), name: namespaced ? m[2] : action.name, arguments: JSON.stringify(action.args), status: 'completed' };
    if (namespaced) item.namespace = m[1];
  } else {
    item = { type: 'message', id: id('msg_'), role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: action.text, annotations: [] }] };
  }
  const usage = { input_tokens: 100, input_tokens_details: { cached_tokens: 0 }, output_tokens: 20, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 120 };
  const response = { id: respId, object: 'response', created_at: Math.floor(Date.now() / 1000), status: 'completed', model: body.model, output: [item], usage };
  if (body.stream === false) return sendJson(res, response);
  const events = [
    { event: 'response.created', data: { type: 'response.created', response: { ...response, status: 'in_progress', output: [] } } },
    { event: 'response.output_item.added', data: { type: 'response.output_item.added', output_index: 0, item: action.kind === 'tool' ? { ...item, arguments: '' } : { ...item, content: [] } } },
  ];
  if (action.kind === 'tool') {
    events.push({ event: 'response.function_call_arguments.delta', data: { type: 'response.function_call_arguments.delta', item_id: item.id, output_index: 0, delta: item.arguments } });
    events.push({ event: 'response.function_call_arguments.done', data: { type: 'response.function_call_arguments.done', item_id: item.id, output_index: 0, arguments: item.arguments } });
  } else {
    events.push({ event: 'response.output_text.delta', data: { type: 'response.output_text.delta', item_id: item.id, output_index: 0, content_index: 0, delta: action.text } });
  }
  events.push({ event: 'response.output_item.done', data: { type: 'response.output_item.done', output_index: 0, item } });
  events.push({ event: 'response.completed', data: { type: 'response.completed', response } });
  sendSse(res, events);
}
