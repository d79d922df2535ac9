//! `GET /openapi.json`: the document covers exactly the router's routes, each with its
//! parameters, security and error bodies, and every schema reference resolves.
//! (`.ci/api_fuzz.sh` validates it with openapi-spec-validator and runs schemathesis on it.)

use crate::common::TestServer;
use herald::auth::Access;
use herald::router::Router;
use reqwest::{Method, StatusCode};
use serde_json::Value;
use std::collections::BTreeSet;

/// Every route of the table documents itself: a summary and a success answer
/// (the document is generated from the table alone).
#[test]
fn every_route_documents_its_summary_and_answers() {
    let mut problems = Vec::new();
    for r in Router::global().routes() {
        if r.doc.summary.is_empty() {
            problems.push(format!("{} {}: add .summary(\"...\") in src/api/mod.rs", r.method, r.path));
        }
        if !r.doc.responses.iter().any(|(status, _)| (200..300).contains(status)) {
            problems.push(format!("{} {}: add .json(<status>, one::<T>) or .empty(<status>)", r.method, r.path));
        }
    }
    assert!(problems.is_empty(), "undocumented routes:\n  {}", problems.join("\n  "));
}

/// Every `$ref` in `v`.
fn refs(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            if let Some(Value::String(r)) = m.get("$ref") {
                out.push(r.clone());
            }
            m.values().for_each(|x| refs(x, out));
        }
        Value::Array(a) => a.iter().for_each(|x| refs(x, out)),
        _ => {}
    }
}

#[tokio::test]
async fn served_document_matches_the_router() {
    let server = TestServer::start().await;
    let (status, doc) = server.call(Method::GET, "/openapi.json", None, None).await;
    assert_eq!(status, StatusCode::OK, "{doc}");
    assert_eq!(doc["openapi"], "3.1.0");

    let served: BTreeSet<(String, String)> = doc["paths"]
        .as_object()
        .expect("paths")
        .iter()
        .flat_map(|(p, item)| item.as_object().expect("path item").keys().map(move |m| (m.to_uppercase(), p.clone())))
        .collect();
    let routes: BTreeSet<(String, String)> =
        Router::global().routes().iter().map(|r| (r.method.to_string(), r.path.to_string())).collect();
    let missing: Vec<_> = routes.difference(&served).collect();
    let extra: Vec<_> = served.difference(&routes).collect();
    assert!(missing.is_empty(), "routes missing from /openapi.json: {missing:?}");
    assert!(extra.is_empty(), "/openapi.json documents routes the router lacks: {extra:?}");

    for route in Router::global().routes() {
        let op = &doc["paths"][route.path][route.method.as_str().to_lowercase()];
        let what = format!("{} {}", route.method, route.path);
        // Path parameters, security and the family's error body.
        let params: BTreeSet<&str> = op["parameters"]
            .as_array()
            .expect("parameters")
            .iter()
            .filter(|p| p["in"] == "path")
            .filter_map(|p| p["name"].as_str())
            .collect();
        let expected: BTreeSet<&str> = herald::openapi::path_params(route.path).collect();
        assert_eq!(params, expected, "{what}: path parameters");
        let security = op["security"].to_string();
        match route.access {
            Access::Public => assert_eq!(security, "[]", "{what}"),
            Access::Operator => assert!(security.contains("operatorToken"), "{what}: {security}"),
            Access::Tenant(_) => {
                assert!(security.contains("bearerJwt"), "{what}: {security}");
                assert!(op["responses"]["403"].is_object(), "{what}: 403 documented");
            }
        }
        let error = op["responses"]["default"]["content"]["application/json"]["schema"]["$ref"].as_str().unwrap_or("");
        let family = match route.family {
            herald::error::Family::Admin { .. } => "AdminErrorBody",
            herald::error::Family::Realm { .. } => "RealmErrorBody",
            herald::error::Family::OAuth => "OAuthErrorBody",
            herald::error::Family::Ops => "OpsErrorBody",
        };
        assert!(error.ends_with(family), "{what}: error body {error}, expected {family}");
        assert!(
            op["responses"].as_object().unwrap().keys().any(|k| k.starts_with('2')),
            "{what}: no success answer documented"
        );
    }

    let mut all = Vec::new();
    refs(&doc, &mut all);
    for r in all {
        let name = r.strip_prefix("#/components/schemas/").unwrap_or_else(|| panic!("unexpected $ref {r}"));
        assert!(doc["components"]["schemas"][name].is_object(), "dangling $ref {r}");
    }
    // Request types come from the Rust models: the send body is strict, as its decoder.
    let send = &doc["components"]["schemas"]["PushNotificationEvent"];
    assert_eq!(send["additionalProperties"], false, "{send}");
    assert!(send["required"].as_array().unwrap().iter().any(|f| f == "recipient"), "{send}");
    server.shutdown().await;
}

