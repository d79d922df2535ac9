//! Web Push message encryption (RFC 8291) in the `aes128gcm` content coding
//! (RFC 8188): one record, so a message is the 86-byte header (salt, record
//! size, the sender's public key) and the plaintext, its padding delimiter
//! and the AES-GCM tag.
//!
//! ring does everything: ECDH P-256 with an ephemeral key per message, HKDF-SHA256 and
//! AES-128-GCM. ring cannot import a fixed ECDH private key (its ephemeral
//! keys are generated, used once and dropped), so the deterministic core,
//! [`encrypt_with`], takes the ECDH secret, the sender's public key and the
//! salt as inputs: production ([`encrypt`]) feeds it a fresh ring key pair
//! and salt, and the RFC 8291 appendix A test feeds it the RFC's fixed key
//! through the `p256` crate (a dev-dependency only), so the production path
//! never holds a reusable ECDH key.

use ring::aead::{Aad, LessSafeKey, Nonce, UnboundKey, AES_128_GCM};
use ring::agreement::{agree_ephemeral, EphemeralPrivateKey, UnparsedPublicKey, ECDH_P256};
use ring::hkdf::{KeyType, Salt, HKDF_SHA256};
use ring::rand::{SecureRandom, SystemRandom};

/// The length of an uncompressed P-256 point (`0x04 || x || y`): `keys.p256dh`.
pub const PUBLIC_KEY_LEN: usize = 65;
/// The length of the subscription's authentication secret (`keys.auth`).
pub const AUTH_LEN: usize = 16;
/// The record size written in the header: the largest record push services must take.
pub const RECORD_SIZE: u32 = 4096;
/// The `aes128gcm` header: salt (16), record size (4), key id length (1), key id (65).
pub const HEADER_LEN: usize = 16 + 4 + 1 + PUBLIC_KEY_LEN;
/// What one record adds to its plaintext: the padding delimiter and the AES-GCM tag.
const RECORD_OVERHEAD: usize = 1 + 16;
/// The largest plaintext a message carries: one record of [`RECORD_SIZE`]
/// bytes, header included, is the 4 KiB every push service accepts.
pub const MAX_PLAINTEXT: usize = RECORD_SIZE as usize - HEADER_LEN - RECORD_OVERHEAD;

/// Why a message could not be encrypted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EceError {
    /// The subscription's `p256dh` is not a P-256 point, or `auth` not 16 bytes.
    #[error("subscription keys: {0}")]
    Keys(&'static str),
    /// The plaintext is over [`MAX_PLAINTEXT`].
    #[error("payload of {0} bytes exceeds Web Push's {MAX_PLAINTEXT}-byte limit (one 4096-byte aes128gcm record)")]
    TooLarge(usize),
    /// The system random generator or a primitive failed.
    #[error("encryption failed")]
    Crypto,
}

/// An HKDF output length for ring.
struct Len(usize);

impl KeyType for Len {
    fn len(&self) -> usize {
        self.0
    }
}

fn hkdf<const N: usize>(salt: &[u8], ikm: &[u8], info: &[&[u8]]) -> Result<[u8; N], EceError> {
    let mut out = [0u8; N];
    Salt::new(HKDF_SHA256, salt)
        .extract(ikm)
        .expand(info, Len(N))
        .and_then(|okm| okm.fill(&mut out))
        .map_err(|_| EceError::Crypto)?;
    Ok(out)
}

