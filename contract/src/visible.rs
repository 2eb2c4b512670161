//! Text a person reads as a name or a label (a file's name, an option's label, a key's
//! name): the characters that would make it read as something it is not.
//!
//! Invariant: a name or label that holds a bidirectional control (which reorders what
//! follows: `invoice\u{202E}gpj.exe` shows as `invoiceexe.jpg`) or an invisible
//! character (zero-width spaces and joiners, which make two "Yes" buttons that differ)
//! is refused wherever it enters, so the person never reads a name that hides its bytes.

/// Why a name or label was refused: the first character that would not show as itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("holds the invisible or direction-changing character U+{:04X} at character {index}", u32::from(*.ch))]
pub struct HiddenCharacter {
    /// Position, in characters, from 0.
    pub index: usize,
    pub ch: char,
}

/// Whether `c` reorders the text around it or shows as nothing: the Unicode bidi
/// controls (embeddings, overrides, isolates, marks) and the zero-width and other
/// invisible format characters. Variation selectors stay allowed (an emoji's `U+FE0F`
/// shows); the zero-width joiner does not, so an emoji family sequence is refused too.
pub fn is_hidden(c: char) -> bool {
    matches!(
        c,
        '\u{00AD}'                // soft hyphen
            | '\u{034F}'          // combining grapheme joiner
            | '\u{061C}'          // Arabic letter mark
            | '\u{115F}' | '\u{1160}' // Hangul fillers
            | '\u{17B4}' | '\u{17B5}'
            | '\u{180E}'          // Mongolian vowel separator
            | '\u{200B}'..='\u{200F}' // zero-width space, non-joiner, joiner, LRM, RLM
            | '\u{202A}'..='\u{202E}' // embeddings and overrides
            | '\u{2060}'..='\u{2064}' // word joiner, invisible operators
            | '\u{2066}'..='\u{206F}' // isolates and deprecated format characters
            | '\u{3164}'          // Hangul filler
            | '\u{FEFF}'          // zero-width no-break space
            | '\u{FFA0}'          // halfwidth Hangul filler
            | '\u{FFF9}'..='\u{FFFB}' // interlinear annotation
            | '\u{E0000}'..='\u{E007F}' // tags
    )
}

/// The rule: `text` holds no [`is_hidden`] character.
pub fn check(text: &str) -> Result<(), HiddenCharacter> {
    match text.chars().enumerate().find(|&(_, c)| is_hidden(c)) {
        Some((index, ch)) => Err(HiddenCharacter { index, ch }),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_override_or_a_zero_width_character_is_refused_and_plain_text_passes() {
        let reversed = check("invoice\u{202E}gpj.exe").unwrap_err();
        assert_eq!((reversed.index, reversed.ch), (7, '\u{202E}'));
        for bad in ["Ye\u{200B}s", "\u{2067}x", "a\u{FEFF}", "x\u{200D}"] {
            assert!(check(bad).is_err(), "{bad:?}");
        }
        for good in [
            "screenshot 1.png",
            "Да",
            "是的",
            "naïve café",
            "👍 ok",
            "❤\u{FE0F} yes",
            "عربي",
        ] {
            assert_eq!(check(good), Ok(()), "{good:?}");
        }
    }

    #[test]
    fn the_sentence_names_the_character() {
        let e = check("a\u{200B}").unwrap_err();
        assert_eq!(
            e.to_string(),
            "holds the invisible or direction-changing character U+200B at character 1"
        );
    }
}
