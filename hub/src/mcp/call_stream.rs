//! A session request's response stream, as rmcp writes it to the client: its end tells
//! the call its answer left the hub ([`StreamEnded`]: a reply is acked only then), and
//! dropped before its end it cancels the call, as if the client had sent
//! `notifications/cancelled` — opencode, Continue and Gemini CLI stop a call that way
//! (Ctrl-C), and a call left running would be a ghost wait.
//!
//! Invariant: only a stream dropped before its end cancels; a call that answered (a reply,
//! "no reply yet", a task handle) is never touched. While the stream lives, its session
//! counts a call in flight.

use std::{
    pin::Pin,
    sync::Arc,
    task::{Context, Poll},
};

use futures::Stream;
use rmcp::{model::RequestId, transport::streamable_http_server::session::ServerSseMessage};
use tokio_util::sync::CancellationToken;

use super::mux::{Mux, Outgoing};

/// Set in a session call's extensions: fires once the call's response stream has been
/// handed to the connection to its end, so its answer left the hub. A stream dropped
/// before its end never fires it.
#[derive(Clone, Debug, Default)]
pub struct StreamEnded(CancellationToken);

impl StreamEnded {
    /// Whether the stream ended within `limit`.
    pub async fn within(&self, limit: std::time::Duration) -> bool {
        tokio::time::timeout(limit, self.0.cancelled())
            .await
            .is_ok()
    }
}

/// One request's stream of messages; `G` is held for as long as it lives.
pub struct CallStream<G> {
    messages: Outgoing,
    ended: StreamEnded,
    /// What cancelling the call takes, until its stream has ended.
    armed: Option<Armed>,
    _held: G,
}

struct Armed {
    mux: Arc<Mux>,
    session: Arc<str>,
    id: RequestId,
}

impl<G> CallStream<G> {
    /// `messages` of the call `session` knows as `id`, ending `ended` at their end.
    pub fn new(
        messages: Outgoing,
        ended: StreamEnded,
        cancel: Option<(Arc<Mux>, Arc<str>, RequestId)>,
        held: G,
    ) -> Self {
        CallStream {
            messages,
            ended,
            armed: cancel.map(|(mux, session, id)| Armed { mux, session, id }),
            _held: held,
        }
    }
}

impl<G: Unpin> Stream for CallStream<G> {
    type Item = ServerSseMessage;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.messages).poll_next(cx);
        if let Poll::Ready(None) = polled {
            this.armed = None;
            this.ended.0.cancel();
        }
        polled
    }
}

impl<G> Drop for CallStream<G> {
    fn drop(&mut self) {
        if let Some(Armed { mux, session, id }) = self.armed.take() {
            tracing::info!("a client closed a call's stream; cancelling the call");
            mux.cancel(&session, &id, "the client closed the stream");
        }
    }
}
