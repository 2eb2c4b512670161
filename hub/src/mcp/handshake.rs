//! One MCP session's `initialize`, answered by rmcp's own handshake (the protocol version
//! agreed, the server's info) on a loop made for it, which ends as soon as it has
//! answered: the session's requests, `notifications/initialized` included, go to the loop
//! all sessions share ([`super::mux`]).
//!
//! Invariant: the handshake's loop ends only by reading the end of its input, and that
//! end is recorded ([`Handshake::ended`]) before rmcp closes the session for it, so the
//! session layer can tell that close from the client's. (Part of the hand-made transport:
//! see [`crate::transport`].)

use std::{
    convert::Infallible,
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

use futures::{
    StreamExt,
    channel::{mpsc, oneshot},
};
use holdline_store::lock::Unpoisoned as _;
use rmcp::{
    RoleServer,
    model::{ClientJsonRpcMessage, ServerJsonRpcMessage},
    transport::Transport,
};

/// How long `initialize` may take to be answered.
const INITIALIZE_LIMIT: Duration = Duration::from_secs(60);

/// The session's side of its handshake.
pub struct Handshake {
    inbound: mpsc::UnboundedSender<ClientJsonRpcMessage>,
    answer: Mutex<Option<oneshot::Sender<ServerJsonRpcMessage>>>,
    ended: AtomicBool,
}

/// The handshake loop's side (rmcp's transport for it).
pub struct HandshakeTransport {
    inbound: mpsc::UnboundedReceiver<ClientJsonRpcMessage>,
    handshake: Arc<Handshake>,
}

impl Handshake {
    /// A new session's handshake and the transport its loop reads and writes.
    pub fn open() -> (Arc<Handshake>, HandshakeTransport) {
        let (tx, rx) = mpsc::unbounded();
        let handshake = Arc::new(Handshake {
            inbound: tx,
            answer: Mutex::new(None),
            ended: AtomicBool::new(false),
        });
        let transport = HandshakeTransport {
            inbound: rx,
            handshake: handshake.clone(),
        };
        (handshake, transport)
    }

    /// rmcp's answer to the client's `initialize` (`None`: no answer came).
    pub async fn initialize(&self, message: ClientJsonRpcMessage) -> Option<ServerJsonRpcMessage> {
        let (tx, rx) = oneshot::channel();
        *self.answer.lock_unpoisoned() = Some(tx);
        self.inbound.unbounded_send(message).ok()?;
        tokio::time::timeout(INITIALIZE_LIMIT, rx).await.ok()?.ok()
    }

    /// Ends the loop (the session ended first).
    pub fn close(&self) {
        self.inbound.close_channel();
    }

    /// Whether the loop has read the end of its input.
    pub fn ended(&self) -> bool {
        self.ended.load(Ordering::Acquire)
    }
}

impl Transport<RoleServer> for HandshakeTransport {
    type Error = Infallible;

    fn send(
        &mut self,
        item: ServerJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let answer = self.handshake.answer.lock_unpoisoned().take();
        if let Some(answer) = answer {
            let _ = answer.send(item);
            // Answered: the loop reads the end of its input next.
            self.handshake.close();
        }
        std::future::ready(Ok(()))
    }

    async fn receive(&mut self) -> Option<ClientJsonRpcMessage> {
        let next = self.inbound.next().await;
        if next.is_none() {
            self.handshake.ended.store(true, Ordering::Release);
        }
        next
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.inbound.close();
        Ok(())
    }
}
