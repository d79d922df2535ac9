//! Compact JWS (ES256) with the signer's certificate chain in `x5c`, so a
//! client verifies the signature against the tenant's chain.

use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use base64::Engine as _;
use ring::rand::SystemRandom;
use ring::signature::{EcdsaKeyPair, ECDSA_P256_SHA256_FIXED_SIGNING};
use serde_json::{json, Value};

/// `header.payload.signature`; `chain_der` is leaf first.
pub fn sign(pkcs8: &[u8], chain_der: &[Vec<u8>], payload: &Value) -> Result<String, String> {
    let rng = SystemRandom::new();
    let key = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8, &rng)
        .map_err(|_| "the signer key is not a P-256 key".to_string())?;
    let x5c: Vec<String> = chain_der.iter().map(|d| STANDARD.encode(d)).collect();
    let header = json!({ "alg": "ES256", "typ": "JOSE", "x5c": x5c });
    let input =
        format!("{}.{}", URL_SAFE_NO_PAD.encode(header.to_string()), URL_SAFE_NO_PAD.encode(payload.to_string()));
    let sig = key.sign(&rng, input.as_bytes()).map_err(|_| "signing failed".to_string())?;
    Ok(format!("{input}.{}", URL_SAFE_NO_PAD.encode(sig.as_ref())))
}
