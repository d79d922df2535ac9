//! Signers (certificate authorities per tenant) and the certificates they issue.
