//! Realm configuration: the LDAP user-federation component (spec 001 "LDAP
//! component") and its rules, the app settings, the login configuration.

use crate::error::{ApiError, ApiResult};
use herald_storage::identity::LdapComponent;
use herald_storage::settings::LoginConfig;
use herald_storage::Secret;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

/// What a stored `bindCredential` reads as.
pub const MASK: &str = "**********";

/// An LDAP user-federation component to create or replace (`.../v3_ldap/components`).
#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct LdapBody {
    /// The component's id (at most 64 characters): a new UUID when absent on create; on update
    /// it must equal the path's `componentId`.
    pub id: Option<String>,
    /// The component's display name (1 to 255 characters).
    pub name: String,
    /// The provider id; `ldap` when absent.
    pub provider_id: Option<String>,
    /// The user-storage provider type name, `org.<idp>.storage.UserStorageProvider` (1 to 255 characters).
    pub provider_type: String,
    /// The realm the component belongs to; the tenant id when absent.
    pub parent_id: Option<String>,
    /// The settings, each an array of one string; `connectionUrl` (ldap:// or ldaps://) and
    /// `usersDn` are required, the Kerberos fields when Kerberos is on.
    #[schema(schema_with = config_schema)]
    pub config: BTreeMap<String, Vec<String>>,
}

/// `config` as [`LdapBody::validate`] reads it: only the known fields, each an
/// array of one string, booleans as `"true"`/`"false"`, integers in decimal
/// (empty allowed but for `priority`), the closed sets of [`ENUMS`].
fn config_schema() -> utoipa::openapi::Object {
    use utoipa::openapi::schema::{AdditionalProperties, ArrayBuilder, ObjectBuilder, Type};
    let one =
        |item: utoipa::openapi::Object| ArrayBuilder::new().items(item).min_items(Some(1)).max_items(Some(1)).build();
    let text = || ObjectBuilder::new().schema_type(Type::String).max_length(Some(4096));
    let mut config = ObjectBuilder::new().schema_type(Type::Object);
    for k in BOOLEANS {
        config = config.property(k, one(crate::openapi::schema::strings(&["true", "false"])));
    }
    for (k, min, max) in INTEGERS {
        // Empty is allowed but for `priority`; small ranges are listed, larger ones are decimal integers.
        let empty = (k != "priority").then_some(String::new());
        let schema = if max.checked_sub(min).is_some_and(|d| d <= 60) {
            let values: Vec<String> = (min..=max).map(|n| n.to_string()).chain(empty).collect();
            crate::openapi::schema::strings(&values.iter().map(String::as_str).collect::<Vec<_>>())
        } else {
            // As `str::parse::<i64>` reads them: an optional sign, decimal digits.
            let number = match min {
                0.. => "[+]?[0-9]+",
                -1 => "-1|[+]?[0-9]+",
                _ => "[+-]?[0-9]+",
            };
            let pattern = if empty.is_some() { format!("^({number})?$") } else { format!("^({number})$") };
            text().pattern(Some(pattern)).build()
        };
        config = config.property(k, one(schema));
    }
    for (k, allowed) in ENUMS {
        config = config.property(k, one(crate::openapi::schema::strings(allowed)));
    }
    for k in TEXTS {
        config = config.property(k, one(text().build()));
    }
    config
        .required("connectionUrl")
        .required("usersDn")
        .additional_properties(Some(AdditionalProperties::FreeForm(false)))
        .build()
}

const BOOLEANS: [&str; 16] = [
    "enabled",
    "importEnabled",
    "syncRegistrations",
    "validatePasswordPolicy",
    "connectionPooling",
    "pagination",
    "allowKerberosAuthentication",
    "debug",
    "useKerberosForPasswordAuthentication",
    "fullSyncEnabled",
    "changedSyncEnabled",
    "trustEmail",
    "connectionTrace",
    "startTls",
    "usePasswordModifyExtendedOp",
    "allowPasswordAuthentication",
];

/// Integer fields and their ranges.
const INTEGERS: [(&str, i64, i64); 12] = [
    ("priority", i64::MIN, i64::MAX),
    ("searchScope", 1, 2),
    ("connectionTimeout", 0, i64::MAX),
    ("readTimeout", 0, i64::MAX),
    ("batchSizeForSync", 1, i64::MAX),
    ("fullSyncPeriod", -1, i64::MAX),
    ("changedSyncPeriod", -1, i64::MAX),
    ("evictionMinute", 0, 59),
    ("evictionHour", 0, 23),
    ("evictionDay", 1, 7),
    ("maxLifespan", 0, i64::MAX),
    ("lastSync", 0, i64::MAX),
];

