//! The engine's PKI: a root CA, one intermediate CA ("signer") per tenant
//! generation, client certificates issued from CSRs, CRLs, and JWS signed by a
//! tenant's signer. Certificates are built and signed with rcgen, read and
//! verified with x509-parser; keys are P-256, generated with ring and sealed
//! at rest under the master key.

mod authority;
pub mod crl;
pub mod csr;
pub mod issue;
pub mod jws;
pub mod keys;
pub mod root;

pub use authority::Authority;

/// PEM of one DER certificate.
pub fn cert_pem(der: &[u8]) -> String {
    pem_block("CERTIFICATE", der)
}

/// One PEM block of `der` under `label` (base64 in 64-column lines).
pub fn pem_block(label: &str, der: &[u8]) -> String {
    use base64::Engine as _;
    let b64 = base64::engine::general_purpose::STANDARD.encode(der);
    let mut out = format!("-----BEGIN {label}-----\n");
    for line in b64.as_bytes().chunks(64) {
        out.push_str(&String::from_utf8_lossy(line));
        out.push('\n');
    }
    out.push_str(&format!("-----END {label}-----\n"));
    out
}

/// DER of the first PEM block with `label`.
pub fn pem_der(pem: &str, label: &str) -> Result<Vec<u8>, String> {
    let (_, p) = x509_parser::pem::parse_x509_pem(pem.as_bytes()).map_err(|e| format!("not PEM ({e})"))?;
    if p.label != label {
        return Err(format!("PEM label is {}, expected {label}", p.label));
    }
    Ok(p.contents)
}
