//! The hub's agent routes as the tools of `/mcp` reach them: in process, through the
//! same router, guards and handlers as a bridge's HTTP request, carrying the `/mcp`
//! caller's credentials, `Host` and address.

use std::net::SocketAddr;

use axum::{
    body::{Body, to_bytes},
    extract::ConnectInfo,
    http::{HeaderMap, HeaderValue, Request, header},
};
use holdline_mcp::hub_client::{InProcessAnswer, InProcessHub, MAX_ANSWER};

use crate::api::Api;
use crate::server::Answer;

/// One caller's way into the agent routes.
pub struct AgentRoutes {
    api: Api,
    authorization: Option<HeaderValue>,
    host: HeaderValue,
    peer: SocketAddr,
}

impl AgentRoutes {
    /// As the caller of a `/mcp` request with `headers` from `peer`.
    pub fn for_caller(api: Api, headers: &HeaderMap, peer: SocketAddr) -> AgentRoutes {
        AgentRoutes {
            api,
            authorization: headers.get(header::AUTHORIZATION).cloned(),
            host: headers
                .get(header::HOST)
                .cloned()
                .unwrap_or_else(|| HeaderValue::from_static("localhost")),
            peer,
        }
    }

    /// As the hub itself (with its secret), for the acks of the shared delivery
    /// bookkeeping.
    pub fn for_hub(api: Api) -> AgentRoutes {
        let bearer = HeaderValue::from_str(&format!("Bearer {}", api.state().secret.value()))
            .expect("the secret is a valid header value");
        AgentRoutes {
            api,
            authorization: Some(bearer),
            host: HeaderValue::from_static("localhost"),
            peer: SocketAddr::from(([127, 0, 0, 1], 0)),
        }
    }
}

impl InProcessHub for AgentRoutes {
    fn call(&self, method: reqwest::Method, path: &str, body: Option<Vec<u8>>) -> InProcessAnswer {
        let mut request = Request::builder()
            .method(method)
            .uri(path)
            .header(header::HOST, self.host.clone())
            .header(header::CONTENT_TYPE, "application/json");
        if let Some(authorization) = &self.authorization {
            request = request.header(header::AUTHORIZATION, authorization.clone());
        }
        let mut request = request
            .body(Body::from(body.unwrap_or_default()))
            .expect("a path from the bridge's own list is a valid URI");
        request.extensions_mut().insert(ConnectInfo(self.peer));
        let answering = self.api.answer(request);
        Box::pin(async move {
            let response = answering.await;
            let status = response.status().as_u16();
            match to_bytes(response.into_body(), MAX_ANSWER).await {
                Ok(bytes) => (status, bytes.to_vec()),
                Err(_) => (502, Vec::new()),
            }
        })
    }
}
