//! A minimal HTTP/1.1 keep-alive client over one TCP connection: enough for
//! the hub's JSON routes, and it counts every byte sent and received, which
//! the idle-cost figure needs and a general client would hide.

use std::net::SocketAddr;
use std::time::Duration;

use anyhow::{Context, bail};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

/// One answer: status, body, and the bytes this exchange moved each way.
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    pub body: Vec<u8>,
    pub sent: usize,
    pub received: usize,
}

impl Answer {
    pub fn json(&self) -> anyhow::Result<Value> {
        serde_json::from_slice(&self.body).with_context(|| {
            format!(
                "status {}: not JSON: {}",
                self.status,
                String::from_utf8_lossy(&self.body)
            )
        })
    }

    /// The JSON body of a 2xx answer, else an error naming the status and body.
    pub fn ok_json(&self) -> anyhow::Result<Value> {
        if !(200..300).contains(&self.status) {
            bail!(
                "hub answered {}: {}",
                self.status,
                String::from_utf8_lossy(&self.body)
            );
        }
        self.json()
    }
}

/// How long an answer may take beyond what the request itself asks the hub
/// to hold: past it the hub is taken to be stuck and the run fails.
pub const STUCK: Duration = Duration::from_secs(30);

/// One keep-alive connection to the hub.
pub struct Conn {
    stream: BufReader<TcpStream>,
    host: String,
    auth: String,
    /// Extra time the current request may take (a long poll's hold).
    hold: Duration,
}

impl Conn {
    pub async fn connect(addr: SocketAddr, secret: &str) -> anyhow::Result<Conn> {
        let tcp = TcpStream::connect(addr)
            .await
            .with_context(|| format!("connect to the hub at {addr}"))?;
        tcp.set_nodelay(true)?;
        Ok(Conn {
            stream: BufReader::with_capacity(4096, tcp),
            host: addr.to_string(),
            auth: format!("Bearer {secret}"),
            hold: Duration::ZERO,
        })
    }

    pub async fn get(&mut self, path: &str) -> anyhow::Result<Answer> {
        let head = format!(
            "GET {path} HTTP/1.1\r\nHost: {}\r\nAuthorization: {}\r\n\r\n",
            self.host, self.auth
        );
        self.exchange(head.into_bytes()).await
    }

    pub async fn post(&mut self, path: &str, body: &Value) -> anyhow::Result<Answer> {
        let body = serde_json::to_vec(body)?;
        let mut req = format!(
            "POST {path} HTTP/1.1\r\nHost: {}\r\nAuthorization: {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
            self.host,
            self.auth,
            body.len()
        )
        .into_bytes();
        req.extend_from_slice(&body);
        self.exchange(req).await
    }

    /// A long poll: the hub may hold it for `hold` before answering.
    pub async fn post_held(
        &mut self,
        path: &str,
        body: &Value,
        hold: Duration,
    ) -> anyhow::Result<Answer> {
        self.hold = hold;
        let a = self.post(path, body).await;
        self.hold = Duration::ZERO;
        a
    }

    async fn exchange(&mut self, req: Vec<u8>) -> anyhow::Result<Answer> {
        let limit = STUCK + self.hold;
        match tokio::time::timeout(limit, self.exchange_inner(req)).await {
            Ok(a) => a,
            Err(_) => bail!(
                "the hub stopped answering: no answer within {} s (is it stuck? `gdb -p PID -batch -ex 'thread apply all bt'` shows where)",
                limit.as_secs()
            ),
        }
    }

    async fn exchange_inner(&mut self, req: Vec<u8>) -> anyhow::Result<Answer> {
        self.stream.get_mut().write_all(&req).await?;
        let mut received = 0;
        let mut line = String::new();
        received += self.stream.read_line(&mut line).await?;
        if line.is_empty() {
            bail!("the hub closed the connection");
        }
        let status: u16 = line
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .with_context(|| format!("bad status line {line:?}"))?;
        let mut length = None;
        let mut chunked = false;
        loop {
            line.clear();
            let n = self.stream.read_line(&mut line).await?;
            if n == 0 {
                bail!("the hub closed the connection mid-answer");
            }
            received += n;
            let l = line.trim_end();
            if l.is_empty() {
                break;
            }
            if let Some((name, value)) = l.split_once(':') {
                let name = name.trim();
                if name.eq_ignore_ascii_case("content-length") {
                    length = value.trim().parse::<usize>().ok();
                } else if name.eq_ignore_ascii_case("transfer-encoding")
                    && value.trim().eq_ignore_ascii_case("chunked")
                {
                    chunked = true;
                }
            }
        }
        let body = if chunked {
            self.read_chunked(&mut received).await?
        } else {
            let mut body = vec![0; length.unwrap_or(0)];
            self.stream.read_exact(&mut body).await?;
            received += body.len();
            body
        };
        Ok(Answer {
            status,
            body,
            sent: req.len(),
            received,
        })
    }

    async fn read_chunked(&mut self, received: &mut usize) -> anyhow::Result<Vec<u8>> {
        let mut body = Vec::new();
        let mut line = String::new();
        loop {
            line.clear();
            *received += self.stream.read_line(&mut line).await?;
            let size = usize::from_str_radix(line.trim().split(';').next().unwrap_or(""), 16)
                .with_context(|| format!("bad chunk size {line:?}"))?;
            let start = body.len();
            body.resize(start + size + 2, 0);
            self.stream.read_exact(&mut body[start..]).await?;
            *received += size + 2;
            body.truncate(start + size);
            if size == 0 {
                return Ok(body);
            }
        }
    }
}
