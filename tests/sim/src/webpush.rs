//! The Web Push simulator: a push service (RFC 8030) that takes `POST /{id}`
//! for the subscriptions it issued, verifies the VAPID authorization (RFC
//! 8292: an ES256 JWT for this origin, signed by the key `k=` names) and
//! decrypts the message (RFC 8291, `aes128gcm`) with the subscription's keys,
//! so `/requests?provider=webpush` shows each message's `plaintext`.
//!
//! Subscriptions are derived, not stored: the keys of subscription `{id}` are
//! HMACs of the id under the cert dir's `webpush.key`, so any number of them
//! can be minted ([`subscription`]) without registering each, by the
//! simulator or by whoever holds the cert dir. An id starting with `dead` is
//! unknown (410 Gone), as are the `dead_tokens` of the faults.
//!
//! Answers: 201 Created (`Location` of the message) when accepted; 400 for a
//! missing or bad `TTL`, `Urgency`, `Topic` or content coding, or a message
//! that does not decrypt; 401 without a VAPID authorization, 403 for one that
//! does not verify (signature, `aud`, `exp`, `sub`); 404 for a path that is
//! no subscription; 410 for a dead one; 413 over 4096 bytes.

use std::borrow::Cow;
use std::path::Path;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use bytes::Bytes;
use http::{header, Method, StatusCode};
use p256::elliptic_curve::sec1::ToEncodedPoint;
use ring::aead::{Aad, LessSafeKey, Nonce, UnboundKey, AES_128_GCM};
use ring::hkdf::{KeyType, Salt, HKDF_SHA256};
use ring::hmac;
use serde::Deserialize;
use serde_json::{json, Value};

use crate::faults::{ActiveFaults, FaultEndpoint};
use crate::files::{read_string, write_atomic};
use crate::jwt::Jwt;
use crate::server::Reply;
use crate::state::SimState;
use crate::util::{now_secs, random_alnum, text_response};
use crate::{Provider, SimError};

/// The largest message a push service must accept (RFC 8030 §7.2).
const MAX_MESSAGE: usize = 4096;
/// The longest subscription id.
const MAX_ID: usize = 128;
/// A VAPID JWT may be valid for at most 24 hours (RFC 8292 §2).
const MAX_JWT_LIFETIME_SECS: u64 = 24 * 3600;

/// The decrypted message of an accepted request, for `/requests`.
#[derive(Clone, Debug)]
pub(crate) struct Plaintext(pub(crate) String);

/// The secret subscriptions' keys are derived from, in `<cert_dir>/webpush.key` (hex).
#[derive(Clone)]
pub(crate) struct SubscriptionKeys {
    secret: hmac::Key,
}

/// The keys of one subscription: what the browser keeps.
pub struct SubscriptionSecrets {
    /// The P-256 private key (32 bytes).
    pub private_key: Vec<u8>,
    /// The public key, uncompressed (`keys.p256dh`).
    pub public_key: Vec<u8>,
    /// The authentication secret (`keys.auth`, 16 bytes).
    pub auth: Vec<u8>,
}

impl SubscriptionKeys {
    /// Loads the secret of `cert_dir`, creating it on first use.
    pub(crate) fn load_or_create(cert_dir: &Path) -> Result<SubscriptionKeys, SimError> {
        let path = cert_dir.join("webpush.key");
        let bytes = match read_string(&path) {
            Ok(text) => {
                hex_decode(text.trim()).ok_or_else(|| SimError::Cert(format!("{}: not hex", path.display())))?
            }
            Err(_) => {
                let mut bytes = [0u8; 32];
                ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut bytes)
                    .map_err(|_| SimError::Cert("no randomness".into()))?;
                std::fs::create_dir_all(cert_dir).map_err(|e| SimError::io(cert_dir, e))?;
                write_atomic(&path, hex_encode(&bytes).as_bytes(), true)?;
                bytes.to_vec()
            }
        };
        Ok(SubscriptionKeys { secret: hmac::Key::new(hmac::HMAC_SHA256, &bytes) })
    }

    /// The keys of subscription `id`.
    pub(crate) fn of(&self, id: &str) -> SubscriptionSecrets {
        let mut counter = 0u8;
        let key = loop {
            let tag = hmac::sign(&self.secret, format!("p256:{counter}:{id}").as_bytes());
            // A digest that is not a valid scalar (odds 2^-32) takes the next counter.
            if let Ok(k) = p256::SecretKey::from_slice(tag.as_ref()) {
                break k;
            }
            counter = counter.wrapping_add(1);
        };
        let auth = hmac::sign(&self.secret, format!("auth:{id}").as_bytes()).as_ref()[..16].to_vec();
        SubscriptionSecrets {
            private_key: key.to_bytes().to_vec(),
            public_key: key.public_key().to_encoded_point(false).as_bytes().to_vec(),
            auth,
        }
    }
}

