//! Links between users and clients, indexed both ways in one transaction.

use crate::keys::{key, last_part, prefix};
use crate::store::{get, Store};
use crate::{codec, Result, Tx};
use serde::{Deserialize, Serialize};

/// A link between a user and a client (a device the user signed in on).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Link {
    /// The linked user.
    pub user_id: String,
    /// The linked client.
    pub client_id: String,
    /// The level of assurance the user reached on this client.
    pub mloa: String,
    /// When the link was made, ms since the epoch.
    pub linked_on: u64,
    /// When `mloa` last changed (ms): with `linked_on`, the client's last link activity.
    pub mloa_updated_on: u64,
}

/// Reads of links; writes go through [`Tx`].
pub struct Links<'a>(&'a Store);

impl Store {
    /// The links of this store.
    pub fn links(&self) -> Links<'_> {
        Links(self)
    }
}

impl Links<'_> {
    /// A number that moves on whenever a link to the client is made: read it
    /// before deciding from [`Links::of_client`] that a client has no links,
    /// and check in the transaction that deletes it ([`Tx::link_generation`])
    /// that no link was made since.
    pub fn generation(&self, tenant: &str, client_id: &str) -> Result<u64> {
        Ok(get(&self.0.trees()?.link_generations, &key(&[tenant, client_id]))?.unwrap_or(0))
    }

    /// Every link of a user, in client-id order.
    pub fn of_user(&self, tenant: &str, user_id: &str) -> Result<Vec<Link>> {
        let t = &self.0.trees()?.links_by_user;
        t.scan_prefix(prefix(&[tenant, user_id])).map(|kv| codec::decode(&kv?.1)).collect()
    }

    /// Every link of a client, in user-id order.
    pub fn of_client(&self, tenant: &str, client_id: &str) -> Result<Vec<Link>> {
        let t = &self.0.trees()?.links_by_client;
        t.scan_prefix(prefix(&[tenant, client_id])).map(|kv| codec::decode(&kv?.1)).collect()
    }

    /// Whether the user is linked to the client: one point read, for the
    /// check every one-client send makes.
    pub fn exists(&self, tenant: &str, user_id: &str, client_id: &str) -> Result<bool> {
        self.0.trees()?.links_by_client.contains_key(key(&[tenant, client_id, user_id]))
    }

    /// Ids of the users linked to a client, without decoding the links.
    pub fn user_ids_of_client(&self, tenant: &str, client_id: &str) -> Result<Vec<String>> {
        let t = &self.0.trees()?.links_by_client;
        t.scan_prefix(prefix(&[tenant, client_id])).keys().map(|k| Ok(last_part(&k?))).collect()
    }
}

impl Tx<'_> {
    /// The link between a user and a client, read inside the transaction.
    pub fn link(&self, tenant: &str, user_id: &str, client_id: &str) -> Result<Option<Link>> {
        self.get(&self.t.links_by_user, &key(&[tenant, user_id, client_id]))
    }

    /// Stores a link under both its indexes and moves the client's
    /// [`link generation`](Tx::link_generation) on.
    pub fn put_link(&self, tenant: &str, link: &Link) -> Result<()> {
        let client_key = key(&[tenant, &link.client_id]);
        let next = self.link_generation(tenant, &link.client_id)?.wrapping_add(1);
        self.put(&self.t.link_generations, &client_key, &next)?;
        self.put(&self.t.links_by_user, &key(&[tenant, &link.user_id, &link.client_id]), link)?;
        self.put(&self.t.links_by_client, &key(&[tenant, &link.client_id, &link.user_id]), link)
    }

    /// Removes one link; true when it existed.
    pub fn remove_link(&self, tenant: &str, user_id: &str, client_id: &str) -> Result<bool> {
        self.remove(&self.t.links_by_client, &key(&[tenant, client_id, user_id]))?;
        self.remove(&self.t.links_by_user, &key(&[tenant, user_id, client_id]))
    }

    /// See [`Links::generation`] (0 before the client's first link).
    pub fn link_generation(&self, tenant: &str, client_id: &str) -> Result<u64> {
        Ok(self.get(&self.t.link_generations, &key(&[tenant, client_id]))?.unwrap_or(0))
    }
}
