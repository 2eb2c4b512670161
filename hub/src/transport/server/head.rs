//! Reading a request head on the hub's own path: which requests it serves
//! itself (HTTP/1.1, origin-form, a small body of known length, nothing to
//! negotiate) and their framing. Invariant: whatever this accepts, hyper
//! frames the same way (method, target, body length); anything else is
//! hyper's (the differential test below feeds both the same bytes).

use http::header::{CONNECTION, CONTENT_LENGTH, EXPECT, TRANSFER_ENCODING, UPGRADE};
use http::{HeaderName, HeaderValue, Method, Request, Version};

use super::{MAX_BODY, MAX_HEADERS};

/// A request head read here, with what framing it needs.
pub(super) struct Head {
    pub request: Request<()>,
    /// Bytes of the head, CRLFs included.
    pub len: usize,
    pub content_length: usize,
    /// The client asked to close after this answer.
    pub close: bool,
}

pub(super) enum Parsed {
    Plain(Box<Head>),
    /// More bytes are needed.
    Partial,
    /// Not a plain request: hyper's.
    Other,
}

/// The head at the start of `buf`; a request to one of the `streamed` paths is hyper's.
pub(super) fn parse_head(buf: &[u8], streamed: &[&str]) -> Parsed {
    if buf.is_empty() {
        return Parsed::Partial;
    }
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut parsed = httparse::Request::new(&mut headers);
    let len = match parsed.parse(buf) {
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) => return Parsed::Partial,
        Err(_) => return Parsed::Other,
    };
    plain_request(&parsed, streamed)
        .map(|(request, content_length, close)| {
            Parsed::Plain(Box::new(Head {
                request,
                len,
                content_length,
                close,
            }))
        })
        .unwrap_or(Parsed::Other)
}

