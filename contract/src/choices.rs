//! The options an agent offers with its question and the person's pick among them: the
//! shapes both sides carry and the one rule for each (what a question may offer, which
//! picks answer it).
//!
//! Invariant: a pick the hub queues names existing options, in option order, at most one
//! unless the question is multi-select; the tools and the hub check with these same
//! functions, so a question the tools accept the hub accepts too.

use serde::{Deserialize, Serialize};

use crate::visible::{self, HiddenCharacter};

/// Most options one question may offer.
pub const MAX_OPTIONS: usize = 10;
/// Longest option label, in characters.
pub const MAX_LABEL_CHARS: usize = 100;
/// Longest option description, in characters.
pub const MAX_DESCRIPTION_CHARS: usize = 500;

// With the feature `schema`, this type's docs are what `wait_for_user_input`'s schema
// shows the model: they are written for it.
/// One answer the person can pick with one tap.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema), schemars(inline))]
pub struct ChoiceOption {
    /// The answer as the person sees it on its button, at most 100 characters.
    pub label: String,
    /// One line more about this answer, if it helps the person choose.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// An option the person picked: its index (from 0) and its label.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Choice {
    pub index: u32,
    pub label: String,
}

/// Why offered options are refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BadOptions {
    #[error("options may offer at most {MAX_OPTIONS} items, not {0}")]
    TooMany(usize),
    #[error("option {0} has an empty label")]
    EmptyLabel(usize),
    #[error("option {index}'s label is {chars} characters; at most {MAX_LABEL_CHARS}")]
    LongLabel { index: usize, chars: usize },
    #[error("option {index}'s description is {chars} characters; at most {MAX_DESCRIPTION_CHARS}")]
    LongDescription { index: usize, chars: usize },
    #[error("option {index}'s label {hidden}: write it in plain characters")]
    HiddenInLabel {
        index: usize,
        hidden: HiddenCharacter,
    },
    #[error("option {index}'s description {hidden}: write it in plain characters")]
    HiddenInDescription {
        index: usize,
        hidden: HiddenCharacter,
    },
    #[error("options {0} and {1} have the same label")]
    SameLabel(usize, usize),
    #[error("multiSelect needs options")]
    MultiWithoutOptions,
}

/// The one rule for what a question may offer: up to [`MAX_OPTIONS`] options with distinct,
/// non-empty labels of at most [`MAX_LABEL_CHARS`] characters, labels and descriptions
/// holding no invisible or direction-changing character ([`visible::check`]: two buttons
/// that read alike are alike). No options is a plain question (then `multi_select` must be
/// false).
pub fn check_options(options: &[ChoiceOption], multi_select: bool) -> Result<(), BadOptions> {
    if options.is_empty() {
        return if multi_select {
            Err(BadOptions::MultiWithoutOptions)
        } else {
            Ok(())
        };
    }
    if options.len() > MAX_OPTIONS {
        return Err(BadOptions::TooMany(options.len()));
    }
    for (index, option) in options.iter().enumerate() {
        let label = option.label.trim();
        if label.is_empty() {
            return Err(BadOptions::EmptyLabel(index));
        }
        let chars = option.label.chars().count();
        if chars > MAX_LABEL_CHARS {
            return Err(BadOptions::LongLabel { index, chars });
        }
        if let Some(chars) = option.description.as_deref().map(|d| d.chars().count())
            && chars > MAX_DESCRIPTION_CHARS
        {
            return Err(BadOptions::LongDescription { index, chars });
        }
        visible::check(&option.label)
            .map_err(|hidden| BadOptions::HiddenInLabel { index, hidden })?;
        if let Some(description) = &option.description {
            visible::check(description)
                .map_err(|hidden| BadOptions::HiddenInDescription { index, hidden })?;
        }
        if let Some(first) = options[..index]
            .iter()
            .position(|o| o.label.trim() == label)
        {
            return Err(BadOptions::SameLabel(first, index));
        }
    }
    Ok(())
}

/// Why a pick does not answer the question.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BadPick {
    #[error("the question being answered offers no options to choose from")]
    NoOptions,
    #[error("choice {index} is not an option: the question offers {count} (0 to {})", count - 1)]
    OutOfRange { index: u32, count: usize },
    #[error("the question takes one choice, not {0}")]
    OnlyOne(usize),
    #[error("choice {0} is given twice")]
    Repeated(u32),
}

/// The picks `indexes` among `options` as the agent receives them, in option order; an
/// empty pick is no pick (a plain reply).
pub fn pick(
    options: &[ChoiceOption],
    multi_select: bool,
    indexes: &[u32],
) -> Result<Vec<Choice>, BadPick> {
    if indexes.is_empty() {
        return Ok(Vec::new());
    }
    if options.is_empty() {
        return Err(BadPick::NoOptions);
    }
    if !multi_select && indexes.len() > 1 {
        return Err(BadPick::OnlyOne(indexes.len()));
    }
    let mut sorted = indexes.to_vec();
    sorted.sort_unstable();
    if let Some(w) = sorted.windows(2).find(|w| w[0] == w[1]) {
        return Err(BadPick::Repeated(w[0]));
    }
    sorted
        .into_iter()
        .map(|index| match options.get(index as usize) {
            Some(option) => Ok(Choice {
                index,
                label: option.label.clone(),
            }),
            None => Err(BadPick::OutOfRange {
                index,
                count: options.len(),
            }),
        })
        .collect()
}

