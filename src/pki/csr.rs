//! Certificate signing requests: parsed and their signature verified; only the
//! public key is used, everything else in the request is ignored.

/// A verified request: the requester's SubjectPublicKeyInfo (DER).
pub struct VerifiedCsr {
    /// The public key to certify; the only part of the request Herald uses.
    pub spki_der: Vec<u8>,
}

/// Parses a PEM `CERTIFICATE REQUEST` and checks its self-signature; the
/// error says why a request is refused (not PEM, bad signature, unsupported key).
pub fn verify(pem: &str) -> Result<VerifiedCsr, String> {
    use x509_parser::prelude::FromDer;
    let der = super::pem_der(pem.trim(), "CERTIFICATE REQUEST")?;
    let (rest, csr) = x509_parser::certification_request::X509CertificationRequest::from_der(&der)
        .map_err(|e| format!("not a PKCS#10 request ({e})"))?;
    if !rest.is_empty() {
        return Err("trailing bytes after the request".into());
    }
    csr.verify_signature().map_err(|e| format!("signature does not verify ({e})"))?;
    let spki_der = csr.certification_request_info.subject_pki.raw.to_vec();
    rcgen::SubjectPublicKeyInfo::from_der(&spki_der).map_err(|e| format!("unsupported public key ({e})"))?;
    Ok(VerifiedCsr { spki_der })
}
