//! `/mcp`'s hub: the agent routes' own functions ([`crate::api::agent`]) called in process
//! with the caller's credential and address — typed requests in, typed answers out, no
//! bytes in between.
//!
//! Invariant: a call can do exactly what its credential can do on the agent routes over
//! HTTP (the same functions, the same owner checks), and a key revoked since the `/mcp`
//! request began is refused at its next call, as HTTP would refuse it.

use std::{future::Future, net::SocketAddr, time::Duration};

use futures::FutureExt;

use holdline_contract::{
    AckRequest, CALL_LIMIT, CancelRequest, ErrorCode, HubAnswer, HubApi, HubError, InitAnswer,
    InitRequest, MergeAnswer, MergeRequest, PollAnswer, PollRequest, RegisterAnswer,
    RegisterRequest, SelectAnswer, SelectRequest, SessionHead, call_limit,
};

use crate::api::{
    AppState,
    agent::{self, AgentCaller},
    error::ApiError,
    guard::Caller,
};

/// The name this hub has in the tools' errors and logs.
const THIS_HUB: &str = "this hub";

/// One caller's way into the agent routes.
pub struct InProcess {
    app: AppState,
    caller: AgentCaller,
}

impl InProcess {
    /// As `who`, calling from `peer`.
    pub fn for_caller(app: AppState, who: Caller, peer: SocketAddr) -> InProcess {
        InProcess {
            app,
            caller: AgentCaller { who, peer },
        }
    }

    /// As the hub itself (the person's credential), for the acks of the shared delivery
    /// bookkeeping: an ack only says a reply reached its agent.
    pub fn for_hub(app: AppState) -> InProcess {
        InProcess::for_caller(app, Caller::Person, SocketAddr::from(([127, 0, 0, 1], 0)))
    }

    /// Runs one agent-route call within `limit`, if the credential still lives. The
    /// call's future is in the box once, inside its time limit, with nothing around it
    /// (a waiting agent's poll lives there for minutes; an `async` block would keep it
    /// twice: as what it captured and as what it awaits).
    fn call<'a, T: Send + 'a>(
        &'a self,
        limit: Duration,
        run: impl Future<Output = Result<T, ApiError>> + Send + 'a,
    ) -> HubAnswer<'a, T> {
        if let Caller::Agent { key } = &self.caller.who
            && !self.app.credentials.keys().is_live(key)
        {
            return Box::pin(std::future::ready(Err(HubError::KeyRefused)));
        }
        Box::pin(tokio::time::timeout(limit, run).map(|answer| match answer {
            Ok(answer) => answer.map_err(hub_error),
            Err(_) => Err(HubError::Unreachable {
                tried: vec![THIS_HUB.to_owned()],
            }),
        }))
    }
}

/// An agent route's refusal as the tools read it over HTTP.
fn hub_error(e: ApiError) -> HubError {
    match e.code {
        ErrorCode::KeyRefused => HubError::KeyRefused,
        code => HubError::Api {
            hub: THIS_HUB.to_owned(),
            status: e.status.as_u16(),
            code,
            message: e.message,
        },
    }
}

impl HubApi for InProcess {
    fn name(&self) -> &str {
        THIS_HUB
    }

    fn init(&self, request: InitRequest) -> HubAnswer<'_, InitAnswer> {
        self.call(CALL_LIMIT, agent::init(&self.app, &self.caller, request))
    }

    fn select(&self, request: SelectRequest) -> HubAnswer<'_, SelectAnswer> {
        self.call(CALL_LIMIT, agent::select(&self.app, &self.caller, request))
    }

    fn register(
        &self,
        request: RegisterRequest,
        within: Option<Duration>,
    ) -> HubAnswer<'_, RegisterAnswer> {
        let limit = call_limit(CALL_LIMIT, within);
        self.call(limit, agent::register(&self.app, &self.caller, request))
    }

    fn poll(&self, request: PollRequest, within: Option<Duration>) -> HubAnswer<'_, PollAnswer> {
        let hold = Duration::from_millis(request.timeout_ms.unwrap_or_default());
        let limit = call_limit(hold + CALL_LIMIT, within);
        self.call(limit, agent::poll(&self.app, &self.caller, request))
    }

    fn ack(&self, request: AckRequest) -> HubAnswer<'_, ()> {
        self.call(CALL_LIMIT, async move {
            agent::ack(&self.app, &self.caller, request).await.map(drop)
        })
    }

    fn cancel(&self, request: CancelRequest) -> HubAnswer<'_, ()> {
        self.call(CALL_LIMIT, async move {
            agent::cancel(&self.app, &self.caller, request)
                .await
                .map(drop)
        })
    }

    fn merge(&self, request: MergeRequest) -> HubAnswer<'_, MergeAnswer> {
        self.call(CALL_LIMIT, agent::merge(&self.app, &self.caller, request))
    }

    fn session(&self, token: &str) -> HubAnswer<'_, SessionHead> {
        let token = token.to_owned();
        self.call(CALL_LIMIT, async move {
            agent::session_head(&self.app, &self.caller.who, &token)
                .map(|info| self.app.session_dto(info).head)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A waiting remote agent's poll is this box for minutes: the hub's hold, its time
    /// limit and little else. Debug build: 480 bytes around a hold of 360; with the call
    /// kept twice (what an `async` block captured and what it awaited) and the route an
    /// `async fn`, 1,056.
    #[tokio::test]
    async fn an_in_process_poll_is_the_hubs_hold_and_its_time_limit() {
        let dir = tempfile::tempdir().unwrap();
        let api = crate::api::tests::api(dir.path());
        let token = holdline_store::session::Token::generate();
        let hold = std::mem::size_of_val(&api.state().hub.poll(
            token.clone(),
            "w".into(),
            Duration::from_secs(1),
            None,
        ));
        let hub = InProcess::for_hub(api.state().clone());
        let request = PollRequest {
            token: token.to_string(),
            wait_id: "w".into(),
            timeout_ms: Some(1000),
        };
        let poll = hub.poll(request, None);
        let size = std::mem::size_of_val(&*poll);
        assert!(
            size <= hold + 160,
            "an in-process poll is {size} bytes around a hold of {hold}"
        );
    }
}
