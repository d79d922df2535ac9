//! Users of a tenant's realm, with the username index.

use crate::error::abort;
use crate::keys::{key, prefix};
use crate::store::{get, Store};
use crate::{codec, Error, Result};
use serde::{Deserialize, Serialize};
use sled::transaction::ConflictableTransactionError as TxError;
use sled::Transactional;
use std::collections::BTreeMap;
use std::sync::Arc;

pub use crate::user_directory::{Field, Source, UserRow};

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct User {
    /// UUID.
    pub id: String,
    /// Lower-case, unique in the tenant.
    pub username: String,
    pub email: Option<String>,
    pub first_name: Option<String>,
    pub last_name: Option<String>,
    pub enabled: bool,
    pub email_verified: bool,
    pub realm_roles: Vec<String>,
    pub client_roles: BTreeMap<String, Vec<String>>,
    pub groups: Vec<String>,
    pub attributes: BTreeMap<String, Vec<String>>,
    pub required_actions: Vec<String>,
    pub credentials: Vec<Credential>,
    pub created_ms: u64,
    pub not_before: u64,
}

/// A stored credential; for passwords `hash` is an argon2id PHC string.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Credential {
    pub id: String,
    pub kind: String,
    pub hash: String,
    pub created_ms: u64,
}

impl User {
    pub fn password(&self) -> Option<&Credential> {
        self.credentials.iter().find(|c| c.kind == "password")
    }

    /// The e-mail as indexed (lower-case), when set and non-empty.
    pub fn email_key(&self) -> Option<String> {
        self.email.as_deref().filter(|e| !e.is_empty()).map(str::to_lowercase)
    }
}

/// An exact-match lookup through the user index tree.
#[derive(Clone, Copy, Debug)]
pub enum Index<'a> {
    /// Attribute name and one of its values.
    Attribute(&'a str, &'a str),
    Role(&'a str),
    /// Client and role.
    ClientRole(&'a str, &'a str),
    Group(&'a str),
}

/// The index-tree keys of a user: `tenant, kind, ..., username` so that a
/// prefix scan answers in username order.
impl Index<'_> {
    /// The index-tree prefix of this lookup's entries.
    pub(crate) fn prefix(&self, tenant: &str) -> Vec<u8> {
        match *self {
            Index::Attribute(name, value) => prefix(&[tenant, "a", name, value]),
            Index::Role(role) => prefix(&[tenant, "r", role]),
            Index::ClientRole(client, role) => prefix(&[tenant, "c", client, role]),
            Index::Group(group) => prefix(&[tenant, "g", group]),
        }
    }
}

pub(crate) fn index_keys(tenant: &str, u: &User) -> Vec<Vec<u8>> {
    let name = u.username.as_str();
    let mut keys = Vec::new();
    for (attr, values) in &u.attributes {
        for v in values {
            keys.push(key(&[tenant, "a", attr, v, name]));
        }
    }
    for r in &u.realm_roles {
        keys.push(key(&[tenant, "r", r, name]));
    }
    for (client, roles) in &u.client_roles {
        for r in roles {
            keys.push(key(&[tenant, "c", client, r, name]));
        }
    }
    for g in &u.groups {
        keys.push(key(&[tenant, "g", g, name]));
    }
    keys
}

/// The revocation instant of a change made now: one millisecond on, so a
/// token issued in the same millisecond as the change is refused too.
fn revocation_instant() -> u64 {
    crate::now_ms().saturating_add(1)
}

pub struct Users<'a>(&'a Store);

impl Store {
    pub fn users(&self) -> Users<'_> {
        Users(self)
    }
}

