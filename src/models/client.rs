//! Device clients: registration and user links.

use super::validate;
use crate::error::ApiResult;
use serde::{Deserialize, Serialize};

/// `POST /v1/tenants/{t}/clients`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RegisterClient {
    /// The app the client is an installation of: an app of the tenant (1 to 32 characters).
    pub app_name: String,
    /// The device platform (1 to 100 characters), shown as `appPlatform`.
    pub platform: String,
    /// The app's version on the device (at most 255 characters).
    pub app_version: Option<String>,
    /// The Herald SDK version the app embeds (at most 255 characters).
    pub sdk_version: Option<String>,
    /// User-facing name of the device (at most 255 characters).
    pub device_name: Option<String>,
    /// Device model (at most 255 characters).
    pub client_device: Option<String>,
    /// Operating-system version of the device (at most 255 characters).
    pub client_os_version: Option<String>,
    /// Preferred locales, most preferred first: at most 50, each 1 to 35 characters.
    #[serde(default)]
    pub locales: Vec<String>,
    /// Free-text risk flags the client detected (at most 255 characters).
    pub risks: Option<String>,
    /// The client's own risk analysis, stored as given.
    pub risk_analysis: Option<RiskAnalysis>,
}

impl RegisterClient {
    /// Checks the lengths and the locales (400 naming the first offending
    /// field); whether the app exists is checked when the client is stored.
    pub fn validate(&self) -> ApiResult<()> {
        validate::id("appName", &self.app_name, 1, 32)?;
        validate::length("platform", &self.platform, 1, 100)?;
        for (field, value) in [
            ("appVersion", &self.app_version),
            ("sdkVersion", &self.sdk_version),
            ("deviceName", &self.device_name),
            ("clientDevice", &self.client_device),
            ("clientOsVersion", &self.client_os_version),
        ] {
            validate::max_length(field, value, 255)?;
        }
        validate::max_length("risks", &self.risks, 255)?;
        validate_locales(&self.locales)
    }
}

/// The answer of a registration: the secret is shown this once.
#[derive(Debug, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Registered {
    /// The new client's id (a ULID): its `client_id` at the token endpoint and its id in every client path.
    pub ast_client_id: String,
    /// The secret the client authenticates with at the token endpoint; stored only hashed.
    pub client_secret: String,
}

/// `PUT /v1/tenants/{t}/users/{userId}/clients/{astClientId}`.
#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct LinkBody {
    /// The link's level of assurance (1 to 64 characters); `none` when absent.
    #[serde(rename = "mLoA")]
    pub mloa: Option<String>,
}

/// A client link as read by a user's client list (spec 002 "Client link").
#[derive(Debug, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LinkView {
    /// The user linked to the client.
    pub user_id: String,
    /// The client (a ULID) the user is linked to.
    pub ast_client_id: String,
    /// The tenant of the user and the client.
    pub tenant_id: String,
    /// The link's level of assurance; `none` unless the link set one.
    #[serde(rename = "mLoA")]
    pub mloa: String,
    /// When the link was first made, milliseconds since the Unix epoch.
    pub linked_on: u64,
    /// When the mLoA last changed (the link time until it does), milliseconds since the Unix epoch.
    #[serde(rename = "mLoAUpdatedOn")]
    pub mloa_updated_on: u64,
}

/// A user linked to a client, as the users of a client list them.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClientUser {
    /// A user linked to the client.
    pub user_id: String,
    /// The level of assurance of that link.
    #[serde(rename = "mLoA")]
    pub mloa: String,
}

impl ClientUser {
    /// The user side of a link.
    pub fn of(link: LinkView) -> ClientUser {
        ClientUser { user_id: link.user_id, mloa: link.mloa }
    }
}

