// textpreview.js — a text-like attachment (log, txt, json, md, diff, source) shown inline
// under its download link: its first 64 KiB, fetched from the hub's person route with the
// page's own cookie, cut on a line's end where it can be and said when cut.
// Invariant: the bytes become text only (`textContent` of a <pre>), never HTML; a file the
// hub released is never fetched (attachments.js lists it apart), and a file's preview is
// fetched once per page however often its message is drawn again.

import { h } from './ui.js';
import { t, bytes } from './i18n.js';

/** The most of a file a preview shows. */
export const PREVIEW_BYTES = 64 * 1024;
/** Types whose bytes are text whatever `text/` says. */
const TEXT_TYPES = /^(text\/|application\/(json|x-ndjson|xml|javascript|x-sh|x-diff|x-patch|toml|yaml|x-yaml))/;
/** Names whose bytes are text whatever the type says (an agent often sends octet-stream). */
const TEXT_NAMES = /\.(log|txt|json|jsonl|ndjson|md|markdown|diff|patch|rs|js|mjs|cjs|ts|tsx|jsx|py|go|java|kt|c|h|cc|cpp|hpp|cs|rb|php|swift|sh|bash|zsh|toml|ya?ml|ini|cfg|conf|csv|tsv|xml|html?|css|sql|proto|gradle)$/i;
/** Previews fetched in this page, by url (each at most PREVIEW_BYTES of text). */
const fetched = new Map();
/** A page keeps this many previews; the oldest goes first. */
const KEPT = 40;

/** Whether `a` (an attachment: name, mimeType) is text a preview can show. */
export function isTextLike(a) {
  return TEXT_TYPES.test(String(a.mimeType || '')) || TEXT_NAMES.test(String(a.name || ''));
}

/** The preview of attachment `a` (its `url` already checked as the hub's route): a <pre> filled when the bytes come. */
export function textPreview(a) {
  const pre = h('pre', {
    class: 'attachment-preview', testid: 'attachment-preview', tabindex: '0',
    dataset: { name: a.name }, 'aria-label': t('attachmentPreviewOf', { name: a.name }),
  });
  const box = h('div', { class: 'attachment-preview-box' }, pre);
  firstBytes(a.url).then(({ text, cut }) => {
    pre.textContent = text;
    if (cut) {
      box.append(h('p', { class: 'muted small', testid: 'attachment-preview-cut' },
        t('attachmentPreviewCut', { shown: bytes(PREVIEW_BYTES), size: bytes(Number(a.size) || 0) })));
    }
  }, () => { pre.replaceWith(h('p', { class: 'muted small', testid: 'attachment-preview-failed' }, t('attachmentPreviewFailed'))); });
  return box;
}

/** `{text, cut}`: the first PREVIEW_BYTES of `url`'s bytes as UTF-8 text (fetched once). */
function firstBytes(url) {
  if (!fetched.has(url)) {
    if (fetched.size >= KEPT) fetched.delete(fetched.keys().next().value);
    const load = read(url);
    load.catch(() => fetched.delete(url)); // a failure is tried again on the next draw
    fetched.set(url, load);
  }
  return fetched.get(url);
}

/** Reads `url` up to PREVIEW_BYTES (then stops the download) and decodes what came. */
async function read(url) {
  const res = await fetch(url, { credentials: 'same-origin' });
  if (!res.ok || !res.body) throw new Error(`HTTP ${res.status}`);
  const reader = res.body.getReader();
  const chunks = [];
  let got = 0;
  let cut = false;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    chunks.push(value);
    got += value.length;
    if (got > PREVIEW_BYTES) { cut = true; await reader.cancel(); break; }
  }
  const all = new Uint8Array(Math.min(got, PREVIEW_BYTES));
  let at = 0;
  for (const c of chunks) {
    const part = c.subarray(0, all.length - at);
    all.set(part, at);
    at += part.length;
    if (at >= all.length) break;
  }
  let text = new TextDecoder('utf-8').decode(all);
  // Cut where a line ends (a character split by the cut would show as garbage).
  if (cut && text.lastIndexOf('\n') > 0) text = text.slice(0, text.lastIndexOf('\n') + 1);
  return { text, cut };
}
