//! The Huawei Push Kit simulator: the OAuth client-credentials endpoint
//! (`POST /oauth2/v3/token`) and `POST /v1/{appId}/messages:send`.
//!
//! Push Kit answers most outcomes in the body: `{"code": "80000000", "msg": "Success",
//! "requestId": "…"}`. One request carries up to 1000 tokens, and counting is per token:
//! some invalid tokens give `80100000` with a JSON string listing the illegal ones.

use std::borrow::Cow;

use bytes::Bytes;
use http::header::AUTHORIZATION;
use http::{Method, StatusCode};
use serde_json::{json, Value};

use crate::faults::{ActiveFaults, FaultEndpoint};
use crate::server::Reply;
use crate::state::{SimState, TokenProblem};
use crate::util::{bearer_token, form_field, is_duration, json_response, now_ms, parse_form, random_digits};
use crate::Provider;

const TOKEN_LIFETIME_SECS: u64 = 3600;
/// The most a message may weigh, tokens excluded.
const MAX_MESSAGE: usize = 4096;
/// The most tokens one request may carry.
const MAX_TOKENS: usize = 1000;

/// Handles one request to the HMS simulator.
pub(crate) fn handle(
    state: &SimState,
    parts: &http::request::Parts,
    body: Option<&Bytes>,
    faults: Option<&ActiveFaults>,
) -> Reply {
    let path = parts.uri.path();
    if path == "/oauth2/v3/token" {
        if parts.method != Method::POST {
            return oauth_error(StatusCode::METHOD_NOT_ALLOWED, 1101, 0, "invalid request method");
        }
        return oauth(state, body, faults);
    }
    if let Some(app_id) = path
        .strip_prefix("/v1/")
        .and_then(|rest| rest.strip_suffix("/messages:send"))
        .filter(|a| !a.is_empty() && !a.contains('/'))
    {
        if parts.method != Method::POST {
            return push_error(StatusCode::METHOD_NOT_ALLOWED, "80100003", "Incorrect message structure");
        }
        return send(state, parts, app_id, body, faults);
    }
    Reply {
        response: json_response(StatusCode::NOT_FOUND, json!({ "code": "404", "msg": "Not Found" }).to_string()),
        reason: Some(Cow::Borrowed("NotFound")),
    }
}

// ---- OAuth ------------------------------------------------------------------------------

fn oauth_error(status: StatusCode, error: u32, sub_error: u32, description: &str) -> Reply {
    Reply {
        response: json_response(
            status,
            json!({ "error": error, "sub_error": sub_error, "error_description": description }).to_string(),
        ),
        reason: Some(Cow::Owned(error.to_string())),
    }
}

