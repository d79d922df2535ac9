//! TLS material: the simulators' own certificate authority, the server certificates it signs,
//! the APNs client certificates it signs, and the rustls server configurations.
//!
//! One CA lives in the cert dir (`ca.pem` + `ca_key.pem`) and is created on first use. Herald
//! trusts `ca.pem` instead of the public roots when talking to the simulators, and the APNs
//! simulator trusts it to authenticate client certificates (certificate-based APNs auth).
//! Server certificates are issued anew at every start (SAN `localhost`, `127.0.0.1`, `::1`),
//! so only the CA needs to be kept.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, DnValue, ExtendedKeyUsagePurpose, IsCa, Issuer,
    KeyPair, KeyUsagePurpose, PKCS_ECDSA_P256_SHA256,
};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use rustls::server::WebPkiClientVerifier;
use rustls::{RootCertStore, ServerConfig};
use time::{Duration, OffsetDateTime};

use crate::files::{read_string, write_atomic};
use crate::SimError;

/// The OID of the X.520 `UID` attribute (0.9.2342.19200300.100.1.1), where Apple's push
/// certificates carry the bundle id.
pub(crate) const UID_OID: &[u64] = &[0, 9, 2342, 19200300, 100, 1, 1];

/// The common-name prefix of Apple's push certificates ("Apple Push Services: com.example.app").
pub(crate) const APNS_CN_PREFIX: &str = "Apple Push Services: ";

/// Installs the ring crypto provider as rustls' process default (once; later calls are no-ops).
/// The project uses ring only, never aws-lc-rs.
pub fn install_crypto_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// The simulators' certificate authority.
pub(crate) struct Ca {
    pub(crate) cert_pem: String,
    cert_der: CertificateDer<'static>,
    key: KeyPair,
}

impl Ca {
    /// The CA certificate file in a cert dir.
    pub(crate) fn cert_path(cert_dir: &Path) -> PathBuf {
        cert_dir.join("ca.pem")
    }

    fn key_path(cert_dir: &Path) -> PathBuf {
        cert_dir.join("ca_key.pem")
    }

    /// Loads the CA from `cert_dir`, creating it (and the directory) when absent.
    pub(crate) fn load_or_create(cert_dir: &Path) -> Result<Ca, SimError> {
        let cert_path = Self::cert_path(cert_dir);
        let key_path = Self::key_path(cert_dir);
        if cert_path.exists() && key_path.exists() {
            let cert_pem = read_string(&cert_path)?;
            let key_pem = read_string(&key_path)?;
            let key =
                KeyPair::from_pem(&key_pem).map_err(|e| SimError::Cert(format!("{}: {e}", key_path.display())))?;
            let cert_der =
                first_cert_der(&cert_pem).map_err(|e| SimError::Cert(format!("{}: {e}", cert_path.display())))?;
            return Ok(Ca { cert_pem, cert_der, key });
        }
        let key = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256)?;
        let mut params = CertificateParams::default();
        let mut dn = DistinguishedName::new();
        dn.push(DnType::CommonName, "Herald Simulator CA");
        dn.push(DnType::OrganizationName, "Herald");
        params.distinguished_name = dn;
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages =
            vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign, KeyUsagePurpose::DigitalSignature];
        let now = OffsetDateTime::now_utc();
        // Now give or take a few years: well inside `OffsetDateTime`'s range.
        #[allow(clippy::arithmetic_side_effects)]
        {
            params.not_before = now - Duration::days(1);
            params.not_after = now + Duration::days(3650);
        }
        let cert = params.self_signed(&key)?;
        // Key first: a reader that sees ca.pem can then always find the key.
        write_atomic(&key_path, key.serialize_pem().as_bytes(), true)?;
        write_atomic(&cert_path, cert.pem().as_bytes(), false)?;
        Ok(Ca { cert_pem: cert.pem(), cert_der: cert.der().clone(), key })
    }

    fn issuer(&self) -> Result<Issuer<'static, &KeyPair>, SimError> {
        Ok(Issuer::from_ca_cert_der(&self.cert_der, &self.key)?)
    }

    /// Issues a TLS server certificate for the loopback names, with a fresh key.
    pub(crate) fn issue_server_cert(&self) -> Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>), SimError> {
        let key = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256)?;
        let mut params =
            CertificateParams::new(vec!["localhost".to_owned(), "127.0.0.1".to_owned(), "::1".to_owned()])?;
        params.distinguished_name.push(DnType::CommonName, "Herald push simulators");
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        let now = OffsetDateTime::now_utc();
        // Now give or take a few years: well inside `OffsetDateTime`'s range.
        #[allow(clippy::arithmetic_side_effects)]
        {
            params.not_before = now - Duration::days(1);
            params.not_after = now + Duration::days(825);
        }
        let cert = params.signed_by(&key, &self.issuer()?)?;
        let key_der = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
        Ok((vec![cert.der().clone()], key_der))
    }

    /// Issues an APNs client certificate bound to `bundle_id`, shaped like Apple's:
    /// `UID=<bundle id>, CN=Apple Push Services: <bundle id>, OU=<team id>`.
    /// Returns (certificate PEM, PKCS#8 key PEM).
    pub(crate) fn issue_apns_client_cert(&self, bundle_id: &str, team_id: &str) -> Result<(String, String), SimError> {
        let key = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256)?;
        let mut params = CertificateParams::default();
        let mut dn = DistinguishedName::new();
        dn.push(DnType::CustomDnType(UID_OID.to_vec()), DnValue::Utf8String(bundle_id.to_owned()));
        dn.push(DnType::CommonName, format!("{APNS_CN_PREFIX}{bundle_id}"));
        dn.push(DnType::OrganizationalUnitName, team_id);
        dn.push(DnType::OrganizationName, "Herald Simulator");
        params.distinguished_name = dn;
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        let now = OffsetDateTime::now_utc();
        // Now give or take a few years: well inside `OffsetDateTime`'s range.
        #[allow(clippy::arithmetic_side_effects)]
        {
            params.not_before = now - Duration::days(1);
            params.not_after = now + Duration::days(365);
        }
        let cert = params.signed_by(&key, &self.issuer()?)?;
        Ok((cert.pem(), key.serialize_pem()))
    }

    /// A root store holding only this CA.
    fn roots(&self) -> Result<RootCertStore, SimError> {
        let mut roots = RootCertStore::empty();
        roots.add(self.cert_der.clone()).map_err(|e| SimError::Tls(format!("CA certificate rejected: {e}")))?;
        Ok(roots)
    }

    /// The rustls server configuration of a simulator listener: ALPN `h2` then `http/1.1`.
    /// With `client_auth`, a client certificate signed by this CA is asked for but optional
    /// (APNs accepts token auth on connections without one).
    pub(crate) fn server_config(&self, client_auth: bool) -> Result<Arc<ServerConfig>, SimError> {
        install_crypto_provider();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let (certs, key) = self.issue_server_cert()?;
        let builder = ServerConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|e| SimError::Tls(e.to_string()))?;
        let builder = if client_auth {
            let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(self.roots()?), provider)
                .allow_unauthenticated()
                .build()
                .map_err(|e| SimError::Tls(e.to_string()))?;
            builder.with_client_cert_verifier(verifier)
        } else {
            builder.with_no_client_auth()
        };
        let mut config = builder.with_single_cert(certs, key).map_err(|e| SimError::Tls(e.to_string()))?;
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        Ok(Arc::new(config))
    }
}

