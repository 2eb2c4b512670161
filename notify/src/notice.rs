//! What a notification says: a waiting session's title, how long it has
//! waited, the agent's message made plain, the options it offers as numbered
//! lines, its progress and a panel link; and the line that closes it when the
//! wait ends.
//!
//! Invariant: never the secret, a key or a login link; with
//! `include_text = false`, never a word the agent wrote (no options either).

use std::time::Duration;

use holdline_contract::choices::{self, ChoiceOption};

use holdline_core::config::Template;
use holdline_store::session::{QuestionOrigin, Token, WaitEnd};

/// The longest message text a notification carries (characters).
pub const MAX_TEXT: usize = 1000;
/// The longest option description a notification carries (characters): ten
/// options with their labels still fit one Telegram message (4,096).
pub const MAX_OPTION_DESCRIPTION: usize = 120;

/// One waiting session to tell the person about.
#[derive(Debug, Clone, PartialEq)]
pub struct Notice {
    pub token: Token,
    /// The wait's `requestId`: one notice per agent question.
    pub request_id: String,
    /// The `seq` of the agent's message it tells of: an answer to the notice
    /// answers that question, and no newer one.
    pub question: Option<u64>,
    pub title: String,
    pub waited: Duration,
    /// The agent's message, plain and trimmed; `None` with `include_text = false`.
    pub text: Option<String>,
    /// The answers the question offers (descriptions cut at
    /// [`MAX_OPTION_DESCRIPTION`]); empty with `include_text = false`.
    pub options: Vec<ChoiceOption>,
    /// Whether several options may be picked.
    pub multi_select: bool,
    pub completion_pct: Option<u8>,
    pub next_step: Option<String>,
    pub link: String,
    /// The quick replies (Telegram's buttons) as they were when the notice
    /// was made: a button sends the text shown with it, whatever the
    /// templates say later.
    pub quick_replies: Vec<Template>,
    /// A `notify test` notice, not a real wait.
    pub test: bool,
    /// The files the question shows, with their bytes; empty with `include_text = false`
    /// (they are the agent's content, as its words are).
    pub files: Vec<NoticeFile>,
    /// Where the question came from: said in a line of its own unless the agent asked
    /// (not the agent's words, so shown with `include_text = false` too).
    pub origin: QuestionOrigin,
}

/// The line that says where a question came from, when a hook asked it.
pub fn origin_line(origin: QuestionOrigin) -> Option<&'static str> {
    match origin {
        QuestionOrigin::Asked => None,
        QuestionOrigin::Stopped => Some("The agent stopped (its turn ended)."),
        QuestionOrigin::Permission => Some("The agent asks permission:"),
    }
}

/// One file of a question, as the channels send it (Telegram) or name it (the JSON webhook).
#[derive(Clone, PartialEq)]
pub struct NoticeFile {
    pub name: String,
    pub mime_type: String,
    pub bytes: bytes::Bytes,
}

impl NoticeFile {
    /// Whether it goes as a photo: a raster image type the hub serves inline.
    pub fn is_image(&self) -> bool {
        holdline_store::session::IMAGE_TYPES.contains(&self.mime_type.as_str())
    }
}

impl std::fmt::Debug for NoticeFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NoticeFile")
            .field("name", &self.name)
            .field("mime_type", &self.mime_type)
            .field("size", &self.bytes.len())
            .finish()
    }
}

/// How a notified wait ended, for the edit or follow-up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Answered,
    AgentStopped,
    AgentGone,
    AskedAgain,
    Closed,
}

impl Outcome {
    pub fn of(end: Option<WaitEnd>) -> Outcome {
        match end {
            None | Some(WaitEnd::Finished) => Outcome::Answered,
            Some(WaitEnd::Cancelled) => Outcome::AgentStopped,
            Some(
                WaitEnd::Expired | WaitEnd::KeyRevoked | WaitEnd::HandedOver | WaitEnd::Unknown,
            ) => Outcome::AgentGone,
            Some(WaitEnd::Superseded) => Outcome::AskedAgain,
            Some(WaitEnd::Merged | WaitEnd::Archived) => Outcome::Closed,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Answered => "answered",
            Outcome::AgentStopped => "cancelled",
            Outcome::AgentGone => "expired",
            Outcome::AskedAgain => "superseded",
            Outcome::Closed => "closed",
        }
    }

