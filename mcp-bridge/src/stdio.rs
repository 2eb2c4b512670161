//! The bridge's stdin and stdout as non-blocking async handles when they are
//! pipes or sockets (as MCP clients give them), so a message is read or written
//! on the runtime's own thread; anything else (a terminal, a file) falls back to
//! tokio's stdio, which hands every read and write to a blocking thread.

use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::fs::FileTypeExt;
use std::pin::Pin;

use tokio::io::{AsyncRead, AsyncWrite};

pub type Reader = Pin<Box<dyn AsyncRead + Send>>;
pub type Writer = Pin<Box<dyn AsyncWrite + Send>>;

/// What a file descriptor is connected to.
enum Kind {
    Pipe,
    Socket,
    Other,
}

fn kind(fd: &OwnedFd) -> Kind {
    let Ok(dup) = fd.try_clone() else {
        return Kind::Other;
    };
    match std::fs::File::from(dup).metadata() {
        Ok(m) if m.file_type().is_fifo() => Kind::Pipe,
        Ok(m) if m.file_type().is_socket() => Kind::Socket,
        _ => Kind::Other,
    }
}

/// stdin. Must be called inside the runtime.
pub fn stdin() -> Reader {
    open(
        "stdin",
        std::io::stdin().as_fd().try_clone_to_owned(),
        |fd| tokio::net::unix::pipe::Receiver::from_owned_fd(fd).map(|r| Box::pin(r) as Reader),
        |s| Box::pin(s),
        || Box::pin(tokio::io::stdin()),
    )
}

/// stdout. Must be called inside the runtime.
pub fn stdout() -> Writer {
    open(
        "stdout",
        std::io::stdout().as_fd().try_clone_to_owned(),
        |fd| tokio::net::unix::pipe::Sender::from_owned_fd(fd).map(|w| Box::pin(w) as Writer),
        |s| Box::pin(s),
        || Box::pin(tokio::io::stdout()),
    )
}

/// `pipe` or `socket` on a copy of the stream's descriptor by what it is, else `blocking`.
fn open<T>(
    name: &str,
    fd: std::io::Result<OwnedFd>,
    pipe: impl FnOnce(OwnedFd) -> std::io::Result<T>,
    socket_of: impl FnOnce(tokio::net::UnixStream) -> T,
    blocking: impl FnOnce() -> T,
) -> T {
    let Ok(fd) = fd else {
        return blocking();
    };
    let handle = match kind(&fd) {
        Kind::Pipe => pipe(fd),
        Kind::Socket => socket(fd).map(socket_of),
        Kind::Other => return blocking(),
    };
    handle.unwrap_or_else(|e| {
        tracing::debug!(error = %e, "{name} stays on tokio's blocking stdio");
        blocking()
    })
}

fn socket(fd: OwnedFd) -> std::io::Result<tokio::net::UnixStream> {
    let s = std::os::unix::net::UnixStream::from(fd);
    s.set_nonblocking(true)?;
    tokio::net::UnixStream::from_std(s)
}
