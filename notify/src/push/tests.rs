//! Web Push against its RFCs: RFC 8291's example decrypts through the hub's derivation, a prepared
//! push decrypts with the subscription's keys and its VAPID JWT (RFC 8292) verifies, and
//! endpoints, key sizes, record size and the key file are checked.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use p256::ecdsa::signature::Verifier as _;
use p256::ecdsa::{Signature, VerifyingKey};
use p256::elliptic_curve::sec1::ToEncodedPoint as _;

use super::*;

// RFC 8291 §5 / Appendix A.
const RFC_PLAINTEXT: &str = "When I grow up, I want to be a watermelon";
const RFC_UA_PRIVATE: &str = "q1dXpw3UpT5VOmu_cf_v6ih07Aems3njxI-JWgLcM94";
const RFC_UA_PUBLIC: &str =
    "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4";
const RFC_AUTH: &str = "BTBZMqHH6r4Tts7J_aSIgg";
const RFC_BODY: &str = "DGv6ra1nlYgDCS1FRnbzlwAAEABBBP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A_yl95bQpu6cVPTpK4Mqgkf1CXztLVBSt2Ks3oZwbuwXPXLWyouBWLVWGNWQexSgSxsj_Qulcy4a-fN";

fn d(s: &str) -> Vec<u8> {
    URL_SAFE_NO_PAD.decode(s).unwrap()
}

fn rfc_subscription() -> Subscription {
    Subscription {
        endpoint: "https://push.example.net/push/JzLQ3raZJfFBR0aqvOMsLrt54w4rJUsV".into(),
        keys: SubscriptionKeys {
            p256dh: RFC_UA_PUBLIC.into(),
            auth: RFC_AUTH.into(),
        },
    }
}

/// The crate's key derivation (the one `encrypt` runs, roles turned) and
/// aes128gcm reading take the RFC's exact body back to its plaintext.
#[test]
fn the_rfc_8291_example_decrypts_through_the_same_derivation() {
    let ua = p256::SecretKey::from_slice(&d(RFC_UA_PRIVATE)).unwrap();
    assert_eq!(
        URL_SAFE_NO_PAD.encode(ua.public_key().to_encoded_point(false).as_bytes()),
        RFC_UA_PUBLIC
    );
    let auth = web_push_native::Auth::clone_from_slice(&d(RFC_AUTH));
    let plain = web_push_native::decrypt(d(RFC_BODY), &ua, &auth).unwrap();
    assert_eq!(plain, RFC_PLAINTEXT.as_bytes());
}

fn key() -> VapidKey {
    VapidKey::from_base64("yfWPiYE-n46HLnH0KqZOF1fJJU3MYrct3AELtAQ-oRw").unwrap()
}

/// What a push we prepare for the RFC's browser holds: the RFC's plaintext
/// back, a 4096-byte record size, and a header whose JWT verifies.
#[test]
fn a_prepared_push_decrypts_and_its_vapid_jwt_verifies() {
    let push = WebPush {
        key: std::sync::Arc::new(key()),
        subscriptions: std::sync::Arc::new(Subscriptions::open(&test_store()).unwrap()),
    };
    let p = push
        .prepare(
            &rfc_subscription(),
            RFC_PLAINTEXT.as_bytes(),
            "mailto:me@example.org",
        )
        .unwrap();
    let ua = p256::SecretKey::from_slice(&d(RFC_UA_PRIVATE)).unwrap();
    let auth = web_push_native::Auth::clone_from_slice(&d(RFC_AUTH));
    assert_eq!(
        web_push_native::decrypt(p.body, &ua, &auth).unwrap(),
        RFC_PLAINTEXT.as_bytes()
    );

    let rest = p.authorization.strip_prefix("vapid t=").unwrap();
    let (jwt, k) = rest.split_once(", k=").unwrap();
    assert_eq!(k, push.key.public_key());
    let claims = verify(jwt, k);
    assert_eq!(claims["aud"], "https://push.example.net");
    assert_eq!(claims["sub"], "mailto:me@example.org");
    let now = time::OffsetDateTime::now_utc().unix_timestamp();
    let exp = claims["exp"].as_i64().unwrap();
    assert!(exp > now && exp <= now + 24 * 3600, "exp {exp}, now {now}");
}

/// The JWT's claims, after its ES256 signature verified with `k`.
fn verify(jwt: &str, k: &str) -> serde_json::Value {
    let (input, sig) = jwt.rsplit_once('.').unwrap();
    let vk = VerifyingKey::from_sec1_bytes(&d(k)).unwrap();
    let sig = Signature::from_slice(&d(sig)).unwrap();
    vk.verify(input.as_bytes(), &sig).unwrap();
    let (header, claims) = input.split_once('.').unwrap();
    let header: serde_json::Value = serde_json::from_slice(&d(header)).unwrap();
    assert_eq!(header["alg"], "ES256");
    // A changed claim no longer verifies.
    let forged = format!(
        "{header}.{}",
        URL_SAFE_NO_PAD.encode(b"{}"),
        header = input.split_once('.').unwrap().0
    );
    assert!(vk.verify(forged.as_bytes(), &sig).is_err());
    serde_json::from_slice(&d(claims)).unwrap()
}

#[test]
fn the_origin_keeps_a_port_that_is_not_the_default() {
    let url = |s: &str| reqwest::Url::parse(s).unwrap();
    assert_eq!(
        vapid::origin(&url("http://127.0.0.1:9/p/x")),
        "http://127.0.0.1:9"
    );
    assert_eq!(
        vapid::origin(&url("https://fcm.googleapis.com:443/fcm/send/a")),
        "https://fcm.googleapis.com"
    );
}

