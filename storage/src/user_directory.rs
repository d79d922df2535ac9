//! An in-memory directory of each tenant's users: the few lower-cased fields
//! that user lists filter and order on, so that a list or a substring search of
//! a large tenant reads no record but those of the page it answers.
//!
//! A tenant's directory is built from its records on first use and kept in
//! step after every committed user write ([`crate::users::Users::refresh_directory`],
//! never from inside a transaction, which may run again or abort), which
//! re-reads the committed record under the directory's lock (so concurrent
//! writers cannot leave a stale row behind).

use crate::keys::{key, prefix};
use crate::store::get;
use crate::users::{Index, User};
use crate::{codec, Result};
use dashmap::DashMap;
use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

/// What user lists filter and order on, lower-cased, without decoding a record.
#[derive(Debug)]
pub struct UserRow {
    /// The user's id, to read its record once the row is chosen.
    pub id: String,
    /// Copy of [`User::enabled`], for list filters that read no record.
    pub enabled: bool,
    /// Copy of [`User::email_verified`], for list filters that read no record.
    pub email_verified: bool,
    /// Copy of the user's creation time (ms), for list filters that read no record.
    pub created_ms: u64,
    /// `username \x1f first \x1f last \x1f email`: one haystack for key searches.
    text: String,
    cuts: [usize; 3],
}

/// Separates the fields of [`UserRow::text`]; search needles never contain it.
const SEP: char = '\x1f';

impl UserRow {
    fn of(u: &User) -> UserRow {
        let lower = |f: &Option<String>| f.as_deref().unwrap_or("").replace(SEP, " ").to_lowercase();
        let (first, last, email) = (lower(&u.first_name), lower(&u.last_name), lower(&u.email));
        let mut text = u.username.replace(SEP, " ");
        let c0 = text.len();
        text.push(SEP);
        text.push_str(&first);
        let c1 = text.len();
        text.push(SEP);
        text.push_str(&last);
        let c2 = text.len();
        text.push(SEP);
        text.push_str(&email);
        UserRow {
            id: u.id.clone(),
            enabled: u.enabled,
            email_verified: u.email_verified,
            created_ms: u.created_ms,
            text,
            cuts: [c0, c1, c2],
        }
    }

    /// Where the field after cut `i` starts.
    // Each cut is the index of a one-byte separator in `text`, so the byte after
    // it is at most `text.len()`.
    #[allow(clippy::arithmetic_side_effects)]
    fn after(&self, i: usize) -> usize {
        self.cuts[i] + 1
    }

    /// The username (stored lower-case).
    pub fn username(&self) -> &str {
        &self.text[..self.cuts[0]]
    }
    /// The first name, lower-cased; empty when unset.
    pub fn first_name(&self) -> &str {
        &self.text[self.after(0)..self.cuts[1]]
    }
    /// The last name, lower-cased; empty when unset.
    pub fn last_name(&self) -> &str {
        &self.text[self.after(1)..self.cuts[2]]
    }
    /// The e-mail, lower-cased; empty when unset.
    pub fn email(&self) -> &str {
        &self.text[self.after(2)..]
    }
    /// Username, first and last name and e-mail, separated so that no needle
    /// without the separator matches across two fields.
    pub fn all_fields(&self) -> &str {
        &self.text
    }
    /// The value of `field`, to compare and order rows by it.
    pub fn field(&self, field: Field) -> &str {
        match field {
            Field::Username => self.username(),
            Field::FirstName => self.first_name(),
            Field::LastName => self.last_name(),
            Field::Email => self.email(),
        }
    }
}

/// A field user lists order by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    /// Order by username (the directory's own order).
    Username,
    /// Order by first name.
    FirstName,
    /// Order by last name.
    LastName,
    /// Order by e-mail.
    Email,
}

impl Field {
    /// Slot of the field in [`Dir::sorted`]; username order is the map's own.
    fn slot(self) -> Option<usize> {
        match self {
            Field::Username => None,
            Field::FirstName => Some(0),
            Field::LastName => Some(1),
            Field::Email => Some(2),
        }
    }
}

/// One tenant's rows by username; `None` until first used.
type Rows = Option<Dir>;

