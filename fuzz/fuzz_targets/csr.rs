//! CSR handling: every input is tried twice, as the PEM text a client uploads and as
//! the DER inside a well-formed PEM block (so the PKCS#10 parser and the signature
//! check see arbitrary DER, not only what survives base64). Either a request verifies
//! or it is refused with an error; never a panic.
#![no_main]
use herald::pki::csr;
use libfuzzer_sys::fuzz_target;

fn check(pem: &str) {
    if let Ok(verified) = csr::verify(pem) {
        assert!(!verified.spki_der.is_empty(), "a verified request without a public key");
    }
}

fuzz_target!(|data: &[u8]| {
    check(&String::from_utf8_lossy(data));
    check(&herald::pki::pem_block("CERTIFICATE REQUEST", data));
});
