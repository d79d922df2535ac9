//! Which OAuth client is calling (RFC 6749 §2.3): a device client proves its
//! secret with HTTP Basic (`client_secret_basic`, the default of Authlib and
//! requests-oauthlib) or with form fields (`client_secret_post`); any other
//! client names itself with `client_id` alone (a public client).

use super::params::{invalid_request, Params};
use crate::engine::Engine;
use crate::error::{ApiError, ApiResult};
use base64::Engine as _;
use herald_storage::clients::Client;
use http::StatusCode;

/// The calling client, as it identified itself.
pub(crate) enum OAuthClient {
    /// No client named.
    Unnamed,
    /// A client id without a secret.
    Public(String),
    /// A device client of the tenant that proved its secret.
    Confidential(Box<Client>),
}

/// 401 `invalid_client`; with the Basic challenge RFC 6749 §5.2 asks for
/// when the client tried the `Authorization` header.
fn invalid_client(tenant: &str, basic: bool) -> ApiError {
    let e = ApiError::oauth(StatusCode::UNAUTHORIZED, "invalid_client", "Invalid client or client credentials");
    if basic {
        e.with_challenge(format!("Basic realm=\"{tenant}\""))
    } else {
        e
    }
}

impl OAuthClient {
    /// Identifies the caller from its `Authorization: Basic` header or its
    /// `client_id` and `client_secret` parameters; a secret must be right.
    pub(crate) fn identify(
        engine: &Engine,
        tenant: &str,
        headers: &http::HeaderMap,
        params: &Params,
    ) -> ApiResult<Self> {
        let basic = basic_credentials(headers)?;
        let (id, secret, by_header) = match basic {
            Some((id, secret)) => {
                // RFC 6749 §2.3: one authentication method per request.
                if params.get("client_secret").is_some() {
                    return Err(invalid_request("the client authenticated both with HTTP Basic and client_secret"));
                }
                if params.get("client_id").is_some_and(|form_id| form_id != id) {
                    return Err(invalid_request("client_id differs from the HTTP Basic client"));
                }
                (id, Some(secret), true)
            }
            None => match (params.get("client_id"), params.get("client_secret")) {
                (Some(id), secret) => (id.to_string(), secret.map(str::to_string), false),
                (None, Some(_)) => return Err(invalid_request("client_secret without client_id")),
                (None, None) => return Ok(OAuthClient::Unnamed),
            },
        };
        let Some(secret) = secret else {
            return Ok(OAuthClient::Public(id));
        };
        let client = engine.store.clients().get(tenant, &id)?.ok_or_else(|| invalid_client(tenant, by_header))?;
        let digest = ring::digest::digest(&ring::digest::SHA256, secret.as_bytes());
        if !crate::auth::secrets_equal(digest.as_ref(), &client.secret_hash) {
            return Err(invalid_client(tenant, by_header));
        }
        Ok(OAuthClient::Confidential(Box::new(client)))
    }

    /// The client id the request names, before any check (what rate
    /// limits count, so failed attempts count too).
    pub(crate) fn named(headers: &http::HeaderMap, params: &Params) -> Option<String> {
        match basic_credentials(headers) {
            Ok(Some((id, _))) => Some(id),
            _ => params.get("client_id").map(str::to_string),
        }
    }

    /// The id the client gave, if any.
    pub(crate) fn id(&self) -> Option<&str> {
        match self {
            OAuthClient::Unnamed => None,
            OAuthClient::Public(id) => Some(id),
            OAuthClient::Confidential(c) => Some(&c.id),
        }
    }

    /// Refuses a client that may not present a token issued to client `azp`
    /// (RFC 6749 §6, RFC 7009 §2.1): a client that named itself must be that
    /// client, and a token of a device client needs that client's secret.
    pub(crate) fn may_present(&self, engine: &Engine, tenant: &str, azp: &str) -> ApiResult<()> {
        if self.id().is_some_and(|id| id != azp) {
            return Err(ApiError::oauth(
                StatusCode::BAD_REQUEST,
                "unauthorized_client",
                "the token was issued to another client",
            ));
        }
        let proven = matches!(self, OAuthClient::Confidential(_));
        if !proven && engine.store.clients().get(tenant, azp)?.is_some() {
            return Err(invalid_client(tenant, false));
        }
        Ok(())
    }
}

/// The client id and secret of an `Authorization: Basic` header, each
/// form-urlencoded before the base64 (RFC 6749 §2.3.1); `None` without one.
fn basic_credentials(headers: &http::HeaderMap) -> ApiResult<Option<(String, String)>> {
    let Some(value) = headers.get(http::header::AUTHORIZATION) else {
        return Ok(None);
    };
    let malformed = || invalid_request("malformed HTTP Basic credentials");
    let value = value.to_str().map_err(|_| malformed())?;
    let Some((scheme, encoded)) = value.split_once(' ') else {
        return Ok(None);
    };
    if !scheme.eq_ignore_ascii_case("basic") {
        return Ok(None);
    }
    let decoded = base64::engine::general_purpose::STANDARD.decode(encoded.trim()).map_err(|_| malformed())?;
    let decoded = String::from_utf8(decoded).map_err(|_| malformed())?;
    let (id, secret) = decoded.split_once(':').ok_or_else(malformed)?;
    let unescape = |s: &str| {
        percent_encoding::percent_decode_str(&s.replace('+', " "))
            .decode_utf8()
            .map(|s| s.into_owned())
            .map_err(|_| malformed())
    };
    let id = unescape(id)?;
    if id.is_empty() {
        return Err(malformed());
    }
    Ok(Some((id, unescape(secret)?)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(value: &str) -> http::HeaderMap {
        let mut h = http::HeaderMap::new();
        h.insert(http::header::AUTHORIZATION, value.parse().unwrap());
        h
    }

    #[test]
    fn basic_credentials_are_form_decoded() {
        let encoded = base64::engine::general_purpose::STANDARD.encode("my%20app:s%3Ac+r");
        let got = basic_credentials(&header(&format!("Basic {encoded}"))).unwrap();
        assert_eq!(got, Some(("my app".to_string(), "s:c r".to_string())));
        assert_eq!(basic_credentials(&header("Bearer abc")).unwrap(), None, "not Basic");
        assert!(basic_credentials(&header("Basic !!!")).is_err());
        let no_colon = base64::engine::general_purpose::STANDARD.encode("app");
        assert!(basic_credentials(&header(&format!("Basic {no_colon}"))).is_err());
    }
}
