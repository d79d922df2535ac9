//! Catalogue services (spec 002 "Catalogue service").

use super::validate;
use crate::error::{ApiError, ApiResult};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields, bound(deserialize = "T: Deserialize<'de>"))]
pub struct Localized<T> {
    pub default: T,
    #[serde(default)]
    pub locales: Vec<Locale<T>>,
}

#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Locale<T> {
    pub language: String,
    pub value: T,
}

#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Image {
    pub id: String,
    pub etag: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Tags {
    #[serde(default)]
    pub categories: Vec<String>,
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
    pub title: Localized<String>,
    pub description: Option<Localized<String>>,
    pub launch_instructions: Option<serde_json::Map<String, serde_json::Value>>,
    #[serde(rename = "type")]
    pub kind: String,
    pub behaviour: Option<String>,
    pub tags: Option<Tags>,
    pub requirements: Option<BTreeMap<String, String>>,
    #[serde(default)]
    pub searchable: bool,
    pub date1: Option<String>,
    pub logo: Option<Image>,
    pub banner: Option<Localized<Image>>,
    pub spotlight: Option<Localized<Image>>,
    pub status: Option<String>,
}

pub fn check_uuid(field: &str, v: &str) -> ApiResult<()> {
    uuid::Uuid::parse_str(v).map(|_| ()).map_err(|_| ApiError::field(field, "must be a UUID"))
}

impl CatalogueService {
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
    pub resource_version: u64,
    pub value: T,
}

/// A W3C `traceparent`: `00-<32 hex>-<16 hex>-<2 hex>`, ids not all zero.
pub fn check_traceparent(v: &str) -> ApiResult<()> {
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
