//! What a held long poll keeps while it waits, measured on the API the connections
//! call: every waiting agent holds one for minutes (the 10,000-waiting RSS target).

use std::sync::Arc;

use axum::body::Body;
use axum::http::{Request, header};
use tokio_util::sync::CancellationToken;

use super::*;
use crate::config::Config;

const SECRET: &str = "0123456789abcdef0123456789abcdef";

/// Keys hold nothing here besides their waits (no `/mcp`).
struct NothingHeld;

impl KeyHolder for NothingHeld {
    fn end_key(
        self: Arc<Self>,
        _: crate::keys::KeyName,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = usize> + Send>> {
        Box::pin(std::future::ready(0))
    }
}

/// The API of a hub on a fresh home inside `dir`, as `run` composes it (no `/mcp`).
pub(crate) fn api(dir: &std::path::Path) -> Api {
    let home = crate::home::Home::new(dir.join("home"));
    home.prepare().unwrap();
    let config = Config::for_home(home.root.clone(), "127.0.0.1:13458".parse().unwrap());
    let hub = Hub::open(config, "test".into(), CancellationToken::new()).unwrap();
    let store = hub.store();
    let secret = guard::Secret::new(
        SECRET.into(),
        crate::logins::Logins::open(store).unwrap(),
        crate::keys::Keys::open(store).unwrap(),
    );
    let push = crate::push::WebPush {
        key: Arc::new(crate::push::VapidKey::load_or_make(&home.vapid_key_file()).unwrap()),
        subscriptions: Arc::new(crate::push::Subscriptions::open(store).unwrap()),
    };
    let state = AppState {
        hub,
        secret: Arc::new(secret),
        logins: Arc::default(),
        refusals: Arc::default(),
        sync: None,
        notify: None,
        push,
        key_holder: Arc::new(NothingHeld),
    };
    Api::new(state, None)
}

/// The held poll's future against the hub's own hold inside it: at most the hold,
/// the visit and what admitted the poll. Debug-build sizes, which the tests run:
/// 456 bytes around a hold of 360. Keeping the API's state (80 bytes), the poll's
/// fields beside the hold's own and a failed admission's error took it to 960.
#[tokio::test]
async fn a_held_http_poll_keeps_little_besides_the_hubs_hold() {
    let dir = tempfile::tempdir().unwrap();
    let api = api(dir.path());
    let token = crate::session::Token::generate();
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
    let held = agent::held_poll(api, request);
    let size = std::mem::size_of_val(&*held);
    // A refused request's answer is ready at once and smaller than any hold.
    assert!(size > hold, "the poll was not held: {size} bytes");
    assert!(
        size <= hold + 128,
        "a held poll's future is {size} bytes around a hold of {hold}"
    );
}
