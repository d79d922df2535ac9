//! Users of a tenant's realm, with the username index.

use crate::keys::{key, prefix, Key};
use crate::kv::TxTree;
use crate::store::{get, Store};
use crate::{Error, Result, Tx};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::Arc;

pub use crate::user_directory::{Field, Source, UserRow};

/// A user of a tenant's realm (Keycloak's user representation).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct User {
    /// UUID.
    pub id: String,
    /// Lower-case, unique in the tenant.
    pub username: String,
    /// E-mail as given; unique in the tenant (compared lower-case) when set.
    pub email: Option<String>,
    /// Given name.
    pub first_name: Option<String>,
    /// Family name.
    pub last_name: Option<String>,
    /// A disabled user cannot log in and its tokens are refused.
    pub enabled: bool,
    /// Whether the e-mail was verified.
    pub email_verified: bool,
    /// Realm roles, indexed for role lookups.
    pub realm_roles: Vec<String>,
    /// Roles per client id, indexed for client-role lookups.
    pub client_roles: BTreeMap<String, Vec<String>>,
    /// Group paths, indexed for group lookups.
    pub groups: Vec<String>,
    /// Keycloak attributes (multi-valued), each value indexed.
    pub attributes: BTreeMap<String, Vec<String>>,
    /// Actions the user must complete at next login (Keycloak's `requiredActions`).
    pub required_actions: Vec<String>,
    /// Password and other credentials.
    pub credentials: Vec<Credential>,
    /// Creation time, ms since the epoch.
    pub created_ms: u64,
    /// Keycloak's `notBefore` (seconds): set when the user is disabled.
    pub not_before: u64,
}

/// A stored credential; for passwords `hash` is an argon2id PHC string.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Credential {
    /// Identifies the credential among the user's.
    pub id: String,
    /// Credential type: `password` for passwords.
    pub kind: String,
    /// The secret's hash (argon2id PHC string for a password).
    pub hash: String,
    /// Creation time, ms since the epoch.
    pub created_ms: u64,
}

impl User {
    /// The user's password credential; `None` when it has none.
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
    /// A realm role.
    Role(&'a str),
    /// Client and role.
    ClientRole(&'a str, &'a str),
    /// A group path.
    Group(&'a str),
}

/// The index-tree keys of a user: `tenant, kind, ..., username` so that a
/// prefix scan answers in username order.
impl Index<'_> {
    /// The index-tree prefix of this lookup's entries.
    pub(crate) fn prefix(&self, tenant: &str) -> Key {
        match *self {
            Index::Attribute(name, value) => prefix(&[tenant, "a", name, value]),
            Index::Role(role) => prefix(&[tenant, "r", role]),
            Index::ClientRole(client, role) => prefix(&[tenant, "c", client, role]),
            Index::Group(group) => prefix(&[tenant, "g", group]),
        }
    }
}

pub(crate) fn index_keys(tenant: &str, u: &User) -> Vec<Key> {
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

/// Reads, seeding and the directory of users; writes go through [`Tx`].
pub struct Users<'a>(&'a Store);

impl Store {
    /// The users of this store.
    pub fn users(&self) -> Users<'_> {
        Users(self)
    }
}

/// What a user write changed in the tenant's directory: handed back by
/// [`Tx::insert_user`] and [`Tx::put_user`] and given to
/// [`Users::refresh_directory`] once the transaction has committed.
///
/// The in-memory directory ([`crate::user_directory`]) is not part of the
/// transaction: a closure may run more than once and a transaction may abort,
/// so the directory is brought in line only after the commit, from the
/// committed record. Storage cannot do it by itself from inside
/// [`Store::transact`] (the transaction knows nothing of what a record kind
/// keeps beside the trees), so the write hands this back and the operation
/// passes it on after `transact` returns; `#[must_use]` keeps it from being
/// forgotten.
#[must_use = "give it to Users::refresh_directory after the commit"]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UserWritten {
    /// The written user's id.
    pub id: String,
    /// The username before the write, when the user existed.
    pub old_username: Option<String>,
}

