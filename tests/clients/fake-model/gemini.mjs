// gemini.mjs — the fake model's Gemini API (Gemini CLI): POST …:streamGenerateContent?alt=sse,
// …:generateContent (side requests, structured output), …:countTokens.

import { linkToolResults } from './brain.mjs';
import { sampleFor, sendJson, sendSse } from './sse.mjs';

export const name = 'gemini';

export function matches(method, url) {
  return method === 'POST' && /\/models\/[^/]+:(streamGenerateContent|generateContent|countTokens)$/.test(url.pathname);
}

function responseText(resp) {
  if (resp == null) return '';
  if (typeof resp === 'string') return resp;
  if (typeof resp.output === 'string' && Object.keys(resp).length === 1) return resp.output;
  return JSON.stringify(resp);
}

export function toConversation(body) {
  const tools = [];
  for (const t of body.tools ?? []) for (const f of t.functionDeclarations ?? []) tools.push(f.name);
  const messages = [];
  let n = 0;
  for (const c of body.contents ?? []) {
    const parts = c.parts ?? [];
    if (c.role === 'model') {
      const text = parts.filter((p) => p.text && !p.thought).map((p) => p.text).join('\n');
      const toolCalls = parts.filter((p) => p.functionCall).map((p) => ({ id: p.functionCall.id ?? `g${n++}`, name: p.functionCall.name, args: p.functionCall.args ?? {} }));
      messages.push({ role: 'assistant', text, toolCalls });
      continue;
    }
    const responses = parts.filter((p) => p.functionResponse);
    // Images of a tool result travel as inlineData parts next to its functionResponse
    // (or inside functionResponse.parts).
    const looseImages = parts.filter((p) => p.inlineData && /^image\//.test(p.inlineData.mimeType ?? '')).length;
    responses.forEach((p, i) => {
      const fr = p.functionResponse;
      const prevCalls = messages.filter((m) => m.role === 'assistant').at(-1)?.toolCalls ?? [];
      const call = prevCalls.find((x) => x.id === fr.id) ?? prevCalls.find((x) => x.name === fr.name);
      const inner = (fr.parts ?? []).filter((x) => x.inlineData && /^image\//.test(x.inlineData.mimeType ?? '')).length;
      messages.push({
        role: 'tool',
        toolCallId: call?.id ?? fr.id,
        name: fr.name,
        text: responseText(fr.response),
        images: inner + (i === responses.length - 1 ? looseImages : 0),
        isError: !!fr.response?.error,
      });
    });
    const text = parts.filter((p) => p.text).map((p) => p.text).join('\n');
    if (text && !responses.length) messages.push({ role: 'user', text, images: looseImages });
  }
  return linkToolResults({ tools, messages });
}

export async function handle({ res, url, body, brain }) {
  const method = url.pathname.split(':').at(-1);
  if (method === 'countTokens') return sendJson(res, { totalTokens: 100 });
  const conv = toConversation(body);
  const gen = body.generationConfig ?? {};
  const schema = gen.responseJsonSchema ?? gen.responseSchema;
  let parts;
  if (schema || gen.responseMimeType === 'application/json') {
    brain.side(conv, { api: name });
    parts = [{ text: JSON.stringify(sampleFor(schema)) }];
  } else {
    const action = conv.tools.length ? brain.decide(conv, { api: name }) : brain.side(conv, { api: name });
    parts = action.kind === 'tool' ? [{ functionCall: { name: action.name, args: action.args } }] : [{ text: action.text }];
  }
  const chunk = {
    candidates: [{ content: { role: 'model', parts }, finishReason: 'STOP', index: 0 }],
    usageMetadata: { promptTokenCount: 100, candidatesTokenCount: 20, totalTokenCount: 120 },
    modelVersion: 'gemini-2.5-pro',
  };
  if (method === 'generateContent') return sendJson(res, chunk);
  sendSse(res, [{ data: chunk }]);
}
