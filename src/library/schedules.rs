//! Scheduled sends: a spec-000 event sent at a given time by whichever
//! engine holds the scheduler's lease, listed, read and cancelled.

use crate::auth::{Access, Caller, ADMIN, ADMIN_OR_READ};
use crate::engine::Engine;
use crate::error::{ApiError, ApiResult};
use crate::models::schedule::{ScheduleBody, ScheduleView};
use crate::models::validate;
use crate::ops;
use crate::paging::Paging;
use herald_storage::schedules::State;

/// Access of each operation, shared with its HTTP route.
pub(crate) mod access {
    use super::*;
    pub const SCHEDULE: Access = Access::Tenant(ADMIN);
    pub const READ: Access = Access::Tenant(ADMIN_OR_READ);
}

/// See [`Engine::schedules`].
pub struct Schedules<'a>(pub(crate) &'a Engine);

impl Engine {
    /// Scheduled sends.
    pub fn schedules(&self) -> Schedules<'_> {
        Schedules(self)
    }
}

impl Schedules<'_> {
    /// Schedules `body.event` for `body.sendAt` (see [`ScheduleBody`]): its
    /// time and event are checked now; it fires within a second of its time
    /// (at once when a little in the past), after a restart too. 429 when
    /// the tenant has 10 000 schedules still to fire.
    pub async fn create(&self, caller: &Caller, tenant: &str, body: ScheduleBody) -> ApiResult<ScheduleView> {
        caller.authorize(Some(tenant), access::SCHEDULE)?;
        let checked = body.check(tenant, herald_storage::now_ms())?;
        let s = ops::schedules::create(self.0, tenant, checked).await?;
        Ok(ScheduleView::of(tenant, &s))
    }

    /// A page (of 1 to 100) of the tenant's schedules in `state` (all when
    /// `None`), oldest first.
    pub async fn list(
        &self,
        caller: &Caller,
        tenant: &str,
        state: Option<State>,
        paging: Paging,
    ) -> ApiResult<Vec<ScheduleView>> {
        caller.authorize(Some(tenant), access::READ)?;
        if paging.page == 0 || !(1..=100).contains(&paging.size) {
            return Err(ApiError::field("page_size", "page from 1, page_size from 1 to 100"));
        }
        let list = self.0.store.schedules().list(tenant, state, paging.offset(), paging.size)?;
        Ok(list.iter().map(|s| ScheduleView::of(tenant, s)).collect())
    }

    /// One schedule.
    pub async fn get(&self, caller: &Caller, tenant: &str, id: &str) -> ApiResult<ScheduleView> {
        caller.authorize(Some(tenant), access::READ)?;
        validate::ulid("scheduleId", id)?;
        let s = self.0.store.schedules().get(tenant, id)?.ok_or_else(|| not_found(id))?;
        Ok(ScheduleView::of(tenant, &s))
    }

    /// Cancels a schedule before it fires (again: answered as it is); 409 once it fired.
    pub async fn cancel(&self, caller: &Caller, tenant: &str, id: &str) -> ApiResult<ScheduleView> {
        caller.authorize(Some(tenant), access::SCHEDULE)?;
        validate::ulid("scheduleId", id)?;
        let s = ops::schedules::cancel(self.0, tenant, id).await?;
        Ok(ScheduleView::of(tenant, &s))
    }
}

fn not_found(id: &str) -> ApiError {
    ApiError::not_found(format!("schedule {id} not found"))
}
