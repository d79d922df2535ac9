//! `GET /openapi.json`: the document covers exactly the router's routes, each with its
//! parameters, security and error bodies, and every schema reference resolves.
//! (`.ci/api_fuzz.sh` validates it with openapi-spec-validator and runs schemathesis on it.)

use crate::common::TestServer;
use herald::auth::Access;
use herald::openapi::operations::operations;
use herald::router::Router;
use reqwest::{Method, StatusCode};
use serde_json::Value;
use std::collections::BTreeSet;

/// The Rust line that documents a route, for the failure message.
fn entry_for(method: &str, path: &str) -> String {
    format!(
        "Op::new(M::{method}, \"{path}\", \"<summary>\")[.body(one::<RequestType>)][.query(&[..])].json(<status>, one::<ResponseType>) \
         (or .empty(204)), with `#[derive(utoipa::ToSchema)]` on the types"
    )
}

#[test]
fn every_route_has_exactly_one_operation_entry() {
    let routes: BTreeSet<(String, String)> =
        Router::global().routes().iter().map(|r| (r.method.to_string(), r.path.to_string())).collect();
    let mut entries = BTreeSet::new();
    let mut problems = Vec::new();
    for op in operations() {
        let key = (op.method.to_string(), op.path.to_string());
        if !entries.insert(key.clone()) {
            problems.push(format!("{} {} has two entries in operations(); remove one", key.0, key.1));
        }
        if op.responses.is_empty() {
            problems.push(format!("{} {} documents no success answer; add .json(..) or .empty(..)", key.0, key.1));
        }
    }
    for (m, p) in routes.difference(&entries) {
        problems.push(format!(
            "route {m} {p} is in the router (src/api/mod.rs) but not documented: add to operations() in \
             src/openapi/operations.rs: {}",
            entry_for(m, p)
        ));
    }
    for (m, p) in entries.difference(&routes) {
        problems.push(format!(
            "operations() in src/openapi/operations.rs documents {m} {p}, which the router does not serve: \
             remove the entry or fix its method/path to match src/api/mod.rs"
        ));
    }
    assert!(problems.is_empty(), "OpenAPI table and router disagree:\n  {}", problems.join("\n  "));
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
