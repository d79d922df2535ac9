//! The list query set of spec 001's user lists, decoded from the query
//! string ([`UserListQuery::from_params`]); the lists themselves are the
//! library's ([`crate::library::users`]).

use crate::error::ApiResult;
use crate::http::Cx;
pub use crate::models::user::{UserListQuery, DEFAULT_LIMIT, MAX_LIMIT};

/// The list query of the request.
pub fn query(cx: &Cx) -> ApiResult<UserListQuery> {
    let pairs = cx.query_pairs();
    UserListQuery::from_params(|name| pairs.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone()))
}
