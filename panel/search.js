// search.js — what a search shows beyond the matching sessions: up to three
// matches per session (newest first, with how many more there are), and the
// agents that wait for the person kept in view in a group above the results.
// Invariant: a waiting session never disappears from the list because of a
// search; it is listed once (with the results when it matches, else above them).

import { h, withMarks } from './ui.js';
import { t } from './i18n.js';

/** Snippets shown per session. */
export const SNIPPETS = 3;
/** Matches asked for per session (more are counted as "N+ more"). */
export const HIT_LIMIT = 20;

/**
 * Where `q` matched in one session, from the hub's `hits` (newest first):
 * `{q, seq, snippets: [{seq, text}], more, moreMany}`; `seq` is the newest match.
 */
export function searchHit(q, hits) {
  if (!hits.length) return { q, seq: null, snippets: [], more: 0, moreMany: false };
  return {
    q,
    seq: hits[0].seq,
    snippets: hits.slice(0, SNIPPETS).map((x) => ({ seq: x.seq, text: x.snippet })),
    more: Math.max(0, hits.length - SNIPPETS),
    moreMany: hits.length >= HIT_LIMIT,
  };
}

/**
 * The snippets of a search hit with the words marked, and how many more matched
 * (null when none). A click on a snippet opens the conversation at that match
 * (`onPick(seq)`); the card itself opens at the newest.
 */
export function snippetsView(hit, q, onPick) {
  if (!hit?.snippets?.length) return null;
  const pick = (seq) => (e) => { e.stopPropagation(); onPick(seq); };
  return [
    ...hit.snippets.map((s) => h('div', { class: 'preview snippet small', testid: 'session-snippet', dataset: { seq: String(s.seq) }, onclick: pick(s.seq) }, withMarks(s.text, q))),
    hit.more > 0 ? h('div', { class: 'more-hits muted', testid: 'session-more-hits' }, t(hit.moreMany ? 'moreHitsMany' : 'moreHits', { n: hit.more })) : null,
  ];
}

/**
 * The list while searching: the waiting sessions that do not match (the
 * longest waiting first) under their own heading, then the results under theirs.
 * `waiting` are those sessions; `results` and `item(s)` draw the rest.
 */
export function searchGroups(waiting, results, item) {
  if (!waiting.length) return results.map(item);
  return [
    h('li', { class: 'list-group', testid: 'search-waiting-group' }, t('searchWaiting')),
    ...waiting.map(item),
    h('li', { class: 'list-group', testid: 'search-results-group' }, t('searchResults')),
    ...results.map(item),
  ];
}
