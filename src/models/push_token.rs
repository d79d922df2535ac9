//! A client's push token (spec 000 "PushToken"), its legacy prefixes and checks.

use crate::error::{ApiError, ApiResult};
use herald_storage::push_tokens::PushProvider;
use serde::{Deserialize, Serialize};

/// The provider names `pushProvider` takes ([`PushProvider::parse`]).
pub fn provider_names() -> Vec<&'static str> {
    PushProvider::ALL.iter().map(|p| p.as_str()).collect()
}

fn provider_schema() -> utoipa::openapi::Object {
    crate::openapi::schema::nullable_strings(&provider_names())
}

fn stored_provider_schema() -> utoipa::openapi::Object {
    crate::openapi::schema::strings(&provider_names())
}

/// `PUT /v1/tenants/{t}/clients/{astClientId}/pushtoken`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PutPushToken {
    /// The app the client is an installation of; any other name is refused (400).
    pub app_name: String,
    /// Empty removes the stored token (the deprecated variant of spec 000).
    pub push_token: String,
    /// Required unless the token carries a legacy prefix (`APNS:`, `FCM:`, ...).
    #[schema(schema_with = provider_schema)]
    pub push_provider: Option<String>,
}

/// The read form; `pushToken` only for administrators.
#[derive(Debug, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PushTokenView {
    /// The app of the client the token belongs to.
    pub app_name: String,
    /// The token as the provider issued it, its legacy prefix stripped; sensitive.
    pub push_token: String,
    /// The provider the token was issued by; selects the backend a push goes through.
    #[schema(schema_with = stored_provider_schema)]
    pub push_provider: String,
    /// False once a provider answered that the token is dead (sends skip it) until a new one is set.
    pub is_valid: bool,
    /// Ids of the users linked to the client.
    pub assigned_users: Vec<String>,
}

/// Legacy prefixes, longest first so `FCMF:` wins over `FCM:` and `APNS:` over `APN:`.
const PREFIXES: [(&str, PushProvider); 6] = [
    ("FCMF:", PushProvider::Fcmf),
    ("APNS:", PushProvider::Apns),
    ("FCM:", PushProvider::Fcm),
    ("GCM:", PushProvider::Gcm),
    ("APN:", PushProvider::Apn),
    ("HPK:", PushProvider::Hpk),
];

impl PutPushToken {
    /// The provider and the bare token: a legacy prefix is stripped and names the
    /// provider; an explicit `pushProvider` must agree with it.
    pub fn resolve(&self) -> ApiResult<(PushProvider, String)> {
        let explicit = match &self.push_provider {
            Some(p) => Some(
                PushProvider::parse(p)
                    .ok_or_else(|| ApiError::field("pushProvider", "must be one of APN, APNS, FCM, FCMF, GCM, HPK"))?,
            ),
            None => None,
        };
        let prefixed = PREFIXES.iter().find(|(p, _)| self.push_token.starts_with(p));
        let (provider, token) = match (prefixed, explicit) {
            (Some((p, inferred)), Some(given)) if *inferred != given => {
                return Err(ApiError::field("pushProvider", format!("contradicts the token's prefix {p}")));
            }
            (Some((p, inferred)), _) => (*inferred, self.push_token[p.len()..].to_string()),
            (None, Some(given)) => (given, self.push_token.clone()),
            (None, None) => {
                return Err(ApiError::field("pushProvider", "is required when the token has no provider prefix"));
            }
        };
        check_token(provider, &token)?;
        Ok((provider, token))
    }
}

/// The shape each provider's tokens have.
fn check_token(provider: PushProvider, token: &str) -> ApiResult<()> {
    const F: &str = "pushToken";
    if token.is_empty() {
        return Err(ApiError::field(F, "is empty after its provider prefix"));
    }
    if token.len() > 4096 {
        return Err(ApiError::field(F, "is longer than 4096 characters"));
    }
    match provider {
        PushProvider::Apn | PushProvider::Apns => {
            if token.len() < 64
                || token.len() > 200
                || token.len() % 2 != 0
                || !token.bytes().all(|b| b.is_ascii_hexdigit())
            {
                return Err(ApiError::field(F, "an APNs device token is 64 or more hexadecimal characters"));
            }
        }
        _ => {
            if !token.bytes().all(|b| b.is_ascii_graphic()) {
                return Err(ApiError::field(F, "must be printable ASCII without spaces"));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn put(token: &str, provider: Option<&str>) -> PutPushToken {
        PutPushToken { app_name: "a".into(), push_token: token.into(), push_provider: provider.map(str::to_string) }
    }

    #[test]
    fn prefixes_are_stripped_and_infer_the_provider() {
        let apns = "ab".repeat(32);
        assert_eq!(put(&format!("APNS:{apns}"), None).resolve().unwrap(), (PushProvider::Apns, apns.clone()));
        assert_eq!(put(&format!("APN:{apns}"), None).resolve().unwrap().0, PushProvider::Apn);
        assert_eq!(put("FCMF:tok", None).resolve().unwrap(), (PushProvider::Fcmf, "tok".into()));
        assert_eq!(put("FCM:tok", None).resolve().unwrap(), (PushProvider::Fcm, "tok".into()));
        assert_eq!(put("GCM:tok", None).resolve().unwrap().0, PushProvider::Gcm);
        assert_eq!(put("HPK:tok", Some("HPK")).resolve().unwrap().0, PushProvider::Hpk);
        assert_eq!(put("tok", Some("FCM")).resolve().unwrap(), (PushProvider::Fcm, "tok".into()));
    }

    #[test]
    fn contradictions_and_bad_shapes_are_rejected() {
        assert!(put("FCM:tok", Some("HPK")).resolve().unwrap_err().message.starts_with("pushProvider"));
        assert!(put("tok", None).resolve().unwrap_err().message.starts_with("pushProvider"));
        assert!(put("tok", Some("XYZ")).resolve().unwrap_err().message.starts_with("pushProvider"));
        assert!(put("APNS:xyz", None).resolve().unwrap_err().message.starts_with("pushToken"));
        assert!(put("FCM:", None).resolve().unwrap_err().message.starts_with("pushToken"));
        assert!(put("a b", Some("FCM")).resolve().unwrap_err().message.starts_with("pushToken"));
    }
}
