// quickreplies.js — which shared quick replies a conversation gets: those in
// the conversation's own language (read from what the agent writes, so a
// Chinese conversation gets the zh templates in an English panel). A
// session's own quick replies are the hub's (`quickReplies` of the session),
// shown before these. Invariant: the language is read from the agent's words,
// never from code blocks.

/** The newest agent messages that decide a conversation's language… */
const SAMPLE = 5;
/** …each read this far (a 1 MB report says no more about its language than its start). */
const SAMPLE_CHARS = 4000;

/**
 * The language the agent writes in, from its newest messages: 'zh' when Han
 * characters outweigh Latin letters (one Han character says about as much as
 * a short word), 'en' when there are letters, null when it has said nothing.
 */
export function conversationLanguage(messages) {
  const said = (messages || []).filter((m) => m.role === 'assistant').slice(-SAMPLE).map((m) => String(m.content || '').slice(0, SAMPLE_CHARS)).join('\n')
    // Code says nothing of the person's language.
    .replace(/```[\s\S]*?```/g, ' ').replace(/`[^`\n]*`/g, ' ');
  const han = (said.match(/\p{Script=Han}/gu) || []).length;
  const words = (said.match(/[A-Za-z]+/g) || []).length;
  if (!han && !words) return null;
  return han >= words ? 'zh' : 'en';
}

/** The shared templates a conversation in `language` shows: those tagged with it and those with none. */
export function templatesFor(templates, language) {
  return templates.filter((tpl) => !tpl.lang || tpl.lang === language);
}
