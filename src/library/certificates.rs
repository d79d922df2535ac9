//! Client certificates: a device client submits a CSR and the tenant's
//! ACTIVE signer issues it in the background; administrators list, check
//! and revoke them; a client checks its own requests.

use crate::auth::{Access, Caller, Grant, ADMIN, ADMIN_OR_READ, ANY};
use crate::engine::Engine;
use crate::error::{ApiError, ApiResult};
use crate::models::signer::{CertView, CsrBody};
use crate::models::validate;
use crate::ops;
use herald_storage::signers::ISSUED;

/// Access of each operation, shared with its HTTP route.
pub(crate) mod access {
    use super::*;
    /// Submitting a CSR is a device client's act.
    pub const SUBMIT: Access = Access::Tenant(&[Grant::Client]);
    pub const LIST: Access = Access::Tenant(ADMIN_OR_READ);
    pub const READ: Access = Access::Tenant(ANY);
    pub const ADMINISTER: Access = Access::Tenant(ADMIN);
}

/// See [`Engine::certificates`].
pub struct Certificates<'a>(pub(crate) &'a Engine);

fn not_found(cert_ref: &str) -> ApiError {
    ApiError::not_found(format!("certificate request {cert_ref} not found"))
}

impl Certificates<'_> {
    /// A device client asks for a certificate for the key of its CSR (PEM
    /// PKCS#10); the request is REQUESTED until the ACTIVE signer issues it
    /// (412 while the tenant has none). The certificate's subject and
    /// extensions are the CA's choice, not the CSR's.
    pub async fn submit(&self, caller: &Caller, tenant: &str, body: CsrBody) -> ApiResult<CertView> {
        let principal = caller.authorize(Some(tenant), access::SUBMIT)?;
        let client = principal
            .and_then(|p| p.client_id.clone())
            .ok_or_else(|| ApiError::forbidden("only a device client submits a CSR"))?;
        body.validate()?;
        let c = ops::signers::request_certificate(self.0, tenant, &client, &body.csr).await?;
        Ok(CertView::of(&c))
    }

    /// The tenant's certificate requests, every status (the HTTP route
    /// filters and pages them).
    pub async fn list(&self, caller: &Caller, tenant: &str) -> ApiResult<Vec<CertView>> {
        caller.authorize(Some(tenant), access::LIST)?;
        Ok(self.0.store.certificates().list(tenant)?.iter().map(CertView::of).collect())
    }

    /// The certificates signer `signer` (an id) issued.
    pub async fn of_signer(&self, caller: &Caller, tenant: &str, signer: &str) -> ApiResult<Vec<CertView>> {
        caller.authorize(Some(tenant), access::LIST)?;
        validate::ulid("signerId", signer)?;
        Ok(self.0.store.certificates().of_signer(tenant, signer)?.iter().map(CertView::of).collect())
    }

    /// A certificate request; once issued it carries the certificate and its
    /// chain to the root. Administrators and readers check any, a device
    /// client only its own (another's is not found).
    pub async fn get(&self, caller: &Caller, tenant: &str, cert_ref: &str) -> ApiResult<CertView> {
        let principal = caller.authorize(Some(tenant), access::READ)?;
        validate::ulid("certRef", cert_ref)?;
        let c = self.0.store.certificates().get(tenant, cert_ref)?.ok_or_else(|| not_found(cert_ref))?;
        if let Some(p) = principal {
            if !p.grants(Grant::AdminRead) && p.client_id.as_deref() != Some(c.client.as_str()) {
                return Err(not_found(cert_ref));
            }
        }
        let mut view = CertView::of(&c);
        if let (ISSUED, Some(pem)) = (c.status.as_str(), &c.cert_pem) {
            let mut chain = vec![pem.clone()];
            if let Some(s) = self.0.store.signers().get(tenant, &c.signer)? {
                chain.extend(self.0.pki.chain(&s).unwrap_or_default());
            }
            view.certificate = Some(pem.clone());
            view.chain = Some(chain);
        }
        Ok(view)
    }

    /// Revokes an issued certificate: erased, and listed in its signer's CRL
    /// (412 unless issued; revoking it again answers it unchanged).
    pub async fn revoke(&self, caller: &Caller, tenant: &str, cert_ref: &str) -> ApiResult<CertView> {
        caller.authorize(Some(tenant), access::ADMINISTER)?;
        validate::ulid("certRef", cert_ref)?;
        let c = ops::signers::revoke_certificate(self.0, tenant, cert_ref).await?;
        Ok(CertView::of(&c))
    }
}