/// The request when it is one this loop serves: HTTP/1.1, origin-form path,
/// no streamed answer, a body of known small length, nothing to negotiate.
fn plain_request(
    parsed: &httparse::Request<'_, '_>,
    streamed: &[&str],
) -> Option<(Request<()>, usize, bool)> {
    if parsed.version != Some(1) {
        return None;
    }
    let method = Method::from_bytes(parsed.method?.as_bytes()).ok()?;
    if method == Method::HEAD || method == Method::CONNECT {
        return None;
    }
    let path = parsed.path?;
    let route = path.split('?').next().unwrap_or(path);
    if !path.starts_with('/') || streamed.contains(&route) {
        return None;
    }
    let mut request = Request::builder()
        .method(method)
        .uri(path)
        .version(Version::HTTP_11)
        .body(())
        .ok()?;
    let mut content_length = None;
    let mut close = false;
    for h in parsed.headers.iter() {
        let name = HeaderName::from_bytes(h.name.as_bytes()).ok()?;
        let value = HeaderValue::from_bytes(h.value).ok()?;
        if name == TRANSFER_ENCODING || name == EXPECT || name == UPGRADE {
            return None;
        }
        if name == CONTENT_LENGTH {
            // Digits only (RFC 9110 §8.6): `+2` or ` 2` is hyper's to refuse.
            let digits = value.as_bytes();
            if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
                return None;
            }
            let n: usize = value.to_str().ok()?.parse().ok()?;
            if content_length.replace(n).is_some() || n > MAX_BODY {
                return None;
            }
        }
        if name == CONNECTION {
            for option in value.to_str().ok()?.split(',').map(str::trim) {
                if option.eq_ignore_ascii_case("upgrade") {
                    return None;
                }
                close |= option.eq_ignore_ascii_case("close");
            }
        }
        request.headers_mut().append(name, value);
    }
    Some((request, content_length.unwrap_or(0), close))
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;
    use proptest::prelude::*;
    use tokio::io::AsyncWriteExt;

    /// What a parser made of a stream: method, target and body.
    type Framed = (String, String, Vec<u8>);

    /// The first request hyper (as the hub configures it) reads from `bytes`.
    async fn hyper_reads(bytes: &[u8]) -> Option<Framed> {
        let (mut client, server) = tokio::io::duplex(1 << 20);
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let service = hyper::service::service_fn(move |req: Request<hyper::body::Incoming>| {
            let tx = tx.clone();
            async move {
                let (parts, body) = req.into_parts();
                if let Ok(body) = body.collect().await {
                    let target = parts.uri.to_string();
                    let _ = tx.send((parts.method.to_string(), target, body.to_bytes().to_vec()));
                }
                Ok::<_, std::convert::Infallible>(http::Response::new(String::new()))
            }
        });
        // Half-close kept open: the client's write side ends after the
        // bytes, and the request must still be answered.
        let conn = hyper::server::conn::http1::Builder::new()
            .max_headers(MAX_HEADERS)
            .half_close(true)
            .serve_connection(hyper_util::rt::TokioIo::new(server), service);
        let served = tokio::spawn(conn);
        client.write_all(bytes).await.unwrap();
        client.shutdown().await.unwrap();
        let first = tokio::time::timeout(std::time::Duration::from_secs(2), rx.recv())
            .await
            .ok()
            .flatten();
        served.abort();
        first
    }

    /// What this path makes of `bytes`, when it serves them itself and they
    /// hold the whole request.
    fn plain_reads(bytes: &[u8]) -> Option<Framed> {
        let Parsed::Plain(head) = parse_head(bytes, &["/api/events"]) else {
            return None;
        };
        let body = bytes.get(head.len..head.len + head.content_length)?;
        let target = head.request.uri().to_string();
        Some((head.request.method().to_string(), target, body.to_vec()))
    }

    const HEADERS: &[&str] = &[
        "Host: x",
        "Content-Length: 5",
        "Content-Length: 0",
        "content-length: 3",
        "Content-Length: +2",
        "Content-Length: -1",
        "Content-Length: 2, 2",
        "Content-Length:  3 ",
        "Content-Length: 03",
        "Content-Length: 0x1",
        "Content-Length: 99999999999999999999999",
        "Content-Length: ",
        "Content-Length : 2",
        "Transfer-Encoding: chunked",
        "Transfer-Encoding: gzip, chunked",
        " folded",
        "\tfolded: x",
        "Bad Name: x",
        "X: a\x01b",
        "X:no-space",
        "Connection: close",
        "Connection: keep-alive, Upgrade",
        "Upgrade: h2c",
        "Expect: 100-continue",
        "Authorization: Bearer abc",
    ];

    fn stream() -> impl Strategy<Value = Vec<u8>> {
        (
            // Weighted towards what this path serves, so most streams reach
            // the comparison.
            prop::sample::select(&["POST", "POST", "GET", "PUT", "get", "P@ST"][..]),
            prop::sample::select(&["/api/x", "/api/x?q=1", "/a%20b", "http://h/api", "*"][..]),
            prop::sample::select(&["HTTP/1.1", "HTTP/1.1", "HTTP/1.1", "HTTP/1.0", "http/1.1"][..]),
            prop::collection::vec(prop::sample::select(HEADERS), 0..4),
            prop::sample::select(&["\r\n", "\n"][..]),
            prop::collection::vec(any::<u8>(), 0..12),
        )
            .prop_map(|(method, target, version, headers, eol, body)| {
                let mut s = format!("{method} {target} {version}{eol}");
                for h in headers {
                    s.push_str(h);
                    s.push_str(eol);
                }
                s.push_str(eol);
                let mut bytes = s.into_bytes();
                bytes.extend(body);
                bytes
            })
    }

    #[test]
    fn a_signed_content_length_is_not_served_here() {
        let req = b"POST /api/x HTTP/1.1\r\nHost: x\r\nContent-Length: +2\r\n\r\nab";
        assert!(matches!(parse_head(req, &[]), Parsed::Other));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2048))]
        /// Whatever this path serves itself, hyper frames the same way.
        #[test]
        fn this_path_and_hyper_agree_on_framing(bytes in stream()) {
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            if let Some(plain) = plain_reads(&bytes) {
                let hyper = runtime.block_on(hyper_reads(&bytes));
                prop_assert_eq!(
                    Some(&plain), hyper.as_ref(),
                    "{:?}", String::from_utf8_lossy(&bytes)
                );
            }
        }
    }
}