const ENUMS: [(&str, &[&str]); 5] = [
    ("editMode", &["READ_ONLY", "WRITABLE", "UNSYNCED"]),
    ("vendor", &["ad", "rhds", "tivoli", "edirectory", "other"]),
    ("authType", &["none", "simple"]),
    ("cachePolicy", &["DEFAULT", "EVICT_DAILY", "EVICT_WEEKLY", "MAX-LIFESPAN", "NO_CACHE"]),
    ("useTruststoreSpi", &["always", "never", "ldapsOnly"]),
];

/// Free-text fields (DNs, URLs, Kerberos names, LDAP attribute names).
const TEXTS: [&str; 14] = [
    "connectionUrl",
    "usersDn",
    "bindDn",
    "bindCredential",
    "customUserSearchFilter",
    "kerberosRealm",
    "serverPrincipal",
    "keyTab",
    "usernameLDAPAttribute",
    "rdnLDAPAttribute",
    "uuidLDAPAttribute",
    "userObjectClasses",
    "krbPrincipalAttribute",
    "referral",
];

impl LdapBody {
    /// The one value of a config field, if present.
    pub fn value(&self, k: &str) -> Option<&str> {
        self.config.get(k).and_then(|v| v.first()).map(String::as_str)
    }

    /// Validates the body; `has_stored_credential` lets an update keep the sealed
    /// `bindCredential` by sending the mask.
    pub fn validate(&self, has_stored_credential: bool) -> ApiResult<()> {
        super::validate::id("name", &self.name, 1, 255)?;
        super::validate::id("providerType", &self.provider_type, 1, 255)?;
        if let Some(id) = &self.id {
            super::validate::id("id", id, 1, 64)?;
        }
        for (k, v) in &self.config {
            let f = format!("config.{k}");
            if v.len() != 1 {
                return Err(ApiError::field(&f, "must be an array holding one string"));
            }
            let s = v[0].as_str();
            super::validate::id(&f, s, 0, 4096)?;
            if BOOLEANS.contains(&k.as_str()) {
                if s != "true" && s != "false" {
                    return Err(ApiError::field(&f, "must be \"true\" or \"false\""));
                }
            } else if let Some((_, min, max)) = INTEGERS.iter().find(|(n, _, _)| *n == k.as_str()) {
                match s.parse::<i64>() {
                    Ok(n) if (*min..=*max).contains(&n) => {}
                    _ if s.is_empty() && k != "priority" => {}
                    _ => return Err(ApiError::field(&f, format!("must be an integer from {min} to {max}"))),
                }
            } else if let Some((_, allowed)) = ENUMS.iter().find(|(n, _)| *n == k.as_str()) {
                if !allowed.contains(&s) {
                    return Err(ApiError::field(&f, format!("must be one of {}", allowed.join(", "))));
                }
            } else if !TEXTS.contains(&k.as_str()) {
                return Err(ApiError::field(&f, "unknown LDAP configuration field"));
            }
        }
        for required in ["connectionUrl", "usersDn"] {
            if self.value(required).is_none_or(str::is_empty) {
                return Err(ApiError::field(&format!("config.{required}"), "is required"));
            }
        }
        let url = self.value("connectionUrl").unwrap_or("");
        if !url.split_whitespace().all(|u| u.starts_with("ldap://") || u.starts_with("ldaps://")) {
            return Err(ApiError::field("config.connectionUrl", "must be ldap:// or ldaps:// URLs"));
        }
        if let Some(f) = self.value("customUserSearchFilter").filter(|f| !f.is_empty()) {
            if !(f.starts_with('(') && f.ends_with(')')) {
                return Err(ApiError::field("config.customUserSearchFilter", "must start with ( and end with )"));
            }
        }
        if self.value("authType") == Some("simple") {
            if self.value("bindDn").is_none_or(str::is_empty) {
                return Err(ApiError::field("config.bindDn", "is required when authType is simple"));
            }
            let cred = self.value("bindCredential").unwrap_or("");
            if cred.is_empty() || (cred == MASK && !has_stored_credential) {
                return Err(ApiError::field("config.bindCredential", "is required when authType is simple"));
            }
        }
        if self.value("allowKerberosAuthentication") == Some("true") {
            for k in ["kerberosRealm", "serverPrincipal", "keyTab"] {
                if self.value(k).is_none_or(str::is_empty) {
                    return Err(ApiError::field(
                        &format!("config.{k}"),
                        "is required when allowKerberosAuthentication is true",
                    ));
                }
            }
        }
        Ok(())
    }
}

/// An LDAP component as it is read: a stored `bindCredential` shows as
/// [`MASK`].
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LdapView {
    /// The component's id: the `componentId` of its path.
    pub id: String,
    /// The component's display name.
    pub name: String,
    /// The provider id (`ldap` unless the body named another).
    pub provider_id: String,
    /// The user-storage provider type name.
    pub provider_type: String,
    /// The realm the component belongs to (the tenant id by default).
    pub parent_id: String,
    /// The settings as written, each an array of one string; a stored `bindCredential` shows as `**********`.
    pub config: BTreeMap<String, Vec<String>>,
}

