//! Serves the panel: the files of `panel/`, compiled into the binary, at `/`,
//! gzipped (once per file, then kept) for browsers that take it.
//! Static files need no secret; everything they fetch does.

use axum::Router;
use axum::extract::Path;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use holdline_store::lock::Unpoisoned as _;
use rust_embed::RustEmbed;
use std::collections::HashMap;
use std::io::Write;
use std::sync::{Arc, Mutex, OnceLock};

#[derive(RustEmbed)]
#[folder = "../panel/"]
struct Assets;

/// What the panel's pages may load: only this hub, inline images it made.
const CSP: &str = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; \
img-src 'self' data: blob:; connect-src 'self'; media-src 'self' data: blob:; \
object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

pub fn routes<S: Clone + Send + Sync + 'static>() -> Router<S> {
    Router::new()
        .route(
            "/",
            get(|h: HeaderMap| async move { serve("index.html", &h) }),
        )
        .route(
            "/{*path}",
            get(|Path(p): Path<String>, h: HeaderMap| async move { serve(&p, &h) }),
        )
}

fn serve(path: &str, headers: &HeaderMap) -> Response {
    let Some(file) = Assets::get(path) else {
        return (StatusCode::NOT_FOUND, "not found").into_response();
    };
    let mime = file.metadata.mimetype();
    let gzip = compressible(mime) && takes_gzip(headers);
    let etag = format!(
        "\"{}{}\"",
        hex::encode(&file.metadata.sha256_hash()[..12]),
        if gzip { "-gz" } else { "" }
    );
    let fresh = headers
        .get(header::IF_NONE_MATCH)
        .is_some_and(|v| v.as_bytes() == etag.as_bytes());
    let mut res = if fresh {
        StatusCode::NOT_MODIFIED.into_response()
    } else if gzip {
        gzipped(path, &file.data).to_vec().into_response()
    } else {
        file.data.into_owned().into_response()
    };
    let h = res.headers_mut();
    if compressible(mime) {
        h.insert(header::VARY, HeaderValue::from_static("accept-encoding"));
    }
    if gzip && !fresh {
        h.insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
    }
    if let Ok(v) = HeaderValue::from_str(mime) {
        h.insert(header::CONTENT_TYPE, v);
    }
    if let Ok(v) = HeaderValue::from_str(&etag) {
        h.insert(header::ETAG, v);
    }
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    res
}

/// Text worth compressing (the scripts, styles and page; not images).
fn compressible(mime: &str) -> bool {
    mime.starts_with("text/")
        || mime.contains("javascript")
        || mime.contains("json")
        || mime.contains("svg")
}

fn takes_gzip(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT_ENCODING)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|e| {
            let mut parts = e.split(';');
            let name = parts.next().unwrap_or("").trim();
            let refused = parts.any(|p| matches!(p.trim(), "q=0" | "q=0.0" | "q=0.00" | "q=0.000"));
            name.eq_ignore_ascii_case("gzip") && !refused
        })
}

/// `data` (the embedded file at `path`) gzipped; each file is compressed once.
fn gzipped(path: &str, data: &[u8]) -> Arc<[u8]> {
    static CACHE: OnceLock<Mutex<HashMap<String, Arc<[u8]>>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    if let Some(hit) = cache.lock_unpoisoned().get(path) {
        return hit.clone();
    }
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    // Writing to a Vec cannot fail.
    let _ = enc.write_all(data);
    let packed: Arc<[u8]> = enc.finish().unwrap_or_default().into();
    cache
        .lock_unpoisoned()
        .insert(path.to_owned(), packed.clone());
    packed
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    fn accepting(v: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(header::ACCEPT_ENCODING, HeaderValue::from_str(v).unwrap());
        h
    }

    #[test]
    fn gzip_only_when_the_browser_takes_it() {
        assert!(takes_gzip(&accepting("gzip, deflate, br")));
        assert!(takes_gzip(&accepting("br;q=1.0, GZIP;q=0.5")));
        assert!(!takes_gzip(&accepting("br, gzip;q=0")));
        assert!(!takes_gzip(&accepting("identity")));
        assert!(!takes_gzip(&HeaderMap::new()));
    }

    #[test]
    fn a_gzipped_file_unpacks_to_the_file_and_says_so() {
        let res = serve("app.js", &accepting("gzip"));
        assert_eq!(res.headers()[header::CONTENT_ENCODING], "gzip");
        assert!(
            res.headers()[header::ETAG]
                .to_str()
                .unwrap()
                .ends_with("-gz\"")
        );
        let packed = gzipped("app.js", &Assets::get("app.js").unwrap().data);
        let mut plain = Vec::new();
        flate2::read::GzDecoder::new(&packed[..])
            .read_to_end(&mut plain)
            .unwrap();
        assert_eq!(plain, Assets::get("app.js").unwrap().data.as_ref());
        assert!(packed.len() < plain.len() / 2);
        let raw = serve("app.js", &HeaderMap::new());
        assert!(raw.headers().get(header::CONTENT_ENCODING).is_none());
        assert_eq!(raw.headers()[header::VARY], "accept-encoding");
    }
}