/// Encrypts `plaintext` for the subscription whose public key is `ua_public`
/// (`keys.p256dh`) and authentication secret `auth` (`keys.auth`), with a new
/// ephemeral key pair and salt: the body of one push message.
pub fn encrypt(ua_public: &[u8], auth: &[u8], plaintext: &[u8]) -> Result<Vec<u8>, EceError> {
    check_keys(ua_public, auth)?;
    let rng = SystemRandom::new();
    let mut salt = [0u8; 16];
    rng.fill(&mut salt).map_err(|_| EceError::Crypto)?;
    let private = EphemeralPrivateKey::generate(&ECDH_P256, &rng).map_err(|_| EceError::Crypto)?;
    let public = private.compute_public_key().map_err(|_| EceError::Crypto)?;
    let as_public: &[u8; PUBLIC_KEY_LEN] = public.as_ref().try_into().map_err(|_| EceError::Crypto)?;
    let peer = UnparsedPublicKey::new(&ECDH_P256, ua_public);
    agree_ephemeral(private, &peer, |secret| encrypt_with(secret, as_public, &salt, ua_public, auth, plaintext))
        .map_err(|_| EceError::Keys("p256dh is not a point of P-256"))?
}

fn check_keys(ua_public: &[u8], auth: &[u8]) -> Result<(), EceError> {
    if ua_public.len() != PUBLIC_KEY_LEN || ua_public.first() != Some(&4) {
        return Err(EceError::Keys("p256dh must be an uncompressed P-256 point (65 bytes)"));
    }
    if auth.len() != AUTH_LEN {
        return Err(EceError::Keys("auth must be 16 bytes"));
    }
    Ok(())
}

