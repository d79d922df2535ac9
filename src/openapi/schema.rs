//! Schemas a derive cannot infer from a field's Rust type: the closed sets the
//! validators accept (built from the validators' own constants, so the
//! document and the server cannot disagree), RFC 3339 timestamps, and binary
//! bodies. Model fields use them with `#[schema(schema_with = ...)]`; query
//! parameters with [`super::doc::Query`].

use serde_json::{json, Value};
use utoipa::openapi::schema::{
    Array, ArrayBuilder, KnownFormat, Object, ObjectBuilder, SchemaFormat, SchemaType, Type,
};

/// A string that is one of `values`.
pub fn strings(values: &[&str]) -> Object {
    ObjectBuilder::new().schema_type(Type::String).enum_values(Some(values.iter().copied())).build()
}

/// One of `values`, or `null` (an optional field, which JSON `null` also leaves out).
pub fn nullable_strings(values: &[&str]) -> Object {
    ObjectBuilder::new()
        .schema_type(SchemaType::from_iter([Type::String, Type::Null]))
        .enum_values(Some(values.iter().map(|v| Value::from(*v)).chain([Value::Null])))
        .build()
}

/// An array of items from `values`.
pub fn string_array(values: &[&str]) -> ArrayBuilder {
    ArrayBuilder::new().items(strings(values))
}

/// An optional array of items from `values`.
pub fn nullable_string_array(values: &[&str]) -> Array {
    string_array(values).schema_type(SchemaType::from_iter([Type::Array, Type::Null])).build()
}

/// An RFC 3339 timestamp (what `models::webhook::rfc3339` writes).
pub fn date_time() -> Object {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .format(Some(SchemaFormat::KnownFormat(KnownFormat::DateTime)))
        .build()
}

/// The JSON form of [`strings`], for query parameters.
pub fn query_strings(values: &[&str]) -> Value {
    json!({ "type": "string", "enum": values })
}

/// A query parameter that may be repeated, each value from `values`, at most `max` times.
pub fn query_string_list(values: &[&str], max: usize) -> Value {
    json!({ "type": "array", "items": query_strings(values), "maxItems": max })
}

/// An integer query parameter from `min` to `max` (inclusive).
pub fn query_integer(min: u64, max: Option<u64>) -> Value {
    let mut v = json!({ "type": "integer", "minimum": min });
    if let Some(max) = max {
        v["maximum"] = json!(max);
    }
    v
}

/// A body that is raw bytes (not JSON, not text).
pub fn binary() -> Value {
    json!({ "type": "string", "format": "binary" })
}
