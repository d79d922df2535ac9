//! Just enough JWT (RFC 7519) to verify what Herald signs: ES256 provider tokens for APNs and
//! RS256 service-account assertions for Google's OAuth endpoint. Verification uses ring.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use ring::signature::{UnparsedPublicKey, ECDSA_P256_SHA256_FIXED, RSA_PKCS1_2048_8192_SHA256};
use serde::de::DeserializeOwned;
use serde::Deserialize;

/// A JWT split into its parts, not yet verified.
pub(crate) struct Jwt<'a> {
    pub(crate) header: JwtHeader,
    /// `base64url(header) "." base64url(claims)`: the signed bytes.
    signing_input: &'a [u8],
    claims_b64: &'a str,
    signature: Vec<u8>,
}

/// The fields of a JOSE header the simulators look at.
#[derive(Debug, Deserialize)]
pub(crate) struct JwtHeader {
    pub(crate) alg: String,
    #[serde(default)]
    pub(crate) kid: Option<String>,
}

/// Why a token could not be read.
#[derive(Debug)]
pub(crate) struct Malformed;

impl<'a> Jwt<'a> {
    /// Splits and decodes a compact JWS (`header.claims.signature`).
    pub(crate) fn parse(token: &'a str) -> Result<Jwt<'a>, Malformed> {
        let mut parts = token.split('.');
        let (Some(h), Some(c), Some(s), None) = (parts.next(), parts.next(), parts.next(), parts.next()) else {
            return Err(Malformed);
        };
        let header_json = URL_SAFE_NO_PAD.decode(h).map_err(|_| Malformed)?;
        let header: JwtHeader = serde_json::from_slice(&header_json).map_err(|_| Malformed)?;
        let signature = URL_SAFE_NO_PAD.decode(s).map_err(|_| Malformed)?;
        // Exactly three parts: what precedes the last dot is `header.claims`.
        let (signing_input, _) = token.rsplit_once('.').ok_or(Malformed)?;
        Ok(Jwt { header, signing_input: signing_input.as_bytes(), claims_b64: c, signature })
    }

    /// Decodes the claims (not verified by itself: call a `verify_*` first).
    pub(crate) fn claims<C: DeserializeOwned>(&self) -> Result<C, Malformed> {
        let json = URL_SAFE_NO_PAD.decode(self.claims_b64).map_err(|_| Malformed)?;
        serde_json::from_slice(&json).map_err(|_| Malformed)
    }

    /// ES256: ECDSA P-256 SHA-256, signature `r || s` (64 bytes); `public_point` is the
    /// uncompressed SEC1 point (65 bytes).
    pub(crate) fn verify_es256(&self, public_point: &[u8]) -> bool {
        self.header.alg == "ES256"
            && UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, public_point)
                .verify(self.signing_input, &self.signature)
                .is_ok()
    }

    /// RS256: RSASSA-PKCS1-v1_5 SHA-256; `public_key` is a PKCS#1 `RSAPublicKey` DER.
    pub(crate) fn verify_rs256(&self, public_key: &[u8]) -> bool {
        self.header.alg == "RS256"
            && UnparsedPublicKey::new(&RSA_PKCS1_2048_8192_SHA256, public_key)
                .verify(self.signing_input, &self.signature)
                .is_ok()
    }
}

/// The key bytes ring verifies with, from a `-----BEGIN PUBLIC KEY-----` (SPKI) PEM: the SEC1
/// point of an EC key, the PKCS#1 `RSAPublicKey` of an RSA key.
pub(crate) fn spki_pem_key_bytes(pem: &str) -> Result<Vec<u8>, String> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::SubjectPublicKeyInfoDer;
    use x509_parser::prelude::FromDer;
    let der = SubjectPublicKeyInfoDer::from_pem_slice(pem.as_bytes()).map_err(|e| e.to_string())?;
    let (_, spki) = x509_parser::x509::SubjectPublicKeyInfo::from_der(der.as_ref()).map_err(|e| e.to_string())?;
    Ok(spki.subject_public_key.data.to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;
    use ring::rand::SystemRandom;
    use ring::signature::{EcdsaKeyPair, KeyPair, ECDSA_P256_SHA256_FIXED_SIGNING};

    #[test]
    fn es256_round_trip() {
        let rng = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
        let kp = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng).unwrap();
        let h = URL_SAFE_NO_PAD.encode(br#"{"alg":"ES256","kid":"ABC"}"#);
        let c = URL_SAFE_NO_PAD.encode(br#"{"iss":"T","iat":1}"#);
        let input = format!("{h}.{c}");
        let sig = kp.sign(&rng, input.as_bytes()).unwrap();
        let token = format!("{input}.{}", URL_SAFE_NO_PAD.encode(sig.as_ref()));
        let jwt = Jwt::parse(&token).unwrap();
        assert_eq!(jwt.header.kid.as_deref(), Some("ABC"));
        assert!(jwt.verify_es256(kp.public_key().as_ref()));
        let tampered = format!(
            "{h}.{}.{}",
            URL_SAFE_NO_PAD.encode(br#"{"iss":"X","iat":1}"#),
            URL_SAFE_NO_PAD.encode(sig.as_ref())
        );
        assert!(!Jwt::parse(&tampered).unwrap().verify_es256(kp.public_key().as_ref()));
        assert!(Jwt::parse("a.b").is_err());
    }
}