struct Dir {
    rows: BTreeMap<String, Arc<UserRow>>,
    /// Every row's text in one buffer, for substring searches; rebuilt on the
    /// first search after a write.
    flat: Option<Flat>,
    /// Rows by first name, last name and e-mail (ties by username), so that a
    /// page of a whole tenant in those orders is a walk, not a sort; each is
    /// rebuilt on the first list in its order after a write.
    sorted: [Option<Arc<Vec<Arc<UserRow>>>>; 3],
}

impl Dir {
    fn new(rows: BTreeMap<String, Arc<UserRow>>) -> Dir {
        Dir { rows, flat: None, sorted: Default::default() }
    }

    /// The rows in `order` (a field other than username), built if missing.
    fn sorted(&mut self, slot: usize, order: Field) -> Arc<Vec<Arc<UserRow>>> {
        let rows = &self.rows;
        self.sorted[slot]
            .get_or_insert_with(|| {
                let mut sorted: Vec<_> = rows.values().cloned().collect();
                // Stable: rows come in username order, which breaks ties.
                sorted.sort_by(|a, b| a.field(order).cmp(b.field(order)));
                Arc::new(sorted)
            })
            .clone()
    }

    fn visit(
        &self,
        store: &crate::Store,
        tenant: &str,
        source: Source<'_>,
        mut visit: impl FnMut(&Arc<UserRow>),
    ) -> Result<()> {
        let Dir { rows, flat, .. } = self;
        match source {
            Source::All => rows.values().for_each(visit),
            Source::Containing(needle) => {
                // No field holds either separator, so such a needle matches nothing.
                if needle.contains(['\n', SEP]) {
                    return Ok(());
                }
                let finder = memchr::memmem::Finder::new(needle.as_bytes());
                match flat {
                    Some(f) => {
                        let mut last = usize::MAX;
                        for at in finder.find_iter(f.text.as_bytes()) {
                            // The first row starts at 0, so some start is <= at: exact.
                            let i = f.starts.partition_point(|s| *s <= at).saturating_sub(1);
                            if i != last {
                                last = i;
                                visit(&f.order[i]);
                            }
                        }
                    }
                    // A write between the two locks dropped the buffer: row by row.
                    None => rows.values().filter(|r| finder.find(r.text.as_bytes()).is_some()).for_each(visit),
                }
            }
            Source::Index(lookup) => {
                // Index keys end with the username, so no value or record is read.
                for kv in store.trees()?.user_index.scan_prefix(lookup.prefix(tenant)) {
                    let (k, _) = kv?;
                    let name = k.rsplit(|b| *b == 0).next().unwrap_or_default();
                    if let Some(row) = std::str::from_utf8(name).ok().and_then(|n| rows.get(n)) {
                        visit(row);
                    }
                }
            }
        }
        Ok(())
    }
}

struct Flat {
    /// Row texts in username order, each followed by a newline.
    text: String,
    starts: Vec<usize>,
    order: Vec<Arc<UserRow>>,
}

impl Flat {
    fn of(rows: &BTreeMap<String, Arc<UserRow>>) -> Flat {
        let mut flat = Flat {
            text: String::with_capacity(rows.values().fold(0, |n, r| n.saturating_add(r.text.len()).saturating_add(1))),
            starts: Vec::with_capacity(rows.len()),
            order: Vec::with_capacity(rows.len()),
        };
        for r in rows.values() {
            flat.starts.push(flat.text.len());
            flat.text.push_str(&r.text.replace('\n', " "));
            flat.text.push('\n');
            flat.order.push(r.clone());
        }
        flat
    }
}

#[derive(Default)]
pub(crate) struct Directories(DashMap<String, Arc<RwLock<Rows>>>);

impl Directories {
    /// Drops a tenant's directory; the next read builds it again.
    pub(crate) fn forget(&self, tenant: &str) {
        self.0.remove(tenant);
    }

    /// Drops every tenant's directory.
    pub(crate) fn forget_all(&self) {
        self.0.clear();
    }

    fn of(&self, tenant: &str) -> Arc<RwLock<Rows>> {
        if let Some(d) = self.0.get(tenant) {
            return d.clone();
        }
        self.0.entry(tenant.to_owned()).or_default().clone()
    }

