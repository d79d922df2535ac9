//! Per-tenant ES256 signing keys, unsealed once and cached.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use dashmap::DashMap;
use herald_storage::Store;
use jsonwebtoken::{DecodingKey, EncodingKey};
use ring::signature::{EcdsaKeyPair, KeyPair, ECDSA_P256_SHA256_FIXED_SIGNING};
use std::sync::Arc;

/// A tenant's token key: signs and verifies its access tokens; published in its JWKS.
pub struct TenantKey {
    /// Key id (a ULID chosen at tenant creation): the `kid` of token headers and of the JWKS.
    pub kid: String,
    /// The private key, for signing tokens.
    pub encoding: EncodingKey,
    /// The public key, for verifying tokens.
    pub decoding: DecodingKey,
    /// Base64url affine coordinates of the public key, for the JWKS.
    pub x: String,
    /// Base64url Y coordinate of the public key, for the JWKS.
    pub y: String,
    /// The public key as DER SubjectPublicKeyInfo: Keycloak's realm info
    /// publishes it (base64) as `public_key`, which client libraries read.
    pub spki: Vec<u8>,
}

/// The DER SubjectPublicKeyInfo of a P-256 key up to its point: SEQUENCE {
/// SEQUENCE { id-ecPublicKey, prime256v1 }, BIT STRING (no unused bits) }
/// (RFC 5480 §2).
const P256_SPKI_PREFIX: [u8; 26] = [
    0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06, 0x08, 0x2a, 0x86, 0x48, 0xce,
    0x3d, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00,
];

impl TenantKey {
    /// A fresh PKCS#8 P-256 key.
    pub fn generate_pkcs8() -> Result<Vec<u8>, String> {
        let rng = ring::rand::SystemRandom::new();
        EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
            .map(|d| d.as_ref().to_vec())
            .map_err(|_| "key generation failed".to_string())
    }

    /// The key of a tenant from its unsealed PKCS#8 document; fails on a key that is not P-256.
    pub fn from_pkcs8(kid: &str, pkcs8: &[u8]) -> Result<Self, String> {
        let rng = ring::rand::SystemRandom::new();
        let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8, &rng)
            .map_err(|e| format!("bad tenant key: {e}"))?;
        // Uncompressed point: 0x04 || X (32) || Y (32).
        let point = pair.public_key().as_ref();
        if point.len() != 65 {
            return Err("unexpected public key encoding".into());
        }
        let x = URL_SAFE_NO_PAD.encode(&point[1..33]);
        let y = URL_SAFE_NO_PAD.encode(&point[33..65]);
        let decoding = DecodingKey::from_ec_components(&x, &y).map_err(|e| e.to_string())?;
        let spki = [&P256_SPKI_PREFIX[..], point].concat();
        Ok(Self { kid: kid.to_string(), encoding: EncodingKey::from_ec_der(pkcs8), decoding, x, y, spki })
    }

    /// The public key, as the realm's JWKS publishes it.
    pub fn public_jwk(&self) -> Jwk {
        Jwk {
            kty: "EC".into(),
            crv: "P-256".into(),
            alg: "ES256".into(),
            use_: "sig".into(),
            kid: self.kid.clone(),
            x: self.x.clone(),
            y: self.y.clone(),
        }
    }

    /// [`Self::public_jwk`] as a JSON value.
    pub fn jwk(&self) -> serde_json::Value {
        serde_json::to_value(self.public_jwk()).unwrap_or_default()
    }
}

/// A public signing key of a realm (RFC 7517; an EC P-256 key, RFC 7518 §6.2).
#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
pub struct Jwk {
    /// `EC`.
    pub kty: String,
    /// `P-256`.
    pub crv: String,
    /// `ES256`.
    pub alg: String,
    /// `sig`.
    #[serde(rename = "use")]
    pub use_: String,
    /// Key id: matches the `kid` header of the realm's tokens.
    pub kid: String,
    /// The point's X coordinate (base64url).
    pub x: String,
    /// The point's Y coordinate (base64url).
    pub y: String,
}

/// Tenant keys by tenant id; a tenant's key is unsealed on first use.
#[derive(Default)]
pub struct KeyCache {
    keys: DashMap<String, Arc<TenantKey>>,
    /// Tokens whose signature was already verified, by SHA-256 of the token.
    verified: DashMap<[u8; 32], Arc<Verified>>,
}

/// A verified token: its claims (`typ` among them) and the principal they
/// make, its tenant's. Shared, not copied, on each request that presents the
/// token again.
pub(crate) struct Verified {
    pub claims: super::tokens::AccessClaims,
    pub principal: Arc<super::Principal>,
}