fn hex_encode(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn hex_decode(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len()).step_by(2).map(|i| u8::from_str_radix(text.get(i..i.saturating_add(2))?, 16).ok()).collect()
}

/// The browser's subscription JSON (`PushSubscription.toJSON()`) of
/// subscription `id` of the push service at `base_url`, and its secrets.
pub(crate) fn subscription_json(keys: &SubscriptionKeys, base_url: &str, id: &str) -> (Value, SubscriptionSecrets) {
    let s = keys.of(id);
    let json = json!({
        "endpoint": format!("{}/{id}", base_url.trim_end_matches('/')),
        "expirationTime": null,
        "keys": { "p256dh": URL_SAFE_NO_PAD.encode(&s.public_key), "auth": URL_SAFE_NO_PAD.encode(&s.auth) },
    });
    (json, s)
}

/// The subscription `id` of the Web Push simulator at `base_url` whose cert
/// dir is `cert_dir`: the JSON a browser's `pushManager.subscribe()` gives.
pub fn subscription(cert_dir: &Path, base_url: &str, id: &str) -> Result<Value, SimError> {
    Ok(subscription_json(&SubscriptionKeys::load_or_create(cert_dir)?, base_url, id).0)
}

fn refuse(state: &SimState, status: StatusCode, reason: &'static str) -> Reply {
    state.counters(Provider::Webpush).reject(reason);
    let body = json!({ "code": status.as_u16(), "errno": 0, "error": reason, "message": reason }).to_string();
    let mut response = text_response(status, body);
    response.headers_mut().insert(header::CONTENT_TYPE, http::HeaderValue::from_static("application/json"));
    Reply { response, reason: Some(Cow::Borrowed(reason)) }
}

/// Handles one request to the Web Push simulator.
pub(crate) fn handle(
    state: &SimState,
    parts: &http::request::Parts,
    body: Option<&Bytes>,
    faults: Option<&ActiveFaults>,
) -> Reply {
    let id = parts.uri.path().trim_start_matches('/');
    if id.is_empty() || id.len() > MAX_ID || !id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_') {
        return refuse(state, StatusCode::NOT_FOUND, "NoSuchSubscription");
    }
    if parts.method != Method::POST {
        return refuse(state, StatusCode::METHOD_NOT_ALLOWED, "MethodNotAllowed");
    }
    if let Err(reason) = check_vapid(state, parts) {
        let status = if reason == "MissingAuthorization" { StatusCode::UNAUTHORIZED } else { StatusCode::FORBIDDEN };
        return refuse(state, status, reason);
    }
    if let Err(reason) = check_headers(&parts.headers) {
        return refuse(state, StatusCode::BAD_REQUEST, reason);
    }
    if id.get(..4).is_some_and(|p| p.eq_ignore_ascii_case("dead")) || faults.is_some_and(|f| f.is_dead(id)) {
        return refuse(state, StatusCode::GONE, "SubscriptionGone");
    }
    if let Some(fired) = faults.and_then(|f| f.status_for(FaultEndpoint::Send, std::iter::once(id))) {
        let status = StatusCode::from_u16(fired.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let reason = match fired.status {
            429 => "TooManyRequests",
            413 => "PayloadTooLarge",
            410 => "SubscriptionGone",
            404 => "NoSuchSubscription",
            400 => "BadRequest",
            s if s >= 500 => "ServiceUnavailable",
            _ => "Refused",
        };
        let mut reply = refuse(state, status, reason);
        reply.response = fired.apply(reply.response);
        return reply;
    }
    let Some(body) = body.filter(|b| b.len() <= MAX_MESSAGE) else {
        return refuse(state, StatusCode::PAYLOAD_TOO_LARGE, "PayloadTooLarge");
    };
    let plaintext = match decrypt(&state.webpush_keys.of(id), body) {
        Ok(p) => p,
        Err(reason) => return refuse(state, StatusCode::BAD_REQUEST, reason),
    };
    state.counters(Provider::Webpush).accept(id);
    let mut response = text_response(StatusCode::CREATED, "");
    let location = format!("/m/{}", random_alnum(22));
    if let Ok(v) = http::HeaderValue::from_str(&location) {
        response.headers_mut().insert(header::LOCATION, v);
    }
    response.extensions_mut().insert(Plaintext(String::from_utf8_lossy(&plaintext).into_owned()));
    Reply::ok(response)
}

