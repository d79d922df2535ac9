//! The one error type of the HTTP front end, and the one place it becomes a body.
//!
//! Handlers return [`ApiError`]; the route's [`Family`] decides the body shape:
//! `{ message, code, subsystem }` on `/v1` and `/v2`, the Keycloak envelope
//! `{ message, status, subSystem }` on `/auth/realms`, and `{ error,
//! error_description }` on the OAuth token endpoint, as OAuth clients expect.

use http::StatusCode;
use serde_json::json;

/// The interface family of a route, which fixes its error body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    /// `/v1`, `/v2`: `{ message, code, subsystem }`.
    Admin { subsystem: u16 },
    /// `/auth/realms/...`: `{ message, status, subSystem }`.
    Realm { subsystem: u16 },
    /// The OAuth token endpoint: `{ error, error_description }`.
    OAuth,
    /// Operational routes (`/healthz`, `/metrics`, `/v1/tenants`).
    Ops,
}

/// Subsystem numbers of API.md.
pub mod subsystem {
    pub const PUSH: u16 = 516;
    pub const VERSIONS: u16 = 517;
    pub const TENANT: u16 = 519;
    pub const WEBHOOKS: u16 = 521;
    pub const AUTH: u16 = 522;
    pub const USERS: u16 = 5;
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    pub status: StatusCode,
    pub message: String,
    /// The OAuth `error` code (`invalid_grant`, ...) on the token endpoint.
    pub oauth: Option<&'static str>,
    /// The Keycloak status word (`USER_NOT_FOUND`, ...) on realm routes.
    pub word: Option<&'static str>,
    /// Seconds for the `Retry-After` header of a 429.
    pub retry_after: Option<u64>,
}

pub type ApiResult<T> = Result<T, ApiError>;

impl ApiError {
    pub fn new(status: StatusCode, message: impl Into<String>) -> Self {
        Self { status, message: message.into(), oauth: None, word: None, retry_after: None }
    }
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, message)
    }
    /// A 400 naming the offending field path.
    pub fn field(path: &str, problem: impl std::fmt::Display) -> Self {
        Self::bad_request(format!("{path}: {problem}"))
    }
    pub fn unauthorized(message: impl Into<String>) -> Self {
        Self::new(StatusCode::UNAUTHORIZED, message)
    }
    pub fn forbidden(message: impl Into<String>) -> Self {
        Self::new(StatusCode::FORBIDDEN, message)
    }
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, message)
    }
    pub fn conflict(message: impl Into<String>) -> Self {
        Self::new(StatusCode::CONFLICT, message)
    }
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, message)
    }
    pub fn oauth(status: StatusCode, error: &'static str, description: impl Into<String>) -> Self {
        Self { oauth: Some(error), ..Self::new(status, description) }
    }
    /// 429 with `Retry-After: secs`.
    pub fn too_many_requests(message: impl Into<String>, secs: u64) -> Self {
        Self { retry_after: Some(secs), ..Self::new(StatusCode::TOO_MANY_REQUESTS, message) }
    }
    pub fn with_word(mut self, word: &'static str) -> Self {
        self.word = Some(word);
        self
    }

    /// The JSON body of this error on a route of `family`.
    pub fn body(&self, family: Family) -> serde_json::Value {
        let code = self.status.as_u16();
        match family {
            Family::Admin { subsystem } => json!({ "message": self.message, "code": code, "subsystem": subsystem }),
            Family::Realm { subsystem } => json!({
                "message": self.message,
                "status": self.word.unwrap_or_else(|| status_word(self.status)),
                "subSystem": subsystem,
            }),
            Family::OAuth => json!({
                "error": self.oauth.unwrap_or(if code == 401 { "unauthorized_client" } else { "invalid_request" }),
                "error_description": self.message,
            }),
            Family::Ops => json!({ "message": self.message, "code": code }),
        }
    }
}

fn status_word(status: StatusCode) -> &'static str {
    match status.as_u16() {
        400 => "BAD_REQUEST",
        401 => "UNAUTHORIZED",
        403 => "FORBIDDEN",
        404 => "NOT_FOUND",
        409 => "CONFLICT",
        413 => "PAYLOAD_TOO_LARGE",
        429 => "TOO_MANY_REQUESTS",
        _ => "INTERNAL_SERVER_ERROR",
    }
}

impl From<herald_storage::Error> for ApiError {
    fn from(e: herald_storage::Error) -> Self {
        use herald_storage::Error as E;
        match e {
            E::Conflict(what) => Self::conflict(format!("{what} already exists")),
            E::NotFound(what) => Self::not_found(format!("{what} not found")),
            other => {
                tracing::error!(error = %other, "storage failure");
                Self::internal("storage failure")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies_follow_the_family() {
        let e = ApiError::not_found("user missing").with_word("USER_NOT_FOUND");
        assert_eq!(
            e.body(Family::Admin { subsystem: 519 }),
            json!({"message": "user missing", "code": 404, "subsystem": 519})
        );
        assert_eq!(
            e.body(Family::Realm { subsystem: 5 }),
            json!({"message": "user missing", "status": "USER_NOT_FOUND", "subSystem": 5})
        );
        let o = ApiError::oauth(StatusCode::UNAUTHORIZED, "invalid_grant", "Invalid user credentials");
        assert_eq!(o.body(Family::OAuth)["error"], "invalid_grant");
    }
}
