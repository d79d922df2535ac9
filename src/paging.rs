//! `page` (1-based) and page-size query parameters, validated against a route's limits.

use crate::error::{ApiError, ApiResult};
use crate::http::Cx;

/// Which page of a list to answer; list methods of the library API take one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Paging {
    /// 1-based page number (at most [`MAX_PAGE`] when read from a query).
    pub page: usize,
    /// Items per page, within the route's bounds when read from a query.
    pub size: usize,
}

/// The spec's upper bound of `page`.
pub const MAX_PAGE: usize = 21_474_837;

impl Paging {
    /// Reads `page` and `size_name` (`page_size` or `pageSize`), default page 1 and size 20.
    pub fn from_query(cx: &Cx, size_name: &str, min_size: usize, max_size: usize) -> ApiResult<Paging> {
        let page = number(cx, "page", 1, 1, MAX_PAGE)?;
        let size = number(cx, size_name, 20, min_size, max_size)?;
        Ok(Paging { page, size })
    }

    /// Items to skip before the page: `(page - 1) * size`, saturating.
    pub fn offset(&self) -> usize {
        self.page.saturating_sub(1).saturating_mul(self.size)
    }
}

fn number(cx: &Cx, name: &str, default: usize, min: usize, max: usize) -> ApiResult<usize> {
    match cx.query_param(name) {
        None => Ok(default),
        Some(v) => match v.parse::<usize>() {
            Ok(n) if (min..=max).contains(&n) => Ok(n),
            _ => Err(ApiError::field(name, format!("must be an integer from {min} to {max}"))),
        },
    }
}
