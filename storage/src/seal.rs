//! Sealing of secrets at rest with AES-256-GCM (ring).
//!
//! Push credentials, signing keys and other secrets are stored sealed under the
//! master key; the context (tenant, record, field) is bound as associated data,
//! so a sealed value copied into another record or tenant does not open.

use crate::{Error, Result};
use ring::aead::{Aad, LessSafeKey, Nonce, UnboundKey, AES_256_GCM, NONCE_LEN};
use ring::rand::{SecureRandom, SystemRandom};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// A sealed value: nonce, ciphertext and tag. Never holds clear text.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Secret(Vec<u8>);

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(***)")
    }
}

/// The 256-bit key every secret is sealed under.
pub struct MasterKey {
    key: LessSafeKey,
    rng: SystemRandom,
}

impl MasterKey {
    /// A key from its 32 raw bytes: `Seal` for any other length.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self> {
        let unbound = UnboundKey::new(&AES_256_GCM, bytes).map_err(|_| Error::Seal("master key must be 32 bytes"))?;
        Ok(Self { key: LessSafeKey::new(unbound), rng: SystemRandom::new() })
    }

    /// Loads the hex-encoded key from `path`, creating it (mode 0600) on
    /// first use. Engines starting together agree on one key: the file
    /// appears whole or not at all (staged, then linked), and whoever
    /// loses the race to create it reads the winner's.
    pub fn load_or_create(path: &Path) -> Result<Self> {
        match std::fs::read_to_string(path) {
            Ok(text) => {
                let bytes = hex::decode(text.trim()).map_err(|_| Error::Seal("master key file is not hex"))?;
                Self::from_bytes(&bytes)
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let mut bytes = [0u8; 32];
                SystemRandom::new().fill(&mut bytes).map_err(|_| Error::Seal("no randomness"))?;
                if let Some(dir) = path.parent() {
                    std::fs::create_dir_all(dir)?;
                }
                match publish_private(path, hex::encode(bytes).as_bytes()) {
                    Ok(()) => Self::from_bytes(&bytes),
                    // Another engine created it meanwhile: whole, since it was linked.
                    Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Self::load_or_create(path),
                    Err(e) => Err(e.into()),
                }
            }
            Err(e) => Err(e.into()),
        }
    }

    /// Seals `plain` under a fresh random nonce, binding `context` (tenant, record, field) as associated data.
    pub fn seal(&self, plain: &[u8], context: &str) -> Result<Secret> {
        let mut nonce = [0u8; NONCE_LEN];
        self.rng.fill(&mut nonce).map_err(|_| Error::Seal("no randomness"))?;
        let mut out = Vec::with_capacity(plain.len().saturating_add(NONCE_LEN + 16));
        out.extend_from_slice(&nonce);
        out.extend_from_slice(plain);
        let tag = self
            .key
            .seal_in_place_separate_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(context.as_bytes()),
                &mut out[NONCE_LEN..],
            )
            .map_err(|_| Error::Seal("seal failed"))?;
        out.extend_from_slice(tag.as_ref());
        Ok(Secret(out))
    }

    /// Opens what [`MasterKey::seal`] made; `Seal` unless the key and `context` are the ones it was sealed with.
    pub fn open(&self, secret: &Secret, context: &str) -> Result<Vec<u8>> {
        let (nonce, sealed) = secret.0.split_at_checked(NONCE_LEN).ok_or(Error::Seal("sealed value too short"))?;
        let nonce = Nonce::try_assume_unique_for_key(nonce).map_err(|_| Error::Seal("bad nonce"))?;
        let mut buf = sealed.to_vec();
        let plain = self
            .key
            .open_in_place(nonce, Aad::from(context.as_bytes()), &mut buf)
            .map_err(|_| Error::Seal("secret does not open under this master key and context"))?;
        Ok(plain.to_vec())
    }
}

/// Creates `path` holding `bytes` (mode 0600), whole or not at all:
/// written and synced under a name of its own, then linked into place,
/// which fails with `AlreadyExists` when `path` exists (another engine
/// created it first).
fn publish_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let mut staged = tempfile::Builder::new().prefix(".master-key-").tempfile_in(dir)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        staged.as_file().set_permissions(std::fs::Permissions::from_mode(0o600))?;
    }
    staged.write_all(bytes)?;
    staged.as_file().sync_all()?;
    std::fs::hard_link(staged.path(), path)?;
    std::fs::File::open(dir)?.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seals_opens_and_binds_context() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("master.key");
        let k = MasterKey::load_or_create(&path).unwrap();
        let s = k.seal(b"top secret", "acme/app/key").unwrap();
        assert!(!s.0.windows(10).any(|w| w == b"top secret"));
        assert_eq!(k.open(&s, "acme/app/key").unwrap(), b"top secret");
        assert!(k.open(&s, "other/app/key").is_err());
        let again = MasterKey::load_or_create(&path).unwrap();
        assert_eq!(again.open(&s, "acme/app/key").unwrap(), b"top secret");
        let other = MasterKey::from_bytes(&[7u8; 32]).unwrap();
        assert!(other.open(&s, "acme/app/key").is_err());
    }

    /// Engines starting together on a fresh data directory all start, with
    /// one key: what one seals, every other opens.
    #[test]
    fn keys_created_at_once_are_one_key() {
        for _ in 0..20 {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("keys").join("master.key");
            let barrier = std::sync::Barrier::new(8);
            let keys: Vec<MasterKey> = std::thread::scope(|scope| {
                let loads: Vec<_> = (0..8)
                    .map(|_| {
                        scope.spawn(|| {
                            barrier.wait();
                            MasterKey::load_or_create(&path)
                        })
                    })
                    .collect();
                loads.into_iter().map(|l| l.join().unwrap().unwrap()).collect()
            });
            let sealed = keys[0].seal(b"one key", "ctx").unwrap();
            assert!(keys.iter().all(|k| k.open(&sealed, "ctx").is_ok()));
            let left: Vec<_> = std::fs::read_dir(path.parent().unwrap()).unwrap().collect();
            assert_eq!(left.len(), 1, "only the key file is left");
        }
    }
}
