//! Huawei Push Kit (HMS): the request (`POST /v1/{appId}/messages:send`, up to
//! 1000 tokens per request), the meaning of its answers per token, and the
//! OAuth2 client-credentials access token.
//!
//! A notification is formatted once ([`prepare`]) into the JSON after the token
//! list; a request is the envelope, the token list and that suffix.

use bytes::Bytes;
use serde_json::{json, Value};

use super::auth_http::{Grant, OAuth};
use super::{android, retry_after, Backend, Bearer, BuildEnv, Built, FormatError, Notification};
use super::{Outcome, Provider, WireRequest};
use crate::credentials::AppCredentials;
use crate::transport::Target;

/// The most tokens Push Kit accepts in one request.
pub const MAX_TOKENS: usize = 1000;

/// Push Kit keeps undelivered messages at most 15 days.
pub const MAX_TTL_SECS: i64 = 1_296_000;

/// Push Kit collapse keys are offline-cache group numbers `0..=100` (`-1`:
/// cache everything, the default).
pub const MAX_COLLAPSE_KEY: i64 = 100;

/// Push Kit's answer codes.
pub mod codes {
    /// Every token accepted.
    pub const SUCCESS: &str = "80000000";
    /// Some tokens were illegal; `msg` lists them.
    pub const PARTIAL: &str = "80100000";
    /// The message is malformed (a field missing or invalid): failed, not retried.
    pub const BAD_PARAMETERS: &str = "80100003";
    /// The access token was refused: renewed, then retried.
    pub const AUTH_FAILED: &str = "80200001";
    /// The access token has expired: renewed, then retried.
    pub const AUTH_EXPIRED: &str = "80200003";
    /// Every token was illegal.
    pub const ALL_TOKENS_INVALID: &str = "80300007";
    /// The message is over Push Kit's size limit: failed with 413.
    pub const TOO_LARGE: &str = "80300008";
    /// A Push Kit fault: retried.
    pub const INTERNAL: &str = "81000001";
}

const PREFIX: &[u8] = br#"{"validate_only":false,"message":{"token":"#;

/// A notification formatted for Push Kit: the message JSON after the token list.
#[derive(Clone, Debug)]
pub struct HmsPayload {
    /// `,"android":{..},"data":".."}}`.
    suffix: Bytes,
}

impl HmsPayload {
    /// The request for up to [`MAX_TOKENS`] tokens of the app `app_id` (the
    /// OAuth client id), authorised with an OAuth access token.
    pub fn request(&self, app_id: &str, tokens: &[&str], bearer: Option<&Bearer>) -> Result<WireRequest, FormatError> {
        if tokens.is_empty() || tokens.len() > MAX_TOKENS {
            return Err(FormatError {
                status: 400,
                message: format!("an HMS request carries 1 to {MAX_TOKENS} tokens, not {}", tokens.len()),
            });
        }
        android::request(["/v1/", app_id, "/messages:send"], PREFIX, &tokens, &self.suffix, bearer)
    }
}

/// Formats `n` as a Push Kit message: `{"validate_only": false, "message":
/// {"token": [..], "data": "<JSON>", "android": {"urgency", "ttl",
/// "collapse_key", "notification": {.., "click_action": {"type": 3}}}}}`.
///
/// `data` is one string, the JSON of customData (values as they are) plus
/// `sender` (`{"tenantId","userId"}`), `notificationId` and `category`. Urgency
/// is `HIGH` for HIGH priority and `NORMAL` otherwise. The ttl is capped at 15
/// days. A silent notification has no `notification`: a data message. A
/// notification opens the app when tapped (`click_action` type 3).
///
/// Push Kit's `collapse_key` is a number, an offline-cache group `0..=100`: a
/// collapse key that is such a number is used as it is; any other string is
/// mapped to `fnv1a64(key) % 100`, stable across processes and releases, so the
/// same key always lands in the same group (different keys may share a group:
/// there are only 101).
///
/// Push Kit requires a title and body on an Android notification; when only
/// the localisation key is given, it is sent as the title (or body) too, so the
/// device has something to show if it cannot resolve the key.
///
/// Push Kit's `android.category` (message self-classification such as `IM`,
/// `FINANCE`) is not set: it needs Huawei's approval per app, and our category
/// travels in `data`.
///
/// The size limit is Push Kit's: the message without its token list must fit in
/// 4096 bytes (413 otherwise), so it is checked here, once.
pub fn prepare(n: &Notification) -> Result<HmsPayload, FormatError> {
    let data = Value::Object(android::data(n, |v| v));
    let dialect = android::Dialect { priority: ("urgency", "HIGH", "NORMAL"), max_ttl: MAX_TTL_SECS };
    let mut block = android::android(n, &dialect, n.collapse_key.as_deref().map(|k| json!(collapse_group(k))));
    if !n.silent {
        let title = n.title.as_ref().or(n.title_loc_key.as_ref());
        let mut notification = android::notification(n, title, n.body.as_ref().or(n.body_loc_key.as_ref()));
        notification.insert("click_action".into(), json!({ "type": 3 }));
        block.insert("notification".into(), Value::Object(notification));
    }
    // `{"android":..,"data":".."}` is the message without its token list, which
    // is what Push Kit weighs.
    let (suffix, weighed) = android::suffix(block, Value::String(data.to_string()), "HMS")?;
    super::check_size(weighed, "HMS'")?;
    Ok(HmsPayload { suffix })
}

