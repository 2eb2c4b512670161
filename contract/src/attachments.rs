//! Files an agent shows the person with its question (a screenshot, a log): what the
//! bridge sends, what the person's side reads back, and the limits both sides hold.
//!
//! Invariant: a question carries at most [`MAX_ATTACHMENTS`] files of at most
//! [`MAX_ATTACHMENT_BYTES`] each; the tools refuse more before anything is sent, and the
//! hub refuses the same with [`check_uploads`], so nothing past the limits is stored.

use serde::{Deserialize, Serialize};

use crate::visible::{self, HiddenCharacter};

/// Most files one question may carry.
pub const MAX_ATTACHMENTS: usize = 10;
/// Largest file, in bytes (5 MiB).
pub const MAX_ATTACHMENT_BYTES: u64 = 5 * 1024 * 1024;
/// Longest file name kept, in characters.
pub const MAX_NAME_CHARS: usize = 255;

/// One file as the bridge sends it with `POST /api/wait/register`: its bytes read from
/// the agent's workspace, base64 (standard alphabet, padded).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AttachmentUpload {
    /// The file's name, without its folder.
    pub name: String,
    pub mime_type: String,
    pub data: String,
}

/// One file as the person's side reads it on the agent's message: `url` is the hub route
/// that serves its bytes with the same credential as the rest of the person's API.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Attachment {
    pub name: String,
    pub mime_type: String,
    /// Bytes.
    pub size: u64,
    pub url: String,
    /// The hub no longer keeps its bytes (released by its retention rule, or freed by
    /// the person): `url` answers 404.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub removed: bool,
}

/// Why a question's files are refused; the sentence names the rule.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AttachmentRefused {
    #[error("at most {MAX_ATTACHMENTS} attachments per question ({0} given)")]
    TooMany(usize),
    #[error(
        "attachment {name:?} is {size} bytes; each may be at most 5 MiB ({MAX_ATTACHMENT_BYTES} bytes)"
    )]
    TooLarge { name: String, size: u64 },
    #[error("attachment {0:?} has no usable name (1 to {MAX_NAME_CHARS} characters, no folder)")]
    BadName(String),
    #[error("attachment {name:?}'s name {hidden}: rename the file in plain characters")]
    HiddenInName {
        name: String,
        hidden: HiddenCharacter,
    },
    #[error("attachment {0:?} is not valid base64")]
    BadData(String),
}

/// The rule on how many files a question carries.
pub fn check_count(count: usize) -> Result<(), AttachmentRefused> {
    if count > MAX_ATTACHMENTS {
        return Err(AttachmentRefused::TooMany(count));
    }
    Ok(())
}

/// The rule on one file's size.
pub fn check_size(name: &str, size: u64) -> Result<(), AttachmentRefused> {
    if size > MAX_ATTACHMENT_BYTES {
        return Err(AttachmentRefused::TooLarge {
            name: name.to_string(),
            size,
        });
    }
    Ok(())
}

/// The rule on a file's name: a plain name, no folder, no control characters, and no
/// invisible or direction-changing one ([`visible::check`]: `invoice\u{202E}gpj.exe` would
/// show the person `invoiceexe.jpg`).
pub fn check_name(name: &str) -> Result<(), AttachmentRefused> {
    let chars = name.chars().count();
    let plain = !name.contains(['/', '\\']) && !name.chars().any(char::is_control);
    if chars == 0 || chars > MAX_NAME_CHARS || !plain || name == "." || name == ".." {
        return Err(AttachmentRefused::BadName(name.to_string()));
    }
    visible::check(name).map_err(|hidden| AttachmentRefused::HiddenInName {
        name: name.to_string(),
        hidden,
    })
}

/// The size of base64 `data` once decoded, without decoding it.
pub fn decoded_len(data: &str) -> u64 {
    let trimmed = data.trim_end_matches('=');
    (trimmed.len() as u64 * 3) / 4
}

/// Every rule on a question's uploads, as the hub checks them before storing any.
pub fn check_uploads(uploads: &[AttachmentUpload]) -> Result<(), AttachmentRefused> {
    check_count(uploads.len())?;
    for upload in uploads {
        check_name(&upload.name)?;
        check_size(&upload.name, decoded_len(&upload.data))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn upload(name: &str, bytes: usize) -> AttachmentUpload {
        // base64 of `bytes` zero bytes has this many characters.
        let chars = bytes.div_ceil(3) * 4;
        AttachmentUpload {
            name: name.into(),
            mime_type: "application/octet-stream".into(),
            data: "A".repeat(chars),
        }
    }

    #[test]
    fn ten_files_of_five_mib_pass_and_one_more_of_either_is_refused() {
        let ten: Vec<_> = (0..10)
            .map(|n| upload(&format!("f{n}"), MAX_ATTACHMENT_BYTES as usize - 2))
            .collect();
        assert_eq!(check_uploads(&ten), Ok(()));
        let mut eleven = ten.clone();
        eleven.push(upload("f10", 1));
        assert_eq!(check_uploads(&eleven), Err(AttachmentRefused::TooMany(11)));
        let big = upload("big.log", 6 * 1024 * 1024);
        assert!(matches!(
            check_uploads(&[big]),
            Err(AttachmentRefused::TooLarge { .. })
        ));
    }

    #[test]
    fn a_name_with_a_folder_or_nothing_is_refused() {
        for bad in ["", "a/b.png", "..", "a\\b", "x\u{7}"] {
            assert!(check_name(bad).is_err(), "{bad:?}");
        }
        assert_eq!(check_name("screenshot 1.png"), Ok(()));
    }

    #[test]
    fn a_name_that_reads_as_another_is_refused_naming_the_character() {
        let e = check_name("invoice\u{202E}gpj.exe").unwrap_err();
        assert_eq!(
            e.to_string(),
            "attachment \"invoice\\u{202e}gpj.exe\"'s name holds the invisible or direction-changing character U+202E at character 7: rename the file in plain characters"
        );
        assert!(check_name("re\u{200B}port.pdf").is_err());
        assert!(check_uploads(&[upload("a\u{2066}b.log", 3)]).is_err());
        assert_eq!(check_name("отчёт 報告.pdf"), Ok(()));
    }
}
