//! Properties (spec 002 "Property"): a value checked against its declared type.

use super::validate;
use crate::error::{ApiError, ApiResult};
use base64::Engine as _;
use serde::{Deserialize, Serialize};

/// Values of `type`; `value` must parse as its type.
pub const TYPES: [&str; 5] = ["OCTETSTRING", "INTEGER", "BOOLEAN", "UTF8STRING", "DATE"];
/// Values of the items of `visibility`.
pub const VISIBILITY: [&str; 3] = ["CLIENT", "INTERNAL", "EXTERNAL"];
/// Values of `encryption` (absent: `NONE`).
pub const ENCRYPTIONS: [&str; 2] = ["NONE", "SERVER_SIDE_DB"];
/// Values of `cpFlags` (absent: 0).
pub const CP_FLAGS: [u32; 3] = [0, 512, 768];

fn type_schema() -> utoipa::openapi::Object {
    crate::openapi::schema::strings(&TYPES)
}

fn encryption_schema() -> utoipa::openapi::Object {
    crate::openapi::schema::nullable_strings(&ENCRYPTIONS)
}

fn cp_flags_schema() -> utoipa::openapi::Object {
    use utoipa::openapi::schema::{ObjectBuilder, SchemaType, Type};
    let values = CP_FLAGS.iter().map(|&f| serde_json::Value::from(f)).chain([serde_json::Value::Null]);
    ObjectBuilder::new()
        .schema_type(SchemaType::from_iter([Type::Integer, Type::Null]))
        .enum_values(Some(values))
        .build()
}

fn visibility_schema() -> utoipa::openapi::schema::Array {
    crate::openapi::schema::nullable_string_array(&VISIBILITY)
}

/// Fields a property list's `filter=` may name; another answers 400 `UnknownProperty`.
pub const FIELDS: [&str; 8] = ["name", "type", "encryption", "readOnly", "notify", "inKeystorage", "cpFlags", "value"];

/// Body of a property create (spec 002 "Property"); unknown fields are refused.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PropertyBody {
    /// 3 to 255 characters, unique per user and client (409 on a duplicate).
    pub name: String,
    /// Type of `value`: `OCTETSTRING` (base64), `INTEGER` (digits), `BOOLEAN` (`true`, `false`),
    /// `UTF8STRING`, `DATE` (ISO 8601).
    #[serde(rename = "type")]
    #[schema(schema_with = type_schema)]
    pub kind: String,
    /// Not empty, in the format of `type`.
    pub value: String,
    /// `SERVER_SIDE_DB`: stored encrypted, shown to administrators only. Absent or null: `NONE`.
    #[schema(schema_with = encryption_schema)]
    pub encryption: Option<String>,
    /// A flag for the clients that the value is not to be changed; stored as given, default
    /// `false`.
    pub read_only: Option<bool>,
    /// `true`: the client is notified of changes; default `false`.
    pub notify: Option<bool>,
    /// `true`: protected mode tied to the client's virtual smartcard; default `false`.
    pub in_keystorage: Option<bool>,
    /// Caching: 0 none (default), 512 synchronized from the SDK, 768 synchronized from the service.
    #[schema(schema_with = cp_flags_schema)]
    pub cp_flags: Option<u32>,
    /// Who may see the property: `CLIENT`, `INTERNAL`, `EXTERNAL`; absent or null: not set.
    #[schema(schema_with = visibility_schema)]
    pub visibility: Option<Vec<String>>,
}

impl PropertyBody {
    /// The spec's rules: name length, a known `type` that `value` parses as, known `encryption`,
    /// `cpFlags` and `visibility` values.
    pub fn validate(&self) -> ApiResult<()> {
        validate::id("name", &self.name, 3, 255)?;
        if !TYPES.contains(&self.kind.as_str()) {
            return Err(ApiError::field("type", "must be one of OCTETSTRING, INTEGER, BOOLEAN, UTF8STRING, DATE"));
        }
        if self.value.is_empty() {
            return Err(ApiError::field("value", "must not be empty"));
        }
        check_value(&self.kind, &self.value)?;
        if !ENCRYPTIONS.contains(&self.encryption()) {
            return Err(ApiError::field("encryption", "must be NONE or SERVER_SIDE_DB"));
        }
        if !CP_FLAGS.contains(&self.cp_flags.unwrap_or(0)) {
            return Err(ApiError::field("cpFlags", "must be 0, 512 or 768"));
        }
        for (i, v) in self.visibility.iter().flatten().enumerate() {
            if !VISIBILITY.contains(&v.as_str()) {
                return Err(ApiError::field(&format!("visibility[{i}]"), "must be CLIENT, INTERNAL or EXTERNAL"));
            }
        }
        Ok(())
    }

    /// The encryption asked for; `NONE` when absent.
    pub fn encryption(&self) -> &str {
        self.encryption.as_deref().unwrap_or("NONE")
    }
}

fn check_value(kind: &str, v: &str) -> ApiResult<()> {
    let bad = |what: &str| Err(ApiError::field("value", format!("is not {what}")));
    match kind {
        "INTEGER" => {
            let digits = v.strip_prefix('-').unwrap_or(v);
            if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return bad("an INTEGER (digits)");
            }
        }
        "BOOLEAN" if v != "true" && v != "false" => return bad("a BOOLEAN (true or false)"),
        "DATE" => {
            let date = time::Date::parse(v, &time::format_description::well_known::Iso8601::DATE).is_ok();
            let datetime =
                time::OffsetDateTime::parse(v, &time::format_description::well_known::Iso8601::DEFAULT).is_ok();
            if !date && !datetime {
                return bad("an ISO 8601 DATE");
            }
        }
        "OCTETSTRING" if base64::engine::general_purpose::STANDARD.decode(v).is_err() => {
            return bad("base64 (OCTETSTRING)")
        }
        _ => {}
    }
    Ok(())
}

/// A property as read. A value stored encrypted is shown to administrators
/// only; others see `***`.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PropertyView {
    /// The user the property belongs to.
    pub user_id: String,
    /// The client it belongs to; absent for a property of the user alone.
    pub ast_client_id: Option<String>,
    /// Unique per user and client.
    pub name: String,
    /// `OCTETSTRING`, `INTEGER`, `BOOLEAN`, `UTF8STRING` or `DATE`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The value; `***` for an encrypted value read by a non-administrator.
    pub value: String,
    /// `NONE` or `SERVER_SIDE_DB`.
    pub encryption: String,
    /// A flag for the clients that the value is not to be changed.
    pub read_only: bool,
    /// `true`: the client is notified of changes.
    pub notify: bool,
    /// `true`: protected mode tied to the client's virtual smartcard.
    pub in_keystorage: bool,
    /// Caching: 0 none, 512 synchronized from the SDK, 768 synchronized from the service.
    pub cp_flags: u32,
    /// `CLIENT`, `INTERNAL`, `EXTERNAL`; absent when not set.
    pub visibility: Option<Vec<String>>,
}

impl PropertyView {
    /// The value of a list-filter field (one of [`FIELDS`]).
    pub fn field(&self, name: &str) -> Option<String> {
        Some(match name {
            "name" => self.name.clone(),
            "type" => self.kind.clone(),
            "encryption" => self.encryption.clone(),
            "readOnly" => self.read_only.to_string(),
            "notify" => self.notify.to_string(),
            "inKeystorage" => self.in_keystorage.to_string(),
            "cpFlags" => self.cp_flags.to_string(),
            "value" => self.value.clone(),
            _ => return None,
        })
    }
}