/// The DER of the first certificate in a PEM string.
fn first_cert_der(pem: &str) -> Result<CertificateDer<'static>, String> {
    use rustls::pki_types::pem::PemObject;
    CertificateDer::pem_slice_iter(pem.as_bytes())
        .next()
        .ok_or_else(|| "no certificate in PEM".to_owned())?
        .map_err(|e| e.to_string())
}

/// The bundle id an APNs client certificate may push to: its `UID` attribute, or else its
/// common name without Apple's "Apple Push Services: " prefix.
pub(crate) fn apns_cert_bundle_id(cert: &CertificateDer<'_>) -> Option<String> {
    let (_, x509) = x509_parser::parse_x509_certificate(cert.as_ref()).ok()?;
    let subject = x509.subject();
    let uid_oid = x509_parser::oid_registry::Oid::from(UID_OID).ok()?;
    for rdn in subject.iter() {
        for attr in rdn.iter() {
            if attr.attr_type() == &uid_oid {
                if let Ok(s) = attr.as_str() {
                    return Some(s.to_owned());
                }
            }
        }
    }
    let cn = subject.iter_common_name().next()?.as_str().ok()?;
    Some(cn.strip_prefix(APNS_CN_PREFIX).unwrap_or(cn).to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_cert_carries_the_bundle_id_in_uid() {
        let dir = tempfile::tempdir().unwrap();
        let ca = Ca::load_or_create(dir.path()).unwrap();
        let (cert_pem, _) = ca.issue_apns_client_cert("com.example.app", "TEAM123456").unwrap();
        let der = first_cert_der(&cert_pem).unwrap();
        let (_, x509) = x509_parser::parse_x509_certificate(der.as_ref()).unwrap();
        let uid = x509_parser::oid_registry::Oid::from(UID_OID).unwrap();
        let has_uid = x509
            .subject()
            .iter_attributes()
            .any(|a| a.attr_type() == &uid && a.as_str().ok() == Some("com.example.app"));
        assert!(has_uid);
        assert_eq!(apns_cert_bundle_id(&der).as_deref(), Some("com.example.app"));
        // Loading the CA again gives the same certificate.
        assert_eq!(Ca::load_or_create(dir.path()).unwrap().cert_pem, ca.cert_pem);
    }
}
