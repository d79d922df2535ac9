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
    Admin {
        /// The `subsystem` of the body (see [`subsystem`]).
        subsystem: u16,
    },
    /// `/auth/realms/...`: `{ message, status, subSystem }`.
    Realm {
        /// The `subSystem` of the body: 5 users and addresses, 9 LDAP.
        subsystem: u16,
    },
    /// The OAuth token endpoint: `{ error, error_description }`.
    OAuth,
    /// Operational routes (`/healthz`, `/metrics`, `/v1/tenants`).
    Ops,
}

/// Subsystem numbers of API.md.
pub mod subsystem {
    /// Push sending and delivery reports.
    pub const PUSH: u16 = 516;
    /// Client versions and their policies.
    pub const VERSIONS: u16 = 517;
    /// Signers and client certificates.
    pub const SIGNERS: u16 = 518;
    /// Tenant administration: apps, clients, catalogue, nonces and the like.
    pub const TENANT: u16 = 519;
    /// Webhooks and their deliveries.
    pub const WEBHOOKS: u16 = 521;
    /// Authentication, in API.md's table (no route answers with it today).
    pub const AUTH: u16 = 522;
    /// The realm's users and addresses (`/auth/realms`; LDAP is 9).
    pub const USERS: u16 = 5;
}

/// A failed request or library call: its HTTP status and message, plus what
/// the route's error body or headers need. [`ApiError::kind`] classifies it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    /// The HTTP status answered; [`ApiError::kind`] derives from it.
    pub status: StatusCode,
    /// Human-readable cause, sent as the body's message (or `error_description`).
    pub message: String,
    /// The OAuth `error` code (`invalid_grant`, ...) on the token endpoint.
    pub oauth: Option<&'static str>,
    /// The Keycloak status word (`USER_NOT_FOUND`, ...) on realm routes.
    pub word: Option<&'static str>,
    /// Seconds for the `Retry-After` header of a 429.
    pub retry_after: Option<u64>,
    /// The offending field's path (`payload.timeout`, `clientIds[2]`) of an
    /// invalid input.
    pub field: Option<String>,
    /// The `WWW-Authenticate` challenge of a 401 (RFC 6750 §3, RFC 6749 §5.2).
    pub challenge: Option<Box<str>>,
}

/// The result of every handler, library method and operation.
pub type ApiResult<T> = Result<T, ApiError>;

/// What went wrong, for a caller of the library API to match on; the HTTP
/// API answers each with its status (in brackets).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// The input is not acceptable (400, 413, 422); [`ApiError::field`]
    /// names the field when one is at fault.
    Invalid,
    /// No credentials, or ones that are not valid (401).
    Unauthenticated,
    /// The caller may not do this (403).
    Forbidden,
    /// What the operation names does not exist (404).
    NotFound,
    /// It clashes with the current state: taken, still in use, locked (409,
    /// and 406/412 where the API uses them).
    Conflict,
    /// Too many requests: wait [`ApiError::retry_after`] seconds (429).
    RateLimited,
    /// Storage or a provider cannot serve now; try again later (503, 408).
    Unavailable,
    /// The disk is full: writes wait for space (507).
    StorageFull,
    /// A fault of the engine itself (500 and the rest).
    Internal,
}

/// The error body of `/v1` and `/v2` routes.
#[derive(Debug, serde::Serialize, serde::Deserialize, utoipa::ToSchema)]
pub struct AdminErrorBody {
    /// Human-readable cause; an invalid field is named first (`payload.timeout: ...`).
    pub message: String,
    /// The HTTP status.
    pub code: u16,
    /// 516 push, 517 client-version, 518 signers, 519 tenant administration, 521 webhooks, 522 authentication.
    pub subsystem: u16,
}

/// The Keycloak-style error envelope of `/auth/realms` routes.
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RealmErrorBody {
    /// Human-readable cause; always `HTTP 401 Unauthorized` on a 401.
    pub message: String,
    /// A status word: `BAD_REQUEST`, `USER_NOT_FOUND`, ...
    pub status: String,
    /// 5 users and addresses, 9 LDAP.
    pub sub_system: u16,
}

/// The OAuth 2.0 error of the token endpoint.
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
pub struct OAuthErrorBody {
    /// `invalid_request`, `invalid_grant`, `unauthorized_client`, ...
    pub error: String,
    /// Human-readable cause.
    pub error_description: String,
}

/// The error body of operational routes.
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
pub struct OpsErrorBody {
    /// Human-readable cause.
    pub message: String,
    /// The HTTP status.
    pub code: u16,
}

impl ApiError {
    /// An error with this status and message, and no OAuth code, status word, field or header.
    pub fn new(status: StatusCode, message: impl Into<String>) -> Self {
        Self {
            status,
            message: message.into(),
            oauth: None,
            word: None,
            retry_after: None,
            field: None,
            challenge: None,
        }
    }

