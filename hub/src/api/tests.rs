//! What a held long poll keeps while it waits, measured on the API the connections
//! call: every waiting agent holds one for minutes (the 10,000-waiting RSS target).

use std::sync::Arc;

use axum::body::Body;
use axum::http::{Request, header};
use tokio_util::sync::CancellationToken;

use super::*;
use holdline_core::config::Config;

const SECRET: &str = "0123456789abcdef0123456789abcdef";

/// Keys hold nothing here besides their waits (no `/mcp`).
struct NothingHeld;

impl KeyHolder for NothingHeld {
    fn end_key(
        self: Arc<Self>,
        _: holdline_core::keys::KeyName,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = usize> + Send>> {
        Box::pin(std::future::ready(0))
    }
}

/// The API of a hub on a fresh home inside `dir`, as `run` composes it (no `/mcp`).
pub(crate) fn api(dir: &std::path::Path) -> Api {
    let home = holdline_core::home::Home::new(dir.join("home"));
    home.prepare().unwrap();
    let config = Config::for_home(home.root.clone(), "127.0.0.1:13458".parse().unwrap());
    let hub = Hub::open(config, "test".into(), CancellationToken::new()).unwrap();
    let store = hub.store();
    let credentials = guard::Credentials::new(
        SECRET.into(),
        holdline_core::logins::Logins::open(store).unwrap(),
        holdline_core::keys::Keys::open(store).unwrap(),
    );
    let push = holdline_notify::push::WebPush {
        key: Arc::new(
            holdline_notify::push::VapidKey::load_or_make(&home.vapid_key_file()).unwrap(),
        ),
        subscriptions: Arc::new(holdline_notify::push::Subscriptions::open(store).unwrap()),
    };
    let state = AppState {
        hub,
        credentials: Arc::new(credentials),
        logins: Arc::default(),
        refusals: Arc::default(),
        sync: None,
        notify: None,
        push,
        key_holder: Arc::new(NothingHeld),
    };
    Api::new(state, None)
}

/// The held poll's future (`Api::answer`'s, which holds the poll once the router
/// admitted it) against the hub's own hold inside it: at most the hold, the visit and
/// the API's `Arc`. Debug-build sizes, which the tests run: 456 bytes around a hold of
/// 360. Keeping the API's state (80 bytes), the poll's
/// fields beside the hold's own and a failed admission's error took it to 960.
#[tokio::test]
async fn a_held_http_poll_keeps_little_besides_the_hubs_hold() {
    let dir = tempfile::tempdir().unwrap();
    let api = api(dir.path());
    let token = holdline_store::session::Token::generate();
    let hold = std::mem::size_of_val(&api.state().hub.poll(
        token.clone(),
        "w".into(),
        std::time::Duration::from_secs(1),
        None,
    ));
    let request = Request::post(routes::POLL)
        .header(header::HOST, "127.0.0.1:13458")
        .header(header::AUTHORIZATION, format!("Bearer {SECRET}"))
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(format!(r#"{{"token":"{token}","waitId":"w"}}"#)))
        .unwrap();
    let held = crate::transport::server::Answer::answer(&api, request);
    let size = std::mem::size_of_val(&*held);
    // A request the front door refuses is answered at once, by a smaller future.
    assert!(size > hold, "the poll was not held: {size} bytes");
    assert!(
        size <= hold + 128,
        "a held poll's future is {size} bytes around a hold of {hold}"
    );
}

/// What an answer shows a client: status, headers and body.
async fn shown(answer: axum::response::Response) -> (http::StatusCode, http::HeaderMap, String) {
    let (parts, body) = answer.into_parts();
    let body = axum::body::to_bytes(body, usize::MAX).await.unwrap();
    (
        parts.status,
        parts.headers,
        String::from_utf8_lossy(&body).into_owned(),
    )
}

/// A request to `path` on the test hub's host with `method`, `credential` and `body`,
/// from a peer as the connections give it.
fn request(method: http::Method, path: &str, credential: &str, body: String) -> Request<Body> {
    Request::builder()
        .method(method)
        .uri(path)
        .header(header::HOST, "127.0.0.1:13458")
        .header(header::AUTHORIZATION, format!("Bearer {credential}"))
        .header(header::CONTENT_TYPE, "application/json")
        .extension(axum::extract::ConnectInfo(std::net::SocketAddr::from((
            [127, 0, 0, 1],
            40000,
        ))))
        .body(Body::from(body))
        .unwrap()
}

/// The long poll is held apart from the router, but its refusals are the router's own: a
/// wrong method, a wrong credential, a foreign `Host` and a body over the JSON limit get
/// the answer, headers included, that another agent route (ack) gives.
#[tokio::test]
async fn the_held_poll_refuses_as_every_other_agent_route_does() {
    use crate::transport::server::Answer as _;
    let dir = tempfile::tempdir().unwrap();
    let api = api(dir.path());
    let small = r#"{"token":"ct_00000000000000000000000000000000","waitId":"w"}"#.to_owned();
    let huge = format!(r#"{{"waitId":"{}"}}"#, "x".repeat(JSON_LIMIT));
    let cases = [
        (http::Method::GET, SECRET, small.clone(), None),
        (http::Method::PUT, SECRET, small.clone(), None),
        (http::Method::POST, "wrong-secret", small.clone(), None),
        (
            http::Method::POST,
            SECRET,
            small.clone(),
            Some("evil.example"),
        ),
        (http::Method::POST, SECRET, huge, None),
    ];
    for (method, credential, body, host) in cases {
        let answers = [routes::POLL, routes::ACK].map(|path| {
            let mut r = request(method.clone(), path, credential, body.clone());
            if let Some(host) = host {
                r.headers_mut().insert(header::HOST, host.parse().unwrap());
            }
            api.answer(r)
        });
        let [poll, ack] = answers;
        let (poll, ack) = (shown(poll.await).await, shown(ack.await).await);
        assert!(poll.0.is_client_error(), "{method} {credential}: {poll:?}");
        assert_eq!(poll, ack, "{method} with {credential:?}, host {host:?}");
    }
}