/// The Push Kit cache group of a collapse key: the key itself when it is a
/// number in `0..=100`, else FNV-1a (64 bit) of its bytes modulo 100.
pub fn collapse_group(key: &str) -> i64 {
    if let Ok(k) = key.trim().parse::<i64>() {
        if (0..=MAX_COLLAPSE_KEY).contains(&k) {
            return k;
        }
    }
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for b in key.bytes() {
        hash ^= u64::from(b);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    (hash % 100) as i64
}

/// Push Kit's answer body: `{"code", "msg", "requestId"}` (the code is a
/// string; a number is read too).
#[derive(Default)]
struct Answer {
    code: Option<String>,
    msg: Option<String>,
    request_id: Option<String>,
}

impl Answer {
    fn parse(body: &[u8]) -> Answer {
        let Ok(Value::Object(o)) = serde_json::from_slice::<Value>(body) else {
            return Answer::default();
        };
        let text = |v: Option<&Value>| match v {
            Some(Value::String(s)) => Some(s.clone()),
            Some(Value::Number(n)) => Some(n.to_string()),
            _ => None,
        };
        Answer { code: text(o.get("code")), msg: text(o.get("msg")), request_id: text(o.get("requestId")) }
    }
}

/// What a Push Kit answer means for each of the request's `tokens` (one outcome
/// per token, in order).
///
/// `80000000`: all sent. `80100000`: some tokens were illegal; `msg` is a JSON
/// string whose `illegal_tokens` are dead, the others sent (if `msg` cannot be
/// read, all count as sent: some were, and a token is never marked dead without
/// Huawei naming it). `80300007`: every token is dead. HTTP 401, `80200001`,
/// `80200003`: our access token was refused, refresh it. HTTP 429 or 5xx, or
/// `81000001`: retry, after `retry-after` when given. `80300008`: the message is
/// too large (413). `80100003` and other `801xxxxx`: a bad message (400).
/// Anything else: a failure with Huawei's code and message.
pub fn parse_response(status: u16, headers: &http::HeaderMap, body: &[u8], tokens: &[&str]) -> Vec<Outcome> {
    let answer = Answer::parse(body);
    let code = answer.code.as_deref().unwrap_or("");
    let reason = super::reason(status, body, answer.code.as_deref(), answer.msg.as_deref());
    let all = |o: Outcome| vec![o; tokens.len()];

    if status == 401 || code == codes::AUTH_FAILED || code == codes::AUTH_EXPIRED {
        return all(Outcome::AuthRefused { status, reason });
    }
    if status == 429 || (500..=599).contains(&status) || code == codes::INTERNAL {
        return all(Outcome::Retry { status, reason, after: retry_after(headers) });
    }
    let sent = || Outcome::Sent { id: answer.request_id.clone() };
    match code {
        codes::SUCCESS if (200..300).contains(&status) => all(sent()),
        codes::PARTIAL => {
            let illegal = answer.msg.as_deref().and_then(illegal_tokens);
            match illegal {
                Some(illegal) => tokens
                    .iter()
                    .map(|t| {
                        if illegal.iter().any(|i| i == t) {
                            Outcome::Dead { status: 400, reason: format!("{}: illegal token", codes::PARTIAL) }
                        } else {
                            sent()
                        }
                    })
                    .collect(),
                None => all(sent()),
            }
        }
        codes::ALL_TOKENS_INVALID => all(Outcome::Dead { status: error_status(status), reason }),
        codes::TOO_LARGE => all(Outcome::Failed { status: 413, reason }),
        c if c.starts_with("801") => all(Outcome::Failed { status: 400, reason }),
        // A 2xx without a code: Huawei accepted the request.
        "" if (200..300).contains(&status) => all(sent()),
        _ => all(Outcome::Failed { status: error_status(status), reason }),
    }
}

/// A refusal carried in a 2xx answer is reported as 400, never as an error
/// with a success status.
fn error_status(status: u16) -> u16 {
    if (200..300).contains(&status) {
        400
    } else {
        status
    }
}

/// The `illegal_tokens` of a partial-success `msg`.
fn illegal_tokens(msg: &str) -> Option<Vec<String>> {
    #[derive(serde::Deserialize)]
    struct Partial {
        #[serde(default)]
        illegal_tokens: Vec<String>,
    }
    serde_json::from_str::<Partial>(msg).ok().map(|p| p.illegal_tokens)
}

/// Huawei's OAuth token endpoint.
pub const DEFAULT_TOKEN_URL: &str = "https://oauth-login.cloud.huawei.com/oauth2/v3/token";

/// Push Kit's OAuth grant: client credentials (the app id and secret) at the
/// operator's configured token URL.
pub struct ClientCredentials {
    client_id: String,
    client_secret: String,
    token_url: String,
}

impl std::fmt::Debug for ClientCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientCredentials")
            .field("client_id", &self.client_id)
            .field("token_url", &self.token_url)
            .finish_non_exhaustive()
    }
}