    /// What kind of failure this is (see [`ErrorKind`]).
    pub fn kind(&self) -> ErrorKind {
        match self.status.as_u16() {
            400 | 413 | 422 => ErrorKind::Invalid,
            401 => ErrorKind::Unauthenticated,
            403 => ErrorKind::Forbidden,
            404 | 410 => ErrorKind::NotFound,
            406 | 409 | 412 | 423 => ErrorKind::Conflict,
            429 => ErrorKind::RateLimited,
            408 | 502 | 503 | 504 => ErrorKind::Unavailable,
            507 => ErrorKind::StorageFull,
            _ => ErrorKind::Internal,
        }
    }
    /// 400: the input is not acceptable.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, message)
    }
    /// A 400 naming the offending field path.
    pub fn field(path: &str, problem: impl std::fmt::Display) -> Self {
        Self { field: Some(path.to_string()), ..Self::bad_request(format!("{path}: {problem}")) }
    }
    /// 401: no credentials, or invalid ones.
    pub fn unauthorized(message: impl Into<String>) -> Self {
        Self::new(StatusCode::UNAUTHORIZED, message)
    }
    /// 403: the caller may not do this.
    pub fn forbidden(message: impl Into<String>) -> Self {
        Self::new(StatusCode::FORBIDDEN, message)
    }
    /// 404: what the request names does not exist.
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, message)
    }
    /// 409: clashes with the current state (taken, in use, locked).
    pub fn conflict(message: impl Into<String>) -> Self {
        Self::new(StatusCode::CONFLICT, message)
    }
    /// 500: a fault of the engine; the message reaches the caller, so keep secrets out of it.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, message)
    }
    /// An OAuth error (RFC 6749 §5.2): `error` is the code, `description` the `error_description`.
    pub fn oauth(status: StatusCode, error: &'static str, description: impl Into<String>) -> Self {
        Self { oauth: Some(error), ..Self::new(status, description) }
    }
    /// 429 with `Retry-After: secs`.
    pub fn too_many_requests(message: impl Into<String>, secs: u64) -> Self {
        Self { retry_after: Some(secs), ..Self::new(StatusCode::TOO_MANY_REQUESTS, message) }
    }
    /// 507: the disk is (nearly) full; writes resume once space is freed.
    pub fn insufficient_storage() -> Self {
        Self::new(StatusCode::INSUFFICIENT_STORAGE, "the disk is full: writes are refused until space is freed")
    }
    /// Answers with `WWW-Authenticate: challenge`.
    pub fn with_challenge(mut self, challenge: impl Into<String>) -> Self {
        self.challenge = Some(challenge.into().into_boxed_str());
        self
    }
    /// Sets the Keycloak status word of the realm body (`USER_NOT_FOUND`, ...) instead of the status's.
    pub fn with_word(mut self, word: &'static str) -> Self {
        self.word = Some(word);
        self
    }

    /// The body this error has on a `/v1` route of `subsystem`, as a value
    /// (a batch's entry for one refused event).
    pub fn admin_body(&self, subsystem: u16) -> AdminErrorBody {
        AdminErrorBody { message: self.message.clone(), code: self.status.as_u16(), subsystem }
    }

    /// The JSON body of this error on a route of `family` (one of the `*ErrorBody` types,
    /// which also give the OpenAPI document its error schemas).
    pub fn body(&self, family: Family) -> serde_json::Value {
        let code = self.status.as_u16();
        let message = self.message.clone();
        let v = match family {
            Family::Admin { subsystem } => serde_json::to_value(AdminErrorBody { message, code, subsystem }),
            Family::Realm { subsystem } => serde_json::to_value(RealmErrorBody {
                // Spec 001 quotes this message for every 401 of the realm interface.
                message: if code == 401 { "HTTP 401 Unauthorized".to_string() } else { message },
                status: self.word.unwrap_or_else(|| status_word(self.status)).to_string(),
                sub_system: subsystem,
            }),
            Family::OAuth => serde_json::to_value(OAuthErrorBody {
                error: self
                    .oauth
                    .unwrap_or(if code == 401 { "unauthorized_client" } else { "invalid_request" })
                    .to_string(),
                error_description: message,
            }),
            Family::Ops => serde_json::to_value(OpsErrorBody { message, code }),
        };
        v.unwrap_or_else(|_| json!({ "message": self.message }))
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
        408 => "REQUEST_TIMEOUT",
        503 => "SERVICE_UNAVAILABLE",
        507 => "INSUFFICIENT_STORAGE",
        _ => "INTERNAL_SERVER_ERROR",
    }
}

impl From<herald_storage::Error> for ApiError {
    fn from(e: herald_storage::Error) -> Self {
        use herald_storage::Error as E;
        match e {
            E::Conflict(what) => Self::conflict(format!("{what} already exists")),
            E::NotFound(what) => Self::not_found(format!("{what} not found")),
            E::Full => Self::insufficient_storage(),
            // The store logged the failure once; each refused request need not.
            E::Unavailable(why) => Self::new(StatusCode::SERVICE_UNAVAILABLE, format!("storage unavailable: {why}")),
            other => {
                tracing::error!(error = %other, "storage failure");
                Self::new(StatusCode::SERVICE_UNAVAILABLE, "storage unavailable")
            }
        }
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.status, self.message)
    }
}

/// Lets embedding programs use `?` on the typed API's results.
impl std::error::Error for ApiError {}

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
        let u = ApiError::unauthorized("missing bearer token").body(Family::Realm { subsystem: 5 });
        assert_eq!(u, json!({"message": "HTTP 401 Unauthorized", "status": "UNAUTHORIZED", "subSystem": 5}));
    }

    #[test]
    fn kinds_follow_the_status_and_name_the_field() {
        let e = ApiError::field("payload.timeout", "must be from 1 to 3600 seconds");
        assert_eq!((e.kind(), e.field.as_deref()), (ErrorKind::Invalid, Some("payload.timeout")));
        assert_eq!(ApiError::not_found("x").kind(), ErrorKind::NotFound);
        assert_eq!(ApiError::insufficient_storage().kind(), ErrorKind::StorageFull);
        assert_eq!(ApiError::from(herald_storage::Error::Unavailable("x".into())).kind(), ErrorKind::Unavailable);
        assert_eq!(ApiError::too_many_requests("slow down", 3).kind(), ErrorKind::RateLimited);
    }
}
