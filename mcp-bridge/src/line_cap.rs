//! A cap on the length of one JSON-RPC line from the client. A longer line is not
//! parsed: it is replaced by a small `holdline/oversized` request carrying the same id,
//! which the server answers with a clear error, so the client hears back instead of
//! waiting forever for an answer to a line that was silently dropped.
//!
//! Invariant: lines within the cap pass through byte for byte; an over-long line costs at
//! most the cap in memory (its rest is scanned for the id and discarded as it arrives).

use std::{
    collections::VecDeque,
    pin::Pin,
    task::{Context, Poll},
};

use tokio::io::{AsyncRead, ReadBuf};

pub use holdline_tools::server::{MAX_LINE, OVERSIZED_METHOD};

/// Wraps the client's stream; see the module docs.
pub struct LineCap<R> {
    inner: R,
    max: usize,
    /// The line read so far, while it is within the cap.
    line: Vec<u8>,
    /// Bytes ready for the reader.
    ready: VecDeque<u8>,
    /// Set while the rest of an over-long line is skipped.
    skipping: Option<(IdScanner, usize)>,
}

impl<R> LineCap<R> {
    pub fn new(inner: R, max: usize) -> Self {
        LineCap {
            inner,
            max,
            line: Vec::new(),
            ready: VecDeque::new(),
            skipping: None,
        }
    }

    fn take(&mut self, bytes: &[u8]) {
        let mut rest = bytes;
        while !rest.is_empty() {
            let newline = rest.iter().position(|b| *b == b'\n');
            let (chunk, after) = match newline {
                Some(i) => (&rest[..=i], &rest[i + 1..]),
                None => (rest, &[][..]),
            };
            rest = after;
            if let Some((scanner, length)) = &mut self.skipping {
                scanner.feed(chunk);
                *length += chunk.len();
                if newline.is_some() {
                    let (scanner, length) = self.skipping.take().expect("skipping");
                    self.stand_in(scanner, length);
                }
                continue;
            }
            self.line.extend_from_slice(chunk);
            if self.line.len() > self.max {
                let mut scanner = IdScanner::default();
                scanner.feed(&self.line);
                let length = self.line.len();
                self.line = Vec::new();
                if newline.is_some() {
                    self.stand_in(scanner, length);
                } else {
                    self.skipping = Some((scanner, length));
                }
            } else if newline.is_some() {
                self.ready.extend(self.line.drain(..));
            }
        }
    }

    /// Queues the request that answers for an over-long line (nothing for a notification).
    fn stand_in(&mut self, scanner: IdScanner, length: usize) {
        tracing::warn!(
            bytes = length,
            "a message from the client was over the line limit"
        );
        let Some(id) = scanner.id() else {
            return;
        };
        let request = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"{OVERSIZED_METHOD}\",\"params\":{{\"bytes\":{length}}}}}\n"
        );
        self.ready.extend(request.bytes());
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for LineCap<R> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        loop {
            if !this.ready.is_empty() {
                let n = this.ready.len().min(buf.remaining());
                let (a, b) = this.ready.as_slices();
                let from_a = n.min(a.len());
                buf.put_slice(&a[..from_a]);
                buf.put_slice(&b[..n - from_a]);
                this.ready.drain(..n);
                return Poll::Ready(Ok(()));
            }
            let mut chunk = [0u8; 16 * 1024];
            let mut read = ReadBuf::new(&mut chunk);
            match Pin::new(&mut this.inner).poll_read(cx, &mut read) {
                Poll::Ready(Ok(())) if read.filled().is_empty() => {
                    // End of input: a partial line within the cap goes on as it is.
                    this.ready.extend(this.line.drain(..));
                    if this.ready.is_empty() {
                        return Poll::Ready(Ok(()));
                    }
                }
                Poll::Ready(Ok(())) => this.take(read.filled()),
                other => return other,
            }
        }
    }
}

/// Finds the value of the top-level `"id"` member of a JSON object streamed in pieces,
/// wherever it is (the MCP TypeScript SDK writes it last).
#[derive(Default)]
struct IdScanner {
    depth: u32,
    in_string: bool,
    escaped: bool,
    /// The top-level key just read (only while it is short).
    key: Vec<u8>,
    /// Whether the string being read is a key at depth 1.
    reading_key: bool,
    /// After `"id":` at depth 1: the raw value so far.
    value: Option<Vec<u8>>,
    found: Option<Vec<u8>>,
    expect_key: bool,
}