/// Spec 002 `riskAnalysis`, checked for shape and kept as given.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RiskAnalysis {
    /// The platform the analysis ran on, as the client names it.
    pub platform: Option<String>,
    /// The detected risks, decoded to text.
    pub decoded_risks: Option<String>,
    /// The overall risk score the client computed.
    pub score: Option<i64>,
    /// How the score was reached.
    pub details: Option<RiskDetails>,
}

/// How a risk score was reached: its scoring entries and each detected risk.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RiskDetails {
    /// The entries the score is made of (none when absent).
    #[serde(default)]
    pub scoring: Vec<Scoring>,
    /// Each detected risk with its own score (none when absent).
    #[serde(default)]
    pub itemized_risks: Vec<ItemizedRisk>,
}

/// One entry of a risk score.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Scoring {
    /// What this entry adds to the score.
    pub value: i64,
    /// The kind of scoring, as the client names it.
    #[serde(rename = "type")]
    pub kind: String,
}

/// One risk the client detected.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ItemizedRisk {
    /// The risk's name, as the client reports it.
    pub name: String,
    /// What this risk adds to the score.
    pub score: i64,
    /// A readable explanation of the risk.
    pub description: String,
}

/// `PUT /v1/tenants/{t}/clients/{astClientId}` (ext): what a client reports of itself.
#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct UpdateClient {
    /// The app's version on the device (at most 255 characters); absent keeps the stored one.
    pub app_version: Option<String>,
    /// The Herald SDK version (at most 255 characters); absent keeps the stored one.
    pub sdk_version: Option<String>,
    /// User-facing name of the device (at most 255 characters); absent keeps the stored one.
    pub device_name: Option<String>,
    /// Device model (at most 255 characters); absent keeps the stored one.
    pub client_device: Option<String>,
    /// Operating-system version (at most 255 characters); absent keeps the stored one.
    pub client_os_version: Option<String>,
    /// Replaces the locales when given: at most 50, each 1 to 35 characters.
    pub locales: Option<Vec<String>>,
    /// Free-text risk flags (at most 255 characters); absent keeps the stored ones.
    pub risks: Option<String>,
    /// Replaces the stored risk analysis when given.
    pub risk_analysis: Option<RiskAnalysis>,
}

impl UpdateClient {
    /// Checks the lengths and the locales; 400 naming the first offending field.
    pub fn validate(&self) -> ApiResult<()> {
        for (field, value) in [
            ("appVersion", &self.app_version),
            ("sdkVersion", &self.sdk_version),
            ("deviceName", &self.device_name),
            ("clientDevice", &self.client_device),
            ("clientOsVersion", &self.client_os_version),
            ("risks", &self.risks),
        ] {
            validate::max_length(field, value, 255)?;
        }
        if let Some(l) = &self.locales {
            validate_locales(l)?;
        }
        Ok(())
    }
}

/// At most 50 locales of 1 to 35 characters each; 400 naming `locales` or `locales[i]`.
pub fn validate_locales(locales: &[String]) -> ApiResult<()> {
    if locales.len() > 50 {
        return Err(crate::error::ApiError::field("locales", "at most 50 items"));
    }
    for (i, l) in locales.iter().enumerate() {
        validate::length(&format!("locales[{i}]"), l, 1, 35)?;
    }
    Ok(())
}

/// `POST /v1/tenants/{t}/clients/lock`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct LockBody {
    /// The client to lock (a ULID); 406 when it is locked already.
    pub ast_client_id: String,
    /// Why it is locked (1 to 255 characters), shown as `lockReason` until it is unlocked.
    pub lock_reason: String,
}

/// `POST /v1/tenants/{t}/unlink` (deprecated).
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct UnlinkOne {
    /// The user whose link is removed (3 to 255 characters).
    pub user_id: String,
    /// The client (a ULID) the user is unlinked from; 404 when they are not linked.
    pub ast_client_id: String,
}

/// Which of a user's clients a disconnect or unlink applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Selection {
    /// Every client of the user (the default).
    AllClients,
    /// Only the clients listed in `clientIds`.
    SpecifiedClients,
    /// Every client of the user except those listed in `clientIds`.
    AllExceptSpecifiedClients,
}