impl ClientCredentials {
    /// Push Kit's client-credentials grant of an app, posted to `token_url` (Huawei's
    /// endpoint, or a simulator's).
    pub fn new(client_id: &str, client_secret: &str, token_url: &str) -> ClientCredentials {
        ClientCredentials {
            client_id: client_id.to_owned(),
            client_secret: client_secret.to_owned(),
            token_url: token_url.to_owned(),
        }
    }
}

impl Grant for ClientCredentials {
    const PROVIDER: Backend = Backend::Hms;

    fn url(&self) -> &str {
        &self.token_url
    }

    fn form(&self) -> Result<Vec<(&'static str, String)>, String> {
        Ok(vec![
            ("grant_type", "client_credentials".into()),
            ("client_id", self.client_id.clone()),
            ("client_secret", self.client_secret.clone()),
        ])
    }
}

/// The OAuth2 access token of a Push Kit app.
pub type HmsAuth = OAuth<ClientCredentials>;

/// Push Kit for one app: its id (the OAuth client id), which send URLs name.
pub struct Hms {
    app_id: String,
}

impl Provider for Hms {
    const BACKEND: Backend = Backend::Hms;
    const MAX_TOKENS: usize = MAX_TOKENS;
    type Payload = HmsPayload;
    type Auth = HmsAuth;

    /// From the app id and its secret.
    fn build(creds: &AppCredentials, env: &BuildEnv<'_>) -> Option<Result<Built<Hms>, String>> {
        let (id, secret) = creds.hms.as_ref()?;
        let e = &env.settings.endpoints;
        let auth = OAuth::new(ClientCredentials::new(id, secret, &e.hms_token), env.auth_http.clone());
        let target = Target::from_url(&e.hms, env.tls.clone()).map_err(|e| e.to_string());
        Some(target.map(|target| (Hms { app_id: id.clone() }, auth, target.into())))
    }

    fn prepare(&self, n: &Notification) -> Result<HmsPayload, FormatError> {
        prepare(n)
    }

    fn request(&self, p: &HmsPayload, tokens: &[&str], bearer: Option<&Bearer>) -> Result<WireRequest, FormatError> {
        p.request(&self.app_id, tokens, bearer)
    }