impl Users<'_> {
    /// Creates the user with every index (seeding and tests; the operations
    /// layer writes through [`Tx::insert_user`]); `Conflict("user")` on a
    /// taken id or username, `Conflict("email")` on a taken e-mail.
    pub fn create(&self, tenant: &str, user: &User) -> Result<()> {
        let written = self.0.transact(|tx| tx.insert_user(tenant, user))?;
        self.refresh_directory(tenant, &written)
    }

    /// Replaces the user (same id), moving its index entries in the same
    /// transaction; `NotFound("user")` when absent. For seeding and tests.
    pub fn update(&self, tenant: &str, user: &User) -> Result<()> {
        let written = self.0.transact(|tx| tx.put_user(tenant, user))?;
        self.refresh_directory(tenant, &written)
    }

    /// Brings the tenant's user directory in line with a committed write
    /// (see [`UserWritten`]): the row is read again from the committed
    /// record under the directory's lock, so calling it twice, or after a
    /// later write of the same user, leaves the row right. Other engines
    /// sharing the database drop the tenant's directory (see `coherence`).
    pub fn refresh_directory(&self, tenant: &str, written: &UserWritten) -> Result<()> {
        self.0.publish(crate::coherence::Change::Users(tenant));
        self.0.inner.directories.refresh(self.0, tenant, &written.id, written.old_username.as_deref())
    }

    /// The instant (ms) before which tokens issued to the user are refused; 0 when none.
    pub fn tokens_revoked_before(&self, tenant: &str, user_id: &str) -> Result<u64> {
        Ok(get(&self.0.trees()?.token_revocations, &key(&[tenant, user_id]))?.unwrap_or(0))
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

    /// The user of that e-mail (matched lower-case); `None` when none.
    pub fn get_by_email(&self, tenant: &str, email: &str) -> Result<Option<User>> {
        let t = self.0.trees()?;
        match t.users_by_email.get(key(&[tenant, &email.to_lowercase()]))? {
            Some(id) => get(&t.users, &key(&[tenant, &String::from_utf8_lossy(&id)])),
            None => Ok(None),
        }
    }

    /// Number of users of the tenant.
    pub fn count(&self, tenant: &str) -> Result<usize> {
        let mut n: usize = 0;
        for kv in self.0.trees()?.users_by_name.scan_prefix(prefix(&[tenant])) {
            kv?;
            n = n.saturating_add(1);
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

    /// One user by id; `None` when absent.
    pub fn get(&self, tenant: &str, id: &str) -> Result<Option<User>> {
        get(&self.0.trees()?.users, &key(&[tenant, id]))
    }

    /// The user of that (lower-case) username; `None` when none.
    pub fn get_by_name(&self, tenant: &str, username: &str) -> Result<Option<User>> {
        let t = self.0.trees()?;
        match t.users_by_name.get(key(&[tenant, username]))? {
            Some(id) => get(&t.users, &key(&[tenant, &String::from_utf8_lossy(&id)])),
            None => Ok(None),
        }
    }
}

impl Tx<'_> {
    /// One user by id, read inside the transaction.
    pub fn user(&self, tenant: &str, id: &str) -> Result<Option<User>> {
        self.get(&self.t.users, &key(&[tenant, id]))
    }

    /// The user of that (lower-case) username.
    pub fn user_by_name(&self, tenant: &str, username: &str) -> Result<Option<User>> {
        match self.get_raw(&self.t.users_by_name, &key(&[tenant, username]))? {
            Some(id) => self.user(tenant, &String::from_utf8_lossy(&id)),
            None => Ok(None),
        }
    }

    /// Stores a new user with its username, e-mail and index entries;
    /// `Conflict("user")` on a taken id or username, `Conflict("email")` on a
    /// taken e-mail.
    pub fn insert_user(&self, tenant: &str, user: &User) -> Result<UserWritten> {
        if self.has(&self.t.users, &key(&[tenant, &user.id]))? {
            return Err(Error::Conflict("user"));
        }
        self.write_user(tenant, None, user)?;
        Ok(UserWritten { id: user.id.clone(), old_username: None })
    }

    /// Stores a user over its previous record (same id), moving its username,
    /// e-mail and index entries; `NotFound("user")` when absent, `Conflict`
    /// as [`Tx::insert_user`] when the new username or e-mail is another's.
    pub fn put_user(&self, tenant: &str, user: &User) -> Result<UserWritten> {
        let old = self.user(tenant, &user.id)?.ok_or(Error::NotFound("user"))?;
        self.write_user(tenant, Some(&old), user)?;
        Ok(UserWritten { id: user.id.clone(), old_username: Some(old.username) })
    }

    fn write_user(&self, tenant: &str, old: Option<&User>, user: &User) -> Result<()> {
        let id = user.id.as_str();
        let name_key = key(&[tenant, &user.username]);
        let email_key = user.email_key().map(|e| key(&[tenant, &e]));
        let owner = |tree: &TxTree, k: &[u8]| -> Result<bool> {
            Ok(self.get_raw(tree, k)?.is_some_and(|owner| owner != id.as_bytes()))
        };
        if owner(&self.t.users_by_name, &name_key)? {
            return Err(Error::Conflict("user"));
        }
        if let Some(k) = &email_key {
            if owner(&self.t.users_by_email, k)? {
                return Err(Error::Conflict("email"));
            }
        }
        if let Some(old) = old {
            self.remove(&self.t.users_by_name, &key(&[tenant, &old.username]))?;
            if let Some(e) = old.email_key() {
                self.remove(&self.t.users_by_email, &key(&[tenant, &e]))?;
            }
            for k in index_keys(tenant, old) {
                self.remove(&self.t.user_index, &k)?;
            }
        }
        self.put(&self.t.users, &key(&[tenant, id]), user)?;
        self.put_raw(&self.t.users_by_name, &name_key, id.as_bytes())?;
        if let Some(k) = &email_key {
            self.put_raw(&self.t.users_by_email, k, id.as_bytes())?;
        }
        for k in index_keys(tenant, user) {
            self.put_raw(&self.t.user_index, &k, id.as_bytes())?;
        }
        Ok(())
    }

    /// Refuses every token issued to the user until now. The instant never
    /// moves back: a revocation recorded by a concurrent change stays.
    pub fn revoke_tokens(&self, tenant: &str, user_id: &str) -> Result<()> {
        let k = key(&[tenant, user_id]);
        let stored = self.get::<u64>(&self.t.token_revocations, &k)?.unwrap_or(0);
        self.put(&self.t.token_revocations, &k, &stored.max(revocation_instant()))
    }

    /// Writes the user's revocation instant back as it is, so that this
    /// transaction and any concurrent one that revokes the user's tokens
    /// write the same record: one of them then runs again after the other
    /// (both backends order writers of one key), and a session opened here
    /// is never ordered before a revocation whose instant precedes its
    /// tokens. Reading the user is not enough: PostgreSQL's serializable
    /// level may order a reader before a concurrent writer.
    pub fn hold_revocation(&self, tenant: &str, user_id: &str) -> Result<u64> {
        let k = key(&[tenant, user_id]);
        let stored = self.get::<u64>(&self.t.token_revocations, &k)?.unwrap_or(0);
        self.put(&self.t.token_revocations, &k, &stored)?;
        Ok(stored)
    }

    /// See [`Users::tokens_revoked_before`].
    pub fn tokens_revoked_before(&self, tenant: &str, user_id: &str) -> Result<u64> {
        Ok(self.get(&self.t.token_revocations, &key(&[tenant, user_id]))?.unwrap_or(0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Tx;

    fn user(id: &str, name: &str, email: Option<&str>) -> User {
        User { id: id.into(), username: name.into(), email: email.map(Into::into), ..User::default() }
    }

    #[test]
    fn user_writes_keep_names_e_mails_and_indexes_in_step() {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::open(&crate::test_options(dir.path())).unwrap();
        let ann = User { realm_roles: vec!["member".into()], ..user("1", "ann", Some("Ann@x.io")) };
        s.users().create("t", &ann).unwrap();
        let taken = |u: User| s.transact(|tx: &Tx| tx.insert_user("t", &u)).unwrap_err();
        assert!(matches!(taken(user("1", "other", None)), Error::Conflict("user")), "id taken");
        assert!(matches!(taken(user("2", "ann", None)), Error::Conflict("user")), "username taken");
        assert!(matches!(taken(user("2", "bob", Some("ann@X.io"))), Error::Conflict("email")), "e-mail taken");
        assert!(matches!(s.transact(|tx| tx.put_user("t", &user("9", "z", None))), Err(Error::NotFound("user"))));

        // A rename frees the old name, e-mail and index entries.
        let renamed = user("1", "anna", Some("anna@x.io"));
        let written = s.transact(|tx| tx.put_user("t", &renamed)).unwrap();
        assert_eq!(written, UserWritten { id: "1".into(), old_username: Some("ann".into()) });
        assert!(s.users().get_by_name("t", "ann").unwrap().is_none());
        assert!(s.users().get_by_email("t", "ann@x.io").unwrap().is_none());
        assert_eq!(s.users().get_by_name("t", "anna").unwrap().unwrap().id, "1");
        assert!(s.users().by_index("t", Index::Role("member")).unwrap().is_empty());
        s.users().create("t", &user("2", "ann", Some("ann@x.io"))).unwrap();
    }

    #[test]
    fn the_directory_follows_a_commit_only() {
        use crate::user_directory::Source;
        let dir = tempfile::tempdir().unwrap();
        let s = Store::open(&crate::test_options(dir.path())).unwrap();
        s.users().create("t", &user("1", "ann", None)).unwrap();
        let names = || -> Vec<String> {
            s.users().select("t", Source::All, |_| true).unwrap().iter().map(|r| r.username().to_owned()).collect()
        };
        assert_eq!(names(), ["ann"]);
        // Aborted: nothing to refresh, nothing changed.
        let aborted: Result<UserWritten> = s.transact(|tx| {
            let _never_committed = tx.put_user("t", &user("1", "zed", None))?;
            Err(Error::Conflict("refused"))
        });
        assert!(aborted.is_err());
        assert_eq!(names(), ["ann"]);
        // Committed: the row moves when the write is handed on, and handing it twice is harmless.
        let written = s.transact(|tx| tx.put_user("t", &user("1", "zed", None))).unwrap();
        s.users().refresh_directory("t", &written).unwrap();
        s.users().refresh_directory("t", &written).unwrap();
        assert_eq!(names(), ["zed"]);
    }

    #[test]
    fn a_revocation_instant_never_moves_back() {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::open(&crate::test_options(dir.path())).unwrap();
        let later = crate::now_ms() + 60_000;
        s.transact(|tx| tx.put(&tx.t.token_revocations, &key(&["t", "1"]), &later)).unwrap();
        s.transact(|tx| tx.revoke_tokens("t", "1")).unwrap();
        assert_eq!(s.users().tokens_revoked_before("t", "1").unwrap(), later);
        s.transact(|tx| tx.revoke_tokens("t", "2")).unwrap();
        let now = s.transact(|tx| tx.tokens_revoked_before("t", "2")).unwrap();
        assert!(now > 0 && now <= crate::now_ms() + 1);
    }
}