/// Body of disconnect (`disconnectType`) and unlink (`unlinkType`).
#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SelectClients {
    /// Which clients a disconnect applies to (`ALL_CLIENTS` when absent); refused in an unlink body.
    pub disconnect_type: Option<Selection>,
    /// Which clients an unlink applies to (`ALL_CLIENTS` when absent); refused in a disconnect body.
    pub unlink_type: Option<Selection>,
    /// The clients (ULIDs) the mode names: required and non-empty unless the mode is `ALL_CLIENTS`.
    pub client_ids: Option<Vec<String>>,
}

impl SelectClients {
    /// Whether `client` is selected; `kind` is the field carrying the mode.
    pub fn selects(&self, kind: &str) -> ApiResult<impl Fn(&str) -> bool + '_> {
        let mode = if kind == "disconnectType" { self.disconnect_type } else { self.unlink_type };
        let other = if kind == "disconnectType" { self.unlink_type } else { self.disconnect_type };
        if other.is_some() {
            let wrong = if kind == "disconnectType" { "unlinkType" } else { "disconnectType" };
            return Err(crate::error::ApiError::field(wrong, format!("is not a field of this operation (use {kind})")));
        }
        let mode = mode.unwrap_or(Selection::AllClients);
        if mode != Selection::AllClients {
            let ids = self.client_ids.as_deref().unwrap_or_default();
            if ids.is_empty() {
                return Err(crate::error::ApiError::field("clientIds", format!("is required for {kind} {mode:?}")));
            }
            for (i, id) in ids.iter().enumerate() {
                validate::ulid(&format!("clientIds[{i}]"), id)?;
            }
        }
        let ids = self.client_ids.as_deref().unwrap_or_default();
        Ok(move |client: &str| match mode {
            Selection::AllClients => true,
            Selection::SpecifiedClients => ids.iter().any(|c| c == client),
            Selection::AllExceptSpecifiedClients => !ids.iter().any(|c| c == client),
        })
    }
}

/// The lock transition: `Some(reason)` locks an unlocked client, `None`
/// unlocks a locked one; asking for the state it is in already is refused
/// with the reason (the API answers 406).
pub fn set_lock(c: &mut herald_storage::clients::Client, reason: Option<&str>) -> Result<(), String> {
    match (reason, c.is_locked()) {
        (Some(_), true) => Err(format!("client {} is already locked", c.id)),
        (None, false) => Err(format!("client {} is not locked", c.id)),
        (Some(r), false) => {
            c.lock_state = "LOCKED".into();
            c.lock_reason = Some(r.to_string());
            Ok(())
        }
        (None, true) => {
            c.lock_state = "NONE".into();
            c.lock_reason = None;
            Ok(())
        }
    }
}

/// A link as it is after linking `user` to `client` with `mloa` at `now`:
/// a new link, or the existing one (`old`) with its mLoA, whose change time
/// moves only when the mLoA changes.
pub fn link(
    old: Option<herald_storage::links::Link>,
    user: &str,
    client: &str,
    mloa: &str,
    now: u64,
) -> herald_storage::links::Link {
    match old {
        Some(old) => {
            let updated = if old.mloa == mloa { old.mloa_updated_on } else { now };
            herald_storage::links::Link { mloa: mloa.to_string(), mloa_updated_on: updated, ..old }
        }
        None => herald_storage::links::Link {
            user_id: user.to_string(),
            client_id: client.to_string(),
            mloa: mloa.to_string(),
            linked_on: now,
            mloa_updated_on: now,
        },
    }
}

