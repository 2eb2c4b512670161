//! How a reply's images reach a model whose client cannot show it an image block: saved as
//! files in the workspace, in the folder holdline owns (`.holdline/images`), or, where
//! that cannot be done, only said.
//!
//! Invariants: for such a client no image data goes into the result (no image block, no
//! base64); files are written only under `<workspace>/.holdline/`, named by the reply's
//! id, so a reply delivered again names the same files; the person's own files are never
//! touched (the folder ignores itself with its own `.gitignore`).

use std::{
    fs,
    io::{self, Write},
    path::Path,
};

use base64::Engine;
use holdline_contract::{Image, Reply};

use crate::limits::{Images, Transport};

/// The folder holdline owns inside a workspace, relative to it.
pub const OWN_FOLDER: &str = ".holdline";
/// Where reply images are saved, relative to the workspace.
pub const IMAGES_FOLDER: &str = ".holdline/images";

/// How one reply's images reach the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ImageDelivery {
    /// As image blocks of the result (or there are none).
    Blocks,
    /// Saved into the workspace; the model opens them with its file tools.
    Files(Vec<SavedImage>),
    /// The client cannot show them and they could not be saved where the agent works.
    Unshown,
}

/// One saved image: its path relative to the workspace, and absolute.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SavedImage {
    pub relative: String,
    pub absolute: String,
}

/// What decides how a call's reply images travel: the client, the transport, and the
/// workspace the wait bound with.
#[derive(Debug, Clone)]
pub struct ImageRoute {
    pub client: Images,
    pub transport: Transport,
    pub workspace: Option<String>,
}

impl ImageRoute {
    /// How `reply`'s images reach the model; saves them first when they go as files.
    pub fn deliver(&self, reply: &Reply) -> ImageDelivery {
        if reply.images.is_empty() || self.client == Images::Blocks {
            return ImageDelivery::Blocks;
        }
        // Over `/mcp` the hub runs elsewhere: it cannot write on the agent's machine.
        let (Transport::Stdio, Some(workspace)) = (self.transport, self.workspace.as_deref())
        else {
            return ImageDelivery::Unshown;
        };
        match save_reply_images(Path::new(workspace), reply) {
            Ok(saved) => ImageDelivery::Files(saved),
            Err(e) => {
                tracing::warn!(%workspace, reply = %reply.id, error = %e, "reply images not saved in the workspace");
                ImageDelivery::Unshown
            }
        }
    }
}

/// Saves every image of `reply` as `<workspace>/.holdline/images/<reply-id>-<n>.<ext>`
/// (n from 1). The workspace must be an existing absolute folder; holdline's folders are
/// made in it when missing, and refused when they are links.
pub fn save_reply_images(workspace: &Path, reply: &Reply) -> io::Result<Vec<SavedImage>> {
    if !workspace.is_absolute() || !workspace.is_dir() {
        return Err(io::Error::new(
            io::ErrorKind::NotFound,
            "the workspace is not a folder on this machine",
        ));
    }
    let own = workspace.join(OWN_FOLDER);
    own_folder(&own)?;
    ignore_by_git(&own)?;
    let images = workspace.join(IMAGES_FOLDER);
    own_folder(&images)?;
    let stem = file_stem(&reply.id);
    reply
        .images
        .iter()
        .enumerate()
        .map(|(i, image)| {
            let name = format!("{stem}-{}.{}", i + 1, extension(&image.mime_type));
            let path = images.join(&name);
            write_once(&path, &decode(image)?)?;
            Ok(SavedImage {
                relative: format!("{IMAGES_FOLDER}/{name}"),
                absolute: path.display().to_string(),
            })
        })
        .collect()
}

/// Makes `dir` if missing; a link or a file in its place is refused.
fn own_folder(dir: &Path) -> io::Result<()> {
    match fs::symlink_metadata(dir) {
        Ok(m) if m.is_dir() => Ok(()),
        Ok(_) => Err(io::Error::new(
            io::ErrorKind::AlreadyExists,
            format!("{} is not a plain folder", dir.display()),
        )),
        Err(e) if e.kind() == io::ErrorKind::NotFound => fs::create_dir(dir),
        Err(e) => Err(e),
    }
}

/// `<own>/.gitignore` with `*`, so git ignores holdline's folder; an existing one is kept.
fn ignore_by_git(own: &Path) -> io::Result<()> {
    let path = own.join(".gitignore");
    match fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&path)
    {
        Ok(mut f) => f.write_all(b"*\n"),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(e),
    }
}

/// Writes `bytes` to `path` unless it already holds exactly them; a new file appears whole
/// (written beside it, then renamed).
fn write_once(path: &Path, bytes: &[u8]) -> io::Result<()> {
    if fs::read(path).is_ok_and(|old| old == bytes) {
        return Ok(());
    }
    let partial = path.with_extension("part");
    fs::write(&partial, bytes)?;
    fs::rename(&partial, path)
}