impl Verified {
    pub(crate) fn new(tenant: String, claims: super::tokens::AccessClaims) -> Verified {
        let principal = Arc::new(super::Principal {
            tenant,
            username: claims.preferred_username.clone(),
            roles: claims.realm_access.roles.clone(),
            client_id: claims.ast_client_id.clone(),
            issued_at: claims.iat,
        });
        Verified { claims, principal }
    }

    /// The tenant whose key signed the token.
    pub(crate) fn tenant(&self) -> &str {
        &self.principal.tenant
    }
}

/// Verified tokens remembered at most; the cache is cleared when full.
const VERIFIED_CAPACITY: usize = 100_000;

impl KeyCache {
    /// A token verified before, still unexpired at `now` (Unix seconds).
    pub(crate) fn verified(&self, token: &str, now: u64) -> Option<Arc<Verified>> {
        let digest = token_digest(token);
        let hit = self.verified.get(&digest).map(|v| Arc::clone(&v))?;
        if hit.claims.exp < now {
            self.verified.remove(&digest);
            return None;
        }
        Some(hit)
    }

    pub(crate) fn remember(&self, token: &str, v: Arc<Verified>) {
        if self.verified.len() >= VERIFIED_CAPACITY {
            self.verified.clear();
        }
        self.verified.insert(token_digest(token), v);
    }

    /// Drops the tenant's key and the tokens of the tenant verified before
    /// (its actor stopped: the tenant is idle).
    pub fn forget(&self, tenant: &str) {
        self.keys.remove(tenant);
        self.verified.retain(|_, v| v.tenant() != tenant);
    }

    /// Whether the tenant's key is cached.
    pub fn holds(&self, tenant: &str) -> bool {
        self.keys.contains_key(tenant)
    }

    /// The tenant's key, or `None` for an unknown tenant.
    pub fn get(&self, store: &Store, tenant: &str) -> Result<Option<Arc<TenantKey>>, herald_storage::Error> {
        if let Some(k) = self.keys.get(tenant) {
            return Ok(Some(k.clone()));
        }
        let Some(t) = store.tenants().get(tenant)? else {
            return Ok(None);
        };
        let pkcs8 = store.unseal(&t.signing_key, &signing_key_context(tenant))?;
        let key =
            TenantKey::from_pkcs8(&t.key_id, &pkcs8).map_err(|_| herald_storage::Error::Seal("bad tenant key"))?;
        let key = Arc::new(key);
        self.keys.insert(tenant.to_string(), key.clone());
        Ok(Some(key))
    }
}

/// The sealing context of a tenant's signing key in storage: a sealed key unseals only under its own tenant.
pub fn signing_key_context(tenant: &str) -> String {
    format!("tenant/{tenant}/signing-key")
}

fn token_digest(token: &str) -> [u8; 32] {
    let d = ring::digest::digest(&ring::digest::SHA256, token.as_bytes());
    let mut out = [0u8; 32];
    out.copy_from_slice(d.as_ref());
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use x509_parser::prelude::FromDer;

    #[test]
    fn the_spki_is_the_der_of_the_public_key() {
        let pkcs8 = TenantKey::generate_pkcs8().unwrap();
        let key = TenantKey::from_pkcs8("k", &pkcs8).unwrap();
        let (_, spki) = x509_parser::x509::SubjectPublicKeyInfo::from_der(&key.spki).unwrap();
        assert_eq!(spki.algorithm.algorithm.to_id_string(), "1.2.840.10045.2.1");
        let point = spki.subject_public_key.data.to_vec();
        assert_eq!(URL_SAFE_NO_PAD.encode(&point[1..33]), key.x);
        assert_eq!(URL_SAFE_NO_PAD.encode(&point[33..65]), key.y);
    }

    /// A request presenting a token seen before gets the principal its cache
    /// entry holds, not a copy of the claims.
    #[test]
    fn a_remembered_token_shares_its_principal() {
        let claims: super::super::tokens::AccessClaims = serde_json::from_value(serde_json::json!({
            "exp": 2_000_000_000u64, "iat": 1_700_000_000u64, "jti": "j", "iss": "i", "aud": "a",
            "sub": "s", "typ": "Bearer", "azp": "z", "session_state": "x", "scope": "openid",
            "realm_access": {"roles": ["client"]}, "preferred_username": "service-account-c1",
            "astClientId": "c1"
        }))
        .unwrap();
        let cache = KeyCache::default();
        cache.remember("token", Arc::new(Verified::new("t1".into(), claims)));
        let (first, again) = (cache.verified("token", 1).unwrap(), cache.verified("token", 1).unwrap());
        assert!(Arc::ptr_eq(&first.principal, &again.principal));
        let p = &first.principal;
        assert_eq!((p.tenant.as_str(), p.username.as_str()), ("t1", "service-account-c1"));
        assert_eq!(
            (p.roles.clone(), p.client_id.as_deref(), p.issued_at),
            (vec!["client".to_string()], Some("c1"), 1_700_000_000)
        );
    }
}
