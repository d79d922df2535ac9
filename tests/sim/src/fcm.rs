//! The FCM HTTP v1 simulator: Google's OAuth 2.0 token endpoint for service accounts
//! (`POST /token`, the JWT-bearer grant) and `POST /v1/projects/{project}/messages:send`.
//!
//! Errors use Google's JSON error body (`{"error": {"code", "message", "status", "details"}}`)
//! with the `FcmError` detail carrying FCM's `errorCode` (UNREGISTERED, INVALID_ARGUMENT,
//! QUOTA_EXCEEDED, UNAVAILABLE, INTERNAL…).

use std::borrow::Cow;
use std::sync::atomic::Ordering;

use bytes::Bytes;
use http::header::AUTHORIZATION;
use http::{Method, StatusCode};
use serde::Deserialize;
use serde_json::{json, Value};

use crate::faults::{ActiveFaults, FaultEndpoint, FiredFault};
use crate::jwt::Jwt;
use crate::server::Reply;
use crate::state::{SimState, TokenProblem};
use crate::util::{bearer_token, form_field, is_duration, json_response, now_ms, now_secs, parse_form, random_hex};
use crate::Provider;

/// The scope an FCM access token needs (cloud-platform also grants it).
const FCM_SCOPE: &str = "https://www.googleapis.com/auth/firebase.messaging";
const CLOUD_PLATFORM_SCOPE: &str = "https://www.googleapis.com/auth/cloud-platform";
const JWT_BEARER: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";
/// Google grants one-hour tokens and says 3599 seconds.
const TOKEN_LIFETIME_SECS: u64 = 3600;
/// The most a data + notification payload may weigh.
const MAX_MESSAGE: usize = 4096;
const CLOCK_SKEW_SECS: u64 = 300;

const MESSAGE_FIELDS: &[&str] = &[
    "name",
    "data",
    "notification",
    "android",
    "webpush",
    "apns",
    "fcm_options",
    "fcmOptions",
    "token",
    "topic",
    "condition",
];

/// Handles one request to the FCM simulator.
pub(crate) fn handle(
    state: &SimState,
    parts: &http::request::Parts,
    body: Option<&Bytes>,
    faults: Option<&ActiveFaults>,
) -> Reply {
    let path = parts.uri.path();
    if path == "/token" {
        if parts.method != Method::POST {
            return oauth_error(StatusCode::METHOD_NOT_ALLOWED, "invalid_request", "Use POST.");
        }
        return oauth(state, body, faults);
    }
    if let Some(project) = path
        .strip_prefix("/v1/projects/")
        .and_then(|rest| rest.strip_suffix("/messages:send"))
        .filter(|p| !p.is_empty() && !p.contains('/'))
    {
        if parts.method != Method::POST {
            return not_found("Method not found.");
        }
        return send(state, parts, project, body, faults);
    }
    not_found("Requested entity was not found.")
}

fn not_found(message: &str) -> Reply {
    google_error(StatusCode::NOT_FOUND, "NOT_FOUND", message, None, None)
}

// ---- OAuth ------------------------------------------------------------------------------

#[derive(Deserialize)]
struct AssertionClaims {
    iss: String,
    #[serde(default)]
    scope: String,
    aud: String,
    iat: u64,
    exp: u64,
}

fn oauth_error(status: StatusCode, error: &'static str, description: &str) -> Reply {
    Reply {
        response: json_response(status, json!({ "error": error, "error_description": description }).to_string()),
        reason: Some(Cow::Borrowed(error)),
    }
}

fn invalid_grant(description: &str) -> Reply {
    oauth_error(StatusCode::BAD_REQUEST, "invalid_grant", description)
}