impl Users<'_> {
    /// Creates the user with every index; `Conflict("user")` on a taken username,
    /// `Conflict("email")` on a taken e-mail.
    pub fn create(&self, tenant: &str, user: &User) -> Result<()> {
        self.write(tenant, &user.id, true, &|_| user.clone(), &|_, _| false).map(drop)
    }

    /// Replaces the user (same id), moving its index entries in the same
    /// transaction; `NotFound("user")` when absent.
    pub fn update(&self, tenant: &str, user: &User) -> Result<()> {
        self.write(tenant, &user.id, false, &|_| user.clone(), &|_, _| false).map(drop)
    }

    /// Changes user `id` in one transaction: `change` is applied to the
    /// record as stored at that moment (it may run again if the transaction
    /// retries, so it must only compute), so concurrent changes of other
    /// fields are kept. When `revokes(stored, changed)` says the change takes
    /// something away from the user, every token issued to it before now is
    /// refused, in the same transaction (see [`Users::tokens_revoked_before`]).
    /// Answers the changed user; `NotFound("user")` when absent.
    pub fn change(
        &self,
        tenant: &str,
        id: &str,
        change: &dyn Fn(&mut User),
        revokes: &dyn Fn(&User, &User) -> bool,
    ) -> Result<User> {
        let make = |stored: Option<&User>| {
            let mut user = stored.cloned().unwrap_or_default();
            change(&mut user);
            user
        };
        self.write(tenant, id, false, &make, revokes)
    }

    /// The instant (ms) before which tokens issued to the user are refused; 0 when none.
    pub fn tokens_revoked_before(&self, tenant: &str, user_id: &str) -> Result<u64> {
        Ok(get(&self.0.trees()?.token_revocations, &key(&[tenant, user_id]))?.unwrap_or(0))
    }

    /// Writes user `id` as `make` builds it from the stored record (`None`
    /// when creating), with its username, e-mail and index entries, in one
    /// transaction.
    fn write(
        &self,
        tenant: &str,
        id: &str,
        create: bool,
        make: &dyn Fn(Option<&User>) -> User,
        revokes: &dyn Fn(&User, &User) -> bool,
    ) -> Result<User> {
        let t = self.0.trees()?;
        let revoked = codec::encode(&revocation_instant())?;
        let user_key = key(&[tenant, id]);
        let trees = (&t.users, &t.users_by_name, &t.users_by_email, &t.user_index, &t.token_revocations);
        let (user, old_username) = trees.transaction(|(users, names, emails, index, revocations)| {
            let old: Option<User> = match users.get(&user_key)? {
                Some(v) => Some(codec::decode(&v).map_err(sled::transaction::ConflictableTransactionError::Abort)?),
                None => None,
            };
            match (&old, create) {
                (Some(_), true) => return abort(Error::Conflict("user")),
                (None, false) => return abort(Error::NotFound("user")),
                _ => {}
            }
            let mut user = make(old.as_ref());
            user.id = id.to_string();
            let name_key = key(&[tenant, &user.username]);
            let email_key = user.email_key().map(|e| key(&[tenant, &e]));
            if let Some(owner) = names.get(&name_key)? {
                if owner.as_ref() != id.as_bytes() {
                    return abort(Error::Conflict("user"));
                }
            }
            if let Some(k) = &email_key {
                if let Some(owner) = emails.get(k)? {
                    if owner.as_ref() != id.as_bytes() {
                        return abort(Error::Conflict("email"));
                    }
                }
            }
            if let Some(old) = &old {
                if revokes(old, &user) {
                    revocations.insert(user_key.as_slice(), revoked.as_slice())?;
                }
                names.remove(key(&[tenant, &old.username]))?;
                if let Some(e) = old.email_key() {
                    emails.remove(key(&[tenant, &e]))?;
                }
                for k in index_keys(tenant, old) {
                    index.remove(k)?;
                }
            }
            users.insert(user_key.as_slice(), codec::encode(&user).map_err(TxError::Abort)?)?;
            names.insert(name_key.as_slice(), id.as_bytes())?;
            if let Some(k) = &email_key {
                emails.insert(k.as_slice(), id.as_bytes())?;
            }
            for k in index_keys(tenant, &user) {
                index.insert(k, id.as_bytes())?;
            }
            Ok((user, old.map(|o| o.username)))
        })?;
        self.0.inner.directories.refresh(self.0, tenant, id, old_username.as_deref())?;
        Ok(user)
    }

    /// Directory rows of `source` accepted by `keep`, in username order: what
    /// user lists filter, order and page on before reading the page's records.
    pub fn select(
        &self,
        tenant: &str,
        source: Source<'_>,
        mut keep: impl FnMut(&UserRow) -> bool,
    ) -> Result<Vec<Arc<UserRow>>> {
        let mut out = Vec::new();
        self.visit(tenant, source, |r| {
            if keep(r) {
                out.push(r.clone())
            }
        })?;
        Ok(out)
    }

    /// Calls `visit` with each directory row of `source`, in username order,
    /// without copying any: the cheapest way to count and page a large list.
    pub fn visit(&self, tenant: &str, source: Source<'_>, visit: impl FnMut(&Arc<UserRow>)) -> Result<()> {
        self.0.inner.directories.visit(self.0, tenant, source, visit)
    }

    /// Calls `visit` with every directory row of the tenant in `order` (ties
    /// in username order), reversed when `desc`: a walk of a kept order.
    pub fn visit_all_by(&self, tenant: &str, order: Field, desc: bool, visit: impl FnMut(&Arc<UserRow>)) -> Result<()> {
        self.0.inner.directories.visit_all_by(self.0, tenant, order, desc, visit)
    }

    pub fn get_by_email(&self, tenant: &str, email: &str) -> Result<Option<User>> {
        let t = self.0.trees()?;
        match t.users_by_email.get(key(&[tenant, &email.to_lowercase()]))? {
            Some(id) => get(&t.users, &key(&[tenant, &String::from_utf8_lossy(&id)])),
            None => Ok(None),
        }
    }

    /// Number of users of the tenant.
    pub fn count(&self, tenant: &str) -> Result<usize> {
        let mut n = 0;
        for kv in self.0.trees()?.users_by_name.scan_prefix(prefix(&[tenant])) {
            kv?;
            n += 1;
        }
        Ok(n)
    }

    /// Users holding an index entry (ordered by username): one of
    /// [`Index`]'s lookups, never a scan of all users.
    pub fn by_index(&self, tenant: &str, lookup: Index<'_>) -> Result<Vec<User>> {
        let t = self.0.trees()?;
        let mut out = Vec::new();
        for kv in t.user_index.scan_prefix(lookup.prefix(tenant)) {
            let (_, id) = kv?;
            if let Some(u) = get(&t.users, &key(&[tenant, &String::from_utf8_lossy(&id)]))? {
                out.push(u);
            }
        }
        Ok(out)
    }

    pub fn get(&self, tenant: &str, id: &str) -> Result<Option<User>> {
        get(&self.0.trees()?.users, &key(&[tenant, id]))
    }

    pub fn get_by_name(&self, tenant: &str, username: &str) -> Result<Option<User>> {
        let t = self.0.trees()?;
        match t.users_by_name.get(key(&[tenant, username]))? {
            Some(id) => get(&t.users, &key(&[tenant, &String::from_utf8_lossy(&id)])),
            None => Ok(None),
        }
    }
}

impl crate::Tx<'_> {
    /// Refuses every token issued to the user until now.
    pub fn revoke_tokens(&self, tenant: &str, user_id: &str) -> Result<()> {
        self.put(&self.t.token_revocations, &key(&[tenant, user_id]), &revocation_instant())
    }
}
