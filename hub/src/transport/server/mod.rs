//! The hub's connections: plain HTTP/1.1 requests (every call a bridge makes,
//! and the panel's API calls) are parsed with `httparse` and answered by the
//! API here, so a connection whose long poll waits holds only its socket
//! and the request's own state; anything else (event streams, chunked or large
//! bodies, `Expect`, upgrades, `HEAD`, HTTP/1.0 and 2, anything malformed) is
//! handed to hyper together with the bytes already read.
//!
//! Why not hyper for everything: hyper keeps an 8 KiB read and an 8 KiB write
//! buffer per connection, ~24 KiB per held long poll in all; 10,000 waiting
//! agents made that 236 MiB (docs/benchmarks-history.md).
//!
//! Invariant: no client holds the hub's resources for free. Every connection
//! is admitted by [`super::admission`] (capped while it has not shown the
//! secret); a request head must arrive within [`HEAD_TIME`] and a body keep
//! coming ([`BODY_TIME`]) on both paths; a connection that has not shown the
//! secret may idle only [`UNTRUSTED_IDLE`], send only [`UNTRUSTED_BODY`] bytes
//! on this path, and lives at most [`UNTRUSTED_LIFETIME`] on hyper's.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::time::Duration;

use tokio::time::Instant;

use axum::body::{Body, HttpBody};
use axum::extract::ConnectInfo;
use bytes::BytesMut;
use futures::StreamExt;
use http::header::{CONNECTION, CONTENT_LENGTH, TRANSFER_ENCODING};
use http::{HeaderMap, Request, StatusCode};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::admission::{Admission, Caps, Ticket};

mod head;
mod hyper_path;

use head::{Head, Parsed, parse_head};
use hyper_path::hand_over;

/// The one limit on a request head, on both paths: a head still incomplete at
/// this size goes to hyper, whose read buffer is this size too, so it
/// answers 431 past it.
const MAX_HEAD: usize = 16 * 1024;
/// Bodies up to this size are read here; larger ones (replies with images,
/// imports) stream through hyper, which applies the routes' limits as it reads.
const MAX_BODY: usize = 64 * 1024;
/// The one limit on the number of header fields, on both paths.
const MAX_HEADERS: usize = 48;
/// A request head must arrive whole within this, from its first byte.
pub const HEAD_TIME: Duration = Duration::from_secs(10);
/// A request body must arrive within this on this path (it is at most
/// [`MAX_BODY`]; without the secret, at most [`UNTRUSTED_BODY`] within
/// [`HEAD_TIME`]); on hyper's, each part of it must come within this.
pub const BODY_TIME: Duration = Duration::from_secs(30);
/// A connection that has not shown the secret is closed after this idle.
pub const UNTRUSTED_IDLE: Duration = Duration::from_secs(10);
/// Bodies larger than this from a connection that has not shown the secret
/// go to hyper, where the route's own limit applies as it reads (login's
/// is a few KiB), so unauthenticated bodies are never held here.
pub const UNTRUSTED_BODY: usize = 4 * 1024;
/// On hyper's path a connection that has not shown the secret closes this
/// long after it opened (whatever it is doing: a body, an answer it does not read).
pub const UNTRUSTED_LIFETIME: Duration = Duration::from_secs(60);
/// Writing one answer to a connection that has not shown the secret.
const UNTRUSTED_WRITE: Duration = Duration::from_secs(30);
/// After the stop signal, open requests get this long before the hub stops
/// waiting for them (and flushes).
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);
/// How much is read at a time while a head or body arrives.
const READ_CHUNK: usize = 2048;
/// Answers of known size up to this go out in one write with their head.
const ONE_WRITE: usize = 16 * 1024;

/// An answer being made; boxed, so a connection's own state stays small.
pub type Answering = Pin<Box<dyn Future<Output = axum::response::Response> + Send>>;

/// What answers the requests (the hub's `Api`, composed in `lib.rs`).
pub trait Answer: Clone + Send + Sync + 'static {
    fn answer(&self, request: Request<Body>) -> Answering;
    /// Whether a request carries the secret (or a live panel session): its
    /// connection is then trusted.
    fn trusts(&self, headers: &HeaderMap) -> bool;
    /// The paths whose answers stream (server-sent events): hyper's, which also
    /// notices a closed connection between events; any other answer of unknown
    /// length is sent chunked here. The answerer's, which alone knows routes.
    const STREAMED_PATHS: &'static [&'static str];
}

