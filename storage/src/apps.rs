//! Apps of a tenant with their push configuration; credentials are sealed.

use crate::keys::{key, prefix};
use crate::store::{get, Store};
use crate::{codec, Error, Result, Secret};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct App {
    pub name: String,
    pub categories: Vec<String>,
    pub android_api_key: Option<Secret>,
    pub fcm_service_account: Option<Secret>,
    pub ios_apns_certificate: Option<Secret>,
    pub ios_apns_private_key: Option<Secret>,
    pub ios_apns_team_id: Option<String>,
    pub ios_apns_key_id: Option<String>,
    pub ios_bundle_id: Option<String>,
    pub ios_is_development: Option<bool>,
    pub hpk_client_id: Option<String>,
    pub hpk_client_secret: Option<Secret>,
    pub created_ms: u64,
    pub modified_ms: u64,
}

impl App {
    /// The sealing context of one credential field of this app.
    pub fn secret_context(tenant: &str, app: &str, field: &str) -> String {
        format!("app/{tenant}/{app}/{field}")
    }
}

pub struct Apps<'a>(&'a Store);

impl Store {
    pub fn apps(&self) -> Apps<'_> {
        Apps(self)
    }
}

impl Apps<'_> {
    pub fn create(&self, tenant: &str, app: &App) -> Result<()> {
        let k = key(&[tenant, &app.name]);
        let v = codec::encode(app)?;
        let created = self.0.trees()?.apps.compare_and_swap(k, None as Option<&[u8]>, Some(v))?;
        self.changed();
        created.map_err(|_| Error::Conflict("app"))
    }

    /// Replaces `old` by `new` only if the stored record is still `old`
    /// (optimistic concurrency): `NotFound("app")` when the app was deleted
    /// meanwhile (a delete is never undone), `Conflict("app")` when another
    /// write changed it (the caller builds its change again on the new record).
    pub fn replace(&self, tenant: &str, old: &App, new: &App) -> Result<()> {
        let k = key(&[tenant, &new.name]);
        let swapped = self.0.trees()?.apps.compare_and_swap(k, Some(codec::encode(old)?), Some(codec::encode(new)?))?;
        self.changed();
        match swapped {
            Ok(()) => Ok(()),
            Err(e) if e.current.is_none() => Err(Error::NotFound("app")),
            Err(_) => Err(Error::Conflict("app")),
        }
    }

    pub fn get(&self, tenant: &str, name: &str) -> Result<Option<App>> {
        get(&self.0.trees()?.apps, &key(&[tenant, name]))
    }

    /// Apps in name order, skipping `offset`, at most `limit`, and the total count.
    pub fn list(&self, tenant: &str, offset: usize, limit: usize) -> Result<(Vec<App>, usize)> {
        let t = &self.0.trees()?.apps;
        let p = prefix(&[tenant]);
        let total = t.scan_prefix(&p).count();
        let page =
            t.scan_prefix(&p).skip(offset).take(limit).map(|kv| codec::decode(&kv?.1)).collect::<Result<Vec<App>>>()?;
        Ok((page, total))
    }

    pub fn delete(&self, tenant: &str, name: &str) -> Result<()> {
        let removed = self.0.trees()?.apps.remove(key(&[tenant, name]))?;
        self.changed();
        match removed {
            Some(_) => Ok(()),
            None => Err(Error::NotFound("app")),
        }
    }

    fn changed(&self) {
        self.0.inner.apps_generation.fetch_add(1, std::sync::atomic::Ordering::AcqRel);
    }
}

impl crate::Tx<'_> {
    pub fn app(&self, tenant: &str, name: &str) -> Result<Option<App>> {
        self.get(&self.t.apps, &key(&[tenant, name]))
    }
}
