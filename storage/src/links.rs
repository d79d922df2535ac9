//! Links between users and clients, indexed both ways in one transaction.

use crate::keys::{key, last_part, prefix};
use crate::store::{get, Store};
use crate::{codec, Error, Result};
use serde::{Deserialize, Serialize};
use sled::Transactional;

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Link {
    pub user_id: String,
    pub client_id: String,
    pub mloa: String,
    pub linked_on: u64,
    pub mloa_updated_on: u64,
}

pub struct Links<'a>(&'a Store);

/// A client's link generation read inside a transaction (0 before its first link).
pub(crate) fn tx_generation(
    generations: &sled::transaction::TransactionalTree,
    client_key: &[u8],
) -> std::result::Result<u64, sled::transaction::ConflictableTransactionError<Error>> {
    match generations.get(client_key)? {
        Some(v) => codec::decode(&v).map_err(sled::transaction::ConflictableTransactionError::Abort),
        None => Ok(0),
    }
}

impl Store {
    pub fn links(&self) -> Links<'_> {
        Links(self)
    }
}

impl Links<'_> {
    /// Links a user to a client, or updates the link's mLoA; returns the
    /// stored link. The client must exist when the link is made
    /// (`NotFound("client")`), and the link moves the client's
    /// [`Links::generation`] on, in the same transaction.
    pub fn put(&self, tenant: &str, user_id: &str, client_id: &str, mloa: &str, now: u64) -> Result<Link> {
        let t = self.0.trees()?;
        let by_user = key(&[tenant, user_id, client_id]);
        let by_client = key(&[tenant, client_id, user_id]);
        let client_key = key(&[tenant, client_id]);
        let trees = (&t.links_by_user, &t.links_by_client, &t.clients, &t.link_generations);
        let link = trees.transaction(|(users, clients, records, generations)| {
            if records.get(&client_key)?.is_none() {
                return Err(sled::transaction::ConflictableTransactionError::Abort(Error::NotFound("client")));
            }
            let next = codec::encode(&tx_generation(generations, &client_key)?.wrapping_add(1))
                .map_err(sled::transaction::ConflictableTransactionError::Abort)?;
            generations.insert(client_key.as_slice(), next)?;
            let link = match users.get(&by_user)? {
                Some(old) => {
                    let old: Link =
                        codec::decode(&old).map_err(sled::transaction::ConflictableTransactionError::Abort)?;
                    let updated = if old.mloa == mloa { old.mloa_updated_on } else { now };
                    Link { mloa: mloa.to_string(), mloa_updated_on: updated, ..old }
                }
                None => Link {
                    user_id: user_id.to_string(),
                    client_id: client_id.to_string(),
                    mloa: mloa.to_string(),
                    linked_on: now,
                    mloa_updated_on: now,
                },
            };
            let v = codec::encode(&link).map_err(sled::transaction::ConflictableTransactionError::Abort)?;
            users.insert(by_user.as_slice(), v.as_slice())?;
            clients.insert(by_client.as_slice(), v)?;
            Ok(link)
        })?;
        Ok(link)
    }

    /// Removes one link; true when it existed.
    pub fn remove(&self, tenant: &str, user_id: &str, client_id: &str) -> Result<bool> {
        let t = self.0.trees()?;
        let (by_user, by_client) = (key(&[tenant, user_id, client_id]), key(&[tenant, client_id, user_id]));
        let existed = (&t.links_by_user, &t.links_by_client).transaction(|(users, clients)| {
            clients.remove(by_client.as_slice())?;
            Ok(users.remove(by_user.as_slice())?.is_some())
        })?;
        Ok(existed)
    }

    /// A number that moves on whenever a link to the client is made: read it
    /// before deciding that a client has no links, and
    /// [`Clients::delete_if_unlinked_since`](crate::clients::Clients::delete_if_unlinked_since)
    /// deletes it only if no link was made since.
    pub fn generation(&self, tenant: &str, client_id: &str) -> Result<u64> {
        Ok(get(&self.0.trees()?.link_generations, &key(&[tenant, client_id]))?.unwrap_or(0))
    }

    pub fn of_user(&self, tenant: &str, user_id: &str) -> Result<Vec<Link>> {
        let t = &self.0.trees()?.links_by_user;
        t.scan_prefix(prefix(&[tenant, user_id])).map(|kv| codec::decode(&kv?.1)).collect()
    }

    pub fn of_client(&self, tenant: &str, client_id: &str) -> Result<Vec<Link>> {
        let t = &self.0.trees()?.links_by_client;
        t.scan_prefix(prefix(&[tenant, client_id])).map(|kv| codec::decode(&kv?.1)).collect()
    }

    /// Ids of the users linked to a client, without decoding the links.
    pub fn user_ids_of_client(&self, tenant: &str, client_id: &str) -> Result<Vec<String>> {
        let t = &self.0.trees()?.links_by_client;
        t.scan_prefix(prefix(&[tenant, client_id])).keys().map(|k| Ok(last_part(&k?))).collect()
    }
}
