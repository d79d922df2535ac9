//! `GET /openapi.json`: the OpenAPI 3.1 document of every route, generated from the router's
//! own table alone: each route's path, method, access and error family, and what it declares of
//! itself ([`doc`]: body, answers, query parameters, as types whose schemas utoipa derives),
//! so the document cannot drift from the code.

pub mod doc;
pub mod schema;

use crate::auth::Access;
use crate::error::{ApiResult, Family};
use crate::http::{with_body, Cx, Response};
use crate::router::{Route, Router};
use doc::{Doc, SchemaFn};
use http::StatusCode;
use serde::Serialize;
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use std::sync::OnceLock;
use utoipa::openapi::{RefOr, Schema};

/// Registered component schemas, by name.
pub type Components = Vec<(String, RefOr<Schema>)>;

/// Serves the document, built once.
pub async fn serve(_cx: Cx) -> ApiResult<Response> {
    static DOC: OnceLock<bytes::Bytes> = OnceLock::new();
    let body = DOC.get_or_init(|| serde_json::to_vec(&document(Router::global())).unwrap_or_default().into());
    Ok(with_body(StatusCode::OK, "application/json", body.clone()))
}

/// The document of `router`: every route of the router, as it describes itself.
pub fn document(router: &Router) -> OpenApiDocument {
    let mut components: Components = Vec::new();
    let mut paths: Map<String, Value> = Map::new();
    for route in router.routes() {
        let item = paths.entry(route.path.to_string()).or_insert_with(|| json!({}));
        item[route.method.as_str().to_lowercase()] = operation(route, &mut components);
    }
    for body in [
        doc::one::<crate::error::AdminErrorBody> as SchemaFn,
        doc::one::<crate::error::RealmErrorBody>,
        doc::one::<crate::error::OAuthErrorBody>,
        doc::one::<crate::error::OpsErrorBody>,
    ] {
        body(&mut components);
    }
    let mut schemas = Map::new();
    for (name, schema) in components {
        schemas.entry(name).or_insert_with(|| serde_json::to_value(schema).unwrap_or(Value::Null));
    }
    let bearer = |description: &str, format: Option<&str>| SecurityScheme {
        kind: "http".into(),
        scheme: "bearer".into(),
        bearer_format: format.map(str::to_string),
        description: description.into(),
    };
    OpenApiDocument {
        openapi: "3.1.0".into(),
        info: OpenApiInfo {
            title: "Herald".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            description: "Push and delivery engine: push, identity (Keycloak-style realms) and tenant administration."
                .into(),
            license: OpenApiLicense { name: "Apache-2.0".into(), identifier: "Apache-2.0".into() },
        },
        paths,
        components: OpenApiComponents {
            schemas,
            security_schemes: [
                (
                    "bearerJwt".to_string(),
                    bearer(
                        "An ES256 access token of the path's tenant (password or client_credentials grant).",
                        Some("JWT"),
                    ),
                ),
                ("operatorToken".to_string(), bearer("The platform operator token configured at start-up.", None)),
            ]
            .into_iter()
            .collect(),
        },
    }
}

/// The document `GET /openapi.json` answers: its top-level members (OpenAPI 3.1 §4.8.1).
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct OpenApiDocument {
    /// `3.1.0`.
    pub openapi: String,
    /// Title, version, description and licence of the API.
    pub info: OpenApiInfo,
    /// A path item (its operations) by path pattern; their shape is the OpenAPI specification's.
    #[schema(value_type = BTreeMap<String, Object>)]
    pub paths: Map<String, Value>,
    /// The schemas the operations refer to, and the security schemes.
    pub components: OpenApiComponents,
}

/// The `info` member of the document.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct OpenApiInfo {
    /// `Herald`.
    pub title: String,
    /// The engine's version.
    pub version: String,
    /// What the engine serves, in one sentence.
    pub description: String,
    /// Apache-2.0.
    pub license: OpenApiLicense,
}

/// The licence of the engine.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct OpenApiLicense {
    /// The licence's name.
    pub name: String,
    /// Its SPDX identifier.
    pub identifier: String,
}

/// The `components` member of the document.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct OpenApiComponents {
    /// JSON Schemas (2020-12) by name.
    #[schema(value_type = BTreeMap<String, Object>)]
    pub schemas: Map<String, Value>,
    /// `bearerJwt` (a tenant's access token) and `operatorToken`, by name.
    pub security_schemes: BTreeMap<String, SecurityScheme>,
}

/// How a route's caller authenticates (always an HTTP bearer token here).
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SecurityScheme {
    /// `http`.
    #[serde(rename = "type")]
    pub kind: String,
    /// `bearer`.
    pub scheme: String,
    /// `JWT` for tenant tokens; absent for the opaque operator token.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bearer_format: Option<String>,
    /// Which token it is and where it comes from.
    pub description: String,
}

/// The error body schema of a family.
fn error_schema(family: Family) -> &'static str {
    match family {
        Family::Admin { .. } => "AdminErrorBody",
        Family::Realm { .. } => "RealmErrorBody",
        Family::OAuth => "OAuthErrorBody",
        Family::Ops => "OpsErrorBody",
    }
}

