// markdown.js — turns message text into safe DOM (and previews into plain text): Markdown via the vendored
// `marked`, raw HTML shown as text, links limited to http(s)/mailto, the
// result sanitised by the vendored DOMPurify; huge messages are cut for speed.

import { Marked } from './vendor/marked.js';
import DOMPurify from './vendor/purify.js';

/** Messages longer than this render their first part only, until asked. */
export const RENDER_LIMIT = 50_000;

const SAFE_HREF = /^(?:https?:|mailto:)/i;

function escapeHtml(s) {
  return String(s)
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#39;');
}

const KEYWORDS = new Set((
  'as async await break case catch class const continue crate def default defer do elif else enum export extends ' +
  'false fn for from func function go if impl import in interface let loop match mod mut new nil None null ' +
  'package pub return self Self static struct super switch this throw trait true try type typeof use var where while yield'
).split(' '));

/** A tiny highlighter: strings, comments, numbers and common keywords. Input is raw code; output is escaped HTML. */
export function highlight(code) {
  const re = /(\/\/[^\n]*|#[^\n]*|\/\*[\s\S]*?\*\/)|("(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'|`(?:[^`\\]|\\.)*`)|(\b\d[\d_.]*\b)|([A-Za-z_]\w*)/g;
  let out = '';
  let last = 0;
  for (let m; (m = re.exec(code));) {
    out += escapeHtml(code.slice(last, m.index));
    last = re.lastIndex;
    const [tok, comment, str, num, word] = m;
    if (comment) out += `<span class="hl-c">${escapeHtml(tok)}</span>`;
    else if (str) out += `<span class="hl-s">${escapeHtml(tok)}</span>`;
    else if (num) out += `<span class="hl-n">${escapeHtml(tok)}</span>`;
    else if (word && KEYWORDS.has(word)) out += `<span class="hl-k">${escapeHtml(tok)}</span>`;
    else out += escapeHtml(tok);
  }
  return out + escapeHtml(code.slice(last));
}

/** A unified diff, each line coloured by its first character: + added, - removed, @@ hunk. Output is escaped HTML. */
export function diffHtml(code) {
  return code.split('\n').map((line) => {
    const kind = /^(\+\+\+|---)\s/.test(line) ? 'diff-file'
      : line.startsWith('+') ? 'diff-add'
        : line.startsWith('-') ? 'diff-del'
          : line.startsWith('@@') ? 'diff-hunk' : null;
    return kind ? `<span class="${kind}">${escapeHtml(line)}</span>` : escapeHtml(line);
  }).join('\n');
}

const marked = new Marked({
  gfm: true,
  breaks: true,
  renderer: {
    // Raw HTML in a message is shown as the text the agent wrote, never parsed.
    html({ text }) { return escapeHtml(text); },
    code({ text, lang }) {
      const name = lang ? String(lang).split(/\s/)[0] : '';
      const cls = name ? ` class="lang-${escapeHtml(name)}"` : '';
      const body = /^(diff|patch)$/i.test(name) ? diffHtml(text)
        : text.length <= 20_000 ? highlight(text) : escapeHtml(text);
      return `<pre><code${cls}>${body}</code></pre>\n`;
    },
    link({ href, title, tokens }) {
      const inner = this.parser.parseInline(tokens);
      if (!SAFE_HREF.test(String(href).trim())) return `<span class="bad-link">${inner}</span>`;
      const t = title ? ` title="${escapeHtml(title)}"` : '';
      return `<a href="${escapeHtml(href)}"${t} target="_blank" rel="noopener noreferrer nofollow">${inner}</a>`;
    },
    // Images from message text would load from anywhere; show them as links instead.
    image({ href, text }) {
      if (!SAFE_HREF.test(String(href).trim())) return escapeHtml(text || '');
      return `<a href="${escapeHtml(href)}" target="_blank" rel="noopener noreferrer nofollow">🖼 ${escapeHtml(text || href)}</a>`;
    },
  },
});

const PURIFY = {
  ALLOWED_TAGS: ['a', 'b', 'blockquote', 'br', 'code', 'del', 'em', 'h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'hr', 'i',
    'input', 'li', 'ol', 'p', 'pre', 'span', 'strong', 'table', 'tbody', 'td', 'th', 'thead', 'tr', 'ul'],
  ALLOWED_ATTR: ['href', 'title', 'class', 'target', 'rel', 'align', 'type', 'checked', 'disabled', 'start'],
  ALLOWED_URI_REGEXP: SAFE_HREF,
};

DOMPurify.addHook('afterSanitizeAttributes', (node) => {
  if (node.tagName === 'A') {
    node.setAttribute('target', '_blank');
    node.setAttribute('rel', 'noopener noreferrer nofollow');
  }
  if (node.tagName === 'INPUT') node.setAttribute('disabled', '');
});

/** Safe HTML for Markdown `text`. */
export function renderHtml(text) {
  let html;
  try {
    html = marked.parse(String(text));
  } catch {
    html = `<p>${escapeHtml(text)}</p>`;
  }
  return DOMPurify.sanitize(html, PURIFY);
}

/**
 * Fills `el` with `text` rendered. Over RENDER_LIMIT only the start is
 * rendered, and `onTruncated(shownChars)` lets the caller offer "show all".
 */
export function renderInto(el, text, { full = false, onTruncated } = {}) {
  text = String(text ?? '');
  if (!full && text.length > RENDER_LIMIT) {
    el.innerHTML = renderHtml(text.slice(0, RENDER_LIMIT));
    if (onTruncated) onTruncated(RENDER_LIMIT);
    return;
  }
  if (text.length > RENDER_LIMIT) {
    // The whole of a huge message is shown as plain text: fast and exact.
    const pre = document.createElement('pre');
    pre.className = 'plain';
    pre.textContent = text;
    el.replaceChildren(pre);
    return;
  }
  el.innerHTML = renderHtml(text);
}

/**
 * `text` without its Markdown marks, on one line: for list previews, where
 * the hub has already joined the lines (so fences and headings sit mid-line).
 */
export function plainText(text) {
  return String(text ?? '')
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/```[\w+#.-]*/g, ' ')
    .replace(/`/g, '')
    .replace(/(^|\s)(?:#{1,6}|>+|[-*+]|\d+[.)])(?=\s)/g, '$1')
    .replace(/\*\*|__|~~/g, '')
    .replace(/(^|[\s(])\*(?=\S)|(?<=\S)\*(?=[\s).,:;!?]|$)/g, '$1')
    .replace(/\s+/g, ' ')
    .trim();
}
