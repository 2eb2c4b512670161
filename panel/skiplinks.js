// skiplinks.js — the keyboard's short ways: links first in the page (to the session list,
// the conversation, the reply box) and one after the reply box back to the list, each shown
// only while focused. Invariant: a skip link always moves the focus onto something that takes
// input (the selected card, else the first, else the search), never onto a hidden element.

/** Where each link's `href` sends the focus. */
const TARGETS = {
  '#session-list': () => document.querySelector('#session-list .session.selected button')
    || document.querySelector('#session-list .session button') || document.querySelector('#search'),
  '#messages': () => document.querySelector('#messages'),
  '#reply-input': () => document.querySelector('#reply-input'),
};

/** Wires every `a.skip` in the page. */
export function initSkipLinks() {
  for (const link of document.querySelectorAll('a.skip')) {
    link.addEventListener('click', (e) => {
      const target = TARGETS[link.getAttribute('href')]?.();
      if (!target) return;
      // The page's own move: the address keeps no #fragment and nothing scrolls by anchor.
      e.preventDefault();
      target.focus();
    });
  }
}
