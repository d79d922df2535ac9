//! The engine's root CA: generated on first start (key sealed in the store,
//! certificate also written to `<data dir>/root-ca.pem` for relying parties),
//! or loaded from operator files so Herald chains under an existing PKI.

use super::keys;
use herald_storage::signers::RootCa;
use herald_storage::Store;
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair, KeyUsagePurpose};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The root CA certificate and its key (20 years when generated).
pub struct Root {
    /// The certificate, PEM-encoded, as written to `root-ca.pem`.
    pub cert_pem: String,
    /// The certificate, DER-encoded, for chains and verification.
    pub cert_der: Vec<u8>,
    key: KeyPair,
}

const ROOT_VALIDITY: Duration = Duration::from_secs(20 * 365 * 86_400);

impl Root {
    /// The operator's CA when `ca` is given, else the stored root (created when missing).
    pub fn load_or_create(store: &Store, data_dir: &Path, ca: Option<&(PathBuf, PathBuf)>) -> Result<Root, String> {
        let root = match ca {
            Some((cert, key)) => Self::from_files(cert, key)?,
            None => match store.signers().root().map_err(|e| e.to_string())? {
                Some(r) => {
                    let pkcs8 = store.unseal(&r.key, RootCa::KEY_CONTEXT).map_err(|e| format!("root CA key: {e}"))?;
                    Self::from_parts(&r.cert_pem, keys::signing_key(&pkcs8)?)?
                }
                None => {
                    let pkcs8 = keys::generate_p256()?;
                    let cert_pem = Self::self_signed(&keys::signing_key(&pkcs8)?)?;
                    let sealed = store.seal(&pkcs8, RootCa::KEY_CONTEXT).map_err(|e| e.to_string())?;
                    // Another engine sharing the database may have stored its root first: that one is used.
                    let stored =
                        store.signers().put_root(&RootCa { cert_pem, key: sealed }).map_err(|e| e.to_string())?;
                    store.flush_now().map_err(|e| e.to_string())?;
                    let pkcs8 =
                        store.unseal(&stored.key, RootCa::KEY_CONTEXT).map_err(|e| format!("root CA key: {e}"))?;
                    Self::from_parts(&stored.cert_pem, keys::signing_key(&pkcs8)?)?
                }
            },
        };
        let path = data_dir.join("root-ca.pem");
        std::fs::write(&path, &root.cert_pem).map_err(|e| format!("writing {}: {e}", path.display()))?;
        Ok(root)
    }

    fn from_files(cert: &Path, key: &Path) -> Result<Root, String> {
        let cert_pem = std::fs::read_to_string(cert).map_err(|e| format!("ca_cert {}: {e}", cert.display()))?;
        let key_pem = std::fs::read_to_string(key).map_err(|e| format!("ca_key {}: {e}", key.display()))?;
        let key = KeyPair::from_pem(&key_pem).map_err(|e| format!("ca_key {}: {e}", key.display()))?;
        let root = Self::from_parts(&cert_pem, key)?;
        let (_, x509) = x509_parser::parse_x509_certificate(&root.cert_der).map_err(|e| format!("ca_cert: {e}"))?;
        if x509.public_key().raw != rcgen::PublicKeyData::subject_public_key_info(&root.key).as_slice() {
            return Err("ca_key does not belong to ca_cert".into());
        }
        if !x509.is_ca() {
            return Err("ca_cert is not a CA certificate".into());
        }
        Ok(root)
    }

    fn from_parts(cert_pem: &str, key: KeyPair) -> Result<Root, String> {
        let cert_der = super::pem_der(cert_pem, "CERTIFICATE").map_err(|e| format!("root CA certificate: {e}"))?;
        Ok(Root { cert_pem: super::cert_pem(&cert_der), cert_der, key })
    }

    fn self_signed(key: &KeyPair) -> Result<String, String> {
        let now = herald_storage::now_ms();
        let mut p = CertificateParams::default();
        p.distinguished_name = rcgen::DistinguishedName::new();
        p.distinguished_name.push(DnType::CommonName, "Herald Root CA");
        p.distinguished_name.push(DnType::OrganizationName, "Herald");
        p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        p.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign, KeyUsagePurpose::DigitalSignature];
        p.not_before = keys::time_ms(now.saturating_sub(3_600_000));
        p.not_after = keys::time_ms(now.saturating_add(ROOT_VALIDITY.as_millis() as u64));
        p.serial_number = Some(keys::serial()?.0);
        p.self_signed(key).map(|c| c.pem()).map_err(|e| format!("root CA certificate: {e}"))
    }

    /// The root as the issuer of signer certificates and of its CRLs.
    pub fn issuer(&self) -> Result<rcgen::Issuer<'static, &KeyPair>, String> {
        rcgen::Issuer::from_ca_cert_der(&self.cert_der.as_slice().into(), &self.key)
            .map_err(|e| format!("root CA certificate: {e}"))
    }

    /// The root certificate's validity end, so signer certificates never outlive it.
    pub fn not_after_ms(&self) -> u64 {
        x509_parser::parse_x509_certificate(&self.cert_der)
            .map(|(_, c)| (c.validity().not_after.timestamp().max(0) as u64).saturating_mul(1000))
            .unwrap_or(u64::MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_root_is_created_once_with_its_key_sealed() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&herald_storage::StoreOptions::new(dir.path())).unwrap();
        let a = Root::load_or_create(&store, dir.path(), None).unwrap();
        let b = Root::load_or_create(&store, dir.path(), None).unwrap();
        assert_eq!(a.cert_pem, b.cert_pem);
        assert_eq!(std::fs::read_to_string(dir.path().join("root-ca.pem")).unwrap(), a.cert_pem);
        let stored = store.signers().root().unwrap().unwrap();
        assert!(store.unseal(&stored.key, "another/context").is_err(), "the key is sealed to its context");
        let (_, x) = x509_parser::parse_x509_certificate(&a.cert_der).unwrap();
        assert!(x.is_ca());
        assert!(x.verify_signature(None).is_ok(), "self-signed");
    }
}
