//! Catalogue services through the HTTP API: put, paging and filters,
//! MinResourceVersion waits, traceparent.

use crate::common::*;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

fn service(kind: &str, searchable: bool) -> Value {
    json!({
        "title": {"default": "Chat", "locales": [{"language": "de", "value": "Plaudern"}]},
        "description": {"default": "Talk"},
        "launchInstructions": {"chatRecipient": "support"},
        "type": kind, "behaviour": "Banner",
        "tags": {"categories": ["social"], "keywords": ["talk"]},
        "requirements": {"min-age": "16", "gender": "any"},
        "searchable": searchable, "date1": "2026-01-31",
        "logo": {"id": uuid::Uuid::new_v4().to_string(), "etag": "e1"},
        "banner": {"default": {"id": uuid::Uuid::new_v4().to_string(), "etag": "b"}, "locales": [{"language": "de", "value": {"id": uuid::Uuid::new_v4().to_string(), "etag": "c"}}]},
        "status": "Active"
    })
}

#[tokio::test]
async fn put_list_get_with_filters_versions_and_tracing() {
    let s = TestServer::start().await;
    s.create_tenant("acme").await;
    let t = s.admin_token("acme").await;
    let mut ids = Vec::new();
    for (kind, searchable) in [("MiniApp", true), ("URL", false), ("MiniApp", false), ("URL", true)] {
        let id = uuid::Uuid::new_v4().to_string();
        let r = s
            .http
            .put(s.url(&format!("/v1/tenants/acme/catalogue/services/{id}")))
            .bearer_auth(&t)
            .json(&service(kind, searchable))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::OK);
        ids.push((id, r.headers()["resource-version"].to_str().unwrap().parse::<u64>().unwrap()));
    }
    assert_eq!(ids.iter().map(|(_, v)| *v).collect::<Vec<_>>(), vec![1, 2, 3, 4], "every write bumps the version");
    let (_, all) = s.call(Method::GET, "/v1/tenants/acme/catalogue/services", Some(&t), None).await;
    assert_eq!(all.as_array().unwrap().len(), 4);
    let (_, urls_hidden) =
        s.call(Method::GET, "/v1/tenants/acme/catalogue/services?hideType=URL", Some(&t), None).await;
    assert!(urls_hidden.as_array().unwrap().iter().all(|x| x["type"] == "MiniApp"));
    let (_, searchable) = s
        .call(Method::GET, "/v1/tenants/acme/catalogue/services?onlySearchable=true&hideType=URL", Some(&t), None)
        .await;
    assert_eq!(searchable.as_array().unwrap().len(), 1);
    let (_, page) = s.call(Method::GET, "/v1/tenants/acme/catalogue/services?page=2&page_size=3", Some(&t), None).await;
    assert_eq!(page.as_array().unwrap().len(), 1);
    for q in ["page=0", "page=21474838", "page_size=0", "page_size=101", "onlySearchable=maybe"] {
        let (st, _) = s.call(Method::GET, &format!("/v1/tenants/acme/catalogue/services?{q}"), Some(&t), None).await;
        assert_eq!(st, StatusCode::BAD_REQUEST, "{q}");
    }
    let (st, one) =
        s.call(Method::GET, &format!("/v1/tenants/acme/catalogue/services/{}", ids[0].0), Some(&t), None).await;
    assert_eq!(
        (st, one["requirements"]["min-age"].clone(), one["id"].clone()),
        (StatusCode::OK, json!("16"), json!(ids[0].0))
    );
    let (st, _) = s
        .call(Method::GET, &format!("/v1/tenants/acme/catalogue/services/{}", uuid::Uuid::new_v4()), Some(&t), None)
        .await;
    assert_eq!(st, StatusCode::NOT_FOUND);
    let (st, b) = s
        .call(
            Method::PUT,
            &format!("/v1/tenants/acme/catalogue/services/{}", ids[0].0),
            Some(&t),
            Some(json!({"title": {"default": "x"}, "type": "URL", "logo": {"id": "nope", "etag": "x"}})),
        )
        .await;
    assert_eq!((st, field(&b)), (StatusCode::BAD_REQUEST, "logo.id".to_string()));

    // MinResourceVersion: reached → immediate; not reached → waits, then 412; a write meanwhile releases it.
    let r = s
        .http
        .get(s.url("/v1/tenants/acme/catalogue/services"))
        .bearer_auth(&t)
        .header("MinResourceVersion", "4")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let started = std::time::Instant::now();
    let r = s
        .http
        .get(s.url("/v1/tenants/acme/catalogue/services?MinResourceVersion=99"))
        .bearer_auth(&t)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::PRECONDITION_FAILED);
    assert!(started.elapsed() >= std::time::Duration::from_secs(5));
    let waiter = {
        let (http, url, t) = (s.http.clone(), s.url("/v1/tenants/acme/catalogue/services"), t.clone());
        tokio::spawn(async move {
            http.get(url).bearer_auth(t).header("MinResourceVersion", "5").send().await.unwrap().status()
        })
    };
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    s.http
        .put(s.url(&format!("/v1/tenants/acme/catalogue/services/{}", uuid::Uuid::new_v4())))
        .bearer_auth(&t)
        .json(&service("URL", true))
        .send()
        .await
        .unwrap();
    assert_eq!(waiter.await.unwrap(), StatusCode::OK);

    // traceparent: echoed when valid, 400 when malformed.
    let tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    let r = s
        .http
        .get(s.url("/v1/tenants/acme/catalogue/services"))
        .bearer_auth(&t)
        .header("traceparent", tp)
        .send()
        .await
        .unwrap();
    assert_eq!(r.headers()["traceparent"], tp);
    for bad in [
        "00-xyz-00f067aa0ba902b7-01",
        "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
        "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
    ] {
        let r = s
            .http
            .get(s.url("/v1/tenants/acme/catalogue/services"))
            .bearer_auth(&t)
            .header("traceparent", bad)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::BAD_REQUEST, "{bad}");
    }
    // Another tenant sees none.
    s.create_tenant("other").await;
    let o = s.admin_token("other").await;
    let (_, theirs) = s.call(Method::GET, "/v1/tenants/other/catalogue/services", Some(&o), None).await;
    assert_eq!(theirs, json!([]));
}