/// The deterministic core of [`encrypt`] (RFC 8291 §3.4, RFC 8188 §2): the
/// message for the ECDH secret `ecdh_secret` between the sender's key
/// (`as_public`) and the subscription's (`ua_public`), under `salt`.
pub fn encrypt_with(
    ecdh_secret: &[u8],
    as_public: &[u8; PUBLIC_KEY_LEN],
    salt: &[u8; 16],
    ua_public: &[u8],
    auth: &[u8],
    plaintext: &[u8],
) -> Result<Vec<u8>, EceError> {
    check_keys(ua_public, auth)?;
    if plaintext.len() > MAX_PLAINTEXT {
        return Err(EceError::TooLarge(plaintext.len()));
    }
    let ikm: [u8; 32] = hkdf(auth, ecdh_secret, &[b"WebPush: info\0", ua_public, as_public])?;
    let cek: [u8; 16] = hkdf(salt, &ikm, &[b"Content-Encoding: aes128gcm\0"])?;
    let nonce: [u8; 12] = hkdf(salt, &ikm, &[b"Content-Encoding: nonce\0"])?;

    let mut body = Vec::with_capacity(HEADER_LEN.saturating_add(plaintext.len()).saturating_add(RECORD_OVERHEAD));
    body.extend_from_slice(salt);
    body.extend_from_slice(&RECORD_SIZE.to_be_bytes());
    body.push(PUBLIC_KEY_LEN as u8);
    body.extend_from_slice(as_public);
    let mut record = Vec::with_capacity(plaintext.len().saturating_add(RECORD_OVERHEAD));
    record.extend_from_slice(plaintext);
    record.push(2); // the delimiter of the last (and only) record, no padding
    let key = LessSafeKey::new(UnboundKey::new(&AES_128_GCM, &cek).map_err(|_| EceError::Crypto)?);
    key.seal_in_place_append_tag(Nonce::assume_unique_for_key(nonce), Aad::empty(), &mut record)
        .map_err(|_| EceError::Crypto)?;
    body.extend_from_slice(&record);
    Ok(body)
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    use base64::Engine as _;

    fn b64(s: &str) -> Vec<u8> {
        URL_SAFE_NO_PAD.decode(s).unwrap()
    }

    /// RFC 8291 appendix A, byte for byte: the RFC's fixed sender key (through
    /// `p256`, see the module doc) and salt into the production core.
    #[test]
    fn rfc8291_appendix_a() {
        let plaintext = b64("V2hlbiBJIGdyb3cgdXAsIEkgd2FudCB0byBiZSBhIHdhdGVybWVsb24");
        assert_eq!(plaintext, b"When I grow up, I want to be a watermelon");
        let as_private = p256::SecretKey::from_slice(&b64("yfWPiYE-n46HLnH0KqZOF1fJJU3MYrct3AELtAQ-oRw")).unwrap();
        let as_public = b64("BP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A8");
        use p256::elliptic_curve::sec1::ToEncodedPoint;
        assert_eq!(as_private.public_key().to_encoded_point(false).as_bytes(), &as_public[..]);
        let ua_public = b64("BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4");
        let ua = p256::PublicKey::from_sec1_bytes(&ua_public).unwrap();
        let shared = p256::ecdh::diffie_hellman(as_private.to_nonzero_scalar(), ua.as_affine());
        let secret = shared.raw_secret_bytes();
        assert_eq!(&secret[..], &b64("kyrL1jIIOHEzg3sM2ZWRHDRB62YACZhhSlknJ672kSs")[..]);
        let salt: [u8; 16] = b64("DGv6ra1nlYgDCS1FRnbzlw").try_into().unwrap();
        let auth = b64("BTBZMqHH6r4Tts7J_aSIgg");
        let body =
            encrypt_with(secret, &as_public.clone().try_into().unwrap(), &salt, &ua_public, &auth, &plaintext).unwrap();
        assert_eq!(
            URL_SAFE_NO_PAD.encode(&body),
            "DGv6ra1nlYgDCS1FRnbzlwAAEABBBP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A_yl95bQpu6cVPTpK4Mqgkf1CXztLVBSt2Ks3oZwbuwXPXLWyouBWLVWGNWQexSgSxsj_Qulcy4a-fN"
        );
    }

    /// The production path (ring's ephemeral key) decrypts with the
    /// subscription's private key, as a browser would.
    #[test]
    fn encrypt_round_trips_and_refuses_bad_keys_and_sizes() {
        use p256::elliptic_curve::sec1::ToEncodedPoint;
        let ua = p256::SecretKey::from_slice(&[7u8; 32]).unwrap();
        let ua_public = ua.public_key().to_encoded_point(false).as_bytes().to_vec();
        let auth = [9u8; 16];
        let body = encrypt(&ua_public, &auth, b"hello").unwrap();
        assert_eq!(body.len(), HEADER_LEN + 5 + 17);
        assert_eq!(&body[16..21], &[0, 0, 16, 0, 65]);
        let as_public = p256::PublicKey::from_sec1_bytes(&body[21..HEADER_LEN]).unwrap();
        let shared = p256::ecdh::diffie_hellman(ua.to_nonzero_scalar(), as_public.as_affine());
        let salt: [u8; 16] = body[..16].try_into().unwrap();
        let ikm: [u8; 32] =
            hkdf(&auth, shared.raw_secret_bytes(), &[b"WebPush: info\0", &ua_public, &body[21..HEADER_LEN]]).unwrap();
        let cek: [u8; 16] = hkdf(&salt, &ikm, &[b"Content-Encoding: aes128gcm\0"]).unwrap();
        let nonce: [u8; 12] = hkdf(&salt, &ikm, &[b"Content-Encoding: nonce\0"]).unwrap();
        let key = LessSafeKey::new(UnboundKey::new(&AES_128_GCM, &cek).unwrap());
        let mut record = body[HEADER_LEN..].to_vec();
        let plain = key.open_in_place(Nonce::assume_unique_for_key(nonce), Aad::empty(), &mut record).unwrap();
        assert_eq!(plain, b"hello\x02");

        assert_eq!(encrypt(&ua_public, &auth, &vec![b'x'; MAX_PLAINTEXT]).unwrap().len(), 4096);
        assert_eq!(encrypt(&ua_public, &auth, &vec![b'x'; MAX_PLAINTEXT + 1]), Err(EceError::TooLarge(3994)));
        assert!(matches!(encrypt(&ua_public[..64], &auth, b"x"), Err(EceError::Keys(_))));
        assert!(matches!(encrypt(&ua_public, &auth[..15], b"x"), Err(EceError::Keys(_))));
        let mut off_curve = ua_public.clone();
        off_curve[64] ^= 1;
        assert!(matches!(encrypt(&off_curve, &auth, b"x"), Err(EceError::Keys(_))));
    }
}