#[tokio::test]
async fn error_bodies_follow_the_documented_schemas() {
    let server = TestServer::start().await;
    let (_, doc) = server.call(Method::GET, "/openapi.json", None, None).await;
    let schemas = &doc["components"]["schemas"];
    let required = |name: &str| -> BTreeSet<String> {
        schemas[name]["required"].as_array().unwrap().iter().map(|v| v.as_str().unwrap().to_string()).collect()
    };
    let keys = |v: &Value| -> BTreeSet<String> { v.as_object().unwrap().keys().cloned().collect() };
    let (s, b) = server.call(Method::GET, "/v1/tenants/t1/apps", None, None).await;
    assert_eq!(s, StatusCode::UNAUTHORIZED);
    assert_eq!(keys(&b), required("AdminErrorBody"), "{b}");
    let (s, b) = server.call(Method::GET, "/auth/realms/t1/users", None, None).await;
    assert_eq!(s, StatusCode::UNAUTHORIZED);
    assert_eq!(keys(&b), required("RealmErrorBody"), "{b}");
    let (s, b) = server.call(Method::POST, "/v1/tenants", None, None).await;
    assert_eq!(s, StatusCode::UNAUTHORIZED);
    assert_eq!(keys(&b), required("OpsErrorBody"), "{b}");
    server.shutdown().await;
}

/// The component schema a `$ref` names.
fn resolve<'a>(doc: &'a Value, schema: &'a Value) -> &'a Value {
    match schema["$ref"].as_str() {
        Some(r) => &doc["components"]["schemas"][r.trim_start_matches("#/components/schemas/")],
        None => schema,
    }
}

fn strings_of(v: &Value) -> BTreeSet<String> {
    v.as_array()
        .unwrap_or_else(|| panic!("not an array: {v}"))
        .iter()
        .map(|s| s.as_str().unwrap().to_string())
        .collect()
}

fn set(values: &[&str]) -> BTreeSet<String> {
    values.iter().map(|s| s.to_string()).collect()
}

/// A query parameter of an operation.
fn query_param<'a>(doc: &'a Value, method: &str, path: &str, name: &str) -> &'a Value {
    doc["paths"][path][method]["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["in"] == "query" && p["name"] == name)
        .unwrap_or_else(|| panic!("{method} {path}: no query parameter {name}"))
}

/// The token request is declared form-encoded only (both encodings made
/// openapi-python-client generate a module that fails on import), its grant
/// types are exactly discovery's, and the form it declares is answered.
#[tokio::test]
async fn token_request_is_form_encoded_only() {
    let server = TestServer::start().await;
    server.create_tenant("acme").await;
    let (_, doc) = server.call(Method::GET, "/openapi.json", None, None).await;
    let path = "/auth/realms/{tenantId}/protocol/openid-connect/token";
    let content = doc["paths"][path]["post"]["requestBody"]["content"].as_object().expect("token request body");
    assert_eq!(content.keys().collect::<Vec<_>>(), ["application/x-www-form-urlencoded"], "{content:?}");
    let form = resolve(&doc, &content["application/x-www-form-urlencoded"]["schema"]);
    assert!(strings_of(&form["required"]).contains("grant_type"), "{form}");
    let (s, discovery) =
        server.call(Method::GET, "/auth/realms/acme/.well-known/openid-configuration", None, None).await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(
        strings_of(&form["properties"]["grant_type"]["enum"]),
        strings_of(&discovery["grant_types_supported"]),
        "grant types: document and discovery"
    );
    for field in ["username", "password", "client_id", "client_secret", "refresh_token", "scope"] {
        assert!(form["properties"][field].is_object(), "{field} missing from {form}");
    }
    // The declared encoding is the one served.
    let (s, b) = server.password_grant("acme", "admin", crate::common::PASSWORD).await;
    assert_eq!(s, StatusCode::OK, "{b}");
    server.shutdown().await;
}