/// Accepts connections until `stop` is cancelled, then waits for the open
/// ones to finish their requests (long polls answer at once on shutdown), at
/// most [`SHUTDOWN_GRACE`].
pub async fn serve(listener: TcpListener, api: impl Answer, stop: CancellationToken) {
    serve_with(listener, api, stop, Caps::for_this_process()).await
}

/// [`serve`] with the given connection caps.
pub async fn serve_with(
    listener: TcpListener,
    api: impl Answer,
    stop: CancellationToken,
    caps: Caps,
) {
    let admission = Admission::new(caps);
    tracing::info!(
        total = caps.total,
        untrusted = caps.untrusted,
        per_peer = caps.per_peer,
        "connection caps"
    );
    let connections = TaskTracker::new();
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    // Out of file descriptors or a connection reset before it
                    // was taken: keep serving the others.
                    tracing::warn!(error = %e, "accepting a connection failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            _ = stop.cancelled() => break,
        };
        let _ = stream.set_nodelay(true);
        let ticket = admission.admit(peer.ip());
        connections.spawn(connection(stream, peer, ticket, api.clone(), stop.clone()));
    }
    drop(listener);
    connections.close();
    if tokio::time::timeout(SHUTDOWN_GRACE, connections.wait())
        .await
        .is_err()
    {
        tracing::warn!(
            open = connections.len(),
            "stopping with requests still open after {SHUTDOWN_GRACE:?}"
        );
    }
}

/// Completes at `deadline`, never without one.
async fn until(deadline: Option<Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}

/// One client connection: its requests in order, until it closes, sends
/// something for hyper, or the hub stops. An `async` block over the arguments, not
/// an `async fn`, which would keep each of them twice for the connection's life.
#[expect(
    clippy::manual_async_fn,
    reason = "an async fn keeps its arguments twice"
)]
fn connection(
    mut stream: TcpStream,
    peer: SocketAddr,
    ticket: Ticket,
    api: impl Answer,
    stop: CancellationToken,
) -> impl Future<Output = ()> + Send {
    async move {
        let mut buf = BytesMut::new();
        // Everything held across an await here is part of every connection's
        // memory for as long as it lives (a held long poll: minutes); so the
        // request is handed off at once, and reading and writing are boxed apart.
        loop {
            // Boxed: reading a request needs more state than holding one.
            let (mut answer, close) = match Box::pin(read_request(
                &mut stream,
                &mut buf,
                &stop,
                &api,
                peer,
                &ticket,
            ))
            .await
            {
                Incoming::Plain(answer, close) => (answer, close),
                Incoming::Other => break,
                Incoming::Closed => return,
            };
            let response = loop {
                tokio::select! {
                    response = &mut answer => break response,
                    // A client that closes its connection ends its request, as hyper
                    // does; bytes of its next request are kept for later. (Polled
                    // readiness, not `readable()`: no future of its own to hold.)
                    ready = std::future::poll_fn(|cx| stream.poll_read_ready(cx)),
                        if buf.len() < MAX_HEAD + MAX_BODY =>
                    {
                        if ready.is_err() {
                            return;
                        }
                        let mut chunk = [0u8; 1024];
                        match stream.try_read(&mut chunk) {
                            Ok(0) => return,
                            Ok(n) => buf.extend_from_slice(&chunk[..n]),
                            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                            Err(_) => return,
                        }
                    }
                }
            };
            // A finished future's box is freed before writing, not after.
            drop(answer);
            let close = close || stop.is_cancelled();
            let written = write_answer(&mut stream, response, close, ticket.is_trusted()).await;
            if written.is_err() || close {
                let _ = stream.shutdown().await;
                return;
            }
        }
        // Something for hyper. Boxed: hyper's connection state is kilobytes.
        let hyper = Box::pin(hand_over(stream, buf.freeze(), peer, ticket, api, stop));
        hyper.await
    }
}

