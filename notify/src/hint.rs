//! What a person should fix when a channel fails: one plain hint per kind of
//! failure, read from the error's text (`/healthz` and the panel's bell show it).
//!
//! Invariant: a hint never repeats the channel's URL or token (only the error
//! text, which carries neither, is read), and an error no rule knows gets none.

use serde::Serialize;

/// The kind of a channel failure and the hint shown beside its error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ErrorHint {
    /// `refused`, `dns`, `tls`, `auth`, `notFound`, `timeout`, `rateLimited`,
    /// `serverError`, `badRequest`, `queueFull` or `noSubscriber`: the panel words it in its language.
    pub kind: &'static str,
    /// The hint in English.
    pub text: &'static str,
}

/// The hint for a channel's error text, if it is a failure people can fix.
pub fn error_hint(error: &str) -> Option<ErrorHint> {
    let e = error.to_ascii_lowercase();
    let has = |words: &[&str]| words.iter().any(|w| e.contains(w));
    let (kind, text) = if has(&["no browser is subscribed"]) {
        (
            "noSubscriber",
            "No browser is subscribed to Web Push: turn on \"Notify this device\" in the bell's settings of the panel on the phone or computer to notify.",
        )
    } else if has(&["queue full"]) {
        (
            "queueFull",
            "The channel cannot keep up: earlier notifications are still being retried. Check the channel's other errors.",
        )
    } else if has(&[
        "connection refused",
        "os error 111",
        "os error 61",
        "os error 10061",
    ]) {
        (
            "refused",
            "Nothing listens at the channel's URL. Is the service running, and are the host and port in config.toml right?",
        )
    } else if has(&[
        "dns error",
        "failed to lookup address",
        "name or service not known",
        "no such host",
        "nodename nor servname",
    ]) {
        (
            "dns",
            "The host name in the channel's URL does not resolve. Check it for typos, and that this machine's DNS works.",
        )
    } else if has(&["certificate", "tls", "ssl", "handshake"]) {
        (
            "tls",
            "The secure connection failed. Check that the URL's https host has a valid certificate (or use http:// for a plain-http service).",
        )
    } else if has(&["timed out", "timeout", "deadline has elapsed"]) {
        (
            "timeout",
            "The service did not answer in time. Is it reachable from this machine (firewall, proxy), and is it up?",
        )
    } else if status_is(&e, &["401", "403"]) {
        (
            "auth",
            "The service refused the credentials: the token or key in the channel's URL or settings is wrong or was revoked.",
        )
    } else if status_is(&e, &["404"]) {
        (
            "notFound",
            "The service has no such address: the path in the channel's URL is wrong (or the chat, topic or hook was deleted).",
        )
    } else if status_is(&e, &["429"]) {
        (
            "rateLimited",
            "The service asks to slow down; the hub retries by itself. Fewer notifications (a longer after_sec) help.",
        )
    } else if status_is(&e, &["500", "502", "503", "504"]) {
        (
            "serverError",
            "The service failed on its side; the hub retries by itself. If it persists, check the service.",
        )
    } else if status_is(&e, &["400", "422"]) {
        (
            "badRequest",
            "The service refused the message: check the channel's format setting matches the service.",
        )
    } else {
        return None;
    };
    Some(ErrorHint { kind, text })
}

/// Whether `e` (lowercased) starts with one of the HTTP statuses, as a refused send's text does ("401 Unauthorized: …").
fn status_is(e: &str, codes: &[&str]) -> bool {
    let e = e.trim_start();
    codes
        .iter()
        .any(|c| e.starts_with(c) && !e[c.len()..].starts_with(|ch: char| ch.is_ascii_digit()))
}

#[cfg(test)]
mod tests {
    use super::error_hint;

    fn kind(e: &str) -> Option<&'static str> {
        error_hint(e).map(|h| h.kind)
    }

    #[test]
    fn each_failure_gets_its_hint() {
        let cases = [
            (
                "error sending request: client error (Connect): tcp connect error: Connection refused (os error 111)",
                "refused",
            ),
            (
                "error sending request: client error (Connect): dns error: failed to lookup address information: Name or service not known",
                "dns",
            ),
            (
                "error sending request: client error (Connect): invalid peer certificate: UnknownIssuer",
                "tls",
            ),
            ("error sending request: operation timed out", "timeout"),
            (
                "401 Unauthorized: {\"ok\":false,\"error_code\":401}",
                "auth",
            ),
            ("403 Forbidden: bot was blocked", "auth"),
            ("404 Not Found: ", "notFound"),
            ("429 Too Many Requests: retry after 5", "rateLimited"),
            ("502 Bad Gateway: ", "serverError"),
            ("400 Bad Request: message text is empty", "badRequest"),
            ("queue full: no available capacity", "queueFull"),
        ];
        for (error, want) in cases {
            assert_eq!(kind(error), Some(want), "{error}");
            assert!(!error_hint(error).unwrap().text.is_empty());
        }
    }

    #[test]
    fn an_unknown_error_gets_no_hint() {
        assert_eq!(kind("the answer was too large to read"), None);
        assert_eq!(kind("errcode 93000: invalid webhook url"), None);
        // A number inside the text is no status.
        assert_eq!(kind("4010 things went wrong"), None);
        assert_eq!(kind("code 404: hook gone"), None);
    }
}