    /// The line shown under (or instead of) the question.
    pub fn sentence(self) -> &'static str {
        match self {
            Outcome::Answered => "✓ Answered.",
            Outcome::AgentStopped => "The agent stopped waiting.",
            Outcome::AgentGone => "The agent is gone; a reply now waits for its next call.",
            Outcome::AskedAgain => "The agent asked something newer.",
            Outcome::Closed => "The session was closed.",
        }
    }
}

impl Notice {
    /// The headline: `⏳ holdline · <title> is waiting (5 min)` (the word
    /// `holdline` is what keyword-guarded group bots check for).
    pub fn headline(&self) -> String {
        if self.test {
            return "holdline: test notification".into();
        }
        format!(
            "⏳ holdline · {} is waiting ({})",
            self.title,
            human(self.waited)
        )
    }

    /// Everything below the headline, as plain text.
    pub fn body(&self) -> String {
        let mut out = String::new();
        if self.test {
            out.push_str("If you read this, this channel works.\n");
        }
        if let Some(line) = origin_line(self.origin) {
            out.push_str(line);
            out.push('\n');
        }
        if let Some(t) = &self.text {
            out.push_str(t);
            out.push('\n');
        }
        out.push_str(&numbered_options(&self.options, self.multi_select));
        match (self.completion_pct, &self.next_step) {
            (Some(p), Some(n)) => out.push_str(&format!("\n{p}% done · next: {n}\n")),
            (Some(p), None) => out.push_str(&format!("\n{p}% done\n")),
            (None, Some(n)) => out.push_str(&format!("\nNext: {n}\n")),
            (None, None) => {}
        }
        out.push_str(&format!("\nOpen: {}", self.link));
        out.trim_start().to_owned()
    }

    /// Headline and body in one text.
    pub fn full(&self) -> String {
        format!("{}\n\n{}", self.headline(), self.body())
    }

    /// The follow-up sent when the wait ends on channels that cannot edit.
    pub fn follow_up(&self, outcome: Outcome) -> String {
        format!("holdline · {} — {}", self.title, outcome.sentence())
    }
}

/// A question's options as a notification carries them: descriptions made
/// plain and cut at [`MAX_OPTION_DESCRIPTION`] characters.
/// A question's options as the numbered lines every channel's text shows
/// (with a blank line before them); none: nothing.
pub fn numbered_options(options: &[ChoiceOption], multi_select: bool) -> String {
    if options.is_empty() {
        return String::new();
    }
    let more = if multi_select {
        "(pick one or more)\n"
    } else {
        ""
    };
    format!("\n{}\n{more}", choices::numbered(options))
}

pub fn offered(options: &[ChoiceOption]) -> Vec<ChoiceOption> {
    options
        .iter()
        .map(|o| ChoiceOption {
            label: o.label.clone(),
            description: o
                .description
                .as_deref()
                .map(|d| cut(&plain(d).replace('\n', " "), MAX_OPTION_DESCRIPTION))
                .filter(|d| !d.is_empty()),
        })
        .collect()
}

/// `s` cut at `max` characters, `…` marking the cut.
pub fn cut(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_owned();
    }
    let mut out: String = s.chars().take(max - 1).collect();
    out.push('…');
    out
}

/// `45 s`, `3 min`, `2 h 5 min`.
pub fn human(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        0..60 => format!("{s} s"),
        60..3600 => format!("{} min", s / 60),
        _ => format!("{} h {} min", s / 3600, s % 3600 / 60),
    }
}

