//! The list query set of spec 001's user lists, and the paged answer
//! `{ userList, page: { currentPage, pageSize, totalPages, totalRecords } }`.

use crate::error::{ApiError, ApiResult};
use crate::http::{Cx, Response};
use crate::models::user::UserView;
use herald_storage::users::{Field, Source, UserRow};
use serde_json::json;
use std::sync::Arc;

/// Default `limit` of a user list (the spec does not give one).
pub const DEFAULT_LIMIT: usize = 100;
/// Largest accepted `limit`.
pub const MAX_LIMIT: usize = 1000;

#[derive(Debug, Clone)]
pub struct ListQuery {
    pub limit: usize,
    pub offset: usize,
    pub enabled: Option<bool>,
    pub email_verified: Option<bool>,
    pub first_name: Option<String>,
    pub last_name: Option<String>,
    pub email: Option<String>,
    pub username: Option<String>,
    pub generic: Option<String>,
    pub desc: bool,
    pub order_key: Field,
    pub from: Option<u64>,
    pub to: Option<u64>,
}

fn int(cx: &Cx, name: &str, default: usize, min: usize, max: usize) -> ApiResult<usize> {
    match cx.query_param(name).filter(|v| !v.is_empty()) {
        None => Ok(default),
        Some(v) => match v.parse::<usize>() {
            Ok(n) if (min..=max).contains(&n) => Ok(n),
            _ => Err(ApiError::field(name, format!("must be an integer from {min} to {max}"))),
        },
    }
}

fn boolean(cx: &Cx, name: &str) -> ApiResult<Option<bool>> {
    match cx.query_param(name).filter(|v| !v.is_empty()).as_deref() {
        None => Ok(None),
        Some("true") => Ok(Some(true)),
        Some("false") => Ok(Some(false)),
        Some(_) => Err(ApiError::field(name, "must be true or false")),
    }
}

fn millis(cx: &Cx, name: &str) -> ApiResult<Option<u64>> {
    match cx.query_param(name).filter(|v| !v.is_empty()) {
        None => Ok(None),
        Some(v) => v.parse::<u64>().map(Some).map_err(|_| ApiError::field(name, "must be a timestamp in milliseconds")),
    }
}

fn lower(cx: &Cx, name: &str) -> Option<String> {
    cx.query_param(name).filter(|v| !v.is_empty()).map(|v| v.to_lowercase())
}

impl ListQuery {
    pub fn from_cx(cx: &Cx) -> ApiResult<ListQuery> {
        let order_key = match cx.query_param("orderByKey").filter(|v| !v.is_empty()).as_deref() {
            None | Some("username") => Field::Username,
            Some("firstName") => Field::FirstName,
            Some("lastName") => Field::LastName,
            Some("email") => Field::Email,
            Some(_) => return Err(ApiError::field("orderByKey", "must be firstName, lastName, email or username")),
        };
        let desc = match cx.query_param("orderBy").filter(|v| !v.is_empty()).map(|v| v.to_lowercase()).as_deref() {
            None | Some("asc") => false,
            Some("desc") => true,
            Some(_) => return Err(ApiError::field("orderBy", "must be asc or desc")),
        };
        let q = ListQuery {
            limit: int(cx, "limit", DEFAULT_LIMIT, 1, MAX_LIMIT)?,
            offset: int(cx, "offset", 0, 0, usize::MAX >> 1)?,
            enabled: boolean(cx, "isUserEnabled")?,
            email_verified: boolean(cx, "isEmailVerified")?,
            first_name: lower(cx, "firstName"),
            last_name: lower(cx, "lastName"),
            email: lower(cx, "email"),
            username: lower(cx, "username"),
            generic: lower(cx, "genericSearchVal"),
            desc,
            order_key,
            from: millis(cx, "from")?,
            to: millis(cx, "to")?,
        };
        if let (Some(f), Some(t)) = (q.from, q.to) {
            if f > t {
                return Err(ApiError::field("from", "must not be after to"));
            }
        }
        Ok(q)
    }

