//! The realm's OIDC endpoints used the way an external client library does.

mod common;
use common::*;
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
    for key in [
        "grant_types_supported",
        "subject_types_supported",
        "code_challenge_methods_supported",
        "backchannel_token_delivery_modes_supported",
    ] {
        assert!(discovery[key].is_array(), "{key}");
    }
    assert!(discovery["mtls_endpoint_aliases"].is_object());

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
