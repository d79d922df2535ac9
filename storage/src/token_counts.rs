//! Counts of push tokens kept beside the tokens: what a broadcast targets
//! and what a tenant's `pushTokens` quota counts are then read in a few keys
//! instead of a walk over millions (a topic send answers at once however
//! large the tenant, and registering a token under a quota stays cheap).
//!
//! Two counts, each spread over 64 keys by a hash of the client id,
//! so that concurrent registrations seldom write the same key (on
//! PostgreSQL, two serializable transactions writing one row conflict and
//! one of them runs again):
//! - `app_token_counts`, `tenant \0 app \0 shard`: the tokens in the app's
//!   broadcast index (valid, client unlocked);
//! - `tenant_token_counts`, `tenant \0 shard`: the tokens the tenant stores,
//!   valid or not.
//!
//! They change in the transactions that change the tokens and the index
//! (`push_tokens`). A store from before them is counted once as it opens
//! ([`Store::build_token_counts`]); a marker says it was.

use crate::keys::{key, Key};
use crate::kv::{Tree, TxTree};
use crate::{codec, Result, Store, Tx};
use std::collections::BTreeMap;

/// How many keys a count is spread over: 2^(32 - SHARD_SHIFT).
#[cfg(test)]
const SHARDS: usize = 64;
const SHARD_SHIFT: u32 = 26;

/// The marker of a store whose counts were built: no tenant id starts with 0xFF.
const BUILT: &[u8] = &[0xff];

/// The shard of a client's tokens: stable, since a count's keys must each
/// stay the number of their own clients.
fn shard(client_id: &str) -> String {
    format!("{:02x}", client_hash(client_id.as_bytes()) >> SHARD_SHIFT)
}

/// A hash of a client id whose top bits spread clients evenly: FNV-1a,
/// then a Fibonacci hash, so that every byte moves them.
pub(crate) fn client_hash(client_id: &[u8]) -> u32 {
    let h = client_id.iter().fold(0x811c_9dc5u32, |h, b| (h ^ u32::from(*b)).wrapping_mul(0x0100_0193));
    h.wrapping_mul(0x9e37_79b1)
}

/// The parts of a stored key (see `keys`).
fn parts(k: &[u8]) -> Vec<String> {
    k.split(|b| *b == 0).map(|p| String::from_utf8_lossy(p).into_owned()).collect()
}

/// How many keys of `tree` fall under each count key that `count_key`
/// makes of a key's parts (none: the key is not counted).
fn tally(tree: &Tree, count_key: impl Fn(&[String]) -> Option<Key>) -> Result<BTreeMap<Key, u64>> {
    let mut counts: BTreeMap<Key, u64> = BTreeMap::new();
    for k in tree.iter().keys() {
        if let Some(ck) = count_key(&parts(&k?)) {
            let n = counts.entry(ck).or_default();
            *n = n.saturating_add(1);
        }
    }
    Ok(counts)
}

/// The sum of the counts under `p`.
pub(crate) fn sum(tree: &Tree, p: &[u8]) -> Result<u64> {
    let mut total = 0u64;
    for kv in tree.scan_prefix(p) {
        total = total.saturating_add(codec::decode::<u64>(&kv?.1)?);
    }
    Ok(total)
}

impl Tx<'_> {
    /// Counts one token more (`up`) or less under `parts` in `tree`, in
    /// `client_id`'s shard; a count back at zero is removed.
    fn count(&self, tree: &TxTree, parts: &[&str], client_id: &str, up: bool) -> Result<()> {
        let s = shard(client_id);
        let k = key(&[parts, &[s.as_str()]].concat());
        let n: u64 = self.get(tree, &k)?.unwrap_or(0);
        match if up { n.saturating_add(1) } else { n.saturating_sub(1) } {
            0 => self.remove(tree, &k).map(drop),
            n => self.put(tree, &k, &n),
        }
    }

    /// A token of `app` entered (`up`) or left its broadcast index.
    pub(crate) fn count_indexed(&self, tenant: &str, app: &str, client_id: &str, up: bool) -> Result<()> {
        self.count(&self.t.app_token_counts, &[tenant, app], client_id, up)
    }

    /// The tenant stores a token more (`up`) or one less.
    pub(crate) fn count_stored(&self, tenant: &str, client_id: &str, up: bool) -> Result<()> {
        self.count(&self.t.tenant_token_counts, &[tenant], client_id, up)
    }
}