/// The pick in words for the agent: `The person chose: "Postgres".` (several joined).
pub fn chosen_sentence(choices: &[Choice]) -> Option<String> {
    if choices.is_empty() {
        return None;
    }
    let labels: Vec<String> = choices.iter().map(|c| format!("\"{}\"", c.label)).collect();
    Some(format!("The person chose: {}.", labels.join(", ")))
}

/// The options as numbered lines (`1. Postgres — the server`), as messengers show them.
pub fn numbered(options: &[ChoiceOption]) -> String {
    options
        .iter()
        .enumerate()
        .map(|(i, o)| match &o.description {
            Some(d) if !d.trim().is_empty() => format!("{}. {} — {}", i + 1, o.label, d.trim()),
            _ => format!("{}. {}", i + 1, o.label),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(labels: &[&str]) -> Vec<ChoiceOption> {
        labels
            .iter()
            .map(|l| ChoiceOption {
                label: (*l).into(),
                description: None,
            })
            .collect()
    }

    #[test]
    fn a_question_offers_one_to_ten_distinct_short_labels() {
        assert_eq!(
            check_options(&options(&["Postgres", "SQLite"]), false),
            Ok(())
        );
        assert_eq!(check_options(&[], false), Ok(()));
        assert_eq!(
            check_options(&[], true),
            Err(BadOptions::MultiWithoutOptions)
        );
        let eleven: Vec<String> = (0..11).map(|i| format!("o{i}")).collect();
        let eleven: Vec<&str> = eleven.iter().map(String::as_str).collect();
        assert_eq!(
            check_options(&options(&eleven), false),
            Err(BadOptions::TooMany(11))
        );
        assert_eq!(
            check_options(&options(&["a", " "]), false),
            Err(BadOptions::EmptyLabel(1))
        );
        let long = "é".repeat(101);
        assert_eq!(
            check_options(&options(&[&long]), false),
            Err(BadOptions::LongLabel {
                index: 0,
                chars: 101
            })
        );
        assert!(check_options(&options(&[&"é".repeat(100)]), false).is_ok());
        assert_eq!(
            check_options(&options(&["a", "b", "a "]), false),
            Err(BadOptions::SameLabel(0, 2))
        );
    }

    #[test]
    fn two_buttons_that_read_alike_or_a_reordered_description_are_refused() {
        let e = check_options(&options(&["Yes", "Ye\u{200B}s"]), false).unwrap_err();
        assert_eq!(
            e.to_string(),
            "option 1's label holds the invisible or direction-changing character U+200B at character 2: write it in plain characters"
        );
        let described = [ChoiceOption {
            label: "Ship".into(),
            description: Some("deploys \u{202E}tsal".into()),
        }];
        assert!(matches!(
            check_options(&described, false),
            Err(BadOptions::HiddenInDescription { index: 0, .. })
        ));
        assert_eq!(
            check_options(&options(&["Да", "是的", "👍"]), false),
            Ok(())
        );
    }

    #[test]
    fn a_pick_names_existing_options_in_option_order() {
        let o = options(&["Postgres", "SQLite", "MySQL"]);
        assert_eq!(pick(&o, false, &[]), Ok(vec![]));
        assert_eq!(
            pick(&o, false, &[1]),
            Ok(vec![Choice {
                index: 1,
                label: "SQLite".into()
            }])
        );
        let both = pick(&o, true, &[2, 0]).unwrap();
        assert_eq!(both.iter().map(|c| c.index).collect::<Vec<_>>(), vec![0, 2]);
        assert_eq!(pick(&o, false, &[0, 2]), Err(BadPick::OnlyOne(2)));
        assert_eq!(pick(&o, true, &[1, 1]), Err(BadPick::Repeated(1)));
        assert_eq!(
            pick(&o, false, &[3]),
            Err(BadPick::OutOfRange { index: 3, count: 3 })
        );
        assert_eq!(pick(&[], false, &[0]), Err(BadPick::NoOptions));
    }

    #[test]
    fn the_pick_reads_as_a_sentence_and_options_as_numbered_lines() {
        let o = options(&["Postgres", "SQLite"]);
        let p = pick(&o, true, &[0, 1]).unwrap();
        assert_eq!(
            chosen_sentence(&p).unwrap(),
            "The person chose: \"Postgres\", \"SQLite\"."
        );
        assert_eq!(chosen_sentence(&[]), None);
        let mut o = o;
        o[1].description = Some("one file".into());
        assert_eq!(numbered(&o), "1. Postgres\n2. SQLite — one file");
    }
}
