//! Tenant signers (the CA certificates that issue client certificates and
//! sign the SDK config), their CRLs, and the signed SDK config. The
//! deprecated v1 single-signer routes are these methods on the signer spec
//! `current` ([`Signers::create_first`] for their create).

use crate::auth::{Access, Caller, ADMIN, ADMIN_OR_READ, ANY};
use crate::engine::Engine;
use crate::error::{ApiError, ApiResult};
use crate::models::signer::{
    CreateSigner, CreateSignerV1, Renew, SdkConfig, SdkConfigPayload, SdkConfigRequest, SignerChain, SignerDetail,
    SignerView,
};
use crate::ops;

/// Access of each operation, shared with its HTTP route.
pub(crate) mod access {
    use super::*;
    pub const LIST: Access = Access::Tenant(ADMIN_OR_READ);
    pub const READ: Access = Access::Tenant(ANY);
    pub const ADMINISTER: Access = Access::Tenant(ADMIN);
    pub const SDK_CONFIG: Access = Access::Tenant(ADMIN);
}

/// See [`Engine::signers`].
pub struct Signers<'a>(pub(crate) &'a Engine);

impl Signers<'_> {
    /// The tenant's signers, every state, in the store's order (the HTTP
    /// route filters and pages them).
    pub async fn list(&self, caller: &Caller, tenant: &str) -> ApiResult<Vec<SignerView>> {
        caller.authorize(Some(tenant), access::LIST)?;
        Ok(self.0.store.signers().list(tenant)?.iter().map(|s| SignerView::of(tenant, s)).collect())
    }

    /// Creates a new ACTIVE signer (the ACTIVE one before it is RETIRED); its
    /// certificate is issued in the background (`status` REQUESTED until then).
    pub async fn create(&self, caller: &Caller, tenant: &str, body: CreateSigner) -> ApiResult<SignerView> {
        caller.authorize(Some(tenant), access::ADMINISTER)?;
        body.validate()?;
        let s = ops::signers::create(self.0, tenant, body.name, false).await?;
        Ok(SignerView::of(tenant, &s))
    }

    /// The v1 form of [`Signers::create`]: the name is required and a tenant
    /// that has an ACTIVE signer already is a conflict.
    pub async fn create_first(&self, caller: &Caller, tenant: &str, body: CreateSignerV1) -> ApiResult<SignerView> {
        caller.authorize(Some(tenant), access::ADMINISTER)?;
        let body = CreateSigner { name: Some(body.name) };
        body.validate()?;
        let s = ops::signers::create(self.0, tenant, body.name, true).await?;
        Ok(SignerView::of(tenant, &s))
    }

    /// A signer by `spec` (its id, or `current`: the ACTIVE one) with its
    /// certificate; any principal of the tenant, device clients included, may
    /// read it.
    pub async fn get(&self, caller: &Caller, tenant: &str, spec: &str) -> ApiResult<SignerDetail> {
        caller.authorize(Some(tenant), access::READ)?;
        let s = self.0.pki.resolve(tenant, spec)?;
        Ok(SignerDetail { info: SignerView::of(tenant, &s), certificate: s.cert_pem })
    }

    /// Deletes a signer that has issued no client certificate (409 once it has).
    pub async fn delete(&self, caller: &Caller, tenant: &str, spec: &str) -> ApiResult<()> {
        caller.authorize(Some(tenant), access::ADMINISTER)?;
        ops::signers::delete(self.0, tenant, spec).await
    }

    /// A signer's certificate chain, leaf to root (412 until it is issued or once revoked).
    pub async fn chain(&self, caller: &Caller, tenant: &str, spec: &str) -> ApiResult<SignerChain> {
        caller.authorize(Some(tenant), access::READ)?;
        let s = self.0.pki.resolve(tenant, spec)?;
        Ok(SignerChain { chain: self.0.pki.chain(&s)? })
    }

    /// Asks for a new certificate for the signer's key, issued in the
    /// background; over a certificate that is not issued only with
    /// `ignoreNotIssued`, never for a revoked signer.
    pub async fn renew(&self, caller: &Caller, tenant: &str, spec: &str, body: Renew) -> ApiResult<SignerView> {
        caller.authorize(Some(tenant), access::ADMINISTER)?;
        let s = ops::signers::renew(self.0, tenant, spec, body.ignore_not_issued).await?;
        Ok(SignerView::of(tenant, &s))
    }

    /// Revokes a signer for good: its key and certificate are erased and its
    /// serials listed in the root's CRL of the tenant. Revoking it again
    /// answers it unchanged.
    pub async fn revoke(&self, caller: &Caller, tenant: &str, spec: &str) -> ApiResult<SignerView> {
        caller.authorize(Some(tenant), access::ADMINISTER)?;
        let s = ops::signers::revoke(self.0, tenant, spec).await?;
        Ok(SignerView::of(tenant, &s))
    }

    /// A signer's CRL of revoked client certificates (DER); the spec `root`
    /// names the root's CRL of the tenant's revoked signers.
    pub async fn crl(&self, caller: &Caller, tenant: &str, spec: &str) -> ApiResult<Vec<u8>> {
        caller.authorize(Some(tenant), access::READ)?;
        ops::signers::crl(self.0, tenant, spec).await
    }

    /// Signs an SDK config (a JWS over [`SdkConfigPayload`]) with the ACTIVE
    /// signer: 412 while the tenant has no issued ACTIVE signer.
    pub async fn sdk_config(&self, caller: &Caller, tenant: &str, body: SdkConfigRequest) -> ApiResult<SdkConfig> {
        caller.authorize(Some(tenant), access::SDK_CONFIG)?;
        body.validate()?;
        if self.0.store.tenants().get(tenant)?.is_none() {
            return Err(ApiError::not_found(format!("tenant {tenant} not found")));
        }
        let payload = SdkConfigPayload {
            tenant: tenant.to_string(),
            tls_bundle: body.tls_bundle,
            ast_url: body.ast_url,
            services: body.services,
            iat: herald_storage::now_ms() / 1000,
        };
        let payload = serde_json::to_value(&payload).map_err(|e| ApiError::internal(e.to_string()))?;
        Ok(SdkConfig { sdk_config: self.0.pki.sign_json(tenant, &payload)? })
    }
}