/// A client as the overview of a user's clients shows it.
#[derive(Debug, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClientOverview {
    /// The client's id (a ULID).
    pub ast_client_id: String,
    /// The app the client is an installation of.
    pub app_name: String,
    /// The app's version on the device, as last reported.
    pub app_version: Option<String>,
    /// The device platform the client registered with.
    pub app_platform: String,
    /// Free-text risk flags the client last reported.
    pub risks: Option<String>,
    /// `NONE` or `LOCKED`.
    pub lock_state: String,
    /// Why the client was locked, while it is.
    pub lock_reason: Option<String>,
    /// Error of the client's last login, when it failed.
    pub login_error: Option<String>,
    /// Outcome of the client's last login (`SUCCESS` once a login event is recorded).
    pub login_outcome: Option<String>,
    /// Error of the client's last activation; absent until one is recorded.
    pub activation_error: Option<String>,
    /// Outcome of the client's last activation; absent until one is recorded.
    pub activation_outcome: Option<String>,
    /// The Herald SDK version, as last reported.
    pub sdk_version: Option<String>,
    /// User-facing name of the device, as last reported.
    pub device_name: Option<String>,
    /// Device model, as last reported.
    pub client_device: Option<String>,
    /// Operating-system version of the device, as last reported.
    pub client_os_version: Option<String>,
    /// When the client's last login was recorded, milliseconds since the Unix epoch.
    pub last_login_attempt: Option<u64>,
    /// When the client's last activation was, milliseconds since the Unix epoch; absent until one is recorded.
    pub last_activation_attempt: Option<u64>,
    /// Milliseconds since the Unix epoch.
    pub created_on: u64,
    /// Preferred locales, most preferred first.
    pub locales: Vec<String>,
    /// As the client reported it: stored as [`RiskAnalysis`] wrote it, so of its shape.
    #[schema(value_type = Option<RiskAnalysis>)]
    pub risk_analysis: Option<serde_json::Value>,
}

impl ClientOverview {
    /// The spec 002 "Client overview" of a stored client.
    pub fn of(c: &herald_storage::clients::Client) -> ClientOverview {
        ClientOverview {
            ast_client_id: c.id.clone(),
            app_name: c.app_name.clone(),
            app_version: c.app_version.clone(),
            app_platform: c.platform.clone(),
            risks: c.risks.clone(),
            lock_state: c.lock_state.clone(),
            lock_reason: c.lock_reason.clone(),
            login_error: c.login_error.clone(),
            login_outcome: c.login_outcome.clone(),
            activation_error: c.activation_error.clone(),
            activation_outcome: c.activation_outcome.clone(),
            sdk_version: c.sdk_version.clone(),
            device_name: c.device_name.clone(),
            client_device: c.client_device.clone(),
            client_os_version: c.client_os_version.clone(),
            last_login_attempt: c.last_login_attempt,
            last_activation_attempt: c.last_activation_attempt,
            created_on: c.created_ms,
            locales: c.locales.clone(),
            risk_analysis: risk_analysis(c),
        }
    }
}

/// Spec 002 "Client detail".
#[derive(Debug, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClientDetail {
    /// The client's id (a ULID).
    pub ast_client_id: String,
    /// The app's version on the device, as last reported.
    pub app_version: Option<String>,
    /// Free-text risk flags the client last reported.
    pub risks: Option<String>,
    /// `NONE` or `LOCKED`.
    pub lock_state: String,
    /// Why the client was locked, while it is.
    pub lock_reason: Option<String>,
    /// Device model, as last reported.
    pub client_device: Option<String>,
    /// Operating-system version of the device, as last reported.
    pub client_os_version: Option<String>,
    /// The Herald SDK version, as last reported.
    pub sdk_version: Option<String>,
    /// User-facing name of the device, as last reported.
    pub device_name: Option<String>,
    /// As the client reported it: stored as [`RiskAnalysis`] wrote it, so of its shape.
    #[schema(value_type = Option<RiskAnalysis>)]
    pub risk_analysis: Option<serde_json::Value>,
    /// Milliseconds since the Unix epoch.
    pub created_on: u64,
    /// When its newest link was made or its mLoA changed.
    pub linked_on_or_mloa_updated: Option<u64>,
    /// When the client last passed a verification (a login with a nonce), milliseconds since the Unix epoch.
    pub last_successful_verification: Option<u64>,
    /// When the client last failed a verification, milliseconds since the Unix epoch; absent if it never did.
    pub last_failed_verification: Option<u64>,
}