fn decode(image: &Image) -> io::Result<Vec<u8>> {
    base64::engine::general_purpose::STANDARD
        .decode(image.data.trim())
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
}

/// The reply id as a file name part: only letters, digits, `_` and `-` (the id comes from
/// the hub; it never names a path).
fn file_stem(reply_id: &str) -> String {
    let stem: String = reply_id
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-'))
        .take(80)
        .collect();
    if stem.is_empty() {
        "reply".to_owned()
    } else {
        stem
    }
}

/// The file extension of an image type the hub accepts.
fn extension(mime_type: &str) -> &'static str {
    match mime_type.to_ascii_lowercase().as_str() {
        "image/png" => "png",
        "image/jpeg" | "image/jpg" => "jpg",
        "image/gif" => "gif",
        "image/webp" => "webp",
        _ => "img",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn images_dir(ws: &Path) -> PathBuf {
        ws.join(IMAGES_FOLDER)
    }

    const PNG_1PX: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";

    fn reply(id: &str, images: &[(&str, &str)]) -> Reply {
        Reply {
            id: id.into(),
            text: String::new(),
            images: images
                .iter()
                .map(|(m, d)| Image {
                    mime_type: (*m).into(),
                    data: (*d).into(),
                })
                .collect(),
            auto: false,
            at: 0,
            choices: vec![],
        }
    }

    fn temp_workspace(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "holdline-images-{name}-{}",
            uuid::Uuid::new_v4().simple()
        ));
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn images_are_saved_once_by_reply_id_under_holdlines_own_ignored_folder() {
        let ws = temp_workspace("save");
        let png = base64::engine::general_purpose::STANDARD
            .decode(PNG_1PX)
            .unwrap();
        let r = reply(
            "r_../x1",
            &[("image/png", PNG_1PX), ("image/jpeg", PNG_1PX)],
        );
        let saved = save_reply_images(&ws, &r).unwrap();
        assert_eq!(
            saved
                .iter()
                .map(|s| s.relative.as_str())
                .collect::<Vec<_>>(),
            [".holdline/images/r_x1-1.png", ".holdline/images/r_x1-2.jpg"]
        );
        assert_eq!(fs::read(images_dir(&ws).join("r_x1-1.png")).unwrap(), png);
        assert_eq!(
            fs::read_to_string(ws.join(".holdline/.gitignore")).unwrap(),
            "*\n"
        );
        // Delivered again: the same paths, nothing else written.
        assert_eq!(save_reply_images(&ws, &r).unwrap(), saved);
        assert_eq!(fs::read_dir(images_dir(&ws)).unwrap().count(), 2);
        fs::remove_dir_all(&ws).unwrap();
    }

    #[test]
    fn a_workspace_that_is_not_a_folder_here_or_bad_data_saves_nothing() {
        let r = reply("r_1", &[("image/png", PNG_1PX)]);
        assert!(save_reply_images(Path::new("/no/such/holdline/workspace"), &r).is_err());
        assert!(save_reply_images(Path::new("relative/ws"), &r).is_err());
        let ws = temp_workspace("bad");
        assert!(save_reply_images(&ws, &reply("r_2", &[("image/png", "not base64!")])).is_err());
        let route = ImageRoute {
            client: Images::AsText,
            transport: Transport::Stdio,
            workspace: Some("/no/such/holdline/workspace".into()),
        };
        assert_eq!(route.deliver(&r), ImageDelivery::Unshown);
        fs::remove_dir_all(&ws).unwrap();
    }

    #[test]
    fn only_clients_that_cannot_show_images_over_stdio_get_files() {
        let ws = temp_workspace("route");
        let r = reply("r_3", &[("image/webp", PNG_1PX)]);
        let route = |client, transport| ImageRoute {
            client,
            transport,
            workspace: Some(ws.display().to_string()),
        };
        assert_eq!(
            route(Images::Blocks, Transport::Stdio).deliver(&r),
            ImageDelivery::Blocks
        );
        assert_eq!(
            route(Images::AsText, Transport::Http).deliver(&r),
            ImageDelivery::Unshown
        );
        assert!(!ws.join(OWN_FOLDER).exists(), "nothing written over /mcp");
        let ImageDelivery::Files(saved) = route(Images::Dropped, Transport::Stdio).deliver(&r)
        else {
            panic!("files expected")
        };
        assert_eq!(saved[0].relative, ".holdline/images/r_3-1.webp");
        assert!(Path::new(&saved[0].absolute).is_file());
        fs::remove_dir_all(&ws).unwrap();
    }
}
