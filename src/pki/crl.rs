//! Certificate revocation lists, signed by the issuer of the listed certificates.

use super::keys;
use rcgen::{CertificateRevocationListParams, KeyIdMethod, RevokedCertParams, SerialNumber, SigningKey};

/// How long a CRL is current; it is regenerated on every revocation anyway.
const NEXT_UPDATE_MS: u64 = 7 * 86_400_000;

/// A DER CRL numbered `number`, listing `(hex serial, revoked at ms)`.
pub fn build(
    issuer: &rcgen::Issuer<'_, impl SigningKey>,
    number: u64,
    revoked: &[(String, u64)],
    now_ms: u64,
) -> Result<Vec<u8>, String> {
    let revoked_certs = revoked
        .iter()
        .map(|(serial, at)| {
            Ok(RevokedCertParams {
                serial_number: SerialNumber::from_slice(&hex::decode(serial).map_err(|_| "bad serial".to_string())?),
                revocation_time: keys::time_ms(*at),
                reason_code: None,
                invalidity_date: None,
            })
        })
        .collect::<Result<Vec<_>, String>>()?;
    let params = CertificateRevocationListParams {
        this_update: keys::time_ms(now_ms),
        next_update: keys::time_ms(now_ms.saturating_add(NEXT_UPDATE_MS)),
        crl_number: SerialNumber::from_slice(&number.to_be_bytes()),
        issuing_distribution_point: None,
        revoked_certs,
        key_identifier_method: KeyIdMethod::Sha256,
    };
    params.signed_by(issuer).map(|c| c.der().to_vec()).map_err(|e| format!("signing the CRL: {e}"))
}
