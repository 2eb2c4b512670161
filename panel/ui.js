// ui.js — small DOM helpers shared by the panel: element building, toasts,
// dialogs (confirm and friends), search-hit marks, the light/dark theme switch.

import { t } from './i18n.js';

/** `h('div', {class: 'x', onclick}, child, 'text')` → an element; text is always text, never HTML. */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === 'class') el.className = v;
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else if (k === 'testid') el.dataset.testid = v;
    else if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'text') el.textContent = v;
    else if (v === true) el.setAttribute(k, '');
    else el.setAttribute(k, String(v));
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

export const $ = (sel, root = document) => root.querySelector(sel);

/** Where `q` occurs in `text`, case-insensitively: `[start, end)` pairs. The one rule for search marks. */
export function matchRanges(text, q) {
  const out = [];
  const needle = String(q || '').trim().toLowerCase();
  if (!needle) return out;
  const hay = String(text).toLowerCase();
  // Only where lowercasing kept the length, so positions match the original text.
  if (hay.length !== String(text).length) return out;
  for (let at = hay.indexOf(needle); at >= 0; at = hay.indexOf(needle, at + needle.length)) out.push([at, at + needle.length]);
  return out;
}

/** `text` as text nodes with each match of `q` in a `<mark>`. */
export function withMarks(text, q) {
  const parts = [];
  let last = 0;
  for (const [a, b] of matchRanges(text, q)) {
    if (a > last) parts.push(text.slice(last, a));
    parts.push(h('mark', { class: 'search-hit' }, text.slice(a, b)));
    last = b;
  }
  if (last < text.length) parts.push(text.slice(last));
  return parts;
}

/** Wraps every match of `q` in the text under `root` in a `<mark>`; answers how many. */
export function markMatches(root, q) {
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  const nodes = [];
  for (let n = walker.nextNode(); n; n = walker.nextNode()) nodes.push(n);
  let count = 0;
  for (const node of nodes) {
    if (!matchRanges(node.nodeValue, q).length) continue;
    const parts = withMarks(node.nodeValue, q);
    count += parts.filter((p) => p instanceof Node).length;
    node.replaceWith(...parts);
  }
  return count;
}

/** Removes the marks `markMatches` added under `root`. */
export function clearMarks(root) {
  for (const m of root.querySelectorAll('mark.search-hit')) m.replaceWith(...m.childNodes);
  root.normalize();
}

const ICONS = {
  bell: 'M6 8a6 6 0 0 1 12 0c0 7 3 9 3 9H3s3-2 3-9M10.3 21a1.94 1.94 0 0 0 3.4 0',
  bellOff: 'M8.7 3A6 6 0 0 1 18 8a21.3 21.3 0 0 0 .6 5M17 17H3s3-2 3-9a4.67 4.67 0 0 1 .3-1.7M10.3 21a1.94 1.94 0 0 0 3.4 0M2 2l20 20',
  copy: 'M9 9h11v11H9zM5 15H4V4h11v1',
  key: 'M10.7 12.3L21 2M17 6l3 3M14.5 8.5l2.5 2.5M12 15.5a4.5 4.5 0 1 1-9 0 4.5 4.5 0 0 1 9 0z',
  image: 'M21 15l-5-5L5 21M3 5a2 2 0 0 1 2-2h14a2 2 0 0 1 2 2v14a2 2 0 0 1-2 2H5a2 2 0 0 1-2-2zM8.5 10a1.5 1.5 0 1 0 0-3 1.5 1.5 0 0 0 0 3',
};

/** A small stroked SVG icon (no font or file needed). */
export function icon(name) {
  const ns = 'http://www.w3.org/2000/svg';
  const svg = document.createElementNS(ns, 'svg');
  svg.setAttribute('viewBox', '0 0 24 24');
  svg.setAttribute('width', '18');
  svg.setAttribute('height', '18');
  svg.setAttribute('aria-hidden', 'true');
  svg.setAttribute('class', 'svg-icon');
  const path = document.createElementNS(ns, 'path');
  path.setAttribute('d', ICONS[name]);
  svg.append(path);
  return svg;
}

let toastTimer = null;
/** A short message at the bottom of the page; `kind` 'error' stays longer. */
export function toast(message, kind = 'info') {
  const el = $('#toast');
  el.textContent = message;
  el.dataset.kind = kind;
  el.hidden = false;
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => { el.hidden = true; }, kind === 'error' ? 7000 : 3000);
}

/** Opens a `<dialog>` and resolves with its return value ('ok' | 'cancel' | …) when it closes. */
export function runDialog(dialog) {
  return new Promise((resolve) => {
    dialog.returnValue = 'cancel';
    dialog.addEventListener('close', () => resolve(dialog.returnValue || 'cancel'), { once: true });
    dialog.showModal();
  });
}

/** Asks yes/no; resolves true on confirm. */
export async function confirmBox(message, okLabel = t('confirm')) {
  const dialog = $('#confirm-dialog');
  $('#confirm-text').textContent = message;
  $('[data-testid="confirm-ok"]', dialog).textContent = okLabel;
  return (await runDialog(dialog)) === 'ok';
}

const THEME_KEY = 'holdline.theme';

/** The theme in force: the remembered choice, else the system's. */
export function currentTheme() {
  let saved = null;
  try { saved = localStorage.getItem(THEME_KEY); } catch { /* storage disabled */ }
  if (saved === 'light' || saved === 'dark') return saved;
  return matchMedia('(prefers-color-scheme: dark)').matches ? 'dark' : 'light';
}

/** Applies the remembered theme (or none, following the system). */
export function applyTheme() {
  let saved = null;
  try { saved = localStorage.getItem(THEME_KEY); } catch { /* storage disabled */ }
  if (saved === 'light' || saved === 'dark') document.documentElement.dataset.theme = saved;
  else delete document.documentElement.dataset.theme;
}

/** Switches light ⇄ dark and remembers it. */
export function toggleTheme() {
  const next = currentTheme() === 'dark' ? 'light' : 'dark';
  try { localStorage.setItem(THEME_KEY, next); } catch { /* storage disabled */ }
  applyTheme();
  return next;
}