fn oauth(state: &SimState, body: Option<&Bytes>, faults: Option<&ActiveFaults>) -> Reply {
    if let Some(fired) = faults.and_then(|f| f.status_for(FaultEndpoint::Token, std::iter::empty())) {
        let status = StatusCode::from_u16(fired.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let mut reply = oauth_error(status, 1203, 0, "injected fault");
        reply.response = fired.apply(reply.response);
        return reply;
    }
    let Some(body) = body else {
        return oauth_error(StatusCode::BAD_REQUEST, 1101, 20001, "request too large");
    };
    let form = parse_form(body);
    if form_field(&form, "grant_type") != Some("client_credentials") {
        return oauth_error(StatusCode::BAD_REQUEST, 1102, 20001, "unsupported grant_type");
    }
    let (Some(client_id), Some(secret)) = (form_field(&form, "client_id"), form_field(&form, "client_secret")) else {
        return oauth_error(StatusCode::BAD_REQUEST, 1102, 20002, "missing client_id or client_secret");
    };
    let Some(client) = state.registry.hms_client(client_id) else {
        return oauth_error(StatusCode::UNAUTHORIZED, 1102, 20151, "invalid client_id");
    };
    if client.client_secret != secret {
        return oauth_error(StatusCode::UNAUTHORIZED, 1102, 20152, "invalid client_secret");
    }
    let token = state.grant_token(Provider::Hms, client.client_id.as_str().into(), "CgB6e3x9", TOKEN_LIFETIME_SECS);
    let expires_in = faults.and_then(|f| f.expires_in.clone()).unwrap_or(json!(TOKEN_LIFETIME_SECS));
    Reply::ok(json_response(
        StatusCode::OK,
        json!({ "access_token": token, "expires_in": expires_in, "token_type": "Bearer" }).to_string(),
    ))
}

// ---- Send -------------------------------------------------------------------------------

fn request_id() -> String {
    format!("{}{}", now_ms(), random_digits(6))
}

/// A Push Kit answer: `{"code", "msg", "requestId"}`; the code is the recorded reason.
fn push_reply(status: StatusCode, code: &str, msg: &str) -> Reply {
    Reply {
        response: json_response(status, json!({ "code": code, "msg": msg, "requestId": request_id() }).to_string()),
        reason: (code != "80000000").then(|| Cow::Owned(code.to_owned())),
    }
}

fn push_error(status: StatusCode, code: &str, msg: &str) -> Reply {
    push_reply(status, code, msg)
}

/// A request-level refusal: every token it carried counts as rejected.
fn refuse(state: &SimState, n_tokens: usize, status: StatusCode, code: &str, msg: &str) -> Reply {
    state.counters(Provider::Hms).reject_n(code, n_tokens.max(1) as u64);
    push_error(status, code, msg)
}

enum Target<'a> {
    Tokens(Vec<&'a str>),
    Topic(&'a str),
    Condition(&'a str),
}

fn send(
    state: &SimState,
    parts: &http::request::Parts,
    app_id: &str,
    body: Option<&Bytes>,
    faults: Option<&ActiveFaults>,
) -> Reply {
    let counters = state.counters(Provider::Hms);
    let value = match body.map(|b| serde_json::from_slice::<Value>(b)) {
        Some(Ok(v)) => Some(v),
        Some(Err(_)) => None,
        None => {
            return refuse(
                state,
                1,
                StatusCode::PAYLOAD_TOO_LARGE,
                "80300008",
                "The message body size exceeds the default value",
            );
        }
    };
    // How many notifications the request meant to send, for counting refusals.
    let n_tokens =
        value.as_ref().and_then(|v| v.pointer("/message/token")).and_then(Value::as_array).map_or(1, Vec::len);

    let token = parts
        .headers
        .get(AUTHORIZATION)
        .and_then(|v| bearer_token(v.as_bytes()))
        .and_then(|t| std::str::from_utf8(t).ok());
    let auth = match token {
        None => Err(TokenProblem::Unknown),
        Some(t) => state.check_token(Provider::Hms, t, app_id),
    };
    match auth {
        Ok(()) => {}
        Err(TokenProblem::Expired) => {
            return refuse(state, n_tokens, StatusCode::UNAUTHORIZED, "80200003", "OAuth token expired.");
        }
        Err(TokenProblem::Unknown | TokenProblem::WrongOwner) => {
            return refuse(state, n_tokens, StatusCode::UNAUTHORIZED, "80200001", "Oauth Authentication error");
        }
    }

    let Some(value) = value else {
        return refuse(state, n_tokens, StatusCode::BAD_REQUEST, "80100003", "Incorrect message structure");
    };
    let (target, validate_only) = match validate(&value) {
        Ok(t) => t,
        Err((code, msg)) => {
            let status = if code == "80300008" { StatusCode::PAYLOAD_TOO_LARGE } else { StatusCode::BAD_REQUEST };
            return refuse(state, n_tokens, status, code, msg);
        }
    };

    let tokens: Vec<&str> = match &target {
        Target::Tokens(t) => t.clone(),
        Target::Topic(_) | Target::Condition(_) => Vec::new(),
    };
    if let Some(fired) = faults.and_then(|f| f.status_for(FaultEndpoint::Send, tokens.iter().copied())) {
        let status = StatusCode::from_u16(fired.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let (code, msg) = match fired.status {
            400 => ("80100003", "Incorrect message structure"),
            401 => ("80200003", "OAuth token expired."),
            403 => ("80300002", "The current app does not have the permission to send messages to the tokens"),
            404 | 410 => ("80300007", "All the tokens are invalid"),
            413 => ("80300008", "The message body size exceeds the default value"),
            429 => ("80300013", "Too many requests: flow control, retry later"),
            _ => ("81000001", "System internal error"),
        };
        let code = fired.reason.as_deref().unwrap_or(code);
        let mut reply = refuse(state, n_tokens, status, code, msg);
        reply.response = fired.apply(reply.response);
        return reply;
    }

    match target {
        Target::Topic(t) => {
            if !validate_only {
                counters.accept(&format!("topic:{t}"));
            }
            push_reply(StatusCode::OK, "80000000", "Success")
        }
        Target::Condition(c) => {
            if !validate_only {
                counters.accept(&format!("condition:{c}"));
            }
            push_reply(StatusCode::OK, "80000000", "Success")
        }
        Target::Tokens(tokens) => {
            let dead = |t: &str| {
                t.is_empty()
                    || t.chars().any(char::is_whitespace)
                    || (t.len() >= 4 && t[..4].eq_ignore_ascii_case("dead"))
                    || faults.is_some_and(|f| f.is_dead(t))
            };
            let (illegal, valid): (Vec<&str>, Vec<&str>) = tokens.into_iter().partition(|t| dead(t));
            if valid.is_empty() {
                return refuse(state, illegal.len(), StatusCode::BAD_REQUEST, "80300007", "All the tokens are invalid");
            }
            if !validate_only {
                for t in &valid {
                    counters.accept(t);
                }
            }
            if illegal.is_empty() {
                return push_reply(StatusCode::OK, "80000000", "Success");
            }
            counters.reject_n("80300007", illegal.len() as u64);
            let msg = json!({
                "success": valid.len(),
                "failure": illegal.len(),
                "illegal_tokens": illegal,
            })
            .to_string();
            push_reply(StatusCode::OK, "80100000", &msg)
        }
    }
}

type Refusal = (&'static str, &'static str);

const BAD_STRUCTURE: Refusal = ("80100003", "Incorrect message structure");

/// Checks a send body like Push Kit; returns the target and `validate_only`.
fn validate(v: &Value) -> Result<(Target<'_>, bool), Refusal> {
    let validate_only = match v.get("validate_only") {
        None => false,
        Some(b) => b.as_bool().ok_or(BAD_STRUCTURE)?,
    };
    let Some(Value::Object(message)) = v.get("message") else {
        return Err(BAD_STRUCTURE);
    };
    let targets = ["token", "topic", "condition"].iter().filter(|k| message.contains_key(**k)).count();
    if targets != 1 {
        return Err(("80300010", "The number of tokens in the message body exceeds the default value"));
    }
    let target = if let Some(tokens) = message.get("token") {
        let Value::Array(list) = tokens else {
            return Err(BAD_STRUCTURE);
        };
        if list.is_empty() || list.len() > MAX_TOKENS {
            return Err(("80300010", "The number of tokens in the message body exceeds the default value"));
        }
        let tokens = list.iter().map(|t| t.as_str().ok_or(BAD_STRUCTURE)).collect::<Result<Vec<_>, _>>()?;
        Target::Tokens(tokens)
    } else if let Some(topic) = message.get("topic") {
        Target::Topic(topic.as_str().ok_or(BAD_STRUCTURE)?)
    } else {
        Target::Condition(message.get("condition").and_then(Value::as_str).ok_or(BAD_STRUCTURE)?)
    };

    if let Some(data) = message.get("data") {
        if !data.is_string() {
            return Err(BAD_STRUCTURE);
        }
    }
    if let Some(n) = message.get("notification") {
        if !n.is_object() {
            return Err(BAD_STRUCTURE);
        }
    }
    if let Some(android) = message.get("android") {
        check_android(android)?;
    }
    // Size without the token list, which may be long and does not count.
    let mut weighed = message.clone();
    weighed.remove("token");
    if Value::Object(weighed).to_string().len() > MAX_MESSAGE {
        return Err(("80300008", "The message body size exceeds the default value"));
    }
    Ok((target, validate_only))
}

fn check_android(android: &Value) -> Result<(), Refusal> {
    let Value::Object(a) = android else {
        return Err(BAD_STRUCTURE);
    };
    if let Some(ck) = a.get("collapse_key") {
        if !ck.as_i64().is_some_and(|k| (-1..=100).contains(&k)) {
            return Err(("80100013", "The collapse_key message field is invalid"));
        }
    }
    if let Some(ttl) = a.get("ttl") {
        if !ttl.as_str().is_some_and(is_duration) {
            return Err(BAD_STRUCTURE);
        }
    }
    if let Some(u) = a.get("urgency") {
        if !matches!(u.as_str(), Some("HIGH" | "NORMAL")) {
            return Err(BAD_STRUCTURE);
        }
    }
    for s in ["bi_tag", "category", "data"] {
        if a.get(s).is_some_and(|v| !v.is_string()) {
            return Err(BAD_STRUCTURE);
        }
    }
    if a.get("notification").is_some_and(|n| !n.is_object()) {
        return Err(BAD_STRUCTURE);
    }
    Ok(())
}
