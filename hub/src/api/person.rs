//! Routes the person uses through the panel or the admin CLI: login, replies,
//! listing and reading sessions (and the files an agent's question showed),
//! settings, archive, templates, export/import.

use axum::extract::{ConnectInfo, Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};

use super::AppState;
use super::dto::*;
use super::error::{ApiError, Body, Query, token};
use super::guard;
use holdline_core::hub::{HubError, PersonReply};
use holdline_store::interchange::ExportFile;

use super::error::JsonResult;

pub async fn login(
    State(app): State<AppState>,
    ConnectInfo(addr): ConnectInfo<std::net::SocketAddr>,
    headers: HeaderMap,
    Body(b): Body<LoginBody>,
) -> Result<Response, ApiError> {
    let ip = addr.ip();
    // The right key always gets in: whoever shares the address cannot lock
    // the person out by failing on purpose.
    if !app.credentials.is_secret(b.key.trim()) {
        if app.logins.is_limited(ip) {
            if app.refusals.may_log() {
                tracing::warn!(%ip, "login rate limited");
            }
            return Err(ApiError::rate_limited(
                "too many failed logins from this address; wait a minute and try again",
            ));
        }
        app.logins.failed(ip);
        if app.refusals.may_log() {
            tracing::info!(%ip, "login with a wrong key");
        }
        return Err(ApiError::unauthorized(
            "wrong key: open the URL that `holdline-hub panel-url` prints",
        ));
    }
    let id = app
        .credentials
        .logins()
        .begin()
        .await
        .map_err(holdline_core::hub::HubError::from)?;
    // The new cookie replaces the one this browser sent: end that login, so
    // no id outlives the cookie that carried it.
    let replaced: Vec<String> = guard::login_ids(&headers).map(str::to_owned).collect();
    for old in replaced {
        app.credentials
            .logins()
            .end(&old)
            .await
            .map_err(holdline_core::hub::HubError::from)?;
    }
    tracing::info!(%ip, "panel login");
    Ok((
        [(header::SET_COOKIE, guard::login_cookie(&id))],
        Json(Done::OK),
    )
        .into_response())
}

/// Ends this panel login (its cookie stops working at once, everywhere).
pub async fn logout(State(app): State<AppState>, headers: HeaderMap) -> Result<Response, ApiError> {
    let ids: Vec<String> = guard::login_ids(&headers).map(str::to_owned).collect();
    for id in ids {
        app.credentials
            .logins()
            .end(&id)
            .await
            .map_err(holdline_core::hub::HubError::from)?;
    }
    Ok((
        [(header::SET_COOKIE, guard::logout_cookie())],
        Json(Done::OK),
    )
        .into_response())
}

/// Ends every panel login, on every browser (also across restarts).
pub async fn logout_everywhere(State(app): State<AppState>) -> Result<Response, ApiError> {
    let ended = app
        .credentials
        .logins()
        .end_all()
        .await
        .map_err(holdline_core::hub::HubError::from)?;
    tracing::info!(ended, "logged out everywhere");
    Ok((
        [(header::SET_COOKIE, guard::logout_cookie())],
        Json(Done::OK),
    )
        .into_response())
}

pub async fn whoami(State(app): State<AppState>) -> Json<WhoAmI> {
    Json(WhoAmI {
        ok: true,
        version: env!("CARGO_PKG_VERSION"),
        hub: app.hub.name().to_owned(),
        reply_limit: super::REPLY_LIMIT,
    })
}

pub async fn no_such_route() -> ApiError {
    ApiError::new(
        axum::http::StatusCode::NOT_FOUND,
        holdline_contract::ErrorCode::NotFound,
        "no such API route; see docs/api.md",
    )
}

pub async fn wrong_method() -> ApiError {
    ApiError::method_not_allowed("this route takes another method; see docs/api.md")
}