fn schema_ref(name: &str) -> Value {
    json!({ "$ref": format!("#/components/schemas/{name}") })
}

fn operation(route: &Route, components: &mut Components) -> Value {
    let mut parameters: Vec<Value> = path_params(route.path)
        .map(|name| json!({ "name": name, "in": "path", "required": true, "schema": { "type": "string", "minLength": 1 } }))
        .collect();
    let mut responses = Map::new();
    let mut out = Map::new();
    let method = route.method.as_str().to_lowercase();
    out.insert("operationId".into(), json!(operation_id(&method, route.path)));
    let op: &Doc = &route.doc;
    out.insert("summary".into(), json!(op.summary));
    for q in &op.query {
        parameters.push(json!({ "name": q.name, "in": "query", "required": q.required, "schema": q.schema() }));
    }
    if op.idempotent {
        parameters.push(idempotency_key());
    }
    if let Some(body) = op.body {
        let schema = body(components);
        let mut content = Map::new();
        for media in op.media {
            content.insert(media.to_string(), json!({ "schema": schema }));
        }
        out.insert("requestBody".into(), json!({ "required": !op.body_optional, "content": content }));
    }
    for (status, schema) in &op.responses {
        let mut r = json!({ "description": StatusCode::from_u16(*status).ok().and_then(|s| s.canonical_reason()).unwrap_or("answer") });
        match schema {
            doc::Answer::Json(f) => r["content"] = json!({ "application/json": { "schema": f(components) } }),
            doc::Answer::Text(media) => r["content"] = json!({ *media: { "schema": { "type": "string" } } }),
            doc::Answer::Binary(media) => r["content"] = json!({ *media: { "schema": schema::binary() } }),
            doc::Answer::Empty => {}
        }
        if op.idempotent {
            r["headers"] = json!({ crate::models::idempotency::REPLAYED: {
                "description": "`true` when this is the answer of the first request with the same Idempotency-Key, given again: nothing was sent this time.",
                "schema": { "type": "string", "enum": ["true"] },
            } });
        }
        responses.insert(status.to_string(), r);
    }
    let error = json!({
        "description": "An error, in the body shape of the route's family",
        "content": { "application/json": { "schema": schema_ref(error_schema(route.family)) } },
    });
    let mut codes = vec!["400", "404"];
    if op.idempotent {
        // The key in use by a request still running; used with another body.
        codes.extend(["409", "422"]);
    }
    match route.access {
        Access::Public => {
            out.insert("security".into(), json!([]));
        }
        Access::Operator => {
            out.insert("security".into(), json!([{ "operatorToken": [] }]));
            codes.push("401");
        }
        Access::Tenant(_) => {
            out.insert("security".into(), json!([{ "bearerJwt": [] }]));
            codes.extend(["401", "403"]);
        }
    }
    for code in codes {
        responses.entry(code.to_string()).or_insert_with(|| error.clone());
    }
    responses.insert("default".into(), error);
    out.insert("parameters".into(), Value::Array(parameters));
    out.insert("responses".into(), Value::Object(responses));
    out.insert("tags".into(), json!([tag(route.path)]));
    Value::Object(out)
}

/// The `Idempotency-Key` header parameter of the send routes.
fn idempotency_key() -> Value {
    use crate::models::idempotency::{HEADER, MAX_LEN};
    json!({
        "name": HEADER,
        "in": "header",
        "required": false,
        "description": "Sends at most once per key and tenant for 24 h: a retry with the same key and body gets the first answer (with Idempotency-Replayed: true) and sends nothing; while the first still runs it waits for it (409 past the send deadline); the same key with another body is a 422. Visible ASCII, optionally in double quotes.",
        "schema": { "type": "string", "minLength": 1, "maxLength": MAX_LEN, "pattern": "^\"?[!#-~]+\"?$" },
    })
}

/// The `{name}` parameters of a path pattern.
pub fn path_params(path: &str) -> impl Iterator<Item = &str> {
    path.split('/').filter_map(|s| s.strip_prefix('{').and_then(|s| s.strip_suffix('}')))
}

fn operation_id(method: &str, path: &str) -> String {
    let mut id = method.to_string();
    for part in path.split('/').filter(|s| !s.is_empty()) {
        let part = part.trim_start_matches('{').trim_end_matches('}');
        let mut up = true;
        for c in part.chars() {
            if c.is_ascii_alphanumeric() {
                id.push(if up { c.to_ascii_uppercase() } else { c });
                up = false;
            } else {
                up = true;
            }
        }
    }
    id
}

fn tag(path: &str) -> &'static str {
    if path.starts_with("/auth/realms") {
        "identity"
    } else if path.contains("/push_notification") || path.ends_with("/pushtoken") {
        "push"
    } else if path.starts_with("/v1/tenants/") || path.starts_with("/v2/tenants/") {
        "tenant administration"
    } else {
        "operations"
    }
}
