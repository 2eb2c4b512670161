// codeblock.js — the code blocks of a rendered message: each one a named,
// keyboard-focusable region (it may scroll sideways) with a Copy button and a
// Wrap toggle for long lines; tables (which scroll sideways too) take focus. Invariant: the code shown is untouched — the
// buttons sit beside the <pre>, and Copy copies the block's own text.

import { h } from './ui.js';
import { t } from './i18n.js';
import { copyText } from './export.js';

/** Gives every `<pre>` under `content` its name, focus, and Copy / Wrap buttons; every table focus. */
export function enhanceCodeBlocks(content) {
  for (const table of content.querySelectorAll('table')) table.tabIndex = 0;
  for (const pre of content.querySelectorAll('pre')) {
    if (pre.parentElement?.classList.contains('codeblock')) continue;
    const lang = codeLanguage(pre);
    pre.tabIndex = 0;
    pre.setAttribute('role', 'group');
    pre.setAttribute('aria-label', lang ? t('codeLabelLang', { lang }) : t('codeLabel'));
    const wrap = h('button', {
      type: 'button', class: 'code-button', testid: 'code-wrap', 'aria-pressed': 'false',
      onclick: () => {
        const on = pre.classList.toggle('wrapped');
        wrap.setAttribute('aria-pressed', String(on));
      },
    }, t('wrapCode'));
    const copy = h('button', {
      type: 'button', class: 'code-button', testid: 'code-copy',
      onclick: () => copyText(pre.textContent),
    }, t('copyCode'));
    const box = h('div', { class: 'codeblock', testid: 'codeblock' });
    pre.replaceWith(box);
    box.append(h('div', { class: 'code-tools' }, lang ? h('span', { class: 'code-lang muted' }, lang) : null, wrap, copy), pre);
  }
}

/** The language a fenced block named (`lang-rust` on its <code>), or ''. */
function codeLanguage(pre) {
  const cls = pre.querySelector('code')?.className || '';
  const m = cls.match(/(?:^|\s)lang-(\S+)/);
  return m ? m[1] : '';
}
