// attachments.js — draws the files an agent showed beside its question: safe raster images
// inline (a button each, opening the image viewer), every other file a download link with
// its name and size. Bytes come from the hub's person route (`url`, same-origin cookie);
// text-like files previewed under their link as text (textpreview.js); nothing is ever
// rendered as markup from a file's content.
// A file whose bytes the hub released (`removed`) is named, marked removed, never fetched.

import { h } from './ui.js';
import { t, bytes } from './i18n.js';
import { isTextLike, textPreview } from './textpreview.js';

/** The image types the hub serves inline; anything else is only offered to download. */
const INLINE = new Set(['image/png', 'image/jpeg', 'image/gif', 'image/webp']);

/** Only the hub's own attachment route, so a message can never point the page elsewhere. */
function safeUrl(a) {
  const url = String(a.url || '');
  return /^\/api\/sessions\/ct_[0-9a-f]{32}\/attachments\/at_[0-9a-f]{32}$/.test(url) ? url : null;
}

/**
 * A message's attachments as one element (or null when it has none); `openImage(src, alt)`
 * shows an image full size.
 */
export function attachmentList(attachments, openImage) {
  const files = (attachments || []).map((a) => ({ ...a, url: safeUrl(a) })).filter((a) => a.url);
  if (!files.length) return null;
  const kept = files.filter((a) => !a.removed);
  const removed = files.filter((a) => a.removed);
  const images = kept.filter((a) => INLINE.has(a.mimeType));
  const others = kept.filter((a) => !INLINE.has(a.mimeType));
  return h('div', { class: 'attachments', testid: 'attachments', role: 'group', 'aria-label': t('attachments') },
    images.length ? h('div', { class: 'images' }, images.map((a) => h('button', {
      type: 'button', class: 'attachment-image', testid: 'attachment-image',
      title: t('attachmentOpen', { name: a.name }), 'aria-label': t('attachmentOpen', { name: a.name }),
      onclick: () => openImage(a.url, a.name),
    }, h('img', { src: a.url, alt: a.name, loading: 'lazy' })))) : null,
    others.length ? h('ul', { class: 'attachment-files' }, others.map((a) => h('li', {},
      // Named by what it shows (name, size), then what it does: voice control finds it by its words.
      h('a', {
        href: a.url, download: a.name, testid: 'attachment-file',
        title: t('attachmentDownload', { name: a.name, size: bytes(Number(a.size) || 0) }),
      }, h('span', { class: 'attachment-name' }, a.name), ' ', h('span', { class: 'muted' }, bytes(Number(a.size) || 0)),
      h('span', { class: 'sr-only' }, t('attachmentDownloadTail'))),
      isTextLike(a) ? textPreview(a) : null))) : null,
    removed.length ? h('ul', { class: 'attachment-files' }, removed.map((a) => h('li', {
      testid: 'attachment-removed', title: t('attachmentRemovedWhy'),
    }, h('s', { class: 'attachment-name' }, a.name), ' ', h('span', { class: 'muted' }, t('attachmentRemoved'))))) : null,
  );
}