#[test]
fn endpoints_are_https_or_loopback_and_keys_have_their_sizes() {
    let with = |endpoint: &str, p256dh: &str, auth: &str| Subscription {
        endpoint: endpoint.into(),
        keys: SubscriptionKeys {
            p256dh: p256dh.into(),
            auth: auth.into(),
        },
    };
    for ok in [
        "https://push.example.net/x",
        "http://127.0.0.1:4000/x",
        "http://127.9.9.9/x",
        "http://[::1]:80/x",
        "http://localhost:1/x",
    ] {
        assert!(check(&with(ok, RFC_UA_PUBLIC, RFC_AUTH)).is_ok(), "{ok}");
    }
    for (endpoint, p256dh, auth, refused) in [
        (
            "http://10.0.0.2/x",
            RFC_UA_PUBLIC,
            RFC_AUTH,
            Refused::NotHttps,
        ),
        (
            "http://push.example.net/x",
            RFC_UA_PUBLIC,
            RFC_AUTH,
            Refused::NotHttps,
        ),
        (
            "ftp://127.0.0.1/x",
            RFC_UA_PUBLIC,
            RFC_AUTH,
            Refused::NotHttps,
        ),
        ("https://h/x", "AAAA", RFC_AUTH, Refused::BadP256dh),
        ("https://h/x", &"B".repeat(87), RFC_AUTH, Refused::BadP256dh),
        ("https://h/x", RFC_UA_PUBLIC, "AAAA", Refused::BadAuth),
        (
            "https://h/x",
            RFC_UA_PUBLIC,
            "not base64!",
            Refused::BadAuth,
        ),
    ] {
        assert_eq!(
            check(&with(endpoint, p256dh, auth)).err(),
            Some(refused),
            "{endpoint} {p256dh} {auth}"
        );
    }
    assert!(matches!(
        check(&with("not a url", RFC_UA_PUBLIC, RFC_AUTH)),
        Err(Refused::NotAUrl(_))
    ));
    let long = format!("https://h/{}", "a".repeat(MAX_ENDPOINT));
    assert!(matches!(
        check(&with(&long, RFC_UA_PUBLIC, RFC_AUTH)),
        Err(Refused::LongEndpoint)
    ));
    // Padded base64url, as some browsers give it, is taken too.
    assert!(
        check(&with(
            "https://h/x",
            RFC_UA_PUBLIC,
            "BTBZMqHH6r4Tts7J_aSIgg=="
        ))
        .is_ok()
    );
}

#[test]
fn a_push_too_large_for_one_record_is_refused() {
    let push = WebPush {
        key: std::sync::Arc::new(key()),
        subscriptions: std::sync::Arc::new(Subscriptions::open(&test_store()).unwrap()),
    };
    let sub = rfc_subscription();
    let p = push
        .prepare(&sub, &[b'x'; MAX_PLAINTEXT], "mailto:a@b")
        .unwrap();
    assert_eq!(p.body.len(), 4096);
    assert!(
        push.prepare(&sub, &[b'x'; MAX_PLAINTEXT + 1], "mailto:a@b")
            .is_err()
    );
}

#[test]
fn the_key_is_made_once_and_kept_private() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("vapid-key");
    let first = VapidKey::load_or_make(&path).unwrap().public_key();
    assert_eq!(d(&first).len(), 65);
    assert_eq!(
        std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
        0o600
    );
    assert_eq!(VapidKey::load_or_make(&path).unwrap().public_key(), first);
    std::fs::write(&path, "nonsense").unwrap();
    let err = VapidKey::load_or_make(&path).unwrap_err();
    assert!(err.to_string().contains("move it aside"), "{err}");
}

#[tokio::test]
async fn subscriptions_last_replace_by_endpoint_and_are_capped() {
    let dir = tempfile::tempdir().unwrap();
    let store = holdline_store::store::Store::open(dir.path(), 8 << 20).unwrap();
    let subs = Subscriptions::open(&store).unwrap();
    let mut s = rfc_subscription();
    subs.add(s.clone()).await.unwrap();
    s.keys.auth = URL_SAFE_NO_PAD.encode([9u8; 16]);
    subs.add(s.clone()).await.unwrap();
    assert_eq!(subs.all(), vec![s.clone()]);
    for i in 1..subscriptions::MAX_SUBSCRIPTIONS {
        let mut o = s.clone();
        o.endpoint = format!("https://push.example.net/{i}");
        subs.add(o).await.unwrap();
    }
    let mut over = s.clone();
    over.endpoint = "https://push.example.net/over".into();
    assert!(matches!(
        subs.add(over).await,
        Err(subscriptions::ChangeError::Refused(Refused::TooMany(_)))
    ));
    assert!(subs.remove(&s.endpoint).await.unwrap());
    assert!(!subs.remove(&s.endpoint).await.unwrap());
    drop(subs);
    let again = Subscriptions::open(&store).unwrap();
    assert_eq!(again.len(), subscriptions::MAX_SUBSCRIPTIONS - 1);
    assert!(!again.has(&s.endpoint));
}

fn test_store() -> holdline_store::store::Store {
    let dir = tempfile::tempdir().unwrap().keep();
    holdline_store::store::Store::open(&dir, 8 << 20).unwrap()
}
