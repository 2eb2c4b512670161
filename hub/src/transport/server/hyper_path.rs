//! The connections the hub's own path hands over: served by hyper (HTTP/1
//! or 2, event streams, upgrades, chunked or large bodies) with the same
//! limits — head time and size, body time, the untrusted lifetime — and the
//! bytes already read replayed first.

use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::body::{Body, HttpBody};
use axum::extract::ConnectInfo;
use bytes::{Buf, Bytes};
use http::Request;
use hyper::body::Frame;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::{
    Answer, BODY_TIME, HEAD_TIME, MAX_HEAD, MAX_HEADERS, SHUTDOWN_GRACE, UNTRUSTED_LIFETIME, until,
};
use crate::transport::admission::Ticket;

/// Serves the rest of the connection with hyper (HTTP/1 or 2, upgrades),
/// replaying the bytes already read, with the same limits as this path.
pub(super) async fn hand_over(
    stream: TcpStream,
    read: Bytes,
    peer: SocketAddr,
    ticket: Ticket,
    api: impl Answer,
    stop: CancellationToken,
) {
    let opened = Instant::now();
    let io = TokioIo::new(Rewind { read, stream });
    let ticket = Arc::new(ticket);
    let trust = ticket.clone();
    let service = hyper::service::service_fn(move |request: Request<hyper::body::Incoming>| {
        if !trust.is_trusted() && api.trusts(request.headers()) {
            // No room for one more trusted connection: it stays untrusted
            // and its lifetime ends it.
            trust.trust();
        }
        let deadline = (!trust.is_trusted()).then(|| opened + UNTRUSTED_LIFETIME);
        let mut request = request.map(|body| Body::new(TimedBody::new(body, deadline)));
        request.extensions_mut().insert(ConnectInfo(peer));
        let answering = api.answer(request);
        async move { Ok::<_, Infallible>(answering.await) }
    });
    let mut builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(HEAD_TIME)
        .max_buf_size(MAX_HEAD)
        .max_headers(MAX_HEADERS);
    builder
        .http2()
        .timer(TokioTimer::new())
        .max_header_list_size(MAX_HEAD as u32);
    let served = builder.serve_connection_with_upgrades(io, service);
    tokio::pin!(served);
    let mut lifetime = Some(opened + UNTRUSTED_LIFETIME);
    loop {
        tokio::select! {
            _ = served.as_mut() => return,
            _ = ticket.evicted() => return,
            _ = until(lifetime) => {
                if !ticket.is_trusted() {
                    return;
                }
                lifetime = None;
            }
            _ = stop.cancelled() => break,
        }
    }
    served.as_mut().graceful_shutdown();
    let _ = tokio::time::timeout(SHUTDOWN_GRACE, served).await;
}

/// A request body on hyper's path that must keep coming: each part within
/// [`BODY_TIME`] of the last, and the whole by `deadline` when there is one.
struct TimedBody {
    inner: hyper::body::Incoming,
    timer: Pin<Box<tokio::time::Sleep>>,
    deadline: Option<Instant>,
}

impl TimedBody {
    fn new(inner: hyper::body::Incoming, deadline: Option<Instant>) -> TimedBody {
        let next = Instant::now() + BODY_TIME;
        let first = deadline.map_or(next, |d| d.min(next));
        TimedBody {
            inner,
            timer: Box::pin(tokio::time::sleep_until(first)),
            deadline,
        }
    }
}

impl HttpBody for TimedBody {
    type Data = Bytes;
    type Error = axum::BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        if let Poll::Ready(frame) = Pin::new(&mut self.inner).poll_frame(cx) {
            let next = Instant::now() + BODY_TIME;
            let next = self.deadline.map_or(next, |d| d.min(next));
            self.timer.as_mut().reset(next);
            return Poll::Ready(frame.map(|f| f.map_err(Into::into)));
        }
        match self.timer.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Some(Err("the request body stopped arriving".into()))),
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.inner.size_hint()
    }
}

/// A socket whose first reads return bytes read from it before.
struct Rewind {
    read: Bytes,
    stream: TcpStream,
}

impl AsyncRead for Rewind {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if self.read.has_remaining() {
            let n = self.read.len().min(buf.remaining());
            buf.put_slice(&self.read[..n]);
            self.read.advance(n);
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut self.stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for Rewind {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}