/// Closed sets are enums of exactly the values the validators accept.
#[tokio::test]
async fn closed_sets_are_enums_of_exactly_the_accepted_values() {
    use herald::models::{app::CATEGORIES, property, push_token::provider_names, webhook::AUTH_TYPES};
    let server = TestServer::start().await;
    server.create_tenant("acme").await;
    let token = server.admin_token("acme").await;
    let (_, doc) = server.call(Method::GET, "/openapi.json", None, None).await;
    let schemas = &doc["components"]["schemas"];

    // App categories: the enum, and the server's answer to each value and to another.
    let categories = &schemas["AppBody"]["properties"]["categories"];
    assert_eq!(categories["type"], "array", "{categories}");
    assert_eq!(strings_of(&categories["items"]["enum"]), set(&CATEGORIES), "{categories}");
    assert_eq!((categories["minItems"].as_u64(), categories["uniqueItems"].as_bool()), (Some(1), Some(true)));
    for (i, c) in CATEGORIES.iter().enumerate() {
        let mut body = crate::common::fcm_app_body();
        body["categories"] = serde_json::json!([c]);
        let (s, b) =
            server.call(Method::POST, &format!("/v1/tenants/acme/apps/app{i}"), Some(&token), Some(body)).await;
        assert_eq!(s, StatusCode::CREATED, "category {c}: {b}");
    }
    let mut body = crate::common::fcm_app_body();
    body["categories"] = serde_json::json!(["marketing"]);
    let (s, b) = server.call(Method::POST, "/v1/tenants/acme/apps/other", Some(&token), Some(body)).await;
    assert_eq!((s, crate::common::field(&b)), (StatusCode::BAD_REQUEST, "categories[0]".to_string()), "{b}");
    let stored = &schemas["PushConfigView"]["properties"]["categories"]["items"]["enum"];
    assert_eq!(strings_of(stored), set(&CATEGORIES));

    // The other closed sets, each against the constant its validator reads.
    let enum_of = |schema: &str, path: &[&str]| -> BTreeSet<String> {
        let mut v = &schemas[schema];
        for p in path {
            v = &v[*p];
        }
        v["enum"]
            .as_array()
            .unwrap_or_else(|| panic!("{schema}.{path:?}: no enum in {v}"))
            .iter()
            .filter_map(|s| s.as_str().map(str::to_string))
            .collect()
    };
    let providers = provider_names();
    let cases: Vec<(&str, Vec<&str>, BTreeSet<String>)> = vec![
        ("PropertyBody", vec!["properties", "type"], set(&property::TYPES)),
        ("PropertyBody", vec!["properties", "encryption"], set(&property::ENCRYPTIONS)),
        ("PropertyBody", vec!["properties", "visibility", "items"], set(&property::VISIBILITY)),
        ("PutPushToken", vec!["properties", "pushProvider"], set(&providers)),
        ("PushTokenView", vec!["properties", "pushProvider"], set(&providers)),
        ("WebhookBody", vec!["properties", "authType"], set(&AUTH_TYPES)),
        ("WebhookView", vec!["properties", "authType"], set(&AUTH_TYPES)),
        ("DomainEvent", vec!["properties", "type"], set(&["domain"])),
        ("PolicyBody", vec!["properties", "type"], set(&[herald::models::version::QUORUM])),
        ("CredentialWrite", vec!["properties", "type"], set(&[herald::models::user::PASSWORD])),
        ("ArchView", vec!["properties", "registrationState"], set(&["VOTING", "REGISTERED", "FAILED"])),
        ("SignerView", vec!["properties", "state"], set(&["ACTIVE", "RETIRED", "REVOKED"])),
        ("SignerView", vec!["properties", "status"], set(&["REQUESTED", "ISSUED", "FAILED"])),
        ("CertView", vec!["properties", "status"], set(&["REQUESTED", "ISSUED", "FAILED", "REVOKED"])),
        (
            "LdapBody",
            vec!["properties", "config", "properties", "editMode", "items"],
            set(&["READ_ONLY", "WRITABLE", "UNSYNCED"]),
        ),
        ("MessagePriority", vec![], set(&["HIGH", "NORMAL", "LOW"])),
        ("Category", vec![], set(&CATEGORIES)),
    ];
    for (schema, path, expected) in cases {
        assert_eq!(enum_of(schema, &path), expected, "{schema}.{path:?}");
    }
    // A value outside a declared set is refused, naming the field.
    let (s, b) = server
        .call(
            Method::POST,
            "/v1/tenants/acme/webhooks",
            Some(&token),
            Some(serde_json::json!({"filter": "type=domain", "callbackUrl": "https://example.com/h", "authType": "DIGEST"})),
        )
        .await;
    assert_eq!((s, crate::common::field(&b)), (StatusCode::BAD_REQUEST, "authType".to_string()), "{b}");
    server.shutdown().await;
}

