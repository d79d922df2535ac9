//! VAPID (RFC 8292): the application server's P-256 key pair and the ES256
//! JWT that authorizes its requests to one push service, `Authorization:
//! vapid t=<jwt>, k=<public key>`. A JWT names one origin (`aud`), so each is
//! signed once per push-service origin and reused until close to its expiry.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use ring::rand::SystemRandom;
use ring::signature::{EcdsaKeyPair, KeyPair, ECDSA_P256_SHA256_FIXED_SIGNING};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// How long a JWT is valid (RFC 8292 allows at most 24 hours).
const LIFETIME_SECS: u64 = 12 * 3600;
/// A cached JWT is signed again when it has less than this left.
const RENEW_BEFORE_SECS: u64 = 3600;
/// Origins whose JWT is cached at most; past it the cache starts over (a
/// hostile set of subscriptions cannot make it grow without bound).
const MAX_ORIGINS: usize = 1024;
/// The longest `subject` accepted.
pub const MAX_SUBJECT: usize = 256;

/// The signing key of VAPID: a PKCS#8 P-256 key, PEM (`PRIVATE KEY`) or DER.
/// The one reader of that key, at send time and when an app is saved.
pub fn signing_key(key: &[u8]) -> Result<EcdsaKeyPair, String> {
    let der = super::apns::pkcs8_der(key, "the VAPID key", "PEM")?;
    EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &der, &SystemRandom::new())
        .map_err(|e| format!("the VAPID key is not a PKCS#8 P-256 key: {e}"))
}

/// A new VAPID key pair, as PKCS#8 DER.
pub fn generate() -> Result<Vec<u8>, String> {
    EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &SystemRandom::new())
        .map(|d| d.as_ref().to_vec())
        .map_err(|_| "no randomness to generate a VAPID key".to_owned())
}

/// A VAPID key as stored: its PKCS#8 DER (sealed) and its public point.
pub struct KeyMaterial {
    /// The PKCS#8 DER.
    pub der: Vec<u8>,
    /// The uncompressed public point (65 bytes).
    pub public: Vec<u8>,
}

/// The key given (PKCS#8 PEM or DER), or a new one when `None`.
pub fn material(key: Option<&[u8]>) -> Result<KeyMaterial, String> {
    let der = match key {
        Some(key) => super::apns::pkcs8_der(key, "the VAPID key", "PEM")?,
        None => generate()?,
    };
    let public = signing_key(&der)?.public_key().as_ref().to_vec();
    Ok(KeyMaterial { der, public })
}

/// The public key of `key` as the browser's `applicationServerKey` takes it:
/// the uncompressed point, base64url without padding.
pub fn public_key(key: &EcdsaKeyPair) -> String {
    URL_SAFE_NO_PAD.encode(key.public_key().as_ref())
}

/// `subject` is a `mailto:` address or an `https:` URL (RFC 8292 §2.1), at most [`MAX_SUBJECT`] characters.
pub fn check_subject(subject: &str) -> Result<(), String> {
    if subject.len() > MAX_SUBJECT {
        return Err(format!("is longer than {MAX_SUBJECT} characters"));
    }
    if subject.chars().any(|c| c.is_control() || c.is_whitespace() || c == '"') {
        return Err("must not contain spaces, quotes or control characters".into());
    }
    let ok = match subject.split_once(':') {
        Some(("mailto", addr)) => addr.split_once('@').is_some_and(|(user, host)| !user.is_empty() && !host.is_empty()),
        Some(("https", _)) => subject.parse::<http::Uri>().is_ok_and(|u| u.host().is_some_and(|h| !h.is_empty())),
        _ => false,
    };
    match ok {
        true => Ok(()),
        false => Err("must be a mailto: address or an https: URL".into()),
    }
}

/// The VAPID credentials of one app, with its JWT per push-service origin.
pub struct Vapid {
    key: EcdsaKeyPair,
    /// `k=` of the header: [`public_key`].
    public: String,
    /// The JWT's `sub`.
    subject: String,
    rng: SystemRandom,
    /// Per origin, the `Authorization` value and when its JWT expires.
    signed: Mutex<HashMap<String, (Arc<str>, u64)>>,
}

