//! Tenant signers (intermediate CAs under the engine root) and the engine root CA.
//!
//! Trees: `signers` ([tenant, id] → [`Signer`]) and `pki` (the root CA record
//! under `ROOT_KEY`, and per tenant the generation of its latest signer and
//! the root's CRL of the tenant's revoked signers). This module keeps the
//! records and that counter consistent; which transitions a signer may make
//! (one ACTIVE signer per tenant, generation numbering, what renew, revoke
//! and delete allow) is decided by the engine (`models::signer`), inside one
//! [`Tx`] per operation.

use crate::keys::{key, prefix, Key};
use crate::store::{all_with_tenant, get, Store};
use crate::{codec, Error, Result, Secret, Tx};
use serde::{Deserialize, Serialize};

/// The tenant's one signer that issues client certificates; a new signer retires it.
pub const ACTIVE: &str = "ACTIVE";
/// A signer replaced by a newer one: it still validates and keeps its certificate.
pub const RETIRED: &str = "RETIRED";
/// Final: the signer's key and certificate are erased and the root's CRL lists it.
pub const REVOKED: &str = "REVOKED";

/// Certificate status of a signer or a client certificate request.
pub const REQUESTED: &str = "REQUESTED";
/// Certificate status once issued.
pub const ISSUED: &str = "ISSUED";
/// Certificate status when issuance failed (see the record's `failure`).
pub const FAILED: &str = "FAILED";

/// A tenant signer: an intermediate CA under the engine root that issues client certificates.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Signer {
    /// ULID, assigned at creation; the key of the record.
    pub id: String,
    /// Display name, also used in its certificate's subject.
    pub name: String,
    /// Position among the tenant's signers (1 for the first); unique and increasing.
    pub generation: u64,
    /// `ACTIVE`, `RETIRED` or `REVOKED`.
    pub state: String,
    /// Certificate status: `REQUESTED`, `ISSUED` or `FAILED`.
    pub status: String,
    /// Why issuance failed, when the status is `FAILED`.
    pub failure: Option<String>,
    /// PKCS#8 DER of the P-256 key, sealed; erased on revocation.
    pub key: Option<Secret>,
    /// The current certificate; erased on revocation.
    pub cert_pem: Option<String>,
    /// Hex serials of every certificate issued for this signer (renewals add one).
    pub serials: Vec<String>,
    /// Client certificates issued by it: deletion is refused once non-zero.
    pub issued: u64,
    /// The signer's current CRL (DER) and its number.
    pub crl_der: Option<Vec<u8>>,
    /// Number of `crl_der`, increased by every new CRL.
    pub crl_number: u64,
    /// Creation time, ms since the epoch.
    pub created_ms: u64,
    /// Last change, ms since the epoch.
    pub updated_ms: u64,
}

impl Signer {
    /// The sealing context of a signer's key.
    pub fn key_context(tenant: &str, id: &str) -> String {
        format!("signer/{tenant}/{id}/key")
    }
}

/// The engine's root CA: its certificate and sealed PKCS#8 key.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RootCa {
    /// The root certificate (PEM), which signs the tenants' signers.
    pub cert_pem: String,
    /// PKCS#8 DER of the root key, sealed under [`RootCa::KEY_CONTEXT`].
    pub key: Secret,
}

impl RootCa {
    /// The sealing context of the root key.
    pub const KEY_CONTEXT: &'static str = "pki/root/key";
}

/// The root's CRL for one tenant's revoked signers.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RootCrl {
    /// CRL number, increased by every new CRL.
    pub number: u64,
    /// The CRL (DER).
    pub der: Vec<u8>,
}

/// Key of the root CA record in the `pki` tree (no tenant is empty).
const ROOT_KEY: &[u8] = b"\0root-ca";

/// Reads of signers and the root CA; tenant writes go through [`Tx`].
pub struct Signers<'a>(&'a Store);