impl IdScanner {
    fn feed(&mut self, bytes: &[u8]) {
        for &b in bytes {
            if let Some(v) = &mut self.value {
                let ends = !self.in_string && (b == b',' || b == b'}') && self.depth == 1;
                if ends {
                    let raw = std::mem::take(v);
                    self.value = None;
                    self.found = Some(raw);
                } else {
                    if v.len() < 256 && !(v.is_empty() && b.is_ascii_whitespace()) {
                        v.push(b);
                    }
                    if !self.string_byte(b) && b == b'"' {
                        self.in_string = true;
                    }
                    continue;
                }
            }
            if self.in_string {
                let was_escaped = self.escaped;
                self.string_byte(b);
                if !self.in_string {
                    self.reading_key = false;
                } else if self.reading_key && !was_escaped && b != b'\\' && self.key.len() < 8 {
                    self.key.push(b);
                }
                continue;
            }
            match b {
                b'"' => {
                    self.in_string = true;
                    self.reading_key = self.depth == 1 && self.expect_key;
                    if self.reading_key {
                        self.key.clear();
                    }
                }
                b'{' | b'[' => {
                    self.depth += 1;
                    self.expect_key = b == b'{' && self.depth == 1;
                }
                b'}' | b']' => self.depth = self.depth.saturating_sub(1),
                b',' if self.depth == 1 => self.expect_key = true,
                b':' if self.depth == 1 => {
                    self.expect_key = false;
                    if self.key == b"id" {
                        self.value = Some(Vec::new());
                    }
                }
                _ => {}
            }
        }
    }

    /// Takes one byte inside a string (escapes, the closing quote); false when not in one.
    fn string_byte(&mut self, b: u8) -> bool {
        if !self.in_string {
            return false;
        }
        if self.escaped {
            self.escaped = false;
        } else if b == b'\\' {
            self.escaped = true;
        } else if b == b'"' {
            self.in_string = false;
        }
        true
    }

    /// The id, if it is a JSON string or number.
    fn id(&self) -> Option<String> {
        let raw = std::str::from_utf8(self.found.as_deref()?).ok()?.trim();
        let ok = matches!(
            serde_json::from_str::<serde_json::Value>(raw),
            Ok(serde_json::Value::String(_) | serde_json::Value::Number(_))
        );
        ok.then(|| raw.to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    async fn through(input: &[u8], max: usize) -> String {
        let mut out = String::new();
        LineCap::new(input, max)
            .read_to_string(&mut out)
            .await
            .unwrap();
        out
    }

    #[tokio::test]
    async fn lines_within_the_cap_pass_unchanged() {
        let input = b"{\"a\":1}\n{\"b\":\"xx\"}\npartial";
        assert_eq!(through(input, 64).await.as_bytes(), input);
    }

    #[tokio::test]
    async fn an_over_long_line_becomes_a_stand_in_with_its_id_wherever_the_id_is() {
        let long = "x".repeat(500);
        let input = format!(
            "{{\"jsonrpc\":\"2.0\",\"method\":\"tools/call\",\"params\":{{\"id\":\"inner\",\"m\":\"{long}\"}},\"id\":42}}\n{{\"ok\":1}}\n"
        );
        let out = through(input.as_bytes(), 100).await;
        let mut lines = out.lines();
        let first: serde_json::Value = serde_json::from_str(lines.next().unwrap()).unwrap();
        assert_eq!(first["id"], 42);
        assert_eq!(first["method"], OVERSIZED_METHOD);
        assert_eq!(first["params"]["bytes"], input.find('\n').unwrap() + 1);
        assert_eq!(lines.next(), Some("{\"ok\":1}"));

        let input = format!("{{\"id\":\"a\\\"b\",\"params\":\"{long}\"}}\n");
        let out = through(input.as_bytes(), 100).await;
        let first: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
        assert_eq!(first["id"], "a\"b");
    }

    #[tokio::test]
    async fn an_over_long_notification_is_dropped() {
        let input = format!("{{\"method\":\"x\",\"params\":\"{}\"}}\n", "y".repeat(300));
        assert_eq!(through(input.as_bytes(), 100).await, "");
    }
}