/// Writes one answer; boxed with its time limit (only while writing, not for the
/// connection's whole life): [`UNTRUSTED_WRITE`] unless the connection is `trusted`.
fn write_answer(
    stream: &mut TcpStream,
    response: axum::response::Response,
    close: bool,
    trusted: bool,
) -> Pin<Box<dyn Future<Output = io::Result<()>> + Send + '_>> {
    let writing = write_response(stream, response, close);
    if trusted {
        Box::pin(writing)
    } else {
        Box::pin(async move {
            tokio::time::timeout(UNTRUSTED_WRITE, writing)
                .await
                .unwrap_or_else(|_| Err(io::ErrorKind::TimedOut.into()))
        })
    }
}

/// What arrived on a connection.
enum Incoming {
    /// A plain request read whole, its answer started, and whether the
    /// connection closes after it (the client asked, or no room to trust it).
    Plain(Answering, bool),
    /// Something for hyper; the bytes read so far are in the buffer.
    Other,
    /// The client closed, the read failed, or the hub is stopping.
    Closed,
}

/// Reads the next request into `buf` (idle between requests, no buffer is
/// held) and starts its answer.
async fn read_request<A: Answer>(
    stream: &mut TcpStream,
    buf: &mut BytesMut,
    stop: &CancellationToken,
    api: &A,
    peer: SocketAddr,
    ticket: &Ticket,
) -> Incoming {
    let mut reading = Reading {
        stream,
        stop,
        peer,
        ticket,
    };
    let mut head = match reading.head(buf, A::STREAMED_PATHS).await {
        Ok(head) => head,
        Err(incoming) => return incoming,
    };
    if !ticket.is_trusted() && api.trusts(head.request.headers()) && !ticket.trust() {
        // No room left for one more trusted connection: answer, then close.
        head.close = true;
    }
    if !ticket.is_trusted() && head.content_length > UNTRUSTED_BODY {
        return Incoming::Other;
    }
    let whole = head.len + head.content_length;
    if let Err(incoming) = reading.body(buf, whole).await {
        return incoming;
    }
    let body = buf.split_to(whole).split_off(head.len).freeze();
    if buf.is_empty() {
        // Give the read buffer back while the request is answered: a long
        // poll may wait for minutes.
        *buf = BytesMut::new();
    }
    let (parts, ()) = head.request.into_parts();
    let mut request = Request::from_parts(parts, Body::from(body));
    request.extensions_mut().insert(ConnectInfo(peer));
    Incoming::Plain(api.answer(request), head.close)
}

/// One request being read off a connection, with what ends the reading.
struct Reading<'a> {
    stream: &'a mut TcpStream,
    stop: &'a CancellationToken,
    peer: SocketAddr,
    ticket: &'a Ticket,
}

impl Reading<'_> {
    /// Reads until `buf` starts with a whole request head this path serves; anything
    /// else is [`Incoming::Other`] (hyper's), or [`Incoming::Closed`].
    async fn head(&mut self, buf: &mut BytesMut, streamed: &[&str]) -> Result<Box<Head>, Incoming> {
        // Idle is free for a trusted connection only; a head has its time limit
        // from its first byte.
        let idle_until = (!self.ticket.is_trusted()).then(|| Instant::now() + UNTRUSTED_IDLE);
        let mut head_until = (!buf.is_empty()).then(|| Instant::now() + HEAD_TIME);
        loop {
            match parse_head(buf, streamed) {
                Parsed::Plain(head) => return Ok(head),
                Parsed::Partial if buf.len() < MAX_HEAD => {}
                Parsed::Partial | Parsed::Other => return Err(Incoming::Other),
            }
            if buf.is_empty() {
                // Idle between requests: no buffer until the next bytes arrive.
                tokio::select! {
                    ready = self.stream.readable() => if ready.is_err() { return Err(Incoming::Closed) },
                    _ = self.stop.cancelled() => return Err(Incoming::Closed),
                    _ = self.ticket.evicted() => return Err(Incoming::Closed),
                    _ = until(idle_until) => return Err(Incoming::Closed),
                }
            }
            let deadline = *head_until.get_or_insert_with(|| Instant::now() + HEAD_TIME);
            buf.reserve(READ_CHUNK);
            // Between requests a stopping hub closes the connection.
            let between_requests = buf.is_empty();
            self.read(buf, deadline, between_requests, "head").await?;
        }
    }

    /// Reads until `buf` holds `whole` bytes: a body from a connection without the
    /// secret gets the head's time.
    async fn body(&mut self, buf: &mut BytesMut, whole: usize) -> Result<(), Incoming> {
        let limit = if self.ticket.is_trusted() {
            BODY_TIME
        } else {
            HEAD_TIME
        };
        let deadline = Instant::now() + limit;
        while buf.len() < whole {
            buf.reserve(whole - buf.len());
            self.read(buf, deadline, true, "body").await?;
        }
        Ok(())
    }

    /// One read into `buf` by `deadline`; `stoppable`: a stopping hub ends it.
    async fn read(
        &mut self,
        buf: &mut BytesMut,
        deadline: Instant,
        stoppable: bool,
        what: &str,
    ) -> Result<(), Incoming> {
        tokio::select! {
            read = self.stream.read_buf(buf) => match read {
                Ok(0) | Err(_) => Err(Incoming::Closed),
                Ok(_) => Ok(()),
            },
            _ = self.stop.cancelled(), if stoppable => Err(Incoming::Closed),
            _ = self.ticket.evicted() => Err(Incoming::Closed),
            _ = tokio::time::sleep_until(deadline) => {
                tracing::info!(peer = %self.peer.ip(), "closed a connection whose request {what} was too slow");
                Err(Incoming::Closed)
            }
        }
    }
}