    /// Brings the row of user `id` in line with its committed record, if the
    /// tenant's directory is loaded; `old_username` is dropped when it changed.
    pub(crate) fn refresh(
        &self,
        store: &crate::Store,
        tenant: &str,
        id: &str,
        old_username: Option<&str>,
    ) -> Result<()> {
        let dir = self.of(tenant);
        let mut guard = dir.write().unwrap_or_else(|p| p.into_inner());
        let Some(dir) = guard.as_mut() else { return Ok(()) };
        dir.flat = None;
        dir.sorted = Default::default();
        let rows = &mut dir.rows;
        if let Some(old) = old_username {
            rows.remove(old);
        }
        if let Some(u) = get::<User>(&store.trees()?.users, &key(&[tenant, id]))? {
            rows.insert(u.username.clone(), Arc::new(UserRow::of(&u)));
        }
        Ok(())
    }

    /// Calls `visit` with each row of `source`, in username order.
    pub(crate) fn visit(
        &self,
        store: &crate::Store,
        tenant: &str,
        source: Source<'_>,
        visit: impl FnMut(&Arc<UserRow>),
    ) -> Result<()> {
        let needs_flat = matches!(source, Source::Containing(_));
        self.read(store, tenant, needs_flat, |d| d.visit(store, tenant, source, visit))?
    }

    /// Runs `f` on the tenant's directory under its read lock, once it is
    /// loaded (with its search buffer built when `needs_flat`).
    fn read<T>(&self, store: &crate::Store, tenant: &str, needs_flat: bool, f: impl FnOnce(&Dir) -> T) -> Result<T> {
        let dir = self.of(tenant);
        let ready = |d: &Rows| d.as_ref().is_some_and(|d| !needs_flat || d.flat.is_some());
        if !ready(&dir.read().unwrap_or_else(|p| p.into_inner())) {
            let mut guard = dir.write().unwrap_or_else(|p| p.into_inner());
            let d = loaded(&mut guard, store, tenant)?;
            if needs_flat && d.flat.is_none() {
                d.flat = Some(Flat::of(&d.rows));
            }
        }
        let guard = dir.read().unwrap_or_else(|p| p.into_inner());
        Ok(f(guard.as_ref().unwrap_or(&Dir::new(BTreeMap::new()))))
    }

    /// Calls `visit` with every row of the tenant in `order` (ties in username
    /// order), reversed when `desc`.
    pub(crate) fn visit_all_by(
        &self,
        store: &crate::Store,
        tenant: &str,
        order: Field,
        desc: bool,
        visit: impl FnMut(&Arc<UserRow>),
    ) -> Result<()> {
        let Some(slot) = order.slot() else {
            return self.read(store, tenant, false, |d| match desc {
                true => d.rows.values().rev().for_each(visit),
                false => d.rows.values().for_each(visit),
            });
        };
        let dir = self.of(tenant);
        let kept = dir.read().unwrap_or_else(|p| p.into_inner()).as_ref().and_then(|d| d.sorted[slot].clone());
        let sorted = match kept {
            Some(sorted) => sorted,
            None => loaded(&mut dir.write().unwrap_or_else(|p| p.into_inner()), store, tenant)?.sorted(slot, order),
        };
        match desc {
            true => sorted.iter().rev().for_each(visit),
            false => sorted.iter().for_each(visit),
        }
        Ok(())
    }
}

/// The tenant's directory, loaded from its records on first use.
fn loaded<'d>(rows: &'d mut Rows, store: &crate::Store, tenant: &str) -> Result<&'d mut Dir> {
    if rows.is_none() {
        *rows = Some(Dir::new(load(store, tenant)?));
    }
    Ok(rows.get_or_insert_with(|| Dir::new(BTreeMap::new())))
}

/// Where a user list draws its candidates from.
#[derive(Clone, Copy, Debug)]
pub enum Source<'a> {
    /// Every user of the tenant.
    All,
    /// The users one exact-match index lookup holds.
    Index(Index<'a>),
    /// Users whose username, first or last name or e-mail contains this
    /// (lower-case) text: one scan of the tenant's search buffer.
    Containing(&'a str),
}

fn load(store: &crate::Store, tenant: &str) -> Result<BTreeMap<String, Arc<UserRow>>> {
    let mut rows = BTreeMap::new();
    for kv in store.trees()?.users.scan_prefix(prefix(&[tenant])) {
        let (_, v) = kv?;
        let u: User = codec::decode(&v)?;
        rows.insert(u.username.clone(), Arc::new(UserRow::of(&u)));
    }
    Ok(rows)
}
