//! A browser's push subscription (the Push API's `PushSubscription.toJSON()`):
//! the push service's endpoint and the keys its messages are encrypted for.
//! The push token of a `WEB` client is its JSON; this is the one reader of it,
//! when the token is registered and at every send.

use super::ece::{AUTH_LEN, PUBLIC_KEY_LEN};
use base64::engine::general_purpose::{URL_SAFE, URL_SAFE_NO_PAD};
use base64::Engine as _;
use serde_json::Value;

/// The longest endpoint URL accepted.
pub const MAX_ENDPOINT: usize = 2048;

/// A subscription, checked: an https endpoint and keys of the right lengths.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Subscription {
    /// The push service's URL for this subscription (RFC 8030 §5).
    pub endpoint: http::Uri,
    /// `keys.p256dh`: the browser's P-256 public key, uncompressed.
    pub p256dh: Vec<u8>,
    /// `keys.auth`: the 16-byte authentication secret.
    pub auth: Vec<u8>,
}

/// What is wrong with a subscription, and in which of its fields.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SubscriptionError {
    /// `endpoint`, `keys.p256dh`, `keys.auth`, or empty for the whole document.
    pub field: &'static str,
    /// Why.
    pub message: String,
}

fn error(field: &'static str, message: impl Into<String>) -> SubscriptionError {
    SubscriptionError { field, message: message.into() }
}

/// base64url, with or without padding (browsers write it without).
fn base64url(field: &'static str, value: Option<&Value>) -> Result<Vec<u8>, SubscriptionError> {
    let text = value.and_then(Value::as_str).ok_or_else(|| error(field, "is required (a base64url string)"))?;
    URL_SAFE_NO_PAD.decode(text).or_else(|_| URL_SAFE.decode(text)).map_err(|_| error(field, "must be base64url"))
}

impl Subscription {
    /// Reads and checks the subscription JSON (`{"endpoint", "keys":
    /// {"p256dh", "auth"}}`; `expirationTime` and other members are ignored).
    pub fn parse(json: &str) -> Result<Subscription, SubscriptionError> {
        let value = serde_json::from_str::<Value>(json)
            .ok()
            .filter(Value::is_object)
            .ok_or_else(|| error("", "must be the browser's subscription JSON (an object)"))?;
        let endpoint = value.get("endpoint").and_then(Value::as_str).ok_or_else(|| error("endpoint", "is required"))?;
        if endpoint.len() > MAX_ENDPOINT {
            return Err(error("endpoint", format!("is longer than {MAX_ENDPOINT} characters")));
        }
        let uri: http::Uri = endpoint.parse().map_err(|_| error("endpoint", "is not a URL"))?;
        if uri.scheme_str() != Some("https") {
            return Err(error("endpoint", "must be an https URL"));
        }
        if uri.host().is_none_or(str::is_empty) {
            return Err(error("endpoint", "has no host"));
        }
        let keys = value.get("keys");
        let p256dh = base64url("keys.p256dh", keys.and_then(|k| k.get("p256dh")))?;
        if p256dh.len() != PUBLIC_KEY_LEN || p256dh.first() != Some(&4) || !on_curve(&p256dh) {
            return Err(error("keys.p256dh", "must be an uncompressed P-256 public key (65 bytes)"));
        }
        let auth = base64url("keys.auth", keys.and_then(|k| k.get("auth")))?;
        if auth.len() != AUTH_LEN {
            return Err(error("keys.auth", format!("must be {AUTH_LEN} bytes, not {}", auth.len())));
        }
        Ok(Subscription { endpoint: uri, p256dh, auth })
    }

    /// The JSON stored as the push token: endpoint and keys only, keys base64url unpadded.
    pub fn canonical(&self) -> String {
        serde_json::json!({
            "endpoint": self.endpoint.to_string(),
            "keys": { "p256dh": URL_SAFE_NO_PAD.encode(&self.p256dh), "auth": URL_SAFE_NO_PAD.encode(&self.auth) },
        })
        .to_string()
    }