impl Store {
    /// The signers of this store.
    pub fn signers(&self) -> Signers<'_> {
        Signers(self)
    }
}

impl Signers<'_> {
    /// The engine's root CA; `None` before it is first made at start.
    pub fn root(&self) -> Result<Option<RootCa>> {
        get(&self.0.trees()?.pki, ROOT_KEY)
    }

    /// Writes the engine's root CA (at start, not a tenant operation)
    /// unless one exists: the root stored, which is `root` unless another
    /// engine sharing the database stored its own first.
    pub fn put_root(&self, root: &RootCa) -> Result<RootCa> {
        self.0.transact(|tx| match tx.get::<RootCa>(&tx.t.pki, ROOT_KEY)? {
            Some(stored) => Ok(stored),
            None => tx.put(&tx.t.pki, ROOT_KEY, root).map(|()| root.clone()),
        })
    }

    /// The generation of the tenant's latest signer (0 before the first).
    /// Every new signer moves it on ([`Tx::insert_signer`]): read it before
    /// [`Signers::list`], and check in a transaction that depends on the
    /// list ([`Tx::signer_generation`]) that no signer was added since.
    pub fn generation(&self, tenant: &str) -> Result<u64> {
        Ok(get::<u64>(&self.0.trees()?.pki, &generation_key(tenant))?.unwrap_or(0))
    }

    /// The root's CRL of the tenant's revoked signers; `None` before the first revocation.
    pub fn root_crl(&self, tenant: &str) -> Result<Option<RootCrl>> {
        get(&self.0.trees()?.pki, &root_crl_key(tenant))
    }

    /// One signer; `None` when absent.
    pub fn get(&self, tenant: &str, id: &str) -> Result<Option<Signer>> {
        get(&self.0.trees()?.signers, &key(&[tenant, id]))
    }

    /// The tenant's signers by generation (ULIDs of one millisecond do not sort by creation).
    pub fn list(&self, tenant: &str) -> Result<Vec<Signer>> {
        let mut all: Vec<Signer> = self
            .0
            .trees()?
            .signers
            .scan_prefix(prefix(&[tenant]))
            .map(|kv| codec::decode(&kv?.1))
            .collect::<Result<_>>()?;
        all.sort_by_key(|s| s.generation);
        Ok(all)
    }

    /// Every signer of every tenant, as (tenant, signer): restart recovery.
    pub fn all(&self) -> Result<Vec<(String, Signer)>> {
        all_with_tenant(&self.0.trees()?.signers)
    }

    /// The latest ACTIVE signer.
    pub fn active(&self, tenant: &str) -> Result<Option<Signer>> {
        Ok(self.list(tenant)?.into_iter().rev().find(|s| s.state == ACTIVE))
    }
}

fn generation_key(tenant: &str) -> Key {
    key(&[tenant, "generation"])
}

fn root_crl_key(tenant: &str) -> Key {
    key(&[tenant, "root-crl"])
}