impl Vapid {
    /// From the app's key (PKCS#8 PEM or DER) and subject.
    pub fn new(key: &[u8], subject: &str) -> Result<Vapid, String> {
        let key = signing_key(key)?;
        check_subject(subject).map_err(|e| format!("webPushSubject {e}"))?;
        Ok(Vapid {
            public: public_key(&key),
            key,
            subject: subject.to_owned(),
            rng: SystemRandom::new(),
            signed: Mutex::new(HashMap::new()),
        })
    }

    /// The `Authorization` header value for requests to `origin`
    /// (`https://host[:port]`) at `now` (Unix seconds).
    pub fn authorization(&self, origin: &str, now: u64) -> Result<Arc<str>, String> {
        let mut signed = self.signed.lock().map_err(|_| "VAPID cache poisoned".to_owned())?;
        if let Some((value, exp)) = signed.get(origin) {
            if exp.saturating_sub(now) >= RENEW_BEFORE_SECS {
                return Ok(value.clone());
            }
        }
        let exp = now.saturating_add(LIFETIME_SECS);
        let claims = serde_json::json!({ "aud": origin, "exp": exp, "sub": self.subject });
        let mut jwt = URL_SAFE_NO_PAD.encode(br#"{"typ":"JWT","alg":"ES256"}"#);
        jwt.push('.');
        URL_SAFE_NO_PAD.encode_string(claims.to_string().as_bytes(), &mut jwt);
        let signature = self.key.sign(&self.rng, jwt.as_bytes()).map_err(|_| "ECDSA signing failed".to_owned())?;
        jwt.push('.');
        URL_SAFE_NO_PAD.encode_string(signature.as_ref(), &mut jwt);
        let value: Arc<str> = format!("vapid t={jwt}, k={}", self.public).into();
        if signed.len() >= MAX_ORIGINS {
            signed.clear();
        }
        signed.insert(origin.to_owned(), (value.clone(), exp));
        Ok(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ring::signature::{UnparsedPublicKey, ECDSA_P256_SHA256_FIXED};

    #[test]
    fn the_jwt_verifies_names_its_origin_and_is_cached_per_origin() {
        let der = generate().unwrap();
        let v = Vapid::new(&der, "mailto:ops@example.com").unwrap();
        let header = v.authorization("https://push.example.net", 1_000_000).unwrap();
        let (t, k) = header.strip_prefix("vapid t=").unwrap().split_once(", k=").unwrap();
        assert_eq!(k, public_key(&signing_key(&der).unwrap()));
        let (input, sig) = t.rsplit_once('.').unwrap();
        let point = URL_SAFE_NO_PAD.decode(k).unwrap();
        assert_eq!(point.len(), 65);
        UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, &point)
            .verify(input.as_bytes(), &URL_SAFE_NO_PAD.decode(sig).unwrap())
            .unwrap();
        let claims: serde_json::Value =
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(input.split('.').nth(1).unwrap()).unwrap()).unwrap();
        assert_eq!(
            claims,
            serde_json::json!({"aud": "https://push.example.net", "exp": 1_000_000 + LIFETIME_SECS, "sub": "mailto:ops@example.com"})
        );
        assert_eq!(v.authorization("https://push.example.net", 1_000_000 + 3600).unwrap(), header, "cached");
        assert_ne!(v.authorization("https://other.example.net", 1_000_000).unwrap(), header, "per origin");
        assert_ne!(v.authorization("https://push.example.net", 1_000_000 + LIFETIME_SECS - 60).unwrap(), header);
    }

    #[test]
    fn keys_and_subjects() {
        assert!(signing_key(b"nope").is_err());
        let new = material(None).unwrap();
        let pem = crate::credentials::to_pem(new.der.clone(), "PRIVATE KEY");
        let given = material(Some(&pem)).unwrap();
        assert_eq!((given.der, given.public.len()), (new.der, 65));
        assert!(material(Some(b"-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n")).is_err());
        for ok in ["mailto:ops@example.com", "https://example.com/contact"] {
            assert_eq!(check_subject(ok), Ok(()), "{ok}");
        }
        for bad in ["ops@example.com", "mailto:", "mailto:@x", "http://example.com", "https://", "mailto:a b@c", ""] {
            assert!(check_subject(bad).is_err(), "{bad}");
        }
        assert!(check_subject(&format!("mailto:a@{}", "x".repeat(300))).is_err());
    }
}
