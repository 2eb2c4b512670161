// seen.js — what the person has seen of each session (its message count
// when they last had it on screen, or when the page first met it), kept in
// localStorage; a session with more messages since is "new since you looked".

const SEEN_KEY = 'holdline.seen';
const SEEN_MAX = 2000;

function loadSeen() {
  try { return new Map(Object.entries(JSON.parse(localStorage.getItem(SEEN_KEY) || '{}'))); } catch { return new Map(); }
}

const seen = loadSeen();
let seenTimer = null;

/** Records that `token` has been seen with `msgCount` messages. */
export function markSeen(token, msgCount) {
  if (!Number.isFinite(msgCount) || seen.get(token) === msgCount) return;
  seen.delete(token);
  seen.set(token, msgCount);
  while (seen.size > SEEN_MAX) seen.delete(seen.keys().next().value);
  clearTimeout(seenTimer);
  seenTimer = setTimeout(() => {
    try { localStorage.setItem(SEEN_KEY, JSON.stringify(Object.fromEntries(seen))); } catch { /* storage full or disabled */ }
  }, 500);
}

/** The message count last seen for `token` (undefined: never met). */
export function seenCount(token) {
  return seen.get(token);
}