/// Writes the API's answer: with its length when the body's size is known
/// (every answer but a stream), else chunked as the body yields.
async fn write_response(
    stream: &mut TcpStream,
    response: axum::response::Response,
    close: bool,
) -> io::Result<()> {
    let (parts, body) = response.into_parts();
    let length = HttpBody::size_hint(&body).exact();
    // The head's parts are gone before the body is written: a stream may last for hours.
    let (mut head, bodiless) = head_of(parts, length, close);
    if bodiless {
        return stream.write_all(&head).await;
    }
    if let Some(n) = length
        && n as usize <= ONE_WRITE
    {
        let body = axum::body::to_bytes(body, ONE_WRITE)
            .await
            .map_err(io::Error::other)?;
        head.extend_from_slice(&body);
        return stream.write_all(&head).await;
    }
    stream.write_all(&head).await?;
    drop(head);
    let mut data = body.into_data_stream();
    while let Some(chunk) = data.next().await {
        let chunk = chunk.map_err(io::Error::other)?;
        if length.is_some() {
            stream.write_all(&chunk).await?;
        } else if !chunk.is_empty() {
            stream
                .write_all(format!("{:x}\r\n", chunk.len()).as_bytes())
                .await?;
            stream.write_all(&chunk).await?;
            stream.write_all(b"\r\n").await?;
        }
    }
    if length.is_none() {
        stream.write_all(b"0\r\n\r\n").await?;
    }
    Ok(())
}

