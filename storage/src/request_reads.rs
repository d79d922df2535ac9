//! The reads every send and every authenticated request make, each set read
//! together and awaited: on PostgreSQL one round trip, pipelined on one
//! connection, that does not block the caller's worker thread (every other
//! read blocks its thread for its own round trip, see `pg`). On sled they
//! are the same reads from memory.

use crate::clients::ClientState;
use crate::keys::key;
use crate::kv::{get_many, Bytes};
use crate::push_tokens::PushToken;
use crate::{codec, Error, Result, Store};

/// What a send needs of one client.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reach {
    /// Its state; `None` when there is no such client.
    pub state: Option<ClientState>,
    /// Its push token; `None` when it has none.
    pub token: Option<PushToken>,
}

impl Store {
    /// The [`Reach`] of each of `clients`, in order.
    pub async fn reach(&self, tenant: &str, clients: &[String]) -> Result<Vec<Reach>> {
        let t = self.trees()?;
        let reads: Vec<_> = clients
            .iter()
            .flat_map(|id| {
                let k = key(&[tenant, id]);
                [(&t.clients, k.clone()), (&t.push_tokens, k)]
            })
            .collect();
        let mut values = get_many(&reads).await?.into_iter();
        clients.iter().map(|_| reach(values.next().flatten(), values.next().flatten())).collect()
    }

    /// The [`Reach`] of `client`, and whether it is linked to `user`.
    pub async fn reach_linked(&self, tenant: &str, user: &str, client: &str) -> Result<(Reach, bool)> {
        let t = self.trees()?;
        let k = key(&[tenant, client]);
        let reads = [(&t.clients, k.clone()), (&t.push_tokens, k), (&t.links_by_client, key(&[tenant, client, user]))];
        let [state, token, link] = exactly(get_many(&reads).await?)?;
        Ok((reach(state, token)?, link.is_some()))
    }

    /// What can take back a user's token before it expires: whether its
    /// session `session` ended, and the instant (ms) before which the
    /// user's tokens are refused (0 when none).
    pub async fn user_token_standing(&self, tenant: &str, session: &str, user: &str) -> Result<(bool, u64)> {
        let t = self.trees()?;
        let reads = [(&t.ended_sessions, key(&[tenant, session])), (&t.token_revocations, key(&[tenant, user]))];
        let [ended, revoked] = exactly(get_many(&reads).await?)?;
        Ok((ended.is_some(), revoked.map(|v| codec::decode(&v)).transpose()?.unwrap_or(0)))
    }

    /// What can take back a client's token before it expires: whether its
    /// session `session` ended, and the client's state (`None`: deleted).
    pub async fn client_token_standing(
        &self,
        tenant: &str,
        session: &str,
        client: &str,
    ) -> Result<(bool, Option<ClientState>)> {
        let t = self.trees()?;
        let reads = [(&t.ended_sessions, key(&[tenant, session])), (&t.clients, key(&[tenant, client]))];
        let [ended, state] = exactly(get_many(&reads).await?)?;
        Ok((ended.is_some(), state.map(|r| ClientState::of(&r)).transpose()?))
    }
}

/// The values of N reads as an array.
fn exactly<const N: usize>(values: Vec<Option<Bytes>>) -> Result<[Option<Bytes>; N]> {
    <[Option<Bytes>; N]>::try_from(values).map_err(|v| Error::Database(format!("{} values for {N} reads", v.len())))
}

/// A client's [`Reach`] from its stored record and token.
fn reach(state: Option<Bytes>, token: Option<Bytes>) -> Result<Reach> {
    Ok(Reach {
        state: state.map(|r| ClientState::of(&r)).transpose()?,
        token: token.map(|v| codec::decode(&v)).transpose()?,
    })
}