impl ClientDetail {
    /// `linked` is when its newest link was made or its mLoA changed.
    pub fn of(c: &herald_storage::clients::Client, linked: Option<u64>) -> ClientDetail {
        ClientDetail {
            ast_client_id: c.id.clone(),
            app_version: c.app_version.clone(),
            risks: c.risks.clone(),
            lock_state: c.lock_state.clone(),
            lock_reason: c.lock_reason.clone(),
            client_device: c.client_device.clone(),
            client_os_version: c.client_os_version.clone(),
            sdk_version: c.sdk_version.clone(),
            device_name: c.device_name.clone(),
            risk_analysis: risk_analysis(c),
            created_on: c.created_ms,
            linked_on_or_mloa_updated: linked,
            last_successful_verification: c.last_successful_verification,
            last_failed_verification: c.last_failed_verification,
        }
    }
}

fn risk_analysis(c: &herald_storage::clients::Client) -> Option<serde_json::Value> {
    c.risk_analysis.as_deref().and_then(|r| serde_json::from_str(r).ok())
}

/// The text of a field of an overview, for list filters.
pub fn field_text(v: &serde_json::Value, name: &str) -> Option<String> {
    match v.get(name)? {
        serde_json::Value::Null => None,
        serde_json::Value::String(s) => Some(s.clone()),
        other => Some(other.to_string()),
    }
}

/// The fields a user's client links can be filtered on (`filter=`).
pub const LINK_FIELDS: [&str; 6] = ["userId", "astClientId", "tenantId", "mLoA", "linkedOn", "mLoAUpdatedOn"];

/// The fields the overview of a user's clients can be filtered on (`filter=`).
pub const OVERVIEW_FIELDS: [&str; 19] = [
    "astClientId",
    "appName",
    "appVersion",
    "appPlatform",
    "risks",
    "lockState",
    "lockReason",
    "loginError",
    "loginOutcome",
    "activationError",
    "activationOutcome",
    "sdkVersion",
    "deviceName",
    "clientDevice",
    "clientOsVersion",
    "lastLoginAttempt",
    "lastActivationAttempt",
    "createdOn",
    "locales",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_client_locks_and_unlocks_once_each() {
        let mut c =
            herald_storage::clients::Client { id: "C1".into(), lock_state: "NONE".into(), ..Default::default() };
        assert!(set_lock(&mut c, None).unwrap_err().contains("not locked"));
        set_lock(&mut c, Some("stolen")).unwrap();
        assert!(c.is_locked() && c.lock_reason.as_deref() == Some("stolen"));
        assert!(set_lock(&mut c, Some("again")).unwrap_err().contains("already locked"));
        assert_eq!(c.lock_reason.as_deref(), Some("stolen"), "a refused lock changes nothing");
        set_lock(&mut c, None).unwrap();
        assert!(!c.is_locked() && c.lock_reason.is_none());
    }

    #[test]
    fn relinking_moves_the_mloa_time_only_when_the_mloa_changes() {
        let first = link(None, "alice", "C1", "none", 10);
        assert_eq!((first.linked_on, first.mloa_updated_on), (10, 10));
        let same = link(Some(first.clone()), "alice", "C1", "none", 20);
        assert_eq!((same.linked_on, same.mloa_updated_on), (10, 10));
        let raised = link(Some(same), "alice", "C1", "high", 30);
        assert_eq!((raised.linked_on, raised.mloa_updated_on, raised.mloa.as_str()), (10, 30, "high"));
    }
}