    /// The endpoint's `host[:port]`: the pool its messages go through.
    pub fn authority(&self) -> Option<&http::uri::Authority> {
        self.endpoint.authority()
    }

    /// The endpoint's origin, `https://host[:port]` (no port when 443): the VAPID JWT's `aud`.
    pub fn origin(&self) -> String {
        let host = self.endpoint.host().unwrap_or_default();
        match self.endpoint.port_u16() {
            Some(port) if port != 443 => format!("https://{host}:{port}"),
            _ => format!("https://{host}"),
        }
    }

    /// The endpoint's path and query: where the message is posted.
    pub fn path(&self) -> String {
        self.endpoint.path_and_query().map_or_else(|| "/".to_owned(), |p| p.as_str().to_owned())
    }
}

/// Whether `point` is on P-256: ring checks peer keys when it agrees on a secret.
fn on_curve(point: &[u8]) -> bool {
    use ring::agreement::{agree_ephemeral, EphemeralPrivateKey, UnparsedPublicKey, ECDH_P256};
    let rng = ring::rand::SystemRandom::new();
    let Ok(probe) = EphemeralPrivateKey::generate(&ECDH_P256, &rng) else { return false };
    agree_ephemeral(probe, &UnparsedPublicKey::new(&ECDH_P256, point), |_| ()).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    const P256DH: &str = "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4";
    const AUTH: &str = "BTBZMqHH6r4Tts7J_aSIgg";

    fn sub(endpoint: &str, p256dh: &str, auth: &str) -> String {
        serde_json::json!({"endpoint": endpoint, "expirationTime": null, "keys": {"p256dh": p256dh, "auth": auth}})
            .to_string()
    }

    #[test]
    fn a_browser_subscription() {
        let s = Subscription::parse(&sub("https://push.example.net:8443/wpush/v2/abc?x=1", P256DH, AUTH)).unwrap();
        assert_eq!(s.origin(), "https://push.example.net:8443");
        assert_eq!(s.path(), "/wpush/v2/abc?x=1");
        assert_eq!(s.authority().unwrap().as_str(), "push.example.net:8443");
        assert_eq!(Subscription::parse(&s.canonical()).unwrap(), s);
        let padded = sub("https://fcm.googleapis.com/fcm/send/x", &format!("{P256DH}="), "BTBZMqHH6r4Tts7J_aSIgg==");
        assert_eq!(Subscription::parse(&padded).unwrap().origin(), "https://fcm.googleapis.com");
    }

    #[test]
    fn bad_subscriptions_name_the_field() {
        let field = |json: String| Subscription::parse(&json).unwrap_err().field;
        assert_eq!(field("not json".into()), "");
        assert_eq!(field("\"a string\"".into()), "");
        assert_eq!(field(sub("http://push.example.net/x", P256DH, AUTH)), "endpoint");
        assert_eq!(field(sub("push.example.net/x", P256DH, AUTH)), "endpoint");
        assert_eq!(field(sub(&format!("https://x/{}", "a".repeat(2048)), P256DH, AUTH)), "endpoint");
        assert_eq!(field(sub("https://x/y", &P256DH[..80], AUTH)), "keys.p256dh");
        assert_eq!(field(sub("https://x/y", "!!", AUTH)), "keys.p256dh");
        let mut off_curve = URL_SAFE_NO_PAD.decode(P256DH).unwrap();
        off_curve[64] ^= 1;
        assert_eq!(field(sub("https://x/y", &URL_SAFE_NO_PAD.encode(off_curve), AUTH)), "keys.p256dh");
        assert_eq!(field(sub("https://x/y", P256DH, "AAAA")), "keys.auth");
        assert_eq!(field(serde_json::json!({"endpoint": "https://x/y"}).to_string()), "keys.p256dh");
    }
}
