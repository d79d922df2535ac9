//! Properties of a user, or of a user's client.

use super::{commit, publish, Event};
use crate::engine::Engine;
use crate::error::{ApiError, ApiResult};
use herald_storage::properties::Property;
use serde_json::json;

/// Creates a property (409 on a duplicate name for its owner). A client's
/// property needs the client linked to the user when it is written, so a
/// property never outlives the link it was made under (deleting a user's
/// data removes both in one transaction).
pub async fn create(engine: &Engine, tenant: &str, p: &Property) -> ApiResult<()> {
    engine.store.transact(|tx| {
        if let Some(client) = &p.client_id {
            if tx.link(tenant, &p.user_id, client)?.is_none() {
                return Err(ApiError::not_found(format!("client {client} is not linked to user {}", p.user_id)));
            }
        }
        tx.insert_property(tenant, p).map_err(|e| match e {
            herald_storage::Error::Conflict(_) => ApiError::conflict(format!("property {} already exists", p.name)),
            other => other.into(),
        })?;
        if p.notify {
            // The value itself stays out of the event: receivers fetch it if allowed.
            let data = json!({ "userId": p.user_id, "astClientId": p.client_id, "name": p.name, "type": p.kind });
            publish(tx, tenant, Event::new("client", "PROPERTY_CHANGED", data))?;
        }
        Ok(())
    })?;
    commit(engine).await
}