fn oauth(state: &SimState, body: Option<&Bytes>, faults: Option<&ActiveFaults>) -> Reply {
    if let Some(fired) = faults.and_then(|f| f.status_for(FaultEndpoint::Token, std::iter::empty())) {
        let status = StatusCode::from_u16(fired.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let error = match fired.status {
            429 => "rate_limit_exceeded",
            500..=599 => "internal_failure",
            _ => "invalid_grant",
        };
        let mut reply = oauth_error(status, error, "Injected fault.");
        reply.response = fired.apply(reply.response);
        return reply;
    }
    let Some(body) = body else {
        return oauth_error(StatusCode::BAD_REQUEST, "invalid_request", "Request too large.");
    };
    let form = parse_form(body);
    match form_field(&form, "grant_type") {
        Some(JWT_BEARER) => {}
        Some(other) => {
            return oauth_error(
                StatusCode::BAD_REQUEST,
                "unsupported_grant_type",
                &format!("Invalid grant_type: {other}"),
            )
        }
        None => return oauth_error(StatusCode::BAD_REQUEST, "unsupported_grant_type", "Invalid grant_type: "),
    }
    let Some(assertion) = form_field(&form, "assertion") else {
        return oauth_error(StatusCode::BAD_REQUEST, "invalid_request", "Missing required parameter: assertion");
    };
    let Ok(jwt) = Jwt::parse(assertion) else {
        return invalid_grant("Invalid JWT: Unable to parse the assertion.");
    };
    let Ok(claims) = jwt.claims::<AssertionClaims>() else {
        return invalid_grant("Invalid JWT: Missing or malformed claims (iss, scope, aud, iat, exp).");
    };
    let Some(account) = state.registry.fcm_account(jwt.header.kid.as_deref(), &claims.iss) else {
        return invalid_grant("Invalid grant: account not found");
    };
    state.counters(Provider::Fcm).jwt_verifications.fetch_add(1, Ordering::Relaxed);
    if !jwt.verify_rs256(&account.rsa_public) {
        return invalid_grant("Invalid JWT Signature.");
    }
    if claims.iss != account.client_email {
        return invalid_grant("Invalid grant: account not found");
    }
    if !claims.aud.ends_with("/token") {
        return invalid_grant(&format!(
            "Invalid JWT: Failed audience check. The expected value is the token endpoint, got {:?}.",
            claims.aud
        ));
    }
    let now = now_secs();
    if claims.exp <= claims.iat
        || claims.exp.saturating_sub(claims.iat) > TOKEN_LIFETIME_SECS
        || claims.exp <= now
        || claims.iat > now.saturating_add(CLOCK_SKEW_SECS)
    {
        return invalid_grant(
            "Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe. Check your iat and exp values in the JWT claim.",
        );
    }
    if !claims.scope.split(' ').any(|s| s == FCM_SCOPE || s == CLOUD_PLATFORM_SCOPE) {
        return oauth_error(
            StatusCode::BAD_REQUEST,
            "invalid_scope",
            "Invalid OAuth scope or ID token audience provided.",
        );
    }
    let token = state.grant_token(Provider::Fcm, account.project_id.clone(), "ya29.sim.", TOKEN_LIFETIME_SECS);
    let expires_in = faults.and_then(|f| f.expires_in.clone()).unwrap_or(json!(TOKEN_LIFETIME_SECS - 1));
    Reply::ok(json_response(
        StatusCode::OK,
        json!({ "access_token": token, "expires_in": expires_in, "token_type": "Bearer" }).to_string(),
    ))
}

// ---- Send -------------------------------------------------------------------------------

/// An INVALID_ARGUMENT with Google's message and, when known, the offending field.
struct Invalid {
    message: String,
    field: Option<String>,
}

fn invalid(message: impl Into<String>) -> Invalid {
    Invalid { message: message.into(), field: None }
}

fn invalid_field(field: &str, message: String) -> Invalid {
    Invalid { message, field: Some(field.to_owned()) }
}

/// Protobuf-JSON-style rendering of a bad value in Google's messages.
fn shown(v: &Value) -> String {
    match v {
        Value::String(s) => format!("\"{s}\""),
        other => other.to_string(),
    }
}

enum Target<'a> {
    Token(&'a str),
    Topic(&'a str),
    Condition(&'a str),
}

fn send(
    state: &SimState,
    parts: &http::request::Parts,
    project: &str,
    body: Option<&Bytes>,
    faults: Option<&ActiveFaults>,
) -> Reply {
    let counters = state.counters(Provider::Fcm);
    let unauthenticated = || {
        counters.reject("UNAUTHENTICATED");
        google_error(
            StatusCode::UNAUTHORIZED,
            "UNAUTHENTICATED",
            "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential. See https://developers.google.com/identity/sign-in/web/devconsole-project.",
            None,
            None,
        )
    };
    let Some(token) = parts
        .headers
        .get(AUTHORIZATION)
        .and_then(|v| bearer_token(v.as_bytes()))
        .and_then(|t| std::str::from_utf8(t).ok())
    else {
        return unauthenticated();
    };
    match state.check_token(Provider::Fcm, token, project) {
        Ok(()) => {}
        Err(TokenProblem::Unknown | TokenProblem::Expired) => return unauthenticated(),
        Err(TokenProblem::WrongOwner) => {
            counters.reject("PERMISSION_DENIED");
            return google_error(
                StatusCode::FORBIDDEN,
                "PERMISSION_DENIED",
                &format!("Permission 'cloudmessaging.messages.create' denied on resource '//cloudresourcemanager.googleapis.com/projects/{project}' (or it may not exist)."),
                None,
                None,
            );
        }
    }

    let value = match body.map(|b| serde_json::from_slice::<Value>(b)) {
        Some(Ok(v)) => v,
        Some(Err(e)) => {
            counters.reject("INVALID_ARGUMENT");
            return invalid_argument(invalid(format!("Invalid JSON payload received. {e}")));
        }
        None => {
            counters.reject("INVALID_ARGUMENT");
            return invalid_argument(invalid("Request payload size exceeds the limit: 262144 bytes."));
        }
    };
    let (target, validate_only) = match validate(&value) {
        Ok(r) => r,
        Err(bad) => {
            counters.reject("INVALID_ARGUMENT");
            return invalid_argument(bad);
        }
    };
    let key: Cow<'_, str> = match target {
        Target::Token(t) => Cow::Borrowed(t),
        Target::Topic(t) => Cow::Owned(format!("/topics/{t}")),
        Target::Condition(c) => Cow::Owned(format!("condition:{c}")),
    };

    if let Some(f) = faults {
        if f.is_dead(&key) {
            counters.reject("UNREGISTERED");
            return unregistered();
        }
        if let Some(fired) = f.status_for(FaultEndpoint::Send, std::iter::once(&*key)) {
            return fault(state, fired);
        }
    }
    if matches!(target, Target::Token(t) if t.len() >= 4 && t[..4].eq_ignore_ascii_case("dead")) {
        counters.reject("UNREGISTERED");
        return unregistered();
    }
    if validate_only {
        return Reply::ok(json_response(
            StatusCode::OK,
            json!({ "name": format!("projects/{project}/messages/fake_message_id") }).to_string(),
        ));
    }
    counters.accept(&key);
    let id = format!("0:{}{:03}%{}", now_ms(), rand::random::<u16>() % 1000, random_hex(16));
    Reply::ok(json_response(StatusCode::OK, json!({ "name": format!("projects/{project}/messages/{id}") }).to_string()))
}

fn unregistered() -> Reply {
    google_error(StatusCode::NOT_FOUND, "NOT_FOUND", "Requested entity was not found.", Some("UNREGISTERED"), None)
}

fn invalid_argument(bad: Invalid) -> Reply {
    let violation = bad.field.as_deref().map(|field| (field, bad.message.as_str()));
    google_error(StatusCode::BAD_REQUEST, "INVALID_ARGUMENT", &bad.message, Some("INVALID_ARGUMENT"), violation)
}

/// An injected status, in FCM's words.
fn fault(state: &SimState, fired: FiredFault) -> Reply {
    let status = StatusCode::from_u16(fired.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let (google_status, code, message) = match fired.status {
        400 => ("INVALID_ARGUMENT", "INVALID_ARGUMENT", "Request contains an invalid argument."),
        401 => ("UNAUTHENTICATED", "THIRD_PARTY_AUTH_ERROR", "Request had invalid authentication credentials."),
        403 => ("PERMISSION_DENIED", "SENDER_ID_MISMATCH", "SenderId mismatch"),
        404 | 410 => ("NOT_FOUND", "UNREGISTERED", "Requested entity was not found."),
        429 => ("RESOURCE_EXHAUSTED", "QUOTA_EXCEEDED", "Quota exceeded for quota metric 'Send requests' and limit 'Send requests per minute' of service 'fcm.googleapis.com'."),
        503 => ("UNAVAILABLE", "UNAVAILABLE", "The service is currently unavailable."),
        _ => ("INTERNAL", "INTERNAL", "Internal error encountered."),
    };
    let code: Cow<'static, str> = match fired.reason.clone() {
        Some(r) => Cow::Owned(r),
        None => Cow::Borrowed(code),
    };
    state.counters(Provider::Fcm).reject(&code);
    let mut reply = google_error(status, google_status, message, Some(&code), None);
    reply.response = fired.apply(reply.response);
    reply
}

/// Google's error body. The recorded reason is the FCM `errorCode`, else the status.
fn google_error(
    status: StatusCode,
    google_status: &str,
    message: &str,
    fcm_error_code: Option<&str>,
    field_violation: Option<(&str, &str)>,
) -> Reply {
    let mut details = Vec::new();
    if let Some(code) = fcm_error_code {
        details.push(json!({
            "@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError",
            "errorCode": code,
        }));
    }
    if let Some((field, description)) = field_violation {
        details.push(json!({
            "@type": "type.googleapis.com/google.rpc.BadRequest",
            "fieldViolations": [{ "field": field, "description": description }],
        }));
    }
    let mut error = json!({
        "code": status.as_u16(),
        "message": message,
        "status": google_status,
    });
    if !details.is_empty() {
        error["details"] = Value::Array(details);
    }
    Reply {
        response: json_response(status, json!({ "error": error }).to_string()),
        reason: Some(Cow::Owned(fcm_error_code.unwrap_or(google_status).to_owned())),
    }
}

/// Checks a send request body like FCM; returns the target and `validate_only`.
fn validate(v: &Value) -> Result<(Target<'_>, bool), Invalid> {
    let Value::Object(top) = v else {
        return Err(invalid(format!("Invalid JSON payload received. Expected an object, got {}.", shown(v))));
    };
    let mut validate_only = false;
    for (k, val) in top {
        match k.as_str() {
            "message" => {}
            "validate_only" | "validateOnly" => {
                validate_only = val.as_bool().ok_or_else(|| {
                    invalid_field(
                        "validate_only",
                        format!("Invalid value at 'validate_only' (TYPE_BOOL), {}", shown(val)),
                    )
                })?;
            }
            other => {
                return Err(invalid(format!(
                    "Invalid JSON payload received. Unknown name \"{other}\": Cannot find field."
                )))
            }
        }
    }
    let Some(message) = top.get("message") else {
        return Err(invalid("Request contains an invalid argument."));
    };
    let Value::Object(message) = message else {
        return Err(invalid(format!(
            "Invalid value at 'message' (type.googleapis.com/google.firebase.fcm.v1.Message), {}",
            shown(message)
        )));
    };
    for k in message.keys() {
        if !MESSAGE_FIELDS.contains(&k.as_str()) {
            return Err(invalid(format!(
                "Invalid JSON payload received. Unknown name \"{k}\" at 'message': Cannot find field."
            )));
        }
    }

    let mut target = None;
    for name in ["token", "topic", "condition"] {
        let Some(val) = message.get(name) else {
            continue;
        };
        let Value::String(s) = val else {
            return Err(invalid_field(
                &format!("message.{name}"),
                format!("Invalid value at 'message.{name}' (TYPE_STRING), {}", shown(val)),
            ));
        };
        if target.is_some() {
            return Err(invalid(format!(
                "Invalid value at 'message' (oneof), oneof field 'target' is already set. Cannot set '{name}'"
            )));
        }
        target = Some(match name {
            "token" => Target::Token(s),
            "topic" => Target::Topic(s),
            _ => Target::Condition(s),
        });
    }
    let Some(target) = target else {
        return Err(invalid("Recipient of the message is not set."));
    };
    match target {
        Target::Token(t) if t.is_empty() || t.chars().any(|c| c.is_whitespace() || c.is_control()) => {
            return Err(invalid_field(
                "message.token",
                "The registration token is not a valid FCM registration token".to_owned(),
            ));
        }
        Target::Topic(t)
            if t.is_empty()
                || !t
                    .trim_start_matches("/topics/")
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_.~%".contains(c)) =>
        {
            return Err(invalid_field("message.topic", "Invalid topic name.".to_owned()));
        }
        _ => {}
    }

    let mut size: usize = 0;
    if let Some(data) = message.get("data") {
        size = size.saturating_add(check_data(data, "message.data")?);
    }
    if let Some(n) = message.get("notification") {
        size = size.saturating_add(check_object(n, "message.notification", "Notification")?);
        check_strings(n, "message.notification", &["title", "body", "image"])?;
    }
    if let Some(android) = message.get("android") {
        size = size.saturating_add(check_android(android)?);
    }
    for (name, ty) in [
        ("apns", "ApnsConfig"),
        ("webpush", "WebpushConfig"),
        ("fcm_options", "FcmOptions"),
        ("fcmOptions", "FcmOptions"),
    ] {
        if let Some(v) = message.get(name) {
            check_object(v, &format!("message.{name}"), ty)?;
        }
    }
    if size > MAX_MESSAGE {
        return Err(invalid("Message is too big"));
    }
    Ok((target, validate_only))
}

/// `data` maps: string values only. Returns the payload weight.
fn check_data(data: &Value, path: &str) -> Result<usize, Invalid> {
    let Value::Object(map) = data else {
        return Err(invalid_field(
            path,
            format!(
                "Invalid value at '{path}' (type.googleapis.com/google.firebase.fcm.v1.Message.DataEntry), {}",
                shown(data)
            ),
        ));
    };
    let mut size: usize = 0;
    for (i, (k, v)) in map.iter().enumerate() {
        let Value::String(s) = v else {
            let field = format!("{path}[{i}].value");
            return Err(invalid_field(&field, format!("Invalid value at '{field}' (TYPE_STRING), {}", shown(v))));
        };
        size = size.saturating_add(k.len()).saturating_add(s.len());
    }
    Ok(size)
}

/// An object field; returns its serialized weight.
fn check_object(v: &Value, path: &str, ty: &str) -> Result<usize, Invalid> {
    match v {
        Value::Object(_) => Ok(v.to_string().len()),
        other => Err(invalid_field(
            path,
            format!("Invalid value at '{path}' (type.googleapis.com/google.firebase.fcm.v1.{ty}), {}", shown(other)),
        )),
    }
}

fn check_strings(obj: &Value, path: &str, fields: &[&str]) -> Result<(), Invalid> {
    for f in fields {
        if let Some(v) = obj.get(*f) {
            if !v.is_string() {
                let field = format!("{path}.{f}");
                return Err(invalid_field(&field, format!("Invalid value at '{field}' (TYPE_STRING), {}", shown(v))));
            }
        }
    }
    Ok(())
}

fn check_android(android: &Value) -> Result<usize, Invalid> {
    check_object(android, "message.android", "AndroidConfig")?;
    let Value::Object(a) = android else {
        return Ok(0);
    };
    let mut size: usize = 0;
    check_strings(
        android,
        "message.android",
        &["collapse_key", "collapseKey", "restricted_package_name", "restrictedPackageName"],
    )?;
    if let Some(p) = a.get("priority") {
        let ok = p.as_str().is_some_and(|s| s.eq_ignore_ascii_case("normal") || s.eq_ignore_ascii_case("high"));
        if !ok {
            return Err(invalid_field(
                "message.android.priority",
                format!(
                    "Invalid value at 'message.android.priority' (type.googleapis.com/google.firebase.fcm.v1.AndroidMessagePriority), {}",
                    shown(p)
                ),
            ));
        }
    }
    if let Some(ttl) = a.get("ttl") {
        if !ttl.as_str().is_some_and(is_duration) {
            return Err(invalid_field(
                "message.android.ttl",
                format!(
                    "Invalid value at 'message.android.ttl' (type.googleapis.com/google.protobuf.Duration), {}",
                    shown(ttl)
                ),
            ));
        }
    }
    if let Some(data) = a.get("data") {
        size = size.saturating_add(check_data(data, "message.android.data")?);
    }
    if let Some(n) = a.get("notification") {
        size = size.saturating_add(check_object(n, "message.android.notification", "AndroidNotification")?);
    }
    Ok(size)
}
