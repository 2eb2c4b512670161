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
    let Ok(fd) = std::io::stdin().as_fd().try_clone_to_owned() else {
        return Box::pin(tokio::io::stdin());
    };
    let handle: std::io::Result<Reader> = match kind(&fd) {
        Kind::Pipe => {
            tokio::net::unix::pipe::Receiver::from_owned_fd(fd).map(|r| Box::pin(r) as Reader)
        }
        Kind::Socket => socket(fd).map(|s| Box::pin(s) as Reader),
        Kind::Other => return Box::pin(tokio::io::stdin()),
    };
    handle.unwrap_or_else(|e| {
        tracing::debug!(error = %e, "stdin stays on tokio's blocking stdio");
        Box::pin(tokio::io::stdin())
    })
}

/// stdout. Must be called inside the runtime.
pub fn stdout() -> Writer {
    let Ok(fd) = std::io::stdout().as_fd().try_clone_to_owned() else {
        return Box::pin(tokio::io::stdout());
    };
    let handle: std::io::Result<Writer> = match kind(&fd) {
        Kind::Pipe => {
            tokio::net::unix::pipe::Sender::from_owned_fd(fd).map(|w| Box::pin(w) as Writer)
        }
        Kind::Socket => socket(fd).map(|s| Box::pin(s) as Writer),
        Kind::Other => return Box::pin(tokio::io::stdout()),
    };
    handle.unwrap_or_else(|e| {
        tracing::debug!(error = %e, "stdout stays on tokio's blocking stdio");
        Box::pin(tokio::io::stdout())
    })
}

fn socket(fd: OwnedFd) -> std::io::Result<tokio::net::UnixStream> {
    let s = std::os::unix::net::UnixStream::from(fd);
    s.set_nonblocking(true)?;
    tokio::net::UnixStream::from_std(s)
}