/// Numeric and timestamp query parameters are typed, with the bounds the
/// server enforces: every bounded integer of a tenant-wide GET list answers at
/// its minimum and maximum and refuses one past either.
#[tokio::test]
async fn numeric_and_time_query_parameters_are_typed() {
    let server = TestServer::start().await;
    server.create_tenant("acme").await;
    let token = server.admin_token("acme").await;
    let (_, doc) = server.call(Method::GET, "/openapi.json", None, None).await;

    let users = "/auth/realms/{tenantId}/users";
    let limit = &query_param(&doc, "get", users, "limit")["schema"];
    assert_eq!(limit["type"], "integer", "{limit}");
    assert_eq!(
        (limit["minimum"].as_u64(), limit["maximum"].as_u64()),
        (Some(1), Some(herald::api::user_lists::MAX_LIMIT as u64))
    );
    for name in ["offset", "from", "to"] {
        let p = &query_param(&doc, "get", users, name)["schema"];
        assert_eq!((p["type"].as_str(), p["minimum"].as_u64()), (Some("integer"), Some(0)), "{name}: {p}");
    }
    for name in ["isUserEnabled", "isEmailVerified"] {
        assert_eq!(query_param(&doc, "get", users, name)["schema"]["type"], "boolean", "{name}");
    }
    assert_eq!(strings_of(&query_param(&doc, "get", users, "orderBy")["schema"]["enum"]), set(&["asc", "desc"]));
    let since = &query_param(&doc, "post", "/v1/tenants/{tenantId}/webhooks/{webhookId}/replay", "since")["schema"];
    assert_eq!((since["type"].as_str(), since["format"].as_str()), (Some("string"), Some("date-time")), "{since}");
    let (s, b) =
        server.call(Method::GET, "/auth/realms/acme/users?from=0&to=99999999999999&limit=1", Some(&token), None).await;
    assert_eq!(s, StatusCode::OK, "{b}");

    let mut checked = 0;
    for (path, item) in doc["paths"].as_object().unwrap() {
        let Some(op) = item.get("get") else { continue };
        if herald::openapi::path_params(path).ne(["tenantId"]) {
            continue;
        }
        for p in op["parameters"].as_array().unwrap().iter().filter(|p| p["in"] == "query") {
            let (name, schema) = (p["name"].as_str().unwrap(), &p["schema"]);
            // MinResourceVersion waits for that version of the catalogue.
            if schema["type"] != "integer" || name == "MinResourceVersion" {
                continue;
            }
            let url = |v: &str| format!("{}?{name}={v}", path.replace("{tenantId}", "acme"));
            let min = schema["minimum"].as_u64().unwrap_or_else(|| panic!("{path} {name}: no minimum"));
            let (s, b) = server.call(Method::GET, &url(&min.to_string()), Some(&token), None).await;
            assert!(s.is_success(), "{path} {name}={min}: {s} {b}");
            if min > 0 {
                let (s, b) = server.call(Method::GET, &url(&(min - 1).to_string()), Some(&token), None).await;
                assert_eq!(s, StatusCode::BAD_REQUEST, "{path} {name}={}: {b}", min - 1);
            }
            if let Some(max) = schema["maximum"].as_u64() {
                let (s, b) = server.call(Method::GET, &url(&max.to_string()), Some(&token), None).await;
                assert!(s.is_success(), "{path} {name}={max}: {s} {b}");
                let (s, b) = server.call(Method::GET, &url(&(max as u128 + 1).to_string()), Some(&token), None).await;
                assert_eq!(s, StatusCode::BAD_REQUEST, "{path} {name}={}: {b}", max as u128 + 1);
            }
            checked += 1;
        }
    }
    assert!(checked >= 15, "only {checked} integer parameters checked");
    server.shutdown().await;
}

