//! Vertical binding and owners: which IDE chat on which machine a session is
//! bound to, the three check levels, and whose it is; pure logic, no IO.
//!
//! Invariant: an agent call reaches a session only if the caller's credential
//! owns it ([`Fingerprint::may_use`]); binding names are kept per owner
//! ([`owned_name`]), so two owners with one fingerprint never share a binding.

use holdline_store::names::{BindingKey, KeyName};
use holdline_store::session::Session;

/// The caller's fingerprint, as the bridge sends it with every call, and the
/// agent key it called with (`None`: the secret) — the owner it acts as.
#[derive(Debug, Clone)]
pub struct Fingerprint<'a> {
    pub cursor_title: &'a str,
    pub workspace: &'a str,
    pub host_ip: &'a str,
    pub agent_key: Option<&'a KeyName>,
}

impl Fingerprint<'_> {
    pub fn key(&self) -> BindingKey {
        BindingKey::new(self.workspace, self.cursor_title, self.host_ip)
    }

    /// Whether the session belongs to the caller's credential: the first
    /// check of every agent call, answered like an unknown token when false.
    pub fn may_use(&self, session: &Session) -> bool {
        session.owner.as_ref() == self.agent_key
    }

    /// Strict (select, merge target): the session's key must equal the caller's.
    pub fn owns(&self, session: &Session) -> bool {
        session.binding_key == self.key().as_str()
    }

    /// Medium (wait, merge source): same workspace and host; the title may differ.
    pub fn shares_machine_and_workspace(&self, session: &Session) -> bool {
        session.workspace == self.workspace && session.host_ip == self.host_ip
    }
}

/// The name a chat, plan or thread binding is stored under for `owner`:
/// the secret's names as they always were (stores made before owners keep
/// working), a key's prefixed with the key, so another owner's binding of
/// the same fingerprint, plan label or thread id is a different entry.
pub fn owned_name(owner: Option<&KeyName>, name: &str) -> String {
    match owner {
        None => name.to_owned(),
        Some(key) => format!("key:{key}\u{1f}{name}"),
    }
}

/// What the medium check decided for a wait.
#[derive(Debug, PartialEq, Eq)]
pub enum WaitBinding {
    /// Same chat.
    Same,
    /// Same workspace and host, new title: move the binding, keep the token.
    Migrate {
        old_key: String,
        new_key: BindingKey,
    },
    Rejected,
}

/// The medium check of `wait_for_user_input`.
pub fn check_wait(caller: &Fingerprint<'_>, session: &Session) -> WaitBinding {
    if caller.owns(session) {
        WaitBinding::Same
    } else if caller.shares_machine_and_workspace(session) {
        WaitBinding::Migrate {
            old_key: session.binding_key.clone(),
            new_key: caller.key(),
        }
    } else {
        WaitBinding::Rejected
    }
}

/// Points a session at a new title and its key.
pub fn migrate(session: &mut Session, cursor_title: &str, new_key: BindingKey) {
    session.title = holdline_store::session::visible_name(cursor_title);
    session.binding_key = new_key.into_string();
}

#[cfg(test)]
mod tests {
    use super::*;
    use holdline_store::session::Token;

    fn session() -> Session {
        Session::new(Token::generate(), "Fix CI", "/w", "10.0.0.2", "hub")
    }

    #[test]
    fn key_format_matches_the_node_hub() {
        assert_eq!(
            BindingKey::new("/Users/dev/work/webapp", "重构登录模块", "192.168.1.20").as_str(),
            "/Users/dev/work/webapp::重构登录模块@192.168.1.20"
        );
    }

    #[test]
    fn strict_needs_every_part() {
        let s = session();
        let same = Fingerprint {
            cursor_title: "Fix CI",
            workspace: "/w",
            host_ip: "10.0.0.2",
            agent_key: None,
        };
        assert!(same.owns(&s));
        for (t, w, h) in [
            ("Other", "/w", "10.0.0.2"),
            ("Fix CI", "/x", "10.0.0.2"),
            ("Fix CI", "/w", "10.0.0.3"),
        ] {
            let c = Fingerprint {
                cursor_title: t,
                workspace: w,
                host_ip: h,
                agent_key: None,
            };
            assert!(!c.owns(&s));
        }
    }

    #[test]
    fn wait_check_migrates_a_renamed_title_only() {
        let s = session();
        let renamed = Fingerprint {
            cursor_title: "Fix CI v2",
            workspace: "/w",
            host_ip: "10.0.0.2",
            agent_key: None,
        };
        match check_wait(&renamed, &s) {
            WaitBinding::Migrate { old_key, new_key } => {
                assert_eq!(old_key, "/w::Fix CI@10.0.0.2");
                assert_eq!(new_key.as_str(), "/w::Fix CI v2@10.0.0.2");
            }
            other => panic!("{other:?}"),
        }
        let elsewhere = Fingerprint {
            cursor_title: "Fix CI",
            workspace: "/w",
            host_ip: "10.0.0.9",
            agent_key: None,
        };
        assert_eq!(check_wait(&elsewhere, &s), WaitBinding::Rejected);
    }
}
