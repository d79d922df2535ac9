//! The realm's OIDC endpoints used the way an external client library does.

use crate::common::*;
use jsonwebtoken::{jwk::JwkSet, Algorithm, DecodingKey, Validation};
use reqwest::{Method, StatusCode};
use serde_json::Value;

#[tokio::test]
async fn discovery_token_jwks_round_trip() {
    let s = TestServer::start().await;
    s.create_tenant("acme").await;

    let discovery: Value = s
        .http
        .get(s.url("/auth/realms/acme/.well-known/openid-configuration"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let issuer = discovery["issuer"].as_str().unwrap().to_string();
    assert_eq!(issuer, s.url("/auth/realms/acme"));
    for key in ["grant_types_supported", "subject_types_supported", "response_types_supported", "scopes_supported"] {
        assert!(discovery[key].is_array(), "{key}");
    }

    // Token from the advertised endpoint, JSON body this time.
    let token_endpoint = discovery["token_endpoint"].as_str().unwrap();
    let resp = s
        .http
        .post(token_endpoint)
        .json(&serde_json::json!({"grant_type": "password", "username": "ADMIN", "password": PASSWORD, "client_id": "app"}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(resp.headers()["cache-control"], "no-store");
    let tokens: Value = resp.json().await.unwrap();
    for field in [
        "access_token",
        "expires_in",
        "not-before-policy",
        "refresh_expires_in",
        "refresh_token",
        "scope",
        "session_state",
        "token_type",
    ] {
        assert!(!tokens[field].is_null(), "token response field {field}");
    }

    // Verify with the published key, as a resource server would.
    let jwks: JwkSet = s.http.get(discovery["jwks_uri"].as_str().unwrap()).send().await.unwrap().json().await.unwrap();
    let access = tokens["access_token"].as_str().unwrap();
    let kid = jsonwebtoken::decode_header(access).unwrap().kid.unwrap();
    let jwk = jwks.find(&kid).expect("the token's kid is published");
    let mut validation = Validation::new(Algorithm::ES256);
    validation.set_issuer(&[&issuer]);
    validation.validate_aud = false;
    let data =
        jsonwebtoken::decode::<Value>(access, &DecodingKey::from_jwk(jwk).unwrap(), &validation).expect("verifies");
    let c = data.claims;
    assert_eq!(c["preferred_username"], "admin");
    assert_eq!(c["azp"], "app");
    assert!(c["realm_access"]["roles"].as_array().unwrap().iter().any(|r| r == "admin"));
    for claim in ["sub", "iss", "aud", "exp", "iat", "jti", "session_state", "scope"] {
        assert!(!c[claim].is_null(), "claim {claim}");
    }

    // The refresh grant issues a new working access token.
    let resp = s
        .http
        .post(token_endpoint)
        .form(&[("grant_type", "refresh_token"), ("refresh_token", tokens["refresh_token"].as_str().unwrap())])
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    let refreshed: Value = resp.json().await.unwrap();
    let (st, _) = s.call(Method::GET, "/v1/tenants/acme/apps", refreshed["access_token"].as_str(), None).await;
    assert_eq!(st, StatusCode::OK);
    // A refresh token is not an access token.
    let (st, _) = s.call(Method::GET, "/v1/tenants/acme/apps", tokens["refresh_token"].as_str(), None).await;
    assert_eq!(st, StatusCode::UNAUTHORIZED);
    s.shutdown().await;
}

#[tokio::test]
async fn token_endpoint_errors_follow_oauth() {
    let s = TestServer::start().await;
    s.create_tenant("acme").await;
    let (st, b) = s.password_grant("acme", "admin", "wrong-password").await;
    assert_eq!((st, b["error"].as_str()), (StatusCode::UNAUTHORIZED, Some("invalid_grant")));
    let (st, b) = s.password_grant("acme", "nobody", "whatever-pw").await;
    assert_eq!((st, b["error"].as_str()), (StatusCode::UNAUTHORIZED, Some("invalid_grant")));
    let (st, _) = s.password_grant("nope", "admin", PASSWORD).await;
    assert_eq!(st, StatusCode::NOT_FOUND);
    let resp = s
        .http
        .post(s.url("/auth/realms/acme/protocol/openid-connect/token"))
        .form(&[("grant_type", "implicit")])
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::BAD_REQUEST);
    assert_eq!(resp.json::<Value>().await.unwrap()["error"], "unsupported_grant_type");
    let resp = s
        .http
        .post(s.url("/auth/realms/acme/protocol/openid-connect/token"))
        .form(&[("username", "admin")])
        .send()
        .await
        .unwrap();
    assert_eq!(resp.json::<Value>().await.unwrap()["error"], "invalid_request");
    let (st, _) = s.call(Method::GET, "/auth/realms/nope/.well-known/openid-configuration", None, None).await;
    assert_eq!(st, StatusCode::NOT_FOUND);
    let (st, _) = s.call(Method::GET, "/auth/realms/nope/protocol/openid-connect/certs", None, None).await;
    assert_eq!(st, StatusCode::NOT_FOUND);
    s.shutdown().await;
}

const TOKEN: &str = "/auth/realms/acme/protocol/openid-connect/token";

/// A password grant of `admin` with extra form fields, by client `herald-cli`
/// unless the fields or HTTP Basic credentials name another.
async fn login(s: &TestServer, form: &[(&str, &str)], basic: Option<(&str, &str)>) -> (StatusCode, Value) {
    let mut fields = vec![("grant_type", "password"), ("username", "admin"), ("password", PASSWORD)];
    fields.extend_from_slice(form);
    if basic.is_none() && !form.iter().any(|(k, _)| *k == "client_id") {
        fields.push(("client_id", "herald-cli"));
    }
    let mut req = s.http.post(s.url(TOKEN)).form(&fields);
    if let Some((id, secret)) = basic {
        req = req.basic_auth(id, Some(secret));
    }
    let resp = req.send().await.unwrap();
    (resp.status(), resp.json().await.unwrap_or(Value::Null))
}

/// POSTs a form to an OIDC endpoint of realm `acme`; answers status, the
/// `WWW-Authenticate` header and the JSON body (Null when empty).
async fn post_form(
    s: &TestServer,
    endpoint: &str,
    form: &[(&str, &str)],
    basic: Option<(&str, &str)>,
    bearer: Option<&str>,
) -> (StatusCode, Option<String>, Value) {
    let mut req = s.http.post(s.url(&format!("/auth/realms/acme/protocol/openid-connect/{endpoint}"))).form(form);
    if let Some((id, secret)) = basic {
        req = req.basic_auth(id, Some(secret));
    }
    if let Some(t) = bearer {
        req = req.bearer_auth(t);
    }
    let resp = req.send().await.unwrap();
    let status = resp.status();
    let challenge = resp.headers().get("www-authenticate").map(|v| v.to_str().unwrap().to_string());
    let bytes = resp.bytes().await.unwrap();
    (status, challenge, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
}

fn str_of<'a>(v: &'a Value, key: &str) -> &'a str {
    v[key].as_str().unwrap_or_else(|| panic!("{key} in {v}"))
}

#[tokio::test]
async fn discovery_lists_only_what_is_served() {
    let s = TestServer::start().await;
    let admin = s.tenant_with_app("acme", "app").await;
    let (_, d) = s.call(Method::GET, "/auth/realms/acme/.well-known/openid-configuration", None, None).await;
    for gone in [
        "authorization_endpoint",
        "registration_endpoint",
        "device_authorization_endpoint",
        "pushed_authorization_request_endpoint",
        "backchannel_authentication_endpoint",
        "check_session_iframe",
        "mtls_endpoint_aliases",
    ] {
        assert!(d.get(gone).is_none(), "{gone} is not served and not advertised");
    }
    let algs = d["id_token_signing_alg_values_supported"].as_array().unwrap();
    assert!(algs.iter().any(|a| a == "RS256") && algs.iter().any(|a| a == "ES256"), "{algs:?}");
    assert_eq!(
        d["token_endpoint_auth_methods_supported"],
        serde_json::json!(["client_secret_basic", "client_secret_post"])
    );
    // Every advertised URL answers its method with something other than 404.
    let get = ["issuer", "jwks_uri", "userinfo_endpoint", "end_session_endpoint"];
    let post = [
        "token_endpoint",
        "introspection_endpoint",
        "revocation_endpoint",
        "userinfo_endpoint",
        "end_session_endpoint",
    ];
    for (method, keys) in [(Method::GET, &get[..]), (Method::POST, &post[..])] {
        for key in keys {
            let url = str_of(&d, key);
            let resp = s.http.request(method.clone(), url).bearer_auth(&admin).send().await.unwrap();
            assert_ne!(resp.status(), StatusCode::NOT_FOUND, "{method} {key} {url}");
        }
    }
    s.shutdown().await;
}

#[tokio::test]
async fn realm_info_publishes_the_signing_key_as_spki() {
    let s = TestServer::start().await;
    s.create_tenant("acme").await;
    let (st, info) = s.call(Method::GET, "/auth/realms/acme", None, None).await;
    assert_eq!(st, StatusCode::OK);
    assert_eq!(info["realm"], "acme");
    assert_eq!(str_of(&info, "token-service"), s.url("/auth/realms/acme/protocol/openid-connect"));
    assert_eq!(info["tokens-not-before"], 0);
    assert!(info["account-service"].is_string());
    use base64::Engine as _;
    let spki = base64::engine::general_purpose::STANDARD.decode(str_of(&info, "public_key")).unwrap();
    // A P-256 SubjectPublicKeyInfo: 26 bytes of algorithm, then the point 04 || x || y of the JWK.
    let (_, jwks) = s.call(Method::GET, "/auth/realms/acme/protocol/openid-connect/certs", None, None).await;
    let url = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let (x, y) =
        (url.decode(str_of(&jwks["keys"][0], "x")).unwrap(), url.decode(str_of(&jwks["keys"][0], "y")).unwrap());
    assert_eq!(spki.len(), 91);
    assert_eq!(&spki[..2], &[0x30, 0x59]);
    assert_eq!(spki[26], 4);
    assert_eq!((&spki[27..59], &spki[59..]), (&x[..], &y[..]));
    // The key verifies a token, read the way python-keycloak reads it.
    let pem = format!("-----BEGIN PUBLIC KEY-----\n{}\n-----END PUBLIC KEY-----\n", str_of(&info, "public_key"));
    let token = s.admin_token("acme").await;
    let mut v = Validation::new(Algorithm::ES256);
    v.validate_aud = false;
    jsonwebtoken::decode::<Value>(&token, &DecodingKey::from_ec_pem(pem.as_bytes()).unwrap(), &v).expect("verifies");
    let (st, _) = s.call(Method::GET, "/auth/realms/nope", None, None).await;
    assert_eq!(st, StatusCode::NOT_FOUND);
    s.shutdown().await;
}

#[tokio::test]
async fn the_token_endpoint_takes_client_secret_basic() {
    let s = TestServer::start().await;
    let admin = s.tenant_with_app("acme", "app").await;
    let (id, secret) = s.register_client("acme", &admin, "app").await;
    // Client credentials with HTTP Basic, as Authlib and requests-oauthlib send them.
    let resp = s.http.post(s.url(TOKEN)).basic_auth(&id, Some(&secret)).form(&[("grant_type", "client_credentials")]);
    let resp = resp.send().await.unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    let token: Value = resp.json().await.unwrap();
    let (st, _) =
        s.call(Method::GET, &format!("/v1/tenants/acme/clients/{id}"), token["access_token"].as_str(), None).await;
    assert_eq!(st, StatusCode::OK, "the client's token works");
    // A password grant by an authenticated client is issued to it.
    let (st, b) = login(&s, &[], Some((&id, &secret))).await;
    assert_eq!(st, StatusCode::OK, "{b}");
    let claims = jsonwebtoken::dangerous::insecure_decode::<Value>(str_of(&b, "access_token")).unwrap().claims;
    assert_eq!(claims["azp"], id.as_str());
    // A wrong secret: 401 invalid_client with the Basic challenge (RFC 6749 §5.2).
    let (st, challenge, b) =
        post_form(&s, "token", &[("grant_type", "client_credentials")], Some((&id, "wrong")), None).await;
    assert_eq!((st, str_of(&b, "error")), (StatusCode::UNAUTHORIZED, "invalid_client"));
    assert!(challenge.unwrap().starts_with("Basic "));
    // Two authentication methods at once are refused.
    let form = [("grant_type", "client_credentials"), ("client_secret", secret.as_str())];
    let (st, _, b) = post_form(&s, "token", &form, Some((&id, &secret)), None).await;
    assert_eq!((st, str_of(&b, "error")), (StatusCode::BAD_REQUEST, "invalid_request"));
    // A malformed header is a 400, not a panic.
    let resp = s.http.post(s.url(TOKEN)).header("authorization", "Basic %%%").form(&[("grant_type", "password")]);
    assert_eq!(resp.send().await.unwrap().status(), StatusCode::BAD_REQUEST);
    s.shutdown().await;
}

#[tokio::test]
async fn an_openid_scope_adds_an_id_token() {
    let s = TestServer::start().await;
    s.create_tenant("acme").await;
    let (st, b) = login(&s, &[("scope", "openid email"), ("client_id", "web")], None).await;
    assert_eq!(st, StatusCode::OK, "{b}");
    let id_token = str_of(&b, "id_token");
    let (_, jwks) = s.call(Method::GET, "/auth/realms/acme/protocol/openid-connect/certs", None, None).await;
    let jwks: JwkSet = serde_json::from_value(jwks).unwrap();
    let header = jsonwebtoken::decode_header(id_token).unwrap();
    assert_eq!(header.alg, Algorithm::ES256);
    let mut v = Validation::new(Algorithm::ES256);
    v.set_audience(&["web"]);
    v.set_issuer(&[s.url("/auth/realms/acme")]);
    let key = DecodingKey::from_jwk(jwks.find(&header.kid.unwrap()).unwrap()).unwrap();
    let c = jsonwebtoken::decode::<Value>(id_token, &key, &v).expect("the ID token verifies").claims;
    assert_eq!(c["typ"], "ID");
    assert_eq!(c["preferred_username"], "admin");
    assert_eq!(c["sid"], b["session_state"]);
    // A refresh keeps the scope, and so the ID token.
    let (st, _, r) = post_form(
        &s,
        "token",
        &[("grant_type", "refresh_token"), ("refresh_token", str_of(&b, "refresh_token")), ("client_id", "web")],
        None,
        None,
    )
    .await;
    assert_eq!(st, StatusCode::OK, "{r}");
    assert!(r["id_token"].is_string());
    // Without openid, none.
    let (_, b) = login(&s, &[("scope", "profile")], None).await;
    assert!(b.get("id_token").is_none(), "{b}");
    s.shutdown().await;
}

#[tokio::test]
async fn userinfo_answers_the_bearers_claims() {
    let s = TestServer::start().await;
    let admin = s.tenant_with_app("acme", "app").await;
    let user = serde_json::json!({"username": "carol", "email": "carol@example.com", "firstName": "Carol", "lastName": "Danvers", "enabled": true, "emailVerified": true, "credentials": [{"type": "password", "value": "carol-password", "temporary": false}]});
    let (st, b) = s.call(Method::POST, "/auth/realms/acme/users", Some(&admin), Some(user)).await;
    assert_eq!(st, StatusCode::OK, "{b}");
    let (_, tokens) = s.password_grant("acme", "carol", "carol-password").await;
    let access = str_of(&tokens, "access_token");
    let resp = s
        .http
        .get(s.url("/auth/realms/acme/protocol/openid-connect/userinfo"))
        .bearer_auth(access)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    let info: Value = resp.json().await.unwrap();
    assert_eq!(info["preferred_username"], "carol");
    assert_eq!(info["email"], "carol@example.com");
    assert_eq!(info["email_verified"], true);
    assert_eq!(info["name"], "Carol Danvers");
    assert_eq!((&info["given_name"], &info["family_name"]), (&Value::from("Carol"), &Value::from("Danvers")));
    // POST, with the token in the form (RFC 6750 §2.2).
    let (st, _, posted) = post_form(&s, "userinfo", &[("access_token", access)], None, None).await;
    assert_eq!((st, &posted), (StatusCode::OK, &info));
    // No token, a bad token: 401 with the Bearer challenge.
    let (st, challenge, _) = post_form(&s, "userinfo", &[], None, None).await;
    assert_eq!(st, StatusCode::UNAUTHORIZED);
    assert!(challenge.unwrap().starts_with("Bearer realm=\"acme\""));
    let (st, challenge, b) = post_form(&s, "userinfo", &[], None, Some("not.a.token")).await;
    assert_eq!((st, str_of(&b, "error")), (StatusCode::UNAUTHORIZED, "invalid_token"));
    assert!(challenge.unwrap().contains("error=\"invalid_token\""));
    // A token of another realm is not this realm's.
    s.create_tenant("other").await;
    let other = s.admin_token("other").await;
    let (st, _, _) = post_form(&s, "userinfo", &[], None, Some(&other)).await;
    assert_eq!(st, StatusCode::UNAUTHORIZED);
    s.shutdown().await;
}

#[tokio::test]
async fn introspection_tells_active_from_taken_back() {
    let s = TestServer::start().await;
    let admin = s.tenant_with_app("acme", "app").await;
    let (id, secret) = s.register_client("acme", &admin, "app").await;
    let (_, tokens) = login(&s, &[], None).await;
    let (access, refresh) = (str_of(&tokens, "access_token"), str_of(&tokens, "refresh_token"));
    // A device client introspects, with Basic or form credentials.
    let (st, _, b) = post_form(&s, "token/introspect", &[("token", access)], Some((&id, &secret)), None).await;
    assert_eq!(st, StatusCode::OK, "{b}");
    assert_eq!(
        (&b["active"], &b["username"], &b["token_type"]),
        (&Value::Bool(true), &Value::from("admin"), &Value::from("Bearer"))
    );
    assert_eq!(b["client_id"], "herald-cli");
    for field in ["exp", "iat", "sub", "iss", "jti", "scope", "sid"] {
        assert!(!b[field].is_null(), "{field}");
    }
    let form = [("token", refresh), ("client_id", id.as_str()), ("client_secret", secret.as_str())];
    let (_, _, b) = post_form(&s, "token/introspect", &form, None, None).await;
    assert_eq!((&b["active"], &b["token_type"]), (&Value::Bool(true), &Value::from("Refresh")));
    // An admin token may introspect too; a reader's may not; nobody else.
    let (st, _, b) = post_form(&s, "token/introspect", &[("token", access)], None, Some(&admin)).await;
    assert_eq!((st, &b["active"]), (StatusCode::OK, &Value::Bool(true)));
    let (st, _, b) = post_form(&s, "token/introspect", &[("token", access)], None, None).await;
    assert_eq!((st, str_of(&b, "error")), (StatusCode::UNAUTHORIZED, "invalid_client"));
    let (st, _, _) = post_form(&s, "token/introspect", &[("token", access)], Some((&id, "wrong")), None).await;
    assert_eq!(st, StatusCode::UNAUTHORIZED);
    // Garbage is inactive, with nothing else said.
    let (_, _, b) = post_form(&s, "token/introspect", &[("token", "garbage")], Some((&id, &secret)), None).await;
    assert_eq!(b, serde_json::json!({"active": false}));
    let (st, _, b) = post_form(&s, "token/introspect", &[], Some((&id, &secret)), None).await;
    assert_eq!((st, str_of(&b, "error")), (StatusCode::BAD_REQUEST, "invalid_request"), "token is required");
    // A used refresh token is no longer active.
    let (st, _, _) = post_form(
        &s,
        "token",
        &[("grant_type", "refresh_token"), ("refresh_token", refresh), ("client_id", "herald-cli")],
        None,
        None,
    )
    .await;
    assert_eq!(st, StatusCode::OK);
    let (_, _, b) = post_form(&s, "token/introspect", &[("token", refresh)], Some((&id, &secret)), None).await;
    assert_eq!(b["active"], false);
    // A locked client's token is inactive.
    let client_token = s.client_token("acme", &id, &secret).await;
    let (_, _, b) = post_form(&s, "token/introspect", &[("token", &client_token)], None, Some(&admin)).await;
    assert_eq!(b["active"], true);
    let (st, _) = s
        .call(
            Method::POST,
            "/v1/tenants/acme/clients/lock",
            Some(&admin),
            Some(serde_json::json!({"astClientId": id, "lockReason": "stolen"})),
        )
        .await;
    assert!(st.is_success(), "{st}");
    let (_, _, b) = post_form(&s, "token/introspect", &[("token", &client_token)], None, Some(&admin)).await;
    assert_eq!(b["active"], false);
    s.shutdown().await;
}

#[tokio::test]
async fn logout_and_revocation_end_the_session() {
    let s = TestServer::start().await;
    let admin = s.tenant_with_app("acme", "app").await;
    let (id, secret) = s.register_client("acme", &admin, "app").await;
    let apps = "/v1/tenants/acme/apps";

    // Logout with the refresh token: it and the session's access token stop working.
    let (_, t) = login(&s, &[], None).await;
    let (st, _, _) = post_form(
        &s,
        "logout",
        &[("refresh_token", str_of(&t, "refresh_token")), ("client_id", "herald-cli")],
        None,
        None,
    )
    .await;
    assert_eq!(st, StatusCode::NO_CONTENT);
    assert_eq!(s.call(Method::GET, apps, t["access_token"].as_str(), None).await.0, StatusCode::UNAUTHORIZED);
    let refresh =
        [("grant_type", "refresh_token"), ("refresh_token", str_of(&t, "refresh_token")), ("client_id", "herald-cli")];
    let (st, _, b) = post_form(&s, "token", &refresh, None, None).await;
    assert_eq!((st, str_of(&b, "error")), (StatusCode::BAD_REQUEST, "invalid_grant"));
    // Another client may not log a session out.
    let (_, t) = login(&s, &[], None).await;
    let (st, _, b) =
        post_form(&s, "logout", &[("refresh_token", str_of(&t, "refresh_token")), ("client_id", "other")], None, None)
            .await;
    assert_eq!((st, str_of(&b, "error")), (StatusCode::BAD_REQUEST, "unauthorized_client"));
    // Logout by GET with an ID token as hint.
    let (_, t) = login(&s, &[("scope", "openid")], None).await;
    let url = format!("/auth/realms/acme/protocol/openid-connect/logout?id_token_hint={}", str_of(&t, "id_token"));
    assert_eq!(s.http.get(s.url(&url)).send().await.unwrap().status(), StatusCode::NO_CONTENT);
    assert_eq!(s.call(Method::GET, apps, t["access_token"].as_str(), None).await.0, StatusCode::UNAUTHORIZED);
    let (st, _, _) = post_form(&s, "logout", &[], None, None).await;
    assert_eq!(st, StatusCode::BAD_REQUEST, "nothing names a session");
    let hint = url.replace("logout?id_token_hint=", "logout?id_token_hint=x");
    assert_eq!(s.http.get(s.url(&hint)).send().await.unwrap().status(), StatusCode::BAD_REQUEST);

    // Revoking an access token ends its session: the refresh token dies too.
    let (_, t) = login(&s, &[], None).await;
    let (st, _, _) =
        post_form(&s, "revoke", &[("token", str_of(&t, "access_token")), ("client_id", "herald-cli")], None, None)
            .await;
    assert_eq!(st, StatusCode::OK);
    assert_eq!(s.call(Method::GET, apps, t["access_token"].as_str(), None).await.0, StatusCode::UNAUTHORIZED);
    let refresh =
        [("grant_type", "refresh_token"), ("refresh_token", str_of(&t, "refresh_token")), ("client_id", "herald-cli")];
    assert_eq!(post_form(&s, "token", &refresh, None, None).await.0, StatusCode::BAD_REQUEST);
    // Unknown tokens are answered 200 (RFC 7009 §2.2); an unnamed client is refused.
    let (st, _, _) =
        post_form(&s, "revoke", &[("token", "nothing-of-ours"), ("client_id", "herald-cli")], None, None).await;
    assert_eq!(st, StatusCode::OK);
    let (st, _, b) = post_form(&s, "revoke", &[("token", "nothing-of-ours")], None, None).await;
    assert_eq!((st, str_of(&b, "error")), (StatusCode::UNAUTHORIZED, "invalid_client"));

    // A device client's token is revoked by the client itself, with its secret.
    let client_token = s.client_token("acme", &id, &secret).await;
    let path = format!("/v1/tenants/acme/clients/{id}");
    let (st, _, b) = post_form(&s, "revoke", &[("token", &client_token), ("client_id", &id)], None, None).await;
    assert_eq!((st, str_of(&b, "error")), (StatusCode::UNAUTHORIZED, "invalid_client"), "its secret is required");
    assert_eq!(s.call(Method::GET, &path, Some(&client_token), None).await.0, StatusCode::OK);
    let (st, _, _) = post_form(
        &s,
        "revoke",
        &[("token", &client_token), ("token_type_hint", "access_token")],
        Some((&id, &secret)),
        None,
    )
    .await;
    assert_eq!(st, StatusCode::OK);
    assert_eq!(s.call(Method::GET, &path, Some(&client_token), None).await.0, StatusCode::UNAUTHORIZED);
    // Other tokens of the client keep working: each has a session of its own.
    let fresh = s.client_token("acme", &id, &secret).await;
    assert_eq!(s.call(Method::GET, &path, Some(&fresh), None).await.0, StatusCode::OK);
    s.shutdown().await;
}

#[tokio::test]
async fn a_reused_refresh_token_ends_the_sessions_access_tokens() {
    let s = TestServer::start().await;
    s.create_tenant("acme").await;
    let (_, t) = login(&s, &[], None).await;
    let refresh =
        [("grant_type", "refresh_token"), ("refresh_token", str_of(&t, "refresh_token")), ("client_id", "herald-cli")];
    let (st, _, next) = post_form(&s, "token", &refresh, None, None).await;
    assert_eq!(st, StatusCode::OK);
    let apps = "/v1/tenants/acme/apps";
    assert_eq!(s.call(Method::GET, apps, next["access_token"].as_str(), None).await.0, StatusCode::OK);
    // The first refresh token again: somebody holds a copy. The session ends.
    assert_eq!(post_form(&s, "token", &refresh, None, None).await.0, StatusCode::BAD_REQUEST);
    assert_eq!(s.call(Method::GET, apps, next["access_token"].as_str(), None).await.0, StatusCode::UNAUTHORIZED);
    s.shutdown().await;
}