impl Tx<'_> {
    /// One signer, read inside the transaction.
    pub fn signer(&self, tenant: &str, id: &str) -> Result<Option<Signer>> {
        self.get(&self.t.signers, &key(&[tenant, id]))
    }

    /// Stores a new signer and moves the tenant's [`signer generation`](Tx::signer_generation)
    /// on to its own: `Conflict("signer")` when its id is taken or its
    /// generation is not after the latest one (generations are unique).
    pub fn insert_signer(&self, tenant: &str, s: &Signer) -> Result<()> {
        let k = key(&[tenant, &s.id]);
        if self.has(&self.t.signers, &k)? || s.generation <= self.signer_generation(tenant)? {
            return Err(Error::Conflict("signer"));
        }
        self.put(&self.t.pki, &generation_key(tenant), &s.generation)?;
        self.put(&self.t.signers, &k, s)
    }

    /// Stores a signer over its previous record.
    pub fn put_signer(&self, tenant: &str, s: &Signer) -> Result<()> {
        self.put(&self.t.signers, &key(&[tenant, &s.id]), s)
    }

    /// Deletes a signer; false when there was none. Its generation stays given.
    pub fn delete_signer(&self, tenant: &str, id: &str) -> Result<bool> {
        self.remove(&self.t.signers, &key(&[tenant, id]))
    }

    /// See [`Signers::generation`].
    pub fn signer_generation(&self, tenant: &str) -> Result<u64> {
        Ok(self.get(&self.t.pki, &generation_key(tenant))?.unwrap_or(0))
    }

    /// The root's CRL of the tenant, read inside the transaction.
    pub fn root_crl(&self, tenant: &str) -> Result<Option<RootCrl>> {
        self.get(&self.t.pki, &root_crl_key(tenant))
    }

    /// Replaces the root's CRL of the tenant (on revoking a signer).
    pub fn put_root_crl(&self, tenant: &str, crl: &RootCrl) -> Result<()> {
        self.put(&self.t.pki, &root_crl_key(tenant), crl)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::certificates::CertRecord;

    fn signer(id: &str, generation: u64) -> Signer {
        Signer {
            id: id.into(),
            name: id.into(),
            generation,
            state: ACTIVE.into(),
            status: REQUESTED.into(),
            failure: None,
            key: None,
            cert_pem: None,
            serials: vec![],
            issued: 0,
            crl_der: None,
            crl_number: 0,
            created_ms: 1,
            updated_ms: 1,
        }
    }

    #[test]
    fn a_new_signer_moves_the_generation_on_and_generations_are_unique() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&crate::test_options(dir.path())).unwrap();
        assert_eq!(store.signers().generation("t").unwrap(), 0);
        store.transact(|tx| tx.insert_signer("t", &signer("a", 1))).unwrap();
        assert_eq!(store.signers().generation("t").unwrap(), 1);
        let again = store.transact(|tx| tx.insert_signer("t", &signer("b", 1)));
        assert!(matches!(again, Err(Error::Conflict("signer"))), "a generation is given once");
        let taken = store.transact(|tx| tx.insert_signer("t", &signer("a", 2)));
        assert!(matches!(taken, Err(Error::Conflict("signer"))), "an id is given once");
        store.transact(|tx| tx.insert_signer("t", &signer("b", 2))).unwrap();
        assert!(store.transact(|tx| tx.delete_signer("t", "b")).unwrap());
        assert_eq!(store.signers().generation("t").unwrap(), 2, "a deleted signer's generation stays given");
        assert_eq!(store.signers().generation("u").unwrap(), 0, "per tenant");
    }

    #[test]
    fn a_certificate_moves_in_the_signer_index_with_its_signer() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&crate::test_options(dir.path())).unwrap();
        let mut c = CertRecord {
            cert_ref: "r".into(),
            status: REQUESTED.into(),
            signer: String::new(),
            user: String::new(),
            client: "c".into(),
            profile: "AST_DEVICE".into(),
            csr_pem: String::new(),
            cert_pem: None,
            serial: None,
            failure: None,
            requested_ms: 1,
            issued_ms: None,
            revoked_ms: None,
        };
        store.transact(|tx| tx.insert_certificate("t", &c)).unwrap();
        let twice = store.transact(|tx| tx.insert_certificate("t", &c));
        assert!(matches!(twice, Err(Error::Conflict(_))));
        c.signer = "a".into();
        store.transact(|tx| tx.put_certificate("t", &c)).unwrap();
        assert_eq!(store.certificates().of_signer("t", "a").unwrap().len(), 1);
        c.signer = "b".into();
        store.transact(|tx| tx.put_certificate("t", &c)).unwrap();
        assert!(store.certificates().of_signer("t", "a").unwrap().is_empty());
        assert_eq!(store.certificates().of_signer("t", "b").unwrap(), vec![c]);
    }
}
