//! The service the shared loop runs: a session's `tools/call` goes straight to the
//! handler's `call_tool`, every other request through rmcp's own dispatch, boxed.
//!
//! Invariant: a call answered here gets exactly what rmcp's dispatch would give it — the
//! fast way is taken only where that dispatch checks nothing but the tasks capability
//! (no protocol version in the request's `_meta`), and that check is made here too.
//! Why: rmcp runs each request on a task holding its dispatch's future, which is as
//! large as the largest request it handles (~5.3 KiB in a debug build) for as long as
//! the request lasts; a waiting call lasts hours, and every waiting remote agent paid it.

use futures::{FutureExt, future::Either};
use rmcp::{
    ErrorData, RoleServer, ServerHandler, Service,
    model::{
        CallToolRequestParams, CallToolResponse, ClientCapabilities, ClientNotification,
        ClientRequest, ProtocolVersion, ServerConfig, ServerResult,
    },
    service::{NotificationContext, RequestContext},
};
use std::{borrow::Cow, future::Future, pin::Pin};

/// `S` as the shared loop serves it.
pub struct Calls<S>(pub S);

type Boxed<'a> = Pin<Box<dyn Future<Output = Result<ServerResult, ErrorData>> + Send + 'a>>;

impl<S: ServerHandler> Service<RoleServer> for Calls<S> {
    fn handle_request(
        &self,
        request: ClientRequest,
        ctx: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<ServerResult, ErrorData>> + Send + '_ {
        match request {
            ClientRequest::CallToolRequest(call) if ctx.meta.protocol_version().is_none() => {
                Either::Left(self.call_tool(call.params, ctx))
            }
            other => {
                Either::Right(Box::pin(Service::handle_request(&self.0, other, ctx)) as Boxed<'_>)
            }
        }
    }

    fn handle_notification(
        &self,
        notification: ClientNotification,
        ctx: NotificationContext<RoleServer>,
    ) -> impl Future<Output = Result<(), ErrorData>> + Send + '_ {
        Service::handle_notification(&self.0, notification, ctx)
    }

    fn get_info(&self) -> ServerConfig {
        ServerHandler::get_info(&self.0)
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        ServerHandler::supported_protocol_versions(&self.0)
    }
}

impl<S: ServerHandler> Calls<S> {
    /// The handler's `call_tool`, with the one check rmcp's dispatch makes of a call in
    /// a session: a task is answered only to a client that said it does tasks. Made
    /// before the call's future, which then holds only the handler's.
    fn call_tool(
        &self,
        params: CallToolRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<ServerResult, ErrorData>> + Send + '_ {
        let does_tasks = super::tasks::client_does_tasks(&ctx);
        self.0.call_tool(params, ctx).map(move |response| {
            let response = response?;
            if matches!(response, CallToolResponse::Task(_)) && !does_tasks {
                return Err(ErrorData::missing_required_client_capability(
                    ClientCapabilities::builder().enable_tasks().build(),
                ));
            }
            Ok(ServerResult::from(response))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::RemoteAgent;

    fn size_of_future<F>(_: impl FnOnce() -> F) -> usize {
        size_of::<F>()
    }

    #[test]
    #[allow(unreachable_code, unused_variables)]
    fn a_call_is_not_sized_by_rmcps_dispatch() {
        let served = size_of_future(|| {
            let calls: &'static Calls<RemoteAgent> = todo!();
            let request: ClientRequest = todo!();
            let ctx: RequestContext<RoleServer> = todo!();
            calls.handle_request(request, ctx)
        });
        let dispatch = size_of_future(|| {
            let agent: &'static RemoteAgent = todo!();
            let request: ClientRequest = todo!();
            let ctx: RequestContext<RoleServer> = todo!();
            Service::handle_request(agent, request, ctx)
        });
        let wait = size_of_future(|| {
            let tools: &'static holdline_tools::Tools = todo!();
            let ctx: RequestContext<RoleServer> = todo!();
            tools.call_wait(None, ctx)
        });
        // Debug build: the wait 2,120 bytes, a served call 2,392, rmcp's dispatch 4,944.
        assert!(
            served <= wait + 512,
            "a served call's future is {served} bytes, its wait's {wait}"
        );
        assert!(
            dispatch >= served + 2_048,
            "rmcp's dispatch is {dispatch} bytes, a served call {served}"
        );
    }
}