/// A response's status line and headers as written, and whether it has no body.
fn head_of(parts: http::response::Parts, length: Option<u64>, close: bool) -> (Vec<u8>, bool) {
    let bodiless = parts.status.is_informational()
        || parts.status == StatusCode::NO_CONTENT
        || parts.status == StatusCode::NOT_MODIFIED;
    let mut head = Vec::with_capacity(256);
    head.extend_from_slice(b"HTTP/1.1 ");
    head.extend_from_slice(parts.status.as_str().as_bytes());
    head.push(b' ');
    head.extend_from_slice(parts.status.canonical_reason().unwrap_or("").as_bytes());
    head.extend_from_slice(b"\r\n");
    for (name, value) in &parts.headers {
        if name == CONTENT_LENGTH || name == TRANSFER_ENCODING || name == CONNECTION {
            continue;
        }
        head.extend_from_slice(name.as_str().as_bytes());
        head.extend_from_slice(b": ");
        head.extend_from_slice(value.as_bytes());
        head.extend_from_slice(b"\r\n");
    }
    match (bodiless, length) {
        (true, _) => {}
        (false, Some(n)) => head.extend_from_slice(format!("content-length: {n}\r\n").as_bytes()),
        (false, None) => head.extend_from_slice(b"transfer-encoding: chunked\r\n"),
    }
    if close {
        head.extend_from_slice(b"connection: close\r\n");
    }
    head.extend_from_slice(b"\r\n");
    (head, bodiless)
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::Router;
    use axum::routing::get;
    use tower::ServiceExt;

    #[derive(Clone)]
    struct Routed(Router);

    impl Answer for Routed {
        fn answer(&self, request: Request<Body>) -> Answering {
            let routed = self.0.clone().oneshot(request);
            Box::pin(async move { routed.await.unwrap_or_else(|never| match never {}) })
        }
        fn trusts(&self, headers: &HeaderMap) -> bool {
            headers.contains_key(http::header::AUTHORIZATION)
        }
        const STREAMED_PATHS: &'static [&'static str] = &[];
    }

    /// Serves `router` on an ephemeral port; the stop token ends it.
    async fn start(router: Router) -> (SocketAddr, CancellationToken) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let stop = CancellationToken::new();
        tokio::spawn(serve(listener, Routed(router), stop.clone()));
        (addr, stop)
    }

    /// Sends one request and reads until the server closes.
    async fn exchange(addr: SocketAddr, path: &str) -> String {
        let mut s = TcpStream::connect(addr).await.unwrap();
        let req = format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
        s.write_all(req.as_bytes()).await.unwrap();
        let mut out = Vec::new();
        tokio::time::timeout(Duration::from_secs(5), s.read_to_end(&mut out))
            .await
            .expect("the server answers and closes")
            .unwrap();
        String::from_utf8(out).unwrap()
    }

    fn router() -> Router {
        Router::new()
            .route(
                "/stream",
                get(|| async {
                    let parts =
                        ["ab", "", "cde"].map(|p| Ok::<_, io::Error>(bytes::Bytes::from(p)));
                    Body::from_stream(futures::stream::iter(parts))
                }),
            )
            .route("/big", get(|| async { "x".repeat(100_000) }))
            .route("/none", get(|| async { StatusCode::NO_CONTENT }))
    }

    fn size_of_future<F>(_: impl FnOnce() -> F) -> usize {
        size_of::<F>()
    }

    /// Every connection keeps its future for as long as it lives (a held long poll:
    /// minutes), so its size is memory × waiting agents. Debug build, an answerer of
    /// one pointer (as the hub's `Api` is): 248 bytes; as an `async fn`, which keeps
    /// each argument twice, 384.
    #[test]
    #[allow(unreachable_code, unused_variables)]
    fn a_connections_future_keeps_its_arguments_once() {
        let size = size_of_future(|| {
            let stream: TcpStream = todo!();
            let api: Routed = todo!();
            connection(stream, todo!(), todo!(), api, todo!())
        });
        assert!(size <= 300, "a connection's future is {size} bytes");
    }

    #[tokio::test]
    async fn a_body_of_unknown_length_is_sent_chunked() {
        let (addr, stop) = start(router()).await;
        let answer = exchange(addr, "/stream").await;
        assert!(answer.starts_with("HTTP/1.1 200 OK\r\n"), "{answer}");
        assert!(
            answer.contains("transfer-encoding: chunked\r\n"),
            "{answer}"
        );
        assert!(!answer.contains("content-length"), "{answer}");
        assert!(
            answer.ends_with("\r\n\r\n2\r\nab\r\n3\r\ncde\r\n0\r\n\r\n"),
            "{answer:?}"
        );
        stop.cancel();
    }

    #[tokio::test]
    async fn a_large_body_is_sent_whole_with_its_length() {
        let (addr, stop) = start(router()).await;
        let answer = exchange(addr, "/big").await;
        assert!(
            answer.contains("content-length: 100000\r\n"),
            "{answer:.200}"
        );
        let body = answer.split("\r\n\r\n").nth(1).unwrap();
        assert_eq!(body.len(), 100_000);
        stop.cancel();
    }

    #[tokio::test]
    async fn no_content_has_no_body_and_no_length() {
        let (addr, stop) = start(router()).await;
        let answer = exchange(addr, "/none").await;
        assert!(
            answer.starts_with("HTTP/1.1 204 No Content\r\n"),
            "{answer}"
        );
        assert!(!answer.contains("content-length"), "{answer}");
        assert!(answer.ends_with("\r\n\r\n"), "{answer:?}");
        stop.cancel();
    }
}
