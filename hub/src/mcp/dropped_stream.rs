//! A tool call on an MCP session whose response stream the client closes before the
//! answer is cancelled, as if the client had sent `notifications/cancelled`: opencode,
//! Continue and Gemini CLI stop a call that way (Ctrl-C), and rmcp's session layer would
//! keep the call running for a resumption that never comes — a ghost wait.
//!
//! It also tells the call when its stream has ended, answer sent: a reply is acked only
//! then ([`StreamEnded`]).
//!
//! Invariant: only a stream dropped before its end cancels; a call that answered (a reply,
//! "no reply yet", a task handle) is never touched.

use std::{
    pin::Pin,
    task::{Context, Poll},
};

use axum::{
    body::{Body, Bytes},
    http::{HeaderMap, HeaderValue, Method, Request, header},
};
use hyper::body::Frame;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

use super::Service;

/// A `tools/call` sent on a session: what cancelling it takes.
pub struct SessionCall {
    request_id: serde_json::Value,
    headers: HeaderMap,
    ended: StreamEnded,
}

/// Set in a session call's request extensions: fires once the call's response stream has
/// been handed to the connection to its end, so its answer left the hub. A stream dropped
/// before its end never fires it.
#[derive(Clone, Default)]
pub struct StreamEnded(CancellationToken);

impl StreamEnded {
    /// Whether the stream ended within `limit`.
    pub async fn within(&self, limit: std::time::Duration) -> bool {
        tokio::time::timeout(limit, self.0.cancelled())
            .await
            .is_ok()
    }
}

impl SessionCall {
    /// The call `message`, when `headers` name a session and it is a `tools/call`.
    pub fn find(headers: &HeaderMap, message: &serde_json::Value) -> Option<SessionCall> {
        headers.get(super::SESSION_HEADER)?;
        if message["method"] != "tools/call" {
            return None;
        }
        let request_id = message.get("id")?.clone();
        let mut kept = HeaderMap::new();
        for name in [
            header::HOST,
            header::AUTHORIZATION,
            header::HeaderName::from_static("mcp-session-id"),
            header::HeaderName::from_static("mcp-protocol-version"),
        ] {
            if let Some(v) = headers.get(&name) {
                kept.insert(name, v.clone());
            }
        }
        Some(SessionCall {
            request_id,
            headers: kept,
            ended: StreamEnded::default(),
        })
    }

    /// What the call learns its stream's end by (for its request's extensions).
    pub fn ended(&self) -> StreamEnded {
        self.ended.clone()
    }

    /// `body`, which cancels the call at rmcp when it is dropped before its end.
    pub fn watch(self, body: Body, service: Service) -> Body {
        Body::new(Watched {
            inner: body,
            armed: Some((self, service)),
        })
    }

    fn cancel(self, service: Service) {
        let notification = serde_json::json!({
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": self.request_id, "reason": "the client closed the stream"},
        });
        let mut request = Request::builder()
            .method(Method::POST)
            .uri("/mcp")
            .header(header::CONTENT_TYPE, "application/json")
            .header(
                header::ACCEPT,
                HeaderValue::from_static("application/json, text/event-stream"),
            )
            .body(Body::from(notification.to_string()))
            .expect("a fixed request is valid");
        request.headers_mut().extend(self.headers);
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(async move {
                tracing::info!("a client closed a call's stream; cancelling the call");
                let _ = service.oneshot(request).await;
            });
        }
    }
}

/// A response body that cancels its call if dropped before its end.
struct Watched {
    inner: Body,
    armed: Option<(SessionCall, Service)>,
}

impl hyper::body::Body for Watched {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.inner).poll_frame(cx);
        if let Poll::Ready(None) = polled
            && let Some((call, _)) = this.armed.take()
        {
            call.ended.0.cancel();
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.inner.size_hint()
    }
}

impl Drop for Watched {
    fn drop(&mut self) {
        if let Some((call, service)) = self.armed.take() {
            call.cancel(service);
        }
    }
}