    pub fn matches(&self, u: &UserRow) -> bool {
        if self.enabled.is_some_and(|e| e != u.enabled) || self.email_verified.is_some_and(|v| v != u.email_verified) {
            return false;
        }
        if self.from.is_some_and(|f| u.created_ms < f) || self.to.is_some_and(|t| u.created_ms > t) {
            return false;
        }
        if let Some(g) = &self.generic {
            // A generic search value overrides the four specific filters.
            return u.all_fields().contains(g.as_str());
        }
        self.first_name.as_deref().is_none_or(|f| u.first_name().contains(f))
            && self.last_name.as_deref().is_none_or(|f| u.last_name().contains(f))
            && self.email.as_deref().is_none_or(|f| u.email().contains(f))
            && self.username.as_deref().is_none_or(|f| u.username().contains(f))
    }

    /// The page of the users of `source` matching the query and `extra`, and
    /// the number of matches. Where the rows come in the asked order (username
    /// order ascending, or a whole tenant in a kept order) they are only counted
    /// and the page's kept; otherwise the matches are sorted.
    fn page(
        &self,
        cx: &Cx,
        source: Source<'_>,
        extra: impl Fn(&UserRow) -> bool,
    ) -> ApiResult<(Vec<Arc<UserRow>>, usize)> {
        let users = cx.engine.store.users();
        let keep = |r: &UserRow| extra(r) && self.matches(r);
        let (mut total, mut page) = (0, Vec::new());
        let mut count = |r: &Arc<UserRow>| {
            if keep(r) {
                if total >= self.offset && page.len() < self.limit {
                    page.push(r.clone());
                }
                total += 1;
            }
        };
        if matches!(source, Source::All) {
            users.visit_all_by(cx.tenant(), self.order_key, self.desc, &mut count)?;
            return Ok((page, total));
        }
        if self.order_key == Field::Username && !self.desc {
            users.visit(cx.tenant(), source, &mut count)?;
            return Ok((page, total));
        }
        let rows = users.select(cx.tenant(), source, keep)?;
        let total = rows.len();
        let end = (self.offset + self.limit).min(total);
        if self.offset >= end {
            return Ok((Vec::new(), total));
        }
        if self.order_key == Field::Username {
            // Descending: the page counted from the end.
            return Ok(((total - end..total - self.offset).rev().map(|i| rows[i].clone()).collect(), total));
        }
        // Only the first `end` places of the order matter: partition around
        // place `end` (linear), then sort those. Ties stay in username order
        // (the rows' order), reversed with the rest when descending.
        let order = |a: &u32, b: &u32| {
            let o = rows[*a as usize].field(self.order_key).cmp(rows[*b as usize].field(self.order_key)).then(a.cmp(b));
            if self.desc {
                o.reverse()
            } else {
                o
            }
        };
        let mut places: Vec<u32> = (0..total as u32).collect();
        if end < total {
            places.select_nth_unstable_by(end, order);
            places.truncate(end);
        }
        places.sort_unstable_by(order);
        Ok((places[self.offset..].iter().map(|i| rows[*i as usize].clone()).collect(), total))
    }

    /// The paged answer over the users of `source` matching the query (and
    /// `extra`): only the page's records are read.
    pub fn answer(&self, cx: &Cx, source: Source<'_>, extra: impl Fn(&UserRow) -> bool) -> ApiResult<Response> {
        let (page, total) = self.page(cx, source, extra)?;
        let users = cx.engine.store.users();
        let mut list = Vec::with_capacity(page.len());
        for row in &page {
            if let Some(u) = users.get(cx.tenant(), &row.id)? {
                list.push(UserView::of(&u));
            }
        }
        let data = json!({
            "userList": list,
            "page": {
                "currentPage": self.offset / self.limit + 1,
                "pageSize": self.limit,
                "totalPages": total.div_ceil(self.limit),
                "totalRecords": total,
            }
        });
        super::users::envelope("Users fetched successfully", Some(data))
    }
}