#[derive(Deserialize)]
struct Claims {
    aud: String,
    exp: u64,
    sub: String,
}

/// RFC 8292: `Authorization: vapid t=<jwt>, k=<public key>`, the JWT ES256
/// under `k`, its `aud` this origin, `exp` within 24 hours, `sub` a contact.
fn check_vapid(state: &SimState, parts: &http::request::Parts) -> Result<(), &'static str> {
    let value = parts.headers.get(header::AUTHORIZATION).ok_or("MissingAuthorization")?;
    let value = value.to_str().map_err(|_| "BadAuthorization")?;
    let params = value.strip_prefix("vapid ").ok_or("BadAuthorizationScheme")?;
    let (mut t, mut k) = (None, None);
    for param in params.split(',') {
        match param.trim().split_once('=') {
            Some(("t", v)) => t = Some(v),
            Some(("k", v)) => k = Some(v),
            _ => {}
        }
    }
    let (t, k) = (t.ok_or("BadAuthorization")?, k.ok_or("BadAuthorization")?);
    let key = URL_SAFE_NO_PAD.decode(k.trim_end_matches('=')).map_err(|_| "BadVapidKey")?;
    let jwt = Jwt::parse(t).map_err(|_| "BadJwt")?;
    state.counters(Provider::Webpush).jwt_verifications.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    if !jwt.verify_es256(&key) {
        return Err("BadJwtSignature");
    }
    let claims: Claims = jwt.claims().map_err(|_| "BadJwt")?;
    let host = parts
        .uri
        .authority()
        .map(|a| a.as_str())
        .or_else(|| parts.headers.get(header::HOST).and_then(|h| h.to_str().ok()));
    let origin = host.map(|h| format!("https://{}", h.strip_suffix(":443").unwrap_or(h)));
    if origin.as_deref() != Some(claims.aud.as_str()) {
        return Err("BadJwtAudience");
    }
    let now = now_secs();
    if claims.exp <= now || claims.exp > now.saturating_add(MAX_JWT_LIFETIME_SECS) {
        return Err("BadJwtExpiration");
    }
    let contact = claims.sub.strip_prefix("mailto:").is_some_and(|a| a.contains('@'))
        || claims.sub.strip_prefix("https://").is_some_and(|h| !h.is_empty());
    if !contact {
        return Err("BadJwtSubject");
    }
    Ok(())
}

/// `TTL` (required), `Urgency`, `Topic` and `Content-Encoding: aes128gcm`.
fn check_headers(h: &http::HeaderMap) -> Result<(), &'static str> {
    let text = |name: &str| h.get(name).map(|v| v.to_str().unwrap_or("\u{0}"));
    if text("ttl").is_none_or(|t| t.parse::<u64>().is_err()) {
        return Err("BadTtl");
    }
    if text("urgency").is_some_and(|u| !matches!(u, "very-low" | "low" | "normal" | "high")) {
        return Err("BadUrgency");
    }
    let topic_ok = |t: &str| {
        !t.is_empty() && t.len() <= 32 && t.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    };
    if text("topic").is_some_and(|t| !topic_ok(t)) {
        return Err("BadTopic");
    }
    if text("content-encoding") != Some("aes128gcm") {
        return Err("BadContentEncoding");
    }
    Ok(())
}

struct Len(usize);

impl KeyType for Len {
    fn len(&self) -> usize {
        self.0
    }
}

fn hkdf<const N: usize>(salt: &[u8], ikm: &[u8], info: &[&[u8]]) -> Option<[u8; N]> {
    let mut out = [0u8; N];
    Salt::new(HKDF_SHA256, salt).extract(ikm).expand(info, Len(N)).ok()?.fill(&mut out).ok()?;
    Some(out)
}