    fn read(status: u16, headers: &http::HeaderMap, body: &[u8], tokens: &[&str]) -> Vec<Outcome> {
        parse_response(status, headers, body, tokens)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::providers::sample as notification;
    use crate::providers::Priority;
    use std::time::Duration;

    fn body(n: &Notification, tokens: &[&str]) -> Value {
        let r = prepare(n).unwrap().request("123456789", tokens, Some(&Bearer::new("Bearer", "tok").unwrap())).unwrap();
        serde_json::from_slice(&r.body).unwrap()
    }

    #[test]
    fn a_notification_message() {
        let n = crate::providers::sample_full();
        let v = body(&n, &["t1", "t2"]);
        assert_eq!(v["validate_only"], false);
        let m = &v["message"];
        assert_eq!(m["token"], json!(["t1", "t2"]));
        let data: Value = serde_json::from_str(m["data"].as_str().unwrap()).unwrap();
        assert_eq!(
            data,
            json!({
                "s": "text", "n": 42, "b": true, "o": {"a": [1, "2"]}, "z": null,
                "sender": {"tenantId": "acme", "userId": "u\"1"},
                "notificationId": "01HZX5J3K9Q8W7E6R5T4Y3U2I1",
                "category": "chat",
            })
        );
        assert_eq!(
            m["android"],
            json!({
                "urgency": "HIGH",
                "ttl": "600s",
                "collapse_key": 7,
                "notification": {
                    "title": "Hello", "body": "World",
                    "title_loc_key": "T", "title_loc_args": ["x"],
                    "body_loc_key": "B", "body_loc_args": ["y", "z"],
                    "sound": "default", "icon": "ic",
                    "click_action": {"type": 3},
                },
            })
        );
    }

    #[test]
    fn urgency_ttl_and_silence() {
        let mut n = notification();
        for (p, want) in [(Priority::High, "HIGH"), (Priority::Normal, "NORMAL"), (Priority::Low, "NORMAL")] {
            n.priority = p;
            assert_eq!(body(&n, &["t"])["message"]["android"]["urgency"], want);
        }
        assert!(body(&n, &["t"])["message"]["android"].get("ttl").is_none());
        n.time_to_live = Some(30 * 24 * 3600);
        assert_eq!(body(&n, &["t"])["message"]["android"]["ttl"], "1296000s");
        n.time_to_live = Some(-3);
        assert_eq!(body(&n, &["t"])["message"]["android"]["ttl"], "0s");
        n.silent = true;
        let m = body(&n, &["t"]);
        assert!(m["message"]["android"].get("notification").is_none());
        assert!(m["message"].get("notification").is_none());
        assert!(m["message"]["data"].as_str().unwrap().contains("notificationId"));
    }

    #[test]
    fn loc_keys_stand_in_for_a_missing_title_and_body() {
        let mut n = notification();
        n.title = None;
        n.body = None;
        n.title_loc_key = Some("T".into());
        n.body_loc_key = Some("B".into());
        let nf = &body(&n, &["t"])["message"]["android"]["notification"];
        assert_eq!(nf["title"], "T");
        assert_eq!(nf["body"], "B");
    }

    #[test]
    fn collapse_keys() {
        assert_eq!(collapse_group("0"), 0);
        assert_eq!(collapse_group("100"), 100);
        assert_eq!(collapse_group(" 42 "), 42);
        // Out of range numbers and strings hash into 0..100, stably.
        for key in ["101", "-1", "chat-thread-9", "", "ünïcode"] {
            let g = collapse_group(key);
            assert!((0..100).contains(&g), "{key}: {g}");
            assert_eq!(g, collapse_group(key));
        }
        // FNV-1a 64 of "a" is 0xaf63dc4c8601ec8c.
        assert_eq!(collapse_group("a"), (0xaf63_dc4c_8601_ec8c_u64 % 100) as i64);
        let mut n = notification();
        n.collapse_key = Some("orders".into());
        assert_eq!(body(&n, &["t"])["message"]["android"]["collapse_key"], json!(collapse_group("orders")));
    }

    #[test]
    fn token_counts_and_the_request() {
        let p = prepare(&notification()).unwrap();
        assert_eq!(p.request("1", &[], None).unwrap_err().status, 400);
        let many = vec!["t"; MAX_TOKENS + 1];
        assert_eq!(p.request("1", &many, None).unwrap_err().status, 400);
        let r = p.request("1", &many[..MAX_TOKENS], Some(&Bearer::new("Bearer", "b").unwrap())).unwrap();
        assert_eq!(r.path, "/v1/1/messages:send");
        let get = |name: http::HeaderName| r.headers.get(name).cloned();
        assert_eq!(get(http::header::AUTHORIZATION).unwrap(), "Bearer b");
        assert!(get(http::header::CONTENT_TYPE).is_some());
    }

    #[test]
    fn the_4k_limit_excludes_tokens() {
        let mut n = notification();
        n.custom_data.insert("pad".into(), json!(""));
        // The suffix is `,` + the weighed message without its `{` + the envelope's `}`.
        let weighed = prepare(&n).unwrap().suffix.len() - 1;
        let fill = 4096 - weighed;
        n.custom_data.insert("pad".into(), json!("x".repeat(fill)));
        let p = prepare(&n).unwrap();
        let big_tokens = vec!["x".repeat(200); 1000];
        let refs: Vec<&str> = big_tokens.iter().map(String::as_str).collect();
        assert!(p.request("1", &refs, None).is_ok());
        n.custom_data.insert("pad".into(), json!("x".repeat(fill + 1)));
        let e = prepare(&n).unwrap_err();
        assert_eq!(e.status, 413);
        assert_eq!(e.message, "payload of 4097 bytes exceeds HMS' 4096-byte limit");
    }

    fn answer(status: u16, retry: Option<&str>, body: &str, tokens: &[&str]) -> Vec<Outcome> {
        let mut h = http::HeaderMap::new();
        if let Some(r) = retry {
            h.insert(http::header::RETRY_AFTER, r.parse().unwrap());
        }
        parse_response(status, &h, body.as_bytes(), tokens)
    }

    #[test]
    fn answers() {
        let t = ["a", "b", "c"];
        let sent = Outcome::Sent { id: Some("r1".into()) };
        assert_eq!(
            answer(200, None, r#"{"code":"80000000","msg":"Success","requestId":"r1"}"#, &t),
            vec![sent.clone(); 3]
        );
        let partial = json!({
            "code": "80100000",
            "msg": json!({"success": 1, "failure": 2, "illegal_tokens": ["a", "c"]}).to_string(),
            "requestId": "r1",
        })
        .to_string();
        let dead = Outcome::Dead { status: 400, reason: "80100000: illegal token".into() };
        assert_eq!(answer(200, None, &partial, &t), vec![dead.clone(), sent.clone(), dead.clone()]);
        assert_eq!(
            answer(200, None, r#"{"code":"80100000","msg":"garbled","requestId":"r1"}"#, &t),
            vec![sent.clone(); 3]
        );
        assert_eq!(
            answer(400, None, r#"{"code":"80300007","msg":"All the tokens are invalid","requestId":"r2"}"#, &t),
            vec![Outcome::Dead { status: 400, reason: "80300007: All the tokens are invalid".into() }; 3]
        );
        for (status, code) in [(401, "80200001"), (401, "80200003"), (401, "1"), (200, "80200003")] {
            let o = answer(status, None, &format!(r#"{{"code":"{code}","msg":"m"}}"#), &t);
            assert!(matches!(o[0], Outcome::AuthRefused { .. }), "{code}: {o:?}");
            assert_eq!(o.len(), 3);
        }
        for (status, code) in [(429, "80300013"), (503, "81000001"), (500, "81000001"), (200, "81000001")] {
            let o = answer(status, Some("4"), &format!(r#"{{"code":"{code}","msg":"m"}}"#), &t);
            assert_eq!(
                o[2],
                Outcome::Retry { status, reason: format!("{code}: m"), after: Some(Duration::from_secs(4)) }
            );
        }
        assert_eq!(
            answer(413, None, r#"{"code":"80300008","msg":"too big"}"#, &t)[0],
            Outcome::Failed { status: 413, reason: "80300008: too big".into() }
        );
        for code in ["80100003", "80100013", "80100001"] {
            assert_eq!(
                answer(400, None, &format!(r#"{{"code":"{code}","msg":"bad"}}"#), &t)[1],
                Outcome::Failed { status: 400, reason: format!("{code}: bad") }
            );
        }
        assert_eq!(
            answer(400, None, r#"{"code":"80300010","msg":"tokens"}"#, &t)[0],
            Outcome::Failed { status: 400, reason: "80300010: tokens".into() }
        );
        assert_eq!(
            answer(200, None, r#"{"code":80300002,"msg":"no permission"}"#, &t)[0],
            Outcome::Failed { status: 400, reason: "80300002: no permission".into() }
        );
        assert_eq!(answer(200, None, "", &t), vec![Outcome::Sent { id: None }; 3]);
        assert_eq!(answer(200, None, "", &[]), vec![]);
    }

    #[tokio::test]
    async fn tokens_are_fetched_with_client_credentials() {
        use super::super::auth_http::test_server;
        let server = test_server::start(
            vec![
                (200, r#"{"access_token":"h1","expires_in":3600,"token_type":"Bearer"}"#.into()),
                (401, r#"{"error":1102,"sub_error":20152,"error_description":"invalid client_secret"}"#.into()),
            ],
            Duration::ZERO,
        )
        .await;
        let auth = OAuth::new(ClientCredentials::new("123", "s&cret", &server.url), test_server::client());
        assert_eq!(auth.token().await.unwrap().token(), "h1");
        assert_eq!(
            server.bodies.lock().unwrap()[0],
            "grant_type=client_credentials&client_id=123&client_secret=s%26cret"
        );
        auth.refused("h1");
        let e = auth.token().await.unwrap_err();
        assert!(e.reason.contains("401") && e.reason.contains("20152"), "{e:?}");
        assert!(!format!("{auth:?}").contains("s&cret"));
    }
}
