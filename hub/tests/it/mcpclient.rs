//! A bare MCP client of the hub's `/mcp` (Streamable HTTP, raw JSON-RPC over reqwest), for
//! tests that kill the hub under it: any failed request drops its MCP session, and the
//! next one opens a new session (as a real client reconnects after a hub restart).

use std::net::SocketAddr;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde_json::{Value, json};

/// One MCP client: one MCP session at a time, opened on demand.
pub struct McpClient {
    http: reqwest::Client,
    url: String,
    secret: String,
    /// Declares the MCP Tasks extension at `initialize`.
    tasks: bool,
    session: Mutex<Option<String>>,
    next_id: AtomicU64,
}

impl McpClient {
    pub fn new(addr: SocketAddr, secret: &str, tasks: bool) -> McpClient {
        McpClient {
            http: reqwest::Client::builder()
                .timeout(Duration::from_secs(60))
                .build()
                .unwrap(),
            url: format!("http://{addr}/mcp"),
            secret: secret.to_owned(),
            tasks,
            session: Mutex::default(),
            next_id: AtomicU64::new(1),
        }
    }

    /// Sends `method` and answers its JSON-RPC `result`; `Err` when the request failed in
    /// flight or was refused (the MCP session is then dropped), or the answer is an error.
    pub async fn request(&self, method: &str, params: Value) -> Result<Value, String> {
        let session = self.session().await?;
        let answer = self.post(Some(&session), method, params).await;
        if answer.is_err() {
            self.session.lock().unwrap().take();
        }
        answer.map(|(_, result)| result)
    }

    async fn session(&self) -> Result<String, String> {
        if let Some(s) = self.session.lock().unwrap().clone() {
            return Ok(s);
        }
        let mut capabilities = json!({});
        if self.tasks {
            capabilities["extensions"] = json!({"io.modelcontextprotocol/tasks": {}});
        }
        let (headers, _) = self
            .post(
                None,
                "initialize",
                json!({"protocolVersion": "2025-11-25", "capabilities": capabilities,
                       "clientInfo": {"name": "holdline-crash-test", "version": "1"}}),
            )
            .await?;
        let id = headers
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .ok_or("initialize answered no Mcp-Session-Id")?
            .to_owned();
        self.notify(&id, "notifications/initialized").await?;
        *self.session.lock().unwrap() = Some(id.clone());
        Ok(id)
    }

    async fn notify(&self, session: &str, method: &str) -> Result<(), String> {
        self.http
            .post(&self.url)
            .bearer_auth(&self.secret)
            .header("Accept", "application/json, text/event-stream")
            .header("Mcp-Session-Id", session)
            .json(&json!({"jsonrpc": "2.0", "method": method}))
            .send()
            .await
            .map_err(|e| e.to_string())?;
        Ok(())
    }

    async fn post(
        &self,
        session: Option<&str>,
        method: &str,
        params: Value,
    ) -> Result<(reqwest::header::HeaderMap, Value), String> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let mut request = self
            .http
            .post(&self.url)
            .bearer_auth(&self.secret)
            .header("Accept", "application/json, text/event-stream")
            .json(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        if let Some(s) = session {
            request = request.header("Mcp-Session-Id", s);
        }
        let response = request.send().await.map_err(|e| e.to_string())?;
        let status = response.status();
        let headers = response.headers().clone();
        let body = response.text().await.map_err(|e| e.to_string())?;
        if !status.is_success() {
            return Err(format!("{method} answered {status}: {body}"));
        }
        let message = messages(&body)
            .into_iter()
            .find(|m| m["id"] == json!(id))
            .ok_or_else(|| format!("{method}: no answer in {body:?}"))?;
        match message.get("result") {
            Some(result) => Ok((headers, result.clone())),
            None => Err(format!("{method} answered an error: {message}")),
        }
    }
}

/// The JSON-RPC messages of an answer: one JSON body, or an event stream's `data:` lines.
fn messages(body: &str) -> Vec<Value> {
    if let Ok(v) = serde_json::from_str::<Value>(body) {
        return vec![v];
    }
    body.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter_map(|d| serde_json::from_str(d.trim()).ok())
        .collect()
}
