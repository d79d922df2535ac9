//! An in-memory directory of each tenant's users: the few lower-cased fields
//! that user lists filter and order on, so that a list or a substring search of
//! a large tenant reads no record but those of the page it answers.
//!
//! A tenant's directory is built from its records on first use and kept in
//! step by every user write, which re-reads the committed record under the
//! directory's lock (so concurrent writers cannot leave a stale row behind).

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
    pub id: String,
    pub enabled: bool,
    pub email_verified: bool,
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
        text.extend([SEP.to_string(), first, SEP.to_string()]);
        let c1 = text.len() - 1;
        text.extend([last, SEP.to_string()]);
        let c2 = text.len() - 1;
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

    pub fn username(&self) -> &str {
        &self.text[..self.cuts[0]]
    }
    pub fn first_name(&self) -> &str {
        &self.text[self.cuts[0] + 1..self.cuts[1]]
    }
    pub fn last_name(&self) -> &str {
        &self.text[self.cuts[1] + 1..self.cuts[2]]
    }
    pub fn email(&self) -> &str {
        &self.text[self.cuts[2] + 1..]
    }
    /// Username, first and last name and e-mail, separated so that no needle
    /// without the separator matches across two fields.
    pub fn all_fields(&self) -> &str {
        &self.text
    }
}

/// One tenant's rows by username; `None` until first used.
type Rows = Option<Dir>;

struct Dir {
    rows: BTreeMap<String, Arc<UserRow>>,
    /// Every row's text in one buffer, for substring searches; rebuilt on the
    /// first search after a write.
    flat: Option<Flat>,
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
            text: String::with_capacity(rows.values().map(|r| r.text.len() + 1).sum()),
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
        let rows = &mut dir.rows;
        if let Some(old) = old_username {
            rows.remove(old);
        }
        if let Some(u) = get::<User>(&store.trees().users, &key(&[tenant, id]))? {
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
        mut visit: impl FnMut(&Arc<UserRow>),
    ) -> Result<()> {
        let dir = self.of(tenant);
        let needs_flat = matches!(source, Source::Containing(_));
        let ready = |d: &Rows| d.as_ref().is_some_and(|d| !needs_flat || d.flat.is_some());
        if !ready(&dir.read().unwrap_or_else(|p| p.into_inner())) {
            let mut guard = dir.write().unwrap_or_else(|p| p.into_inner());
            if guard.is_none() {
                *guard = Some(Dir { rows: load(store, tenant)?, flat: None });
            }
            if let Some(d) = guard.as_mut().filter(|d| needs_flat && d.flat.is_none()) {
                d.flat = Some(Flat::of(&d.rows));
            }
        }
        let guard = dir.read().unwrap_or_else(|p| p.into_inner());
        let Some(Dir { rows, flat }) = guard.as_ref() else { return Ok(()) };
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
                            let i = f.starts.partition_point(|s| *s <= at) - 1;
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
                for kv in store.trees().user_index.scan_prefix(lookup.prefix(tenant)) {
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

/// Where a user list draws its candidates from.
#[derive(Clone, Copy, Debug)]
pub enum Source<'a> {
    All,
    Index(Index<'a>),
    /// Users whose username, first or last name or e-mail contains this
    /// (lower-case) text: one scan of the tenant's search buffer.
    Containing(&'a str),
}

fn load(store: &crate::Store, tenant: &str) -> Result<BTreeMap<String, Arc<UserRow>>> {
    let mut rows = BTreeMap::new();
    for kv in store.trees().users.scan_prefix(prefix(&[tenant])) {
        let (_, v) = kv?;
        let u: User = codec::decode(&v)?;
        rows.insert(u.username.clone(), Arc::new(UserRow::of(&u)));
    }
    Ok(rows)
}
