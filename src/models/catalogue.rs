//! Catalogue services (spec 002 "Catalogue service").

use super::validate;
use crate::error::{ApiError, ApiResult};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A text or image with its per-language variants.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields, bound(deserialize = "T: Deserialize<'de>"))]
pub struct Localized<T> {
    /// The value for a language without its own.
    pub default: T,
    /// Per-language values; may be empty.
    #[serde(default)]
    pub locales: Vec<Locale<T>>,
}

/// The value of one language.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Locale<T> {
    /// Language tag, such as `en` (not checked).
    pub language: String,
    /// The value in that language.
    pub value: T,
}

/// An image stored elsewhere, named by its id.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Image {
    /// UUID of the image (checked).
    pub id: String,
    /// Version tag of the image for caches; not checked.
    pub etag: String,
}

/// Labels clients group and search services by.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Tags {
    /// Categories the service is listed under.
    #[serde(default)]
    pub categories: Vec<String>,
    /// Search keywords.
    #[serde(default)]
    pub keywords: Vec<String>,
}

/// The body of `PUT .../catalogue/services/{serviceId}` and the read form.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CatalogueService {
    /// Set from the path; when given in the body it must agree.
    #[serde(default)]
    pub id: Option<String>,
    /// Name shown to users; `default` 1 to 255 characters.
    pub title: Localized<String>,
    /// Longer text shown to users.
    pub description: Option<Localized<String>>,
    /// How a client opens the service (for example `chatRecipient`); stored as given.
    pub launch_instructions: Option<serde_json::Map<String, serde_json::Value>>,
    /// Service type such as `MiniApp` or `URL`, 1 to 64 characters; lists can leave types out
    /// (`hideType`).
    #[serde(rename = "type")]
    pub kind: String,
    /// How clients present the service (for example `Banner`); stored as given.
    pub behaviour: Option<String>,
    /// Categories and keywords of the service.
    pub tags: Option<Tags>,
    /// Conditions on the user (`min-age`, `max-age`, `gender`, `subcriptionType`); stored as given.
    pub requirements: Option<BTreeMap<String, String>>,
    /// Listed by `onlySearchable=true`; default `false`.
    #[serde(default)]
    pub searchable: bool,
    /// An ISO 8601 date (`YYYY-MM-DD`).
    pub date1: Option<String>,
    /// The service's logo.
    pub logo: Option<Image>,
    /// Banner image, per language.
    pub banner: Option<Localized<Image>>,
    /// Spotlight image, per language.
    pub spotlight: Option<Localized<Image>>,
    /// Lifecycle status such as `Active`; stored as given.
    pub status: Option<String>,
}

/// Refuses `v` unless it is a UUID, naming `field`.
pub(crate) fn check_uuid(field: &str, v: &str) -> ApiResult<()> {
    uuid::Uuid::parse_str(v).map(|_| ()).map_err(|_| ApiError::field(field, "must be a UUID"))
}

impl CatalogueService {
    /// Checks the body for service `path_id` of the path: UUIDs, `title` and `type` lengths,
    /// `date1` a date.
    pub fn validate(&self, path_id: &str) -> ApiResult<()> {
        check_uuid("serviceId", path_id)?;
        if self.id.as_deref().is_some_and(|i| i != path_id) {
            return Err(ApiError::field("id", "must equal the service id of the path"));
        }
        validate::length("title.default", &self.title.default, 1, 255)?;
        validate::length("type", &self.kind, 1, 64)?;
        if let Some(d) = &self.date1 {
            time::Date::parse(d, &time::format_description::well_known::Iso8601::DATE)
                .map_err(|_| ApiError::field("date1", "must be an ISO 8601 date"))?;
        }
        if let Some(l) = &self.logo {
            check_uuid("logo.id", &l.id)?;
        }
        for (name, img) in [("banner", &self.banner), ("spotlight", &self.spotlight)] {
            if let Some(img) = img {
                check_uuid(&format!("{name}.default.id"), &img.default.id)?;
                for (i, l) in img.locales.iter().enumerate() {
                    check_uuid(&format!("{name}.locales[{i}].value.id"), &l.value.id)?;
                }
            }
        }
        Ok(())
    }
}

/// An answer of the catalogue with the tenant's catalogue resource version
/// it reflects (the `resource-version` header over HTTP).
#[derive(Debug, Clone)]
pub struct Versioned<T> {
    /// The tenant's catalogue version the answer reflects; a later read may wait for it
    /// (`MinResourceVersion`).
    pub resource_version: u64,
    /// The answer itself.
    pub value: T,
}

/// A W3C `traceparent`: `00-<32 hex>-<16 hex>-<2 hex>`, ids not all zero.
pub(crate) fn check_traceparent(v: &str) -> ApiResult<()> {
    let parts: Vec<&str> = v.split('-').collect();
    let hex = |s: &str, n: usize| s.len() == n && s.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    let ok = parts.len() == 4
        && hex(parts[0], 2)
        && parts[0] != "ff"
        && hex(parts[1], 32)
        && parts[1].bytes().any(|b| b != b'0')
        && hex(parts[2], 16)
        && parts[2].bytes().any(|b| b != b'0')
        && hex(parts[3], 2);
    if ok {
        Ok(())
    } else {
        Err(ApiError::field("traceparent", "must be a W3C trace context: 00-<32 hex>-<16 hex>-<2 hex>"))
    }
}