/// Markdown made plain for a phone: markers, fences and link syntax
/// dropped, runs of blank lines folded, cut at [`MAX_TEXT`] characters.
pub fn plain(markdown: &str) -> String {
    let mut lines = Vec::new();
    for line in markdown.lines() {
        let t = line.trim_end();
        if t.trim_start().starts_with("```") {
            continue;
        }
        let t = t.trim_start_matches('#').trim_start_matches("> ");
        let t = if t.len() != line.trim_end().len() {
            t.trim_start()
        } else {
            t
        };
        lines.push(inline_plain(t));
    }
    let mut out = String::new();
    let mut blank = false;
    for l in lines {
        if l.trim().is_empty() {
            blank = !out.is_empty();
            continue;
        }
        if blank {
            out.push('\n');
            blank = false;
        }
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(&l);
    }
    if out.chars().count() > MAX_TEXT {
        out = out.chars().take(MAX_TEXT).collect::<String>();
        out.push('…');
    }
    out
}

/// `**b**`, `__b__`, `` `c` `` → their text; `[t](u)` → `t (u)`; images → alt.
fn inline_plain(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let chars: Vec<char> = line.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            '*' | '`' | '~' => {
                i += 1;
                continue;
            }
            '_' if i + 1 < chars.len() && chars[i + 1] == '_' => {
                i += 2;
                continue;
            }
            '!' if chars.get(i + 1) == Some(&'[') => {
                i += 1;
                continue;
            }
            '[' => {
                if let Some(close) = chars[i..].iter().position(|&c| c == ']').map(|p| p + i)
                    && chars.get(close + 1) == Some(&'(')
                    && let Some(end) = chars[close..]
                        .iter()
                        .position(|&c| c == ')')
                        .map(|p| p + close)
                {
                    let text: String = chars[i + 1..close].iter().collect();
                    let url: String = chars[close + 2..end].iter().collect();
                    if text == url || text.is_empty() {
                        out.push_str(&url);
                    } else {
                        out.push_str(&format!("{text} ({url})"));
                    }
                    i = end + 1;
                    continue;
                }
            }
            _ => {}
        }
        out.push(if c.is_control() { ' ' } else { c });
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_becomes_plain() {
        let md = "# Plan\n\nI changed **two** files:\n\n\n```rust\nfn x() {}\n```\n- see [the diff](http://h/d)\n> quoted `code`";
        assert_eq!(
            plain(md),
            "Plan\n\nI changed two files:\n\nfn x() {}\n- see the diff (http://h/d)\nquoted code"
        );
        let long = "x".repeat(5000);
        assert_eq!(plain(&long).chars().count(), MAX_TEXT + 1);
    }

    #[test]
    fn offered_options_read_as_numbered_lines_with_short_descriptions() {
        let options = offered(&[
            ChoiceOption {
                label: "Postgres".into(),
                description: Some(format!("the **server**\nwe run {}", "x".repeat(300))),
            },
            ChoiceOption {
                label: "SQLite".into(),
                description: Some("  ".into()),
            },
        ]);
        let first = options[0].description.as_deref().unwrap();
        assert!(first.starts_with("the server we run x"), "{first}");
        assert_eq!(first.chars().count(), MAX_OPTION_DESCRIPTION);
        assert_eq!(options[1].description, None);
        let n = Notice {
            token: Token::generate(),
            request_id: "r".into(),
            question: Some(0),
            title: "Storage".into(),
            waited: Duration::from_secs(61),
            text: Some("Which database?".into()),
            options,
            multi_select: true,
            completion_pct: None,
            next_step: None,
            link: "http://h/".into(),
            quick_replies: Vec::new(),
            test: false,
            files: Vec::new(),
            origin: Default::default(),
        };
        let body = n.body();
        assert!(
            body.starts_with("Which database?\n\n1. Postgres — the server we run x"),
            "{body}"
        );
        assert!(
            body.contains("…\n2. SQLite\n(pick one or more)\n\nOpen: http://h/"),
            "{body}"
        );
        // A hook's question says where it came from, words shown or not.
        let asked = Notice {
            origin: QuestionOrigin::Permission,
            text: None,
            options: Vec::new(),
            ..n
        };
        assert!(
            asked.body().starts_with("The agent asks permission:\n"),
            "{}",
            asked.body()
        );
    }

    #[test]
    fn durations_read_as_people_say_them() {
        assert_eq!(human(Duration::from_secs(45)), "45 s");
        assert_eq!(human(Duration::from_secs(190)), "3 min");
        assert_eq!(human(Duration::from_secs(7500)), "2 h 5 min");
    }
}