impl Store {
    /// Counts the tokens of a store written before the counts existed, once
    /// (see the module documentation): a walk of the token index and the
    /// tokens as the store opens, before any write. Engines opening one
    /// database together count alike, and the first to commit wins.
    pub(crate) fn build_token_counts(&self) -> Result<()> {
        if self.trees()?.tenant_token_counts.contains_key(BUILT)? {
            return Ok(());
        }
        self.count_tokens(false).map(drop)
    }

    /// Counts every push token again and replaces all the counts: for a
    /// store whose counts drifted (an engine of a version from before them
    /// kept writing tokens into a PostgreSQL database a newer one had
    /// counted). Run it with every engine stopped: a token registered while
    /// it walks the tokens would be counted wrong. Returns the tokens stored.
    pub fn recount_push_tokens(&self) -> Result<u64> {
        self.count_tokens(true)
    }

    /// Walks the index and the tokens and writes their counts and the
    /// marker in one transaction; `replace`: over whatever counts there
    /// are, else only if no engine counted them meanwhile.
    fn count_tokens(&self, replace: bool) -> Result<u64> {
        let t = self.trees()?;
        let started = std::time::Instant::now();
        let indexed = tally(&t.tokens_by_app, |parts| match parts {
            [tenant, app, client] => Some(key(&[tenant, app, &shard(client)])),
            _ => None,
        })?;
        let stored = tally(&t.push_tokens, |parts| match parts {
            [tenant, client] => Some(key(&[tenant, &shard(client)])),
            _ => None,
        })?;
        let keys = |tree: &Tree| if replace { tree.iter().keys().collect::<Result<Vec<_>>>() } else { Ok(Vec::new()) };
        let (old_indexed, old_stored) = (keys(&t.app_token_counts)?, keys(&t.tenant_token_counts)?);
        self.transact(|tx| {
            if !replace && tx.has(&tx.t.tenant_token_counts, BUILT)? {
                return Ok(());
            }
            for k in &old_indexed {
                tx.remove(&tx.t.app_token_counts, k)?;
            }
            for k in &old_stored {
                tx.remove(&tx.t.tenant_token_counts, k)?;
            }
            for (k, n) in &indexed {
                tx.put(&tx.t.app_token_counts, k, n)?;
            }
            for (k, n) in &stored {
                tx.put(&tx.t.tenant_token_counts, k, n)?;
            }
            tx.put(&tx.t.tenant_token_counts, BUILT, &())
        })?;
        let tokens = stored.values().fold(0u64, |a, n| a.saturating_add(*n));
        let took_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        tracing::info!(tokens, took_ms, "push tokens counted");
        Ok(tokens)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::push_tokens::{PushProvider, PushToken};

    fn token(app: &str) -> PushToken {
        PushToken {
            app_name: app.into(),
            provider: PushProvider::Apns,
            token: "aa".into(),
            is_valid: true,
            updated_ms: 1,
        }
    }

    /// A store from before the counts (its tokens written, no count and no
    /// marker) is counted as it opens, once: counts changed afterwards are
    /// not counted again at the next open.
    #[test]
    fn a_store_from_before_the_counts_is_counted_once_as_it_opens() {
        let dir = tempfile::tempdir().unwrap();
        let opts = crate::test_options(dir.path());
        {
            let store = Store::open(&opts).unwrap();
            for i in 0..200 {
                store.push_tokens().set("t", &format!("c{i:03}"), &token(if i < 150 { "a" } else { "b" })).unwrap();
            }
            store.push_tokens().set("u", "c1", &token("a")).unwrap();
            assert!(store.push_tokens().invalidate("t", "c000", "aa", 2).unwrap());
            // What an older engine left: tokens, no counts.
            let t = store.trees().unwrap();
            let counts: Vec<Vec<u8>> = [&t.app_token_counts, &t.tenant_token_counts]
                .into_iter()
                .flat_map(|tree| tree.iter().keys().map(|k| k.unwrap().to_vec()).collect::<Vec<_>>())
                .collect();
            drop(t); // the store closes once nobody holds its trees
            assert!(counts.len() > 2, "counted while written: {}", counts.len());
            store
                .transact(|tx| {
                    for k in &counts {
                        tx.remove(&tx.t.app_token_counts, k)?;
                        tx.remove(&tx.t.tenant_token_counts, k)?;
                    }
                    Ok::<_, crate::Error>(())
                })
                .unwrap();
            assert_eq!(store.push_tokens().count_of_tenant("t").unwrap(), 0);
            store.close().unwrap();
        }
        let store = Store::open(&opts).unwrap();
        let tokens = store.push_tokens();
        assert_eq!(
            (tokens.count_valid_of_app("t", "a").unwrap(), tokens.count_valid_of_app("t", "b").unwrap()),
            (149, 50)
        );
        assert_eq!((tokens.count_of_tenant("t").unwrap(), tokens.count_of_tenant("u").unwrap()), (200, 1));
        assert_eq!(tokens.count_valid_of_app("u", "a").unwrap(), 1);
        assert!(store.transact(|tx| tx.remove_push_token("t", "c199")).unwrap());
        store.close().unwrap();
        let store = Store::open(&opts).unwrap();
        assert_eq!(store.push_tokens().count_valid_of_app("t", "b").unwrap(), 49, "not counted again");
        assert_eq!(store.push_tokens().count_of_tenant("t").unwrap(), 199);
    }

    /// Counts that drifted (tokens an older engine wrote without counting
    /// them, a count left for an app with no tokens) are replaced whole by
    /// a recount, marker included.
    #[test]
    fn a_recount_replaces_counts_that_drifted() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&crate::test_options(dir.path())).unwrap();
        for i in 0..30 {
            store.push_tokens().set("t", &format!("c{i:02}"), &token("a")).unwrap();
        }
        store
            .transact(|tx| {
                // An older engine's writes: a token and its index entry, uncounted.
                tx.put(&tx.t.push_tokens, &key(&["t", "old"]), &token("a"))?;
                let entry = crate::push_tokens::TokenRef { provider: PushProvider::Apns, token: "aa".into() };
                tx.write_index("t", "a", "old", Some(&entry))?;
                tx.put(&tx.t.app_token_counts, &key(&["t", "gone", "00"]), &5u64)
            })
            .unwrap();
        let tokens = store.push_tokens();
        assert_eq!((tokens.count_of_tenant("t").unwrap(), tokens.count_valid_of_app("t", "gone").unwrap()), (30, 5));
        assert_eq!(store.recount_push_tokens().unwrap(), 31);
        assert_eq!(tokens.count_of_tenant("t").unwrap(), 31);
        assert_eq!(tokens.count_valid_of_app("t", "a").unwrap(), 31);
        assert_eq!(tokens.count_valid_of_app("t", "gone").unwrap(), 0, "a stale count is removed");
        assert!(store.trees().unwrap().tenant_token_counts.contains_key(BUILT).unwrap());
    }

    /// Shards spread clients: ULID-like ids fill every one.
    #[test]
    fn clients_spread_over_every_shard() {
        let shards: std::collections::BTreeSet<String> = (0..4096u32).map(|i| shard(&format!("01JD{i:022}"))).collect();
        assert_eq!(shards.len(), SHARDS);
    }
}
