//! The LDAP user-federation component (spec 001 "LDAP component") and its rules.

use crate::error::{ApiError, ApiResult};
use serde::Deserialize;
use std::collections::BTreeMap;

/// What a stored `bindCredential` reads as.
pub const MASK: &str = "**********";

#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct LdapBody {
    pub id: Option<String>,
    pub name: String,
    pub provider_id: Option<String>,
    pub provider_type: String,
    pub parent_id: Option<String>,
    pub config: BTreeMap<String, Vec<String>>,
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

/// App settings: `<prefix>_version`, `_link`, `_update_by`, `_build_number`.
pub const APP_PREFIXES: [&str; 5] = ["flutter_android", "flutter_ios", "macos", "windows", "huawei"];

pub fn app_setting_keys() -> Vec<String> {
    APP_PREFIXES
        .iter()
        .flat_map(|p| ["version", "link", "update_by", "build_number"].map(|s| format!("{p}_{s}")))
        .collect()
}
