//! The smallest stdio MCP server that can answer a tool call: the reply latency
//! a client measures against it is that client's own share (its reading,
//! parsing and scheduling), the floor under any server's figure.
//!
//! It offers one tool, `wait`, whose call is answered when a datagram arrives
//! on the UDP port given: the datagram's text is the reply. No runtime, no
//! threads: a blocking read of stdin, a blocking receive, one write.

use std::io::{BufRead, Write};
use std::net::UdpSocket;

use anyhow::Context;
use serde_json::{Value, json};

pub fn serve(port: u16) -> anyhow::Result<()> {
    let replies = UdpSocket::bind(("127.0.0.1", port))
        .with_context(|| format!("cannot listen for replies on UDP 127.0.0.1:{port}"))?;
    let stdout = std::io::stdout();
    for line in std::io::stdin().lock().lines() {
        let request: Value = serde_json::from_str(&line?).context("a request is not JSON")?;
        let Some(id) = request.get("id") else {
            continue; // a notification
        };
        let result = match request["method"].as_str() {
            Some("initialize") => json!({
                "protocolVersion": request["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "holdline-bench floor", "version": env!("CARGO_PKG_VERSION")},
            }),
            Some("tools/list") => json!({"tools": [{
                "name": "wait",
                "description": "Answers with the next datagram's text.",
                "inputSchema": {"type": "object"},
            }]}),
            Some("tools/call") => {
                let mut buf = [0u8; 1024];
                let n = replies.recv(&mut buf)?;
                let text = String::from_utf8_lossy(&buf[..n]);
                json!({
                    "content": [{"type": "text", "text": text}],
                    "structuredContent": {"status": "replied", "reply": text},
                    "isError": false,
                })
            }
            _ => json!({}),
        };
        let mut out = serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": id, "result": result}))?;
        out.push(b'\n');
        let mut stdout = stdout.lock();
        stdout.write_all(&out)?;
        stdout.flush()?;
    }
    Ok(())
}
