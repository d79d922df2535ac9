//! Certificate profiles: a tenant signer (intermediate CA, path length 0) and
//! a device client certificate (`AST_DEVICE`). Subjects and extensions are
//! always chosen here, never taken from a request.

use super::keys;
use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa, KeyUsagePurpose,
    PublicKeyData, SigningKey,
};

/// An issued certificate: PEM and hex serial.
pub struct Issued {
    /// The certificate, PEM-encoded.
    pub pem: String,
    /// Its serial number in hex: what revocation and the CRL name it by.
    pub serial: String,
}

/// The profile name of device client certificates.
pub const AST_DEVICE: &str = "AST_DEVICE";

fn name(pairs: &[(DnType, &str)]) -> DistinguishedName {
    let mut dn = DistinguishedName::new();
    for (t, v) in pairs {
        dn.push(t.clone(), *v);
    }
    dn
}

fn validity(p: &mut CertificateParams, now_ms: u64, until_ms: u64) {
    p.not_before = keys::time_ms(now_ms.saturating_sub(60_000));
    p.not_after = keys::time_ms(until_ms);
}

/// A signer certificate for `key`, issued by `issuer` (the root).
pub fn signer(
    issuer: &rcgen::Issuer<'_, impl SigningKey>,
    key: &impl PublicKeyData,
    tenant: &str,
    signer_name: &str,
    now_ms: u64,
    until_ms: u64,
) -> Result<Issued, String> {
    let mut p = CertificateParams::default();
    p.distinguished_name = name(&[
        (DnType::CommonName, signer_name),
        (DnType::OrganizationName, tenant),
        (DnType::OrganizationalUnitName, "Herald signer"),
    ]);
    p.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    p.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign, KeyUsagePurpose::DigitalSignature];
    p.use_authority_key_identifier_extension = true;
    validity(&mut p, now_ms, until_ms);
    let (serial, hex) = keys::serial()?;
    p.serial_number = Some(serial);
    let cert = p.signed_by(key, issuer).map_err(|e| format!("signing the signer certificate: {e}"))?;
    Ok(Issued { pem: cert.pem(), serial: hex })
}

/// A device client certificate for the requester's public key.
pub fn client(
    issuer: &rcgen::Issuer<'_, impl SigningKey>,
    spki_der: &[u8],
    tenant: &str,
    client_id: &str,
    now_ms: u64,
    until_ms: u64,
) -> Result<Issued, String> {
    let key = rcgen::SubjectPublicKeyInfo::from_der(spki_der).map_err(|e| format!("public key: {e}"))?;
    let mut p = CertificateParams::default();
    p.distinguished_name = name(&[
        (DnType::CommonName, client_id),
        (DnType::OrganizationName, tenant),
        (DnType::OrganizationalUnitName, AST_DEVICE),
    ]);
    p.is_ca = IsCa::ExplicitNoCa;
    p.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    p.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    p.use_authority_key_identifier_extension = true;
    validity(&mut p, now_ms, until_ms);
    let (serial, hex) = keys::serial()?;
    p.serial_number = Some(serial);
    let cert = p.signed_by(&key, issuer).map_err(|e| format!("signing the client certificate: {e}"))?;
    Ok(Issued { pem: cert.pem(), serial: hex })
}
