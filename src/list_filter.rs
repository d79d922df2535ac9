//! The `filter=` query parameter of list routes: `<field><op><value>`,
//! repeated for AND (API.md "List filters").

use crate::error::{ApiError, ApiResult};
use crate::http::Cx;
use herald_actors::filter::Condition;

/// The conditions of every `filter` parameter, checked against `fields`.
pub fn parse(cx: &Cx, fields: &[&str]) -> ApiResult<Vec<Condition>> {
    cx.query_pairs()
        .into_iter()
        .filter(|(k, _)| k == "filter")
        .map(|(_, v)| {
            let c = Condition::parse(&v).map_err(|e| ApiError::bad_request(e.to_string()))?;
            if !fields.contains(&c.attr.as_str()) {
                return Err(ApiError::bad_request(format!("UnknownProperty: {}", c.attr)));
            }
            Ok(c)
        })
        .collect()
}

/// True when the item satisfies every condition.
pub fn matches(conditions: &[Condition], field: impl Fn(&str) -> Option<String>) -> bool {
    conditions.iter().all(|c| c.matches(field(&c.attr).as_deref()))
}