pub async fn reply(
    State(app): State<AppState>,
    Body(b): Body<ReplyBody>,
) -> JsonResult<ReplyAnswer> {
    let t = token(&b.token)?;
    let reply = PersonReply {
        text: b.text,
        images: b.images,
        choices: b.choices,
        in_reply_to: b.in_reply_to,
        via: None,
    };
    let (reply_id, queued) = app.hub.reply_with(&t, reply)?.flushed(&app.hub).await?;
    // The delivery rule: a reply answered 200 is on disk.
    tracing::info!(token = %t, reply = %reply_id, queued, "reply recorded");
    Ok(Json(ReplyAnswer { reply_id, queued }))
}

pub async fn configure(
    State(app): State<AppState>,
    Body(b): Body<ConfigBody>,
) -> JsonResult<SessionDto> {
    let t = token(&b.token)?;
    let info = app.hub.configure(&t, b.settings)?.flushed(&app.hub).await?;
    Ok(Json(app.session_dto(info)))
}

pub async fn list(
    State(app): State<AppState>,
    Query(q): Query<ListQuery>,
) -> JsonResult<SessionList> {
    let limit = q.limit.unwrap_or(50);
    if !(1..=200).contains(&limit) {
        return Err(ApiError::bad_request("limit must be 1 to 200"));
    }
    let offset = match q.cursor.as_deref() {
        None | Some("") => 0,
        Some(c) => c
            .parse::<usize>()
            .map_err(|_| ApiError::bad_request("cursor must be a value from nextCursor"))?,
    };
    let (page, more) = app
        .hub
        .list(q.status.as_deref(), q.q.as_deref(), offset, limit)?;
    let next_cursor = more.then(|| (offset + limit).to_string());
    let sessions = page.into_iter().map(|i| app.session_dto(i)).collect();
    Ok(Json(SessionList {
        sessions,
        next_cursor,
    }))
}

/// `GET /api/sessions/{token}`. An agent key reads only a session whose
/// binding it made; any other answers as if it did not exist.
pub async fn detail(
    State(app): State<AppState>,
    Extension(who): Extension<guard::Caller>,
    Path(raw): Path<String>,
    Query(q): Query<HistoryQuery>,
) -> JsonResult<SessionDetail> {
    let t = token(&raw)?;
    let limit = q.limit.unwrap_or(50);
    if !(1..=holdline_core::hub::MAX_PAGE).contains(&limit) {
        return Err(ApiError::bad_request(format!(
            "limit must be 1 to {}",
            holdline_core::hub::MAX_PAGE
        )));
    }
    let info = app.hub.info(&t)?;
    if let Some(key) = who.agent_key()
        && info.session.owner.as_ref() != Some(key)
    {
        return Err(HubError::NotFound(t).into());
    }
    let messages = app.hub.messages(&t, q.before, limit)?;
    let next_before = messages.first().map(|(seq, _)| *seq).filter(|seq| *seq > 0);
    Ok(Json(SessionDetail {
        session: app.session_dto(info),
        messages: messages
            .into_iter()
            .map(|(seq, message)| MessageDto::new(t.as_str(), seq, message))
            .collect(),
        next_before,
    }))
}

/// `GET /api/sessions/{token}/attachments/{id}`: the bytes of a file an agent's
/// message carries, for the person only. Never run on the panel's origin: a safe
/// raster image is served inline with its type, anything else (HTML, SVG, a log) as a
/// download; both with `nosniff` and a CSP sandbox.
pub async fn attachment(
    State(app): State<AppState>,
    Path((raw, id)): Path<(String, String)>,
) -> Result<Response, ApiError> {
    let t = token(&raw)?;
    if !holdline_store::session::AttachmentRef::is_id(&id) {
        return Err(ApiError::bad_request(
            "attachment id must be at_ followed by 32 hex digits",
        ));
    }
    let Some((record, path)) = app.hub.attachment_file(&t, &id)? else {
        return Err(ApiError::new(
            StatusCode::NOT_FOUND,
            holdline_contract::ErrorCode::NotFound,
            format!("session {t} has no attachment {id}"),
        ));
    };
    let (content_type, disposition) = if record.is_safe_image() {
        (record.mime_type.clone(), "inline")
    } else {
        ("application/octet-stream".to_owned(), "attachment")
    };
    let headers = [
        (header::CONTENT_TYPE, content_type),
        (
            header::CONTENT_DISPOSITION,
            format!(
                "{disposition}; filename*=UTF-8''{}",
                percent_encode(&record.name)
            ),
        ),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff".to_owned()),
        (
            header::CONTENT_SECURITY_POLICY,
            "sandbox; default-src 'none'".to_owned(),
        ),
        (header::CACHE_CONTROL, "private, max-age=3600".to_owned()),
    ];
    // Streamed from its file: a read holds 64 KiB of it, not the whole file.
    let Ok(file) = tokio::fs::File::open(&path).await else {
        return Err(HubError::Released(format!(
            "the file {:?} of this message was removed",
            record.name
        ))
        .into());
    };
    Ok((headers, axum::body::Body::from_stream(file_chunks(file))).into_response())
}

