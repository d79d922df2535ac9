//! What FCM and Push Kit messages share: the data map, the `android` block and
//! its notification, the 4 KB limit, and the envelope around the token(s).
//!
//! A payload is the message JSON after its `token` field, encoded once; a
//! request is the envelope's prefix, the token (or token list) and that suffix.

use bytes::{BufMut, Bytes, BytesMut};
use serde_json::{json, Map, Value};

use super::{Bearer, FormatError, Notification, Priority, WireRequest};

/// The `data` of a message: customData, `sender`, `notificationId` and
/// `category`, each value passed through `value` (FCM wants strings).
pub(super) fn data(n: &Notification, value: impl Fn(Value) -> Value) -> Map<String, Value> {
    let mut data = Map::new();
    for (k, v) in &n.custom_data {
        data.insert(k.clone(), value(v.clone()));
    }
    if let Some((tenant, user)) = &n.sender {
        data.insert("sender".into(), value(json!({ "tenantId": tenant, "userId": user })));
    }
    data.insert("notificationId".into(), Value::String(n.id.clone()));
    data.insert("category".into(), Value::String(n.category.clone()));
    data
}

/// How one provider spells the `android` block.
pub(super) struct Dialect {
    /// `priority` (FCM) or `urgency` (HMS), and its HIGH and NORMAL values.
    pub priority: (&'static str, &'static str, &'static str),
    /// The longest ttl the provider keeps a message, in seconds.
    pub max_ttl: i64,
}

/// The `android` block without its notification: priority, ttl (capped,
/// never negative) and collapse key (as the provider wants it).
pub(super) fn android(n: &Notification, d: &Dialect, collapse: Option<Value>) -> Map<String, Value> {
    let (key, high, normal) = d.priority;
    let mut android = Map::new();
    let priority = match n.priority {
        Priority::High => high,
        Priority::Normal | Priority::Low => normal,
    };
    android.insert(key.into(), json!(priority));
    if let Some(ttl) = n.time_to_live {
        android.insert("ttl".into(), json!(format!("{}s", ttl.clamp(0, d.max_ttl))));
    }
    if let Some(key) = collapse {
        android.insert("collapse_key".into(), key);
    }
    android
}

/// An Android notification shown with `title` and `body`, with the
/// localisation keys and arguments, sound and icon.
pub(super) fn notification(n: &Notification, title: Option<&String>, body: Option<&String>) -> Map<String, Value> {
    let mut o = Map::new();
    let fields = [
        ("title", title),
        ("body", body),
        ("title_loc_key", n.title_loc_key.as_ref()),
        ("body_loc_key", n.body_loc_key.as_ref()),
        ("sound", n.sound.as_ref()),
        ("icon", n.icon.as_ref()),
    ];
    for (k, v) in fields {
        if let Some(v) = v {
            o.insert(k.into(), Value::String(v.clone()));
        }
    }
    if !n.title_loc_args.is_empty() {
        o.insert("title_loc_args".into(), json!(n.title_loc_args));
    }
    if !n.body_loc_args.is_empty() {
        o.insert("body_loc_args".into(), json!(n.body_loc_args));
    }
    o
}

/// `{"android": .., "data": ..}` encoded, as it goes after the token: the
/// rest of the message object (`,"android":..,"data":..}`) and the end of the
/// envelope (`}`). Also answers the length of the encoded object, which is
/// what Push Kit weighs.
pub(super) fn suffix(android: Map<String, Value>, data: Value, provider: &str) -> Result<(Bytes, usize), FormatError> {
    let mut rest = Map::new();
    rest.insert("android".into(), Value::Object(android));
    rest.insert("data".into(), data);
    let rest = serde_json::to_vec(&Value::Object(rest))
        .map_err(|e| FormatError { status: 400, message: format!("cannot encode the {provider} message: {e}") })?;
    let mut suffix = Vec::with_capacity(rest.len().saturating_add(1));
    suffix.push(b',');
    suffix.extend_from_slice(&rest[1..]);
    suffix.push(b'}');
    Ok((Bytes::from(suffix), rest.len()))
}

/// The JSON POST of `prefix`, `tokens` as JSON and `suffix` to
/// `{first}{second}{rest}` (`second` percent-encoded), with a bearer.
pub(super) fn request(
    path: [&str; 3],
    prefix: &[u8],
    tokens: &impl serde::Serialize,
    suffix: &Bytes,
    bearer: Option<&Bearer>,
) -> Result<WireRequest, FormatError> {
    let [first, second, rest] = path;
    let mut p =
        String::with_capacity(first.len().saturating_add(second.len()).saturating_add(rest.len()).saturating_add(8));
    p.push_str(first);
    super::push_path_segment(&mut p, second);
    p.push_str(rest);
    let mut writer = BytesMut::with_capacity(prefix.len().saturating_add(64).saturating_add(suffix.len())).writer();
    writer.get_mut().put_slice(prefix);
    serde_json::to_writer(&mut writer, tokens)
        .map_err(|e| FormatError { status: 400, message: format!("cannot encode the token: {e}") })?;
    let mut body = writer.into_inner();
    body.put_slice(suffix);
    Ok(WireRequest { authority: None, path: p, headers: super::json_bearer_headers(bearer), body: body.freeze() })
}
