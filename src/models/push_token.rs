//! A client's push token (spec 000 "PushToken"), its legacy prefixes and checks.

use crate::error::{ApiError, ApiResult};
use herald_actors::guard::EndpointPolicy;
use herald_actors::providers::subscription::Subscription;
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
    /// Empty removes the stored token (the deprecated variant of spec 000). For
    /// `WEB`, the browser's subscription JSON (`JSON.stringify(subscription)`):
    /// an https `endpoint` at a public address, `keys.p256dh` (65 bytes) and
    /// `keys.auth` (16 bytes) in base64url.
    pub push_token: String,
    /// Required unless the token carries a legacy prefix (`APNS:`, `FCM:`, `WEB:`, ...).
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
const PREFIXES: [(&str, PushProvider); 7] = [
    ("FCMF:", PushProvider::Fcmf),
    ("APNS:", PushProvider::Apns),
    ("FCM:", PushProvider::Fcm),
    ("GCM:", PushProvider::Gcm),
    ("APN:", PushProvider::Apn),
    ("HPK:", PushProvider::Hpk),
    ("WEB:", PushProvider::Web),
];

impl PutPushToken {
    /// The provider and the bare token: a legacy prefix is stripped and names the
    /// provider; an explicit `pushProvider` must agree with it. A Web Push
    /// subscription is checked and stored in its canonical form, its endpoint
    /// one `policy` allows (https at a public address, unless private
    /// endpoints are allowed); a name is checked again, on the addresses it
    /// resolves to, whenever a send connects to it.
    pub fn resolve(&self, policy: &EndpointPolicy) -> ApiResult<(PushProvider, String)> {
        let explicit = match &self.push_provider {
            Some(p) => Some(PushProvider::parse(p).ok_or_else(|| {
                ApiError::field("pushProvider", format!("must be one of {}", provider_names().join(", ")))
            })?),
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
        if provider == PushProvider::Web {
            return Ok((provider, subscription(&token, policy)?));
        }
        Ok((provider, token))
    }
}

/// A `WEB` token: the subscription in canonical form, its endpoint allowed by `policy`.
fn subscription(token: &str, policy: &EndpointPolicy) -> ApiResult<String> {
    let field = |f: &str| if f.is_empty() { "pushToken".to_owned() } else { format!("pushToken.{f}") };
    let sub = Subscription::parse(token).map_err(|e| ApiError::field(&field(e.field), e.message))?;
    policy.check(&sub.endpoint.to_string()).map_err(|e| ApiError::field(&field("endpoint"), e))?;
    Ok(sub.canonical())
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
        PushProvider::Web => {}
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

    fn put(token: &str, provider: Option<&str>) -> Resolving {
        Resolving(PutPushToken {
            app_name: "a".into(),
            push_token: token.into(),
            push_provider: provider.map(str::to_string),
        })
    }

    struct Resolving(PutPushToken);

    impl Resolving {
        fn resolve(&self) -> ApiResult<(PushProvider, String)> {
            self.0.resolve(&EndpointPolicy::default())
        }
    }

    #[test]
    fn web_subscriptions_are_checked_and_canonical() {
        let keys = r#""keys":{"p256dh":"BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4","auth":"BTBZMqHH6r4Tts7J_aSIgg"}"#;
        let sub = |endpoint: &str| format!(r#"{{"endpoint":"{endpoint}","expirationTime":null,{keys}}}"#);
        let (p, t) = put(&format!("WEB:{}", sub("https://push.example.net/x")), None).resolve().unwrap();
        assert_eq!(p, PushProvider::Web);
        let canonical = r#"{"endpoint":"https://push.example.net/x","keys":{"auth":"BTBZMqHH6r4Tts7J_aSIgg","p256dh":"BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4"}}"#;
        assert_eq!(t, canonical);
        let field = |token: String| put(&token, Some("WEB")).resolve().unwrap_err().message;
        assert!(field(sub("http://push.example.net/x")).starts_with("pushToken.endpoint: must be an https URL"));
        assert!(field(sub("https://10.0.0.1/x")).starts_with("pushToken.endpoint: refused"), "a private address");
        assert!(field(sub("https://127.0.0.1:8443/x")).starts_with("pushToken.endpoint: refused"));
        assert!(field("{}".into()).starts_with("pushToken.endpoint"));
        assert!(field("x".into()).starts_with("pushToken: "));
        assert!(field(sub("https://x/y").replace("BTBZMqHH6r4Tts7J_aSIgg", "BTBZ")).starts_with("pushToken.keys.auth"));
        let allowed = EndpointPolicy::new([], true);
        let token = PutPushToken { push_token: sub("https://127.0.0.1:8443/x"), ..put("", Some("WEB")).0 };
        assert!(token.resolve(&allowed).is_ok(), "private endpoints allowed");
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