/// A file's bytes as a stream of 64 KiB chunks.
fn file_chunks(
    file: tokio::fs::File,
) -> impl futures::Stream<Item = std::io::Result<axum::body::Bytes>> {
    use tokio::io::AsyncReadExt as _;
    futures::stream::unfold(Some(file), |file| async move {
        let mut file = file?;
        let mut buf = vec![0; 64 << 10];
        match file.read(&mut buf).await {
            Ok(0) => None,
            Ok(n) => {
                buf.truncate(n);
                Some((Ok(axum::body::Bytes::from(buf)), Some(file)))
            }
            Err(e) => Some((Err(e), None)),
        }
    })
}

/// `name` as RFC 5987 `filename*` carries it: every byte but unreserved characters
/// percent-encoded.
fn percent_encode(name: &str) -> String {
    name.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// The messages of one session that contain `q` (case-insensitive), newest
/// first, each with a short snippet around the match: the panel shows where a
/// search hit and jumps there.
pub async fn find(
    State(app): State<AppState>,
    Path(raw): Path<String>,
    Query(q): Query<FindQuery>,
) -> JsonResult<FindAnswer> {
    let t = token(&raw)?;
    let needle = q.q.trim().to_lowercase();
    if needle.is_empty() || needle.chars().count() > 200 {
        return Err(ApiError::bad_request("q must be 1 to 200 characters"));
    }
    let limit = q.limit.unwrap_or(20);
    if !(1..=100).contains(&limit) {
        return Err(ApiError::bad_request("limit must be 1 to 100"));
    }
    app.hub.info(&t)?;
    let hits = app
        .hub
        .store()
        .find_messages(&t, &needle, limit)
        .map_err(HubError::from)?
        .into_iter()
        .map(|(seq, m)| FindHit {
            seq,
            role: m.role,
            at: m.at,
            snippet: snippet(&m.content, &needle),
        })
        .collect();
    Ok(Json(FindAnswer { hits }))
}

/// About 40 characters either side of the first match of `needle` (lowercased) in `text`, on one line,
/// without Markdown's inline marks (unless the match is in them: then the text as written).
fn snippet(text: &str, needle: &str) -> String {
    let plain = without_inline_marks(text);
    if plain.to_lowercase().contains(needle) {
        return window(&plain, needle);
    }
    window(text, needle)
}

/// `text` without the Markdown marks a search snippet would show raw: code
/// fences (with their language), backticks, `**`, `__`, `~~` and the `#`s of
/// headings. The words stay where they were.
fn without_inline_marks(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.lines() {
        let trimmed = line.trim_start();
        let line = if let Some(fence) = trimmed.strip_prefix("```") {
            // The fence and its language go; a one-line fenced code keeps its code.
            fence.trim_start_matches(|c: char| c.is_alphanumeric() || "+#.-_".contains(c))
        } else if trimmed.starts_with('#') {
            let rest = trimmed.trim_start_matches('#');
            if rest.starts_with(' ') {
                rest.trim_start()
            } else {
                line
            }
        } else {
            line
        };
        let line = line
            .replace("**", "")
            .replace("__", "")
            .replace("~~", "")
            .replace('`', "");
        // A line that was only marks (a fence) leaves no gap.
        if !line.trim().is_empty() {
            out.push_str(&line);
            out.push('\n');
        }
    }
    out.truncate(out.trim_end().len());
    out
}

/// About 40 characters either side of the first match of `needle` in `text`, on one line.
fn window(text: &str, needle: &str) -> String {
    const SIDE: usize = 40;
    let chars: Vec<char> = text.chars().collect();
    // One lowercase character per character, so positions match the original.
    let lower: Vec<char> = chars
        .iter()
        .map(|c| c.to_lowercase().next().unwrap_or(*c))
        .collect();
    let needle: Vec<char> = needle.chars().collect();
    let at = lower
        .windows(needle.len().max(1))
        .position(|w| w == needle.as_slice())
        .unwrap_or(0)
        .min(chars.len());
    let start = at.saturating_sub(SIDE);
    let end = (at + needle.len() + SIDE).min(chars.len());
    let mut out = String::new();
    if start > 0 {
        out.push('…');
    }
    out.extend(
        chars[start..end]
            .iter()
            .map(|&c| if c.is_whitespace() { ' ' } else { c }),
    );
    if end < chars.len() {
        out.push('…');
    }
    out
}

pub async fn archive(
    State(app): State<AppState>,
    Path(raw): Path<String>,
) -> JsonResult<SessionDto> {
    let t = token(&raw)?;
    let info = app.hub.archive(&t)?.flushed(&app.hub).await?;
    Ok(Json(app.session_dto(info)))
}

/// `POST /api/sessions/{token}/owner`: the person hands the session to a
/// live agent key or back to the secret.
pub async fn hand_over(
    State(app): State<AppState>,
    Path(raw): Path<String>,
    Body(b): Body<OwnerBody>,
) -> JsonResult<SessionDto> {
    let t = token(&raw)?;
    let owner = match b.key {
        None => None,
        Some(name) => {
            let live = holdline_store::names::KeyName::parse(&name)
                .ok()
                .filter(|k| app.credentials.keys().is_live(k));
            Some(live.ok_or_else(|| {
                ApiError::bad_request(format!(
                    "no live agent key is named {name:?} (`holdline-hub key list` shows them)"
                ))
            })?)
        }
    };
    let info = app.hub.hand_over(&t, owner)?.flushed(&app.hub).await?;
    Ok(Json(app.session_dto(info)))
}

pub async fn restore(
    State(app): State<AppState>,
    Path(raw): Path<String>,
) -> JsonResult<SessionDto> {
    let t = token(&raw)?;
    let info = app.hub.restore(&t)?.flushed(&app.hub).await?;
    Ok(Json(app.session_dto(info)))
}

pub async fn templates(State(app): State<AppState>) -> JsonResult<Templates> {
    Ok(Json(Templates {
        templates: app.hub.templates()?,
    }))
}

pub async fn set_templates(
    State(app): State<AppState>,
    Body(b): Body<Templates>,
) -> JsonResult<Templates> {
    app.hub
        .set_templates(b.templates)?
        .flushed(&app.hub)
        .await?;
    templates(State(app)).await
}

/// `GET /api/export`: every session in the `sessions.json` format, streamed: the
/// hub writes one session (and one file) at a time into a small channel the
/// answer's body reads, so an export never holds the store in memory. The
/// session count is in `x-holdline-sessions`.
pub async fn export(State(app): State<AppState>) -> Result<Response, ApiError> {
    let tokens = app.hub.export_tokens();
    let count = tokens.len();
    let (tx, rx) = tokio::sync::mpsc::channel(4);
    let hub = app.hub.clone();
    tokio::task::spawn_blocking(move || {
        let mut out = std::io::BufWriter::with_capacity(64 << 10, Chunks(tx.clone()));
        if let Err(e) = hub.export_to(&tokens, &mut out) {
            // The status is sent; cutting the body short tells the client it failed.
            tracing::warn!(error = %e, "an export stopped part-way");
            let _ = tx.blocking_send(Err(std::io::Error::other(e.to_string())));
        }
    });
    let body = axum::body::Body::from_stream(tokio_stream::wrappers::ReceiverStream::new(rx));
    Ok((
        [
            (header::CONTENT_TYPE, "application/json".to_owned()),
            (
                header::HeaderName::from_static(super::dto::EXPORT_SESSIONS_HEADER),
                count.to_string(),
            ),
        ],
        body,
    )
        .into_response())
}

/// A writer whose every write goes to an answer's body, one chunk at a time.
struct Chunks(tokio::sync::mpsc::Sender<std::io::Result<axum::body::Bytes>>);

impl std::io::Write for Chunks {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0
            .blocking_send(Ok(axum::body::Bytes::copy_from_slice(buf)))
            .map_err(|_| std::io::Error::from(std::io::ErrorKind::BrokenPipe))?;
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// `POST /api/backup`: a backup of the store into `<home>/backups/` now.
pub async fn backup(State(app): State<AppState>) -> JsonResult<BackupAnswer> {
    let hub = app.hub.clone();
    let made = tokio::task::spawn_blocking(move || hub.backup())
        .await
        .map_err(|e| {
            ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                holdline_contract::ErrorCode::Internal,
                e.to_string(),
            )
        })?
        .map_err(HubError::Store)?;
    Ok(Json(BackupAnswer {
        path: made.path.display().to_string(),
        sessions: made.sessions,
        replies: made.replies,
    }))
}

pub async fn import(
    State(app): State<AppState>,
    Body(file): Body<ExportFile>,
) -> JsonResult<ImportAnswer> {
    let (imported, skipped) = app.hub.import(file)?.flushed(&app.hub).await?;
    Ok(Json(ImportAnswer { imported, skipped }))
}

pub async fn merge(
    State(app): State<AppState>,
    Path(raw): Path<String>,
    Body(b): Body<PersonMergeBody>,
) -> JsonResult<SessionDto> {
    let from = token(&raw)?;
    let to = token(&b.to_token)?;
    app.hub.merge(&from, &to, None)?.flushed(&app.hub).await?;
    Ok(Json(app.session_dto(app.hub.info(&to)?)))
}

/// `GET /api/attachments`: what the questions' files take, per owner and in all.
pub async fn attachments(State(app): State<AppState>) -> JsonResult<AttachmentsAnswer> {
    Ok(Json(AttachmentsAnswer::of(app.hub.file_usage())))
}

/// `POST /api/attachments/free`: releases the files the body names, now.
pub async fn free_attachments(
    State(app): State<AppState>,
    Body(b): Body<FreeBody>,
) -> JsonResult<FreeAnswer> {
    let freed = app.hub.free_files(b.into()).await?;
    Ok(Json(FreeAnswer {
        attachments: freed.attachments,
        bytes: freed.bytes,
    }))
}

#[cfg(test)]
mod tests {
    use super::snippet;

    #[test]
    fn a_snippet_drops_markdowns_inline_marks() {
        let text = "## Done\n**Fixed** the `retry` loop in ~~old~~ `ci.yml`.\n```yaml\nrun: pg_isready\n```";
        let s = snippet(text, "retry");
        assert_eq!(
            s,
            "Done Fixed the retry loop in old ci.yml. run: pg_isready"
        );
        assert!(
            !s.contains("**") && !s.contains('`') && !s.contains('#'),
            "{s}"
        );
        // A match in the text away from the start still gets its window and the ellipses.
        let long = format!("{} **bold needle** {}", "a".repeat(60), "b".repeat(60));
        let s = snippet(&long, "needle");
        assert!(s.starts_with('…') && s.ends_with('…'), "{s}");
        assert!(s.contains("bold needle") && !s.contains("**"), "{s}");
    }

    #[test]
    fn a_search_for_the_marks_themselves_shows_them() {
        assert_eq!(
            snippet("use **kwargs here", "**kwargs"),
            "use **kwargs here"
        );
        // A `#` that starts no heading stays.
        assert_eq!(snippet("#hashtag and issue", "issue"), "#hashtag and issue");
    }
}