/// Decrypts an `aes128gcm` message of one record for the subscription `s`
/// (RFC 8291 §3.4, RFC 8188 §2), as a browser does.
fn decrypt(s: &SubscriptionSecrets, body: &[u8]) -> Result<Vec<u8>, &'static str> {
    let header = body.get(..21).ok_or("TruncatedHeader")?;
    let (salt, rs, idlen) =
        (&header[..16], u32::from_be_bytes([header[16], header[17], header[18], header[19]]), header[20]);
    if idlen != 65 {
        return Err("BadKeyId");
    }
    let as_public = body.get(21..86).ok_or("TruncatedHeader")?;
    let record = &body[86..];
    if rs < 18 || record.len() > rs as usize || record.len() < 17 {
        return Err("BadRecordSize");
    }
    let sender = p256::PublicKey::from_sec1_bytes(as_public).map_err(|_| "BadSenderKey")?;
    let private = p256::SecretKey::from_slice(&s.private_key).map_err(|_| "BadSubscription")?;
    let shared = p256::ecdh::diffie_hellman(private.to_nonzero_scalar(), sender.as_affine());
    let key_info: [&[u8]; 3] = [b"WebPush: info\0", &s.public_key, as_public];
    let ikm: [u8; 32] = hkdf(&s.auth, shared.raw_secret_bytes(), &key_info).ok_or("Hkdf")?;
    let cek: [u8; 16] = hkdf(salt, &ikm, &[b"Content-Encoding: aes128gcm\0"]).ok_or("Hkdf")?;
    let nonce: [u8; 12] = hkdf(salt, &ikm, &[b"Content-Encoding: nonce\0"]).ok_or("Hkdf")?;
    let key = LessSafeKey::new(UnboundKey::new(&AES_128_GCM, &cek).map_err(|_| "Hkdf")?);
    let mut buf = record.to_vec();
    let plain = key
        .open_in_place(Nonce::assume_unique_for_key(nonce), Aad::empty(), &mut buf)
        .map_err(|_| "DecryptionFailed")?;
    // The last record: padding zeros after a 0x02 delimiter.
    let end = plain.iter().rposition(|&b| b != 0).ok_or("BadPadding")?;
    if plain[end] != 2 {
        return Err("BadPadding");
    }
    Ok(plain[..end].to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b64(s: &str) -> Vec<u8> {
        URL_SAFE_NO_PAD.decode(s).unwrap()
    }

    /// The RFC 8291 appendix A message decrypts with the RFC's keys.
    #[test]
    fn rfc8291_appendix_a_decrypts() {
        let private = b64("q1dXpw3UpT5VOmu_cf_v6ih07Aems3njxI-JWgLcM94");
        let public =
            p256::SecretKey::from_slice(&private).unwrap().public_key().to_encoded_point(false).as_bytes().to_vec();
        assert_eq!(
            public,
            b64("BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4")
        );
        let s = SubscriptionSecrets { private_key: private, public_key: public, auth: b64("BTBZMqHH6r4Tts7J_aSIgg") };
        let body = b64("DGv6ra1nlYgDCS1FRnbzlwAAEABBBP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A_yl95bQpu6cVPTpK4Mqgkf1CXztLVBSt2Ks3oZwbuwXPXLWyouBWLVWGNWQexSgSxsj_Qulcy4a-fN");
        assert_eq!(decrypt(&s, &body).unwrap(), b"When I grow up, I want to be a watermelon");
        let mut tampered = body.clone();
        tampered[100] ^= 1;
        assert_eq!(decrypt(&s, &tampered), Err("DecryptionFailed"));
        assert_eq!(decrypt(&s, &body[..50]), Err("TruncatedHeader"));
    }

    #[test]
    fn subscriptions_are_derived_and_stable() {
        let dir = tempfile::tempdir().unwrap();
        let keys = SubscriptionKeys::load_or_create(dir.path()).unwrap();
        let (a, s) = subscription_json(&keys, "https://127.0.0.1:9/", "abc");
        assert_eq!(a["endpoint"], "https://127.0.0.1:9/abc");
        assert_eq!((s.public_key.len(), s.auth.len(), s.private_key.len()), (65, 16, 32));
        let again = SubscriptionKeys::load_or_create(dir.path()).unwrap();
        assert_eq!(subscription_json(&again, "https://127.0.0.1:9", "abc").0, a);
        assert_ne!(subscription_json(&again, "https://127.0.0.1:9", "abd").0["keys"], a["keys"]);
    }
}