impl LdapView {
    /// The reading form of a stored component, its credential masked.
    pub fn of(c: &LdapComponent) -> LdapView {
        let mut config = c.config.clone();
        if c.bind_credential.is_some() {
            config.insert("bindCredential".into(), vec![MASK.into()]);
        }
        LdapView {
            id: c.id.clone(),
            name: c.name.clone(),
            provider_id: c.provider_id.clone(),
            provider_type: c.provider_type.clone(),
            parent_id: c.parent_id.clone(),
            config,
        }
    }
}

/// The login configuration of a tenant (spec 002), as written and read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct LoginConfigBody {
    /// How logins are assessed for risk.
    pub risks: Risks,
}

/// The risk part of the login configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Risks {
    /// Whether logins are scored by risk inference.
    pub enable_inference: bool,
}

impl From<LoginConfig> for LoginConfigBody {
    fn from(c: LoginConfig) -> LoginConfigBody {
        LoginConfigBody { risks: Risks { enable_inference: c.enable_inference } }
    }
}

impl From<LoginConfigBody> for LoginConfig {
    fn from(b: LoginConfigBody) -> LoginConfig {
        LoginConfig { enable_inference: b.risks.enable_inference }
    }
}

/// App settings: `<prefix>_version`, `_link`, `_update_by`, `_build_number`.
pub const APP_PREFIXES: [&str; 5] = ["flutter_android", "flutter_ios", "macos", "windows", "huawei"];

/// Every app-settings key: `_version`, `_link`, `_update_by` and `_build_number` after each of [`APP_PREFIXES`].
pub fn app_setting_keys() -> Vec<String> {
    APP_PREFIXES
        .iter()
        .flat_map(|p| ["version", "link", "update_by", "build_number"].map(|s| format!("{p}_{s}")))
        .collect()
}

/// The app settings of a realm as read: every key of [`app_setting_keys`]
/// (empty when unset).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(transparent)]
pub struct AppSettings(pub BTreeMap<String, String>);

/// App settings to write: some keys of [`app_setting_keys`], each a string
/// ([`app_settings_body`] checks them, naming the key it refuses).
#[derive(Debug, Clone, Deserialize)]
#[serde(transparent)]
pub struct AppSettingsWrite(pub BTreeMap<String, Value>);

/// The keys of [`app_setting_keys`] as properties, strings of at most 2048
/// characters; no other key.
fn app_settings_schema(all_required: bool) -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
    use utoipa::openapi::schema::{AdditionalProperties, ObjectBuilder, Type};
    let mut object = ObjectBuilder::new().additional_properties(Some(AdditionalProperties::FreeForm(false)));
    for key in app_setting_keys() {
        object = object.property(&key, ObjectBuilder::new().schema_type(Type::String).max_length(Some(2048)));
        if all_required {
            object = object.required(key);
        }
    }
    object.into()
}

impl utoipa::PartialSchema for AppSettings {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        app_settings_schema(true)
    }
}

impl utoipa::ToSchema for AppSettings {
    fn name() -> std::borrow::Cow<'static, str> {
        "AppSettings".into()
    }
}

impl utoipa::PartialSchema for AppSettingsWrite {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        app_settings_schema(false)
    }
}

impl utoipa::ToSchema for AppSettingsWrite {
    fn name() -> std::borrow::Cow<'static, str> {
        "AppSettingsWrite".into()
    }
}

/// What a write does to the sealed `bindCredential` of a component.
#[derive(Debug, Clone, PartialEq)]
pub enum BindCredential {
    /// The mask was sent: the stored one stays.
    Keep,
    /// A new one, sealed before the transaction.
    Set(Secret),
    /// None, or an empty one.
    Clear,
}

impl BindCredential {
    /// The credential of the component once written over `old`.
    pub fn resolve(&self, old: Option<&LdapComponent>) -> Option<Secret> {
        match self {
            BindCredential::Keep => old.and_then(|o| o.bind_credential.clone()),
            BindCredential::Set(s) => Some(s.clone()),
            BindCredential::Clear => None,
        }
    }
}

/// Takes the `bindCredential` out of the body's `config` (it is stored
/// sealed, apart: see [`BindCredential`]).
pub fn take_bind_credential(body: &mut LdapBody) -> Option<String> {
    body.config.remove("bindCredential").and_then(|v| v.into_iter().next())
}

