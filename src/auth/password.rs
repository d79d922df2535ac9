//! Password hashing with argon2id, and verification in constant-ish time: an
//! unknown user is checked against a fixed hash, so timing does not reveal
//! which usernames exist.

use argon2::password_hash::{PasswordHasher, PasswordVerifier};
use argon2::Argon2;
use std::sync::OnceLock;

/// An argon2id PHC string of `password` with a random salt; slow by design, so call it off the async threads.
pub fn hash(password: &str) -> Result<String, String> {
    let mut salt = [0u8; 16];
    ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut salt)
        .map_err(|_| "no randomness".to_string())?;
    Argon2::default()
        .hash_password_with_salt(password.as_bytes(), &salt)
        .map(|h| h.to_string())
        .map_err(|e| e.to_string())
}

/// True when `password` matches the PHC `hash`; `None` verifies against a dummy.
pub fn verify(password: &str, hash: Option<&str>) -> bool {
    static DUMMY: OnceLock<String> = OnceLock::new();
    let dummy = DUMMY.get_or_init(|| self::hash("no such user: dummy password").unwrap_or_default());
    let (phc, real) = match hash {
        Some(h) => (h, true),
        None => (dummy.as_str(), false),
    };
    let ok = match argon2::password_hash::phc::PasswordHash::new(phc) {
        Ok(parsed) => Argon2::default().verify_password(password.as_bytes(), &parsed).is_ok(),
        Err(_) => false,
    };
    ok && real
}

#[cfg(test)]
mod tests {
    #[test]
    fn hashes_verify_and_differ() {
        let h = super::hash("s3cret").unwrap();
        assert!(h.starts_with("$argon2id$"));
        assert!(super::verify("s3cret", Some(&h)));
        assert!(!super::verify("wrong", Some(&h)));
        assert!(!super::verify("s3cret", None));
        assert_ne!(h, super::hash("s3cret").unwrap());
    }
}
