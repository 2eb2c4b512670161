//! Who may talk to the hub, in two parts: the front door every request passes
//! (`Host`/`Origin`, the refusal log, [`Visit`]) and the credentials an
//! authenticated route takes (the secret, logins, agent keys, [`Caller`]).
//!
//! Invariant: the front door runs before any credential is looked at, and
//! no route answers without both.

mod credentials;
mod front_door;

pub use credentials::{
    Audience, COOKIE, Caller, Credentials, LoginLimiter, TLS_COOKIE, authenticate, is_authorized,
    login_cookie, login_ids, logout_cookie,
};
pub use front_door::{RefusalLog, Visit};