/// The stored component of `body` (without its `bindCredential`), over `old`.
pub fn component(
    tenant: &str,
    id: &str,
    body: LdapBody,
    credential: &BindCredential,
    old: Option<&LdapComponent>,
) -> LdapComponent {
    LdapComponent {
        id: id.to_string(),
        name: body.name,
        provider_id: body.provider_id.unwrap_or_else(|| "ldap".into()),
        provider_type: body.provider_type,
        parent_id: body.parent_id.unwrap_or_else(|| tenant.to_string()),
        config: body.config,
        bind_credential: credential.resolve(old),
    }
}

/// The app settings of a `PUT /appsettings` body: known keys, string values.
pub fn app_settings_body(body: &BTreeMap<String, Value>) -> ApiResult<BTreeMap<String, String>> {
    let keys = app_setting_keys();
    let mut out = BTreeMap::new();
    for (k, v) in body {
        let Value::String(s) = v else {
            app_setting(&keys, k, "")?;
            return Err(ApiError::field(k, "must be a string"));
        };
        app_setting(&keys, k, s)?;
        out.insert(k.clone(), s.clone());
    }
    Ok(out)
}

/// App settings to write: known keys, values of at most 2048 characters.
pub fn validate_app_settings(body: &BTreeMap<String, String>) -> ApiResult<()> {
    let keys = app_setting_keys();
    body.iter().try_for_each(|(k, v)| app_setting(&keys, k, v))
}

fn app_setting(keys: &[String], k: &str, v: &str) -> ApiResult<()> {
    if !keys.iter().any(|x| x == k) {
        return Err(ApiError::field(k, "unknown app setting"));
    }
    super::validate::id(k, v, 0, 2048)
}

/// Sets the keys of `body` in `stored`; a changed version or link stamps
/// `<prefix>_update_by` with `now` unless the body sets it.
pub fn merge_app_settings(stored: &mut BTreeMap<String, String>, body: &BTreeMap<String, String>, now: u64) {
    let mut touched = Vec::new();
    for (k, v) in body {
        if stored.get(k) != Some(v) {
            touched.push(k.clone());
        }
        stored.insert(k.clone(), v.clone());
    }
    for k in touched {
        if let Some(prefix) = k.strip_suffix("_version").or_else(|| k.strip_suffix("_link")) {
            let stamp = format!("{prefix}_update_by");
            if !body.contains_key(&stamp) {
                stored.insert(stamp, now.to_string());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_changed_version_or_link_is_stamped_unless_the_body_stamps_it() {
        let mut stored: BTreeMap<String, String> = [("macos_version".to_string(), "1".to_string())].into();
        let body = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
            pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
        };
        merge_app_settings(&mut stored, &body(&[("macos_version", "1")]), 5);
        assert!(!stored.contains_key("macos_update_by"), "unchanged");
        merge_app_settings(&mut stored, &body(&[("macos_version", "2"), ("windows_link", "x")]), 6);
        assert_eq!(stored["macos_update_by"], "6");
        assert_eq!(stored["windows_update_by"], "6");
        merge_app_settings(&mut stored, &body(&[("macos_version", "3"), ("macos_update_by", "99")]), 7);
        assert_eq!(stored["macos_update_by"], "99");
        merge_app_settings(&mut stored, &body(&[("macos_build_number", "12")]), 8);
        assert_eq!(stored["macos_update_by"], "99", "a build number stamps nothing");
    }

    #[test]
    fn app_settings_bodies_name_known_keys_with_strings() {
        let ok: BTreeMap<String, Value> = serde_json::from_str(r#"{"macos_version":"1"}"#).unwrap();
        assert_eq!(app_settings_body(&ok).unwrap()["macos_version"], "1");
        let unknown: BTreeMap<String, Value> = serde_json::from_str(r#"{"ios":"1"}"#).unwrap();
        assert!(app_settings_body(&unknown).is_err());
        let number: BTreeMap<String, Value> = serde_json::from_str(r#"{"macos_version":1}"#).unwrap();
        assert!(app_settings_body(&number).is_err());
    }

    #[test]
    fn a_masked_credential_keeps_the_stored_one() {
        let key = herald_storage::MasterKey::from_bytes(&[7; 32]).unwrap();
        let (one, two) = (key.seal(b"one", "c").unwrap(), key.seal(b"two", "c").unwrap());
        let sealed = |b: u8| if b == 1 { one.clone() } else { two.clone() };
        let old = LdapComponent {
            id: "l".into(),
            name: "n".into(),
            provider_id: "ldap".into(),
            provider_type: "t".into(),
            parent_id: "acme".into(),
            config: BTreeMap::new(),
            bind_credential: Some(sealed(1)),
        };
        assert_eq!(BindCredential::Keep.resolve(Some(&old)), Some(sealed(1)));
        assert_eq!(BindCredential::Keep.resolve(None), None);
        assert_eq!(BindCredential::Set(sealed(2)).resolve(Some(&old)), Some(sealed(2)));
        assert_eq!(BindCredential::Clear.resolve(Some(&old)), None);
    }
}