/// The CRL is declared as binary under the content type it is served with.
#[tokio::test]
async fn crl_answer_is_binary() {
    let server = TestServer::start().await;
    server.create_tenant("acme").await;
    let token = server.admin_token("acme").await;
    let (_, doc) = server.call(Method::GET, "/openapi.json", None, None).await;
    let content = doc["paths"]["/v2/tenants/{tenantId}/signers/{signerSpec}/crl"]["get"]["responses"]["200"]["content"]
        .as_object()
        .expect("CRL content");
    assert_eq!(content.keys().collect::<Vec<_>>(), ["application/pkix-crl"]);
    let schema = &content["application/pkix-crl"]["schema"];
    assert_eq!((schema["type"].as_str(), schema["format"].as_str()), (Some("string"), Some("binary")), "{schema}");

    let resp =
        server.http.get(server.url("/v2/tenants/acme/signers/root/crl")).bearer_auth(&token).send().await.unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(resp.headers()["content-type"], "application/pkix-crl");
    let der = resp.bytes().await.unwrap();
    assert_eq!(der.first(), Some(&0x30), "a DER SEQUENCE");
    server.shutdown().await;
}

/// Members whose value is free-form JSON by the spec, so their schema is a bare object
/// (or any value) on purpose: `Component.member` (`.*`: a map's values, `[]`: an array's items).
const FREE_FORM: &[(&str, &str)] = &[
    ("OpenApiDocument.paths.*", "path items: their shape is the OpenAPI 3.1 specification's, not Herald's"),
    ("OpenApiComponents.schemas.*", "JSON Schemas (2020-12): their shape is JSON Schema's, not Herald's"),
    ("DomainEvent.data", "a published event's payload: whatever object its publisher defines, relayed as is"),
    ("Payload.customData.*", "a notification's custom data: the app's own keys and values, passed to the device"),
    (
        "CatalogueService.launchInstructions.*",
        "how a client launches a service: defined per service type, kept as given",
    ),
];

/// Whether a schema says nothing of what it holds: an object (or any value)
/// without properties, typed `additionalProperties`, a `$ref`, a composition
/// or an enum.
fn is_bare(s: &Value) -> bool {
    let Some(m) = s.as_object() else { return s == &Value::Bool(true) };
    let typed = ["$ref", "allOf", "oneOf", "anyOf", "enum", "const", "properties", "items", "prefixItems"];
    if typed.iter().any(|k| m.contains_key(*k)) {
        return false;
    }
    if let Some(extra) = m.get("additionalProperties") {
        // `false`: no member at all; a schema: the members' own (checked in turn).
        if extra != &Value::Bool(true) {
            return false;
        }
    }
    match m.get("type") {
        None => true,
        Some(Value::String(t)) => t == "object",
        Some(Value::Array(ts)) => ts.iter().any(|t| t == "object"),
        Some(_) => false,
    }
}

