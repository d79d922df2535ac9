//! The parameters of an OIDC endpoint: a form body (RFC 6749 §3.2), the
//! query of a GET, or a JSON object of strings (which the token endpoint
//! has always accepted too).

use crate::error::{ApiError, ApiResult};
use crate::http::Cx;
use http::{Method, StatusCode};

/// Parameters by name, each given at most once.
pub(crate) struct Params(Vec<(String, String)>);

pub(crate) fn invalid_request(description: impl Into<String>) -> ApiError {
    ApiError::oauth(StatusCode::BAD_REQUEST, "invalid_request", description)
}

impl Params {
    /// The parameters of a request to an endpoint that checks passwords or
    /// client secrets, after its rate limits: per address, and per user or
    /// client named (so guesses count whether they succeed or not).
    pub(crate) fn limited(cx: &Cx) -> ApiResult<Params> {
        if let Some(ip) = cx.peer {
            cx.engine.limits.token_ip.check(&ip.to_string())?;
        }
        let params = Params::of(cx)?;
        let client_id = super::client_auth::OAuthClient::named(&cx.headers, &params);
        if let Some(who) = params.get("username").or(client_id.as_deref()) {
            cx.engine.limits.token_user.check(&format!("{}\0{}", cx.tenant(), who.to_lowercase()))?;
        }
        Ok(params)
    }

    /// The parameters of the request: the query of a GET, the body otherwise.
    pub(crate) fn of(cx: &Cx) -> ApiResult<Params> {
        let pairs: Vec<(String, String)> = if cx.method == Method::GET {
            cx.query_pairs()
        } else if cx.header("content-type").is_some_and(|c| c.starts_with("application/json")) {
            let object: serde_json::Map<String, serde_json::Value> =
                serde_json::from_slice(&cx.body).map_err(|e| invalid_request(format!("malformed JSON body: {e}")))?;
            let mut pairs = Vec::with_capacity(object.len());
            for (name, value) in object {
                match value {
                    serde_json::Value::String(v) => pairs.push((name, v)),
                    serde_json::Value::Null => {}
                    _ => return Err(invalid_request(format!("parameter {name} must be a string"))),
                }
            }
            pairs
        } else {
            form_urlencoded::parse(&cx.body).into_owned().collect()
        };
        // RFC 6749 §3.2: request parameters must not be repeated.
        for (i, (name, _)) in pairs.iter().enumerate() {
            if pairs[..i].iter().any(|(n, _)| n == name) {
                return Err(invalid_request(format!("parameter {name} is repeated")));
            }
        }
        Ok(Params(pairs))
    }

    /// Parameter `name`, when given and not empty (RFC 6749 §3.1: an empty
    /// parameter is treated as omitted).
    pub(crate) fn get(&self, name: &str) -> Option<&str> {
        self.0.iter().find(|(n, v)| n == name && !v.is_empty()).map(|(_, v)| v.as_str())
    }

    /// The parameters as the endpoint's request type (whose fields are
    /// strings; unknown parameters are ignored, empty ones omitted).
    pub(crate) fn decode<T: serde::de::DeserializeOwned>(&self) -> ApiResult<T> {
        let object: serde_json::Map<String, serde_json::Value> = self
            .0
            .iter()
            .filter(|(_, v)| !v.is_empty())
            .map(|(n, v)| (n.clone(), serde_json::Value::String(v.clone())))
            .collect();
        serde_json::from_value(serde_json::Value::Object(object)).map_err(|e| invalid_request(e.to_string()))
    }
}

/// The parameters of introspection (RFC 7662 §2.1) and revocation (RFC 7009
/// §2.1); the client authenticates with them or with HTTP Basic.
#[derive(Debug, serde::Deserialize, utoipa::ToSchema)]
pub struct TokenParams {
    /// The access or refresh token to introspect or revoke.
    pub token: String,
    /// `access_token` or `refresh_token`: where to look first.
    pub token_type_hint: Option<String>,
    /// The client (`client_secret_post`); HTTP Basic may name it instead.
    pub client_id: Option<String>,
    /// The client's secret (`client_secret_post`).
    pub client_secret: Option<String>,
}