/// Collects, as `Component.member`, every bare schema in `s` and in the
/// components it refers to (each visited once).
fn bare_schemas(doc: &Value, s: &Value, at: &str, seen: &mut BTreeSet<String>, out: &mut BTreeSet<String>) {
    if let Some(r) = s["$ref"].as_str() {
        let name = r.trim_start_matches("#/components/schemas/");
        if seen.insert(name.to_string()) {
            bare_schemas(doc, &doc["components"]["schemas"][name], name, seen, out);
        }
        return;
    }
    if is_bare(s) {
        out.insert(at.to_string());
        return;
    }
    if let Some(props) = s["properties"].as_object() {
        for (name, p) in props {
            bare_schemas(doc, p, &format!("{at}.{name}"), seen, out);
        }
    }
    if s["items"].is_object() {
        bare_schemas(doc, &s["items"], &format!("{at}[]"), seen, out);
    }
    if s["additionalProperties"].is_object() {
        bare_schemas(doc, &s["additionalProperties"], &format!("{at}.*"), seen, out);
    }
    for k in ["allOf", "oneOf", "anyOf", "prefixItems"] {
        for sub in s[k].as_array().into_iter().flatten() {
            bare_schemas(doc, sub, at, seen, out);
        }
    }
}

/// No success answer and no request body is typed as a bare JSON object, nor
/// anything they refer to, but for the members the spec leaves free-form
/// ([`FREE_FORM`]): each answer's schema is generated from the Rust type the
/// handler encodes, so clients see its members.
#[tokio::test]
async fn no_response_is_a_bare_object() {
    let server = TestServer::start().await;
    let (_, doc) = server.call(Method::GET, "/openapi.json", None, None).await;
    let mut seen = BTreeSet::new();
    let mut bare = BTreeSet::new();
    let mut roots = 0;
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            let what = format!("{} {path}", method.to_uppercase());
            let mut schemas: Vec<(String, &Value)> = Vec::new();
            for (media, c) in op["requestBody"]["content"].as_object().into_iter().flatten() {
                schemas.push((format!("{what} body ({media})"), &c["schema"]));
            }
            for (status, r) in op["responses"].as_object().unwrap() {
                if let (true, Some(s)) = (status.starts_with('2'), r["content"].get("application/json")) {
                    schemas.push((format!("{what} {status}"), &s["schema"]));
                }
            }
            for (at, s) in schemas {
                roots += 1;
                bare_schemas(&doc, s, &at, &mut seen, &mut bare);
            }
        }
    }
    assert!(roots > 100, "only {roots} bodies and answers walked");
    let allowed: BTreeSet<String> = FREE_FORM.iter().map(|(at, _)| at.to_string()).collect();
    let untyped: Vec<_> = bare.difference(&allowed).collect();
    assert!(untyped.is_empty(), "bare objects (type them, or list them in FREE_FORM with the reason):\n  {untyped:#?}");
    let stale: Vec<_> = allowed.difference(&bare).collect();
    assert!(stale.is_empty(), "FREE_FORM lists members that are typed now: {stale:?}");
    server.shutdown().await;
}

/// The send routes declare the `Idempotency-Key` header, the replay header
/// of their answers and the 409 and 422 they may answer with it; the
/// schedule routes are there with their state filter.
#[test]
fn idempotency_and_schedules_are_documented() {
    let doc = serde_json::to_value(herald::openapi::document(Router::global())).unwrap();
    for path in ["/v1/tenants/{tenantId}/push_notification/send", "/v1/tenants/{tenantId}/push_notification/send-batch"]
    {
        let op = &doc["paths"][path]["post"];
        let header = op["parameters"].as_array().unwrap().iter().find(|p| p["in"] == "header").expect("a header");
        assert_eq!(
            (header["name"].as_str(), header["schema"]["maxLength"].as_u64()),
            (Some("Idempotency-Key"), Some(255))
        );
        assert!(op["responses"]["202"]["headers"]["Idempotency-Replayed"].is_object(), "{op}");
        assert!(op["responses"]["409"].is_object() && op["responses"]["422"].is_object(), "{op}");
    }
    let schedules = "/v1/tenants/{tenantId}/push_notification/schedule";
    assert!(doc["paths"][schedules]["post"]["responses"]["201"].is_object());
    let state = query_param(&doc, "get", schedules, "state");
    assert_eq!(strings_of(&state["schema"]["enum"]), set(&herald::models::schedule::STATES));
    let one = "/v1/tenants/{tenantId}/push_notification/schedule/{scheduleId}";
    assert!(doc["paths"][one]["get"].is_object() && doc["paths"][one]["delete"].is_object());
}
