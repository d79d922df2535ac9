//! Signers and client certificates through the HTTP API, verified with
//! x509-parser (and, in one test, the openssl CLI).

use crate::common::receiver::Receiver;
use crate::common::*;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use base64::Engine as _;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use std::time::{Duration, Instant};
use x509_parser::prelude::*;

/// A tenant `acme` with an admin token.
async fn server() -> (TestServer, String) {
    let s = TestServer::start_with(|c| c.webhooks.allow_private = true).await;
    s.create_tenant("acme").await;
    let t = s.admin_token("acme").await;
    (s, t)
}

/// A registered device client of `acme` (app `shop`): (astClientId, client token).
async fn device(s: &TestServer, admin: &str) -> (String, String) {
    if s.call(Method::GET, "/v1/tenants/acme/apps/shop", Some(admin), None).await.0 != StatusCode::OK {
        let (st, b) = s.call(Method::POST, "/v1/tenants/acme/apps/shop", Some(admin), Some(fcm_app_body())).await;
        assert_eq!(st, StatusCode::CREATED, "{b}");
    }
    let (id, secret) = s.register_client("acme", admin, "shop").await;
    let token = s.client_token("acme", &id, &secret).await;
    (id, token)
}

/// Polls `path` until `field` equals `want` (at most 20 s); returns the last body.
async fn poll(s: &TestServer, token: &str, path: &str, pointer: &str, want: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (st, b) = s.call(Method::GET, path, Some(token), None).await;
        assert_eq!(st, StatusCode::OK, "{path}: {b}");
        if b.pointer(pointer).and_then(Value::as_str) == Some(want) {
            return b;
        }
        assert!(Instant::now() < deadline, "{path}: {pointer} never became {want}: {b}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Creates a signer and waits for its certificate; returns its info.
async fn issued_signer(s: &TestServer, t: &str, name: Option<&str>) -> Value {
    let body = name.map(|n| json!({ "name": n }));
    let (st, b) = s.call(Method::POST, "/v2/tenants/acme/signers", Some(t), body).await;
    assert_eq!(st, StatusCode::ACCEPTED, "{b}");
    assert_eq!(b["state"], "ACTIVE");
    let id = b["id"].as_str().unwrap();
    poll(s, t, &format!("/v2/tenants/acme/signers/{id}"), "/info/status", "ISSUED").await["info"].clone()
}

/// A P-256 key and a CSR for it; `ca` asks for CA:TRUE and keyCertSign.
fn csr(ca: bool) -> (rcgen::KeyPair, String) {
    let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
    let mut p = rcgen::CertificateParams::new(vec!["evil.example".to_string()]).unwrap();
    p.distinguished_name.push(rcgen::DnType::CommonName, "I am the CA now");
    if ca {
        p.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        p.key_usages = vec![rcgen::KeyUsagePurpose::KeyCertSign, rcgen::KeyUsagePurpose::CrlSign];
    }
    let pem = p.serialize_request(&key).unwrap().pem().unwrap();
    (key, pem)
}

/// Submits a CSR as the client and waits for issuance; returns the certificate info.
async fn client_cert(s: &TestServer, admin: &str, client_token: &str, csr_pem: &str) -> Value {
    let (st, b) =
        s.call(Method::POST, "/v1/tenants/acme/certificates", Some(client_token), Some(json!({"csr": csr_pem}))).await;
    assert_eq!(st, StatusCode::ACCEPTED, "{b}");
    let cert_ref = b["certRef"].as_str().unwrap().to_string();
    assert_eq!(cert_ref.len(), 26);
    assert!(('0'..='7').contains(&cert_ref.chars().next().unwrap()), "{cert_ref}");
    assert_eq!(b["status"], "REQUESTED");
    assert_eq!(b["certProfile"], "AST_DEVICE");
    poll(s, admin, &format!("/v1/tenants/acme/certificates/{cert_ref}"), "/status", "ISSUED").await
}

fn der(pem: &str) -> Vec<u8> {
    let (_, p) = x509_parser::pem::parse_x509_pem(pem.as_bytes()).expect("PEM");
    p.contents
}

fn chain_of(v: &Value) -> Vec<Vec<u8>> {
    v["chain"].as_array().unwrap().iter().map(|p| der(p.as_str().unwrap())).collect()
}

/// `child` is signed by the key of `parent`.
fn signed_by(child: &[u8], parent: &[u8]) -> bool {
    let (_, c) = parse_x509_certificate(child).unwrap();
    let (_, p) = parse_x509_certificate(parent).unwrap();
    c.verify_signature(Some(p.public_key())).is_ok()
}

fn cn(der: &[u8]) -> String {
    let (_, c) = parse_x509_certificate(der).unwrap();
    let name = c.subject().iter_common_name().next().unwrap().as_str().unwrap().to_string();
    name
}

async fn chain(s: &TestServer, t: &str, spec: &str) -> Vec<Vec<u8>> {
    let (st, b) = s.call(Method::GET, &format!("/v2/tenants/acme/signers/{spec}/chain"), Some(t), None).await;
    assert_eq!(st, StatusCode::OK, "{b}");
    chain_of(&b)
}

#[tokio::test]
async fn create_issue_chain_rotation_and_renewal() {
    let (s, t) = server().await;
    let (st, b) = s.call(Method::GET, "/v2/tenants/acme/signers/current", Some(&t), None).await;
    assert_eq!(st, StatusCode::NOT_FOUND, "no ACTIVE signer yet: {b}");
    assert_eq!(b["subsystem"], 518);
    let (st, _) = s.call(Method::GET, "/v2/tenants/acme/signers/current/chain", Some(&t), None).await;
    assert_eq!(st, StatusCode::NOT_FOUND);

    // First signer: default name, generation 1, chain verifies to the root of the data dir.
    let first = issued_signer(&s, &t, None).await;
    assert_eq!(first["name"], "acme-signer-1");
    assert_eq!(first["generation"], 1);
    let first_id = first["id"].as_str().unwrap().to_string();
    let c1 = chain(&s, &t, "current").await;
    assert_eq!(c1.len(), 2, "leaf to root");
    let root_file = std::fs::read_to_string(s.data_dir().join("root-ca.pem")).unwrap();
    assert_eq!(c1[1], der(&root_file), "the chain ends at the engine root");
    assert!(signed_by(&c1[0], &c1[1]) && signed_by(&c1[1], &c1[1]));
    let (_, leaf) = parse_x509_certificate(&c1[0]).unwrap();
    let bc = leaf.basic_constraints().unwrap().unwrap().value;
    assert!(bc.ca && bc.path_len_constraint == Some(0), "{bc:?}");
    let ku = leaf.key_usage().unwrap().unwrap().value;
    assert!(ku.key_cert_sign() && ku.crl_sign());
    assert_eq!(cn(&c1[0]), "acme-signer-1");
    // The get answer carries the same certificate.
    let (_, got) = s.call(Method::GET, &format!("/v2/tenants/acme/signers/{first_id}"), Some(&t), None).await;
    assert_eq!(der(got["certificate"].as_str().unwrap()), c1[0]);

    // A client certificate issued by the first signer.
    let (client, ct) = device(&s, &t).await;
    let (_, csr_pem) = csr(false);
    let old_cert = client_cert(&s, &t, &ct, &csr_pem).await;
    assert_eq!(old_cert["signer"], first_id.as_str());
    assert_eq!(old_cert["client"], client.as_str());
    let old_der = der(old_cert["certificate"].as_str().unwrap());
    assert!(signed_by(&old_der, &c1[0]));
    assert_eq!(chain_of(&old_cert)[1..], c1[..], "the info's chain: certificate, signer, root");

    // Rotation: the second signer is ACTIVE, the first RETIRED and still validates.
    let second = issued_signer(&s, &t, Some("rotated")).await;
    assert_eq!(second["generation"], 2);
    let (_, list) = s.call(Method::GET, "/v2/tenants/acme/signers", Some(&t), None).await;
    let states: Vec<(&str, &str)> =
        list.as_array().unwrap().iter().map(|v| (v["name"].as_str().unwrap(), v["state"].as_str().unwrap())).collect();
    assert_eq!(states, vec![("acme-signer-1", "RETIRED"), ("rotated", "ACTIVE")]);
    let (_, filtered) = s.call(Method::GET, "/v2/tenants/acme/signers?filter=state%3DACTIVE", Some(&t), None).await;
    assert_eq!(filtered.as_array().unwrap().len(), 1);
    let c_first = chain(&s, &t, &first_id).await;
    assert!(signed_by(&old_der, &c_first[0]) && signed_by(&c_first[0], &c_first[1]), "retired still validates");
    let c2 = chain(&s, &t, "current").await;
    assert_eq!(cn(&c2[0]), "rotated");
    let (_, csr2) = csr(false);
    let new_cert = client_cert(&s, &t, &ct, &csr2).await;
    assert_eq!(new_cert["signer"], second["id"], "new certificates come from the ACTIVE signer");

    // Renew the current signer: same key, new serial and validity; its certificates still verify.
    let before = poll(&s, &t, "/v2/tenants/acme/signers/current", "/info/status", "ISSUED").await;
    tokio::time::sleep(Duration::from_millis(1100)).await; // a visibly later notBefore
    let (st, b) = s.call(Method::POST, "/v2/tenants/acme/signers/current/renew", Some(&t), None).await;
    assert_eq!(st, StatusCode::ACCEPTED, "{b}");
    let after = poll(&s, &t, "/v2/tenants/acme/signers/current", "/info/status", "ISSUED").await;
    let (old, new) = (der(before["certificate"].as_str().unwrap()), der(after["certificate"].as_str().unwrap()));
    let (_, o) = parse_x509_certificate(&old).unwrap();
    let (_, n) = parse_x509_certificate(&new).unwrap();
    assert_eq!(o.public_key().raw, n.public_key().raw, "renewal keeps the key");
    assert_ne!(o.raw_serial(), n.raw_serial());
    assert!(n.validity().not_before > o.validity().not_before);
    assert!(signed_by(&der(new_cert["certificate"].as_str().unwrap()), &new), "issued certificates still verify");
    s.shutdown().await;
}

#[tokio::test]
async fn delete_only_before_issuing() {
    let (s, t) = server().await;
    let signer = issued_signer(&s, &t, None).await;
    let id = signer["id"].as_str().unwrap();
    let (_, ct) = device(&s, &t).await;
    let issued = client_cert(&s, &t, &ct, &csr(false).1).await;
    let (st, b) = s.call(Method::DELETE, &format!("/v2/tenants/acme/signers/{id}"), Some(&t), None).await;
    assert_eq!(st, StatusCode::CONFLICT, "{b}");
    assert_eq!(b["subsystem"], 518);
    // The certificates it issued, listed by signer and filtered.
    let (st, by) = s.call(Method::GET, &format!("/v1/tenants/acme/certificates/admin/{id}"), Some(&t), None).await;
    assert_eq!(st, StatusCode::OK);
    assert_eq!(by[0]["certRef"], issued["certRef"]);
    let (_, l) = s
        .call(
            Method::GET,
            "/v1/tenants/acme/certificates?filter=status%3DISSUED&filter=certProfile%3DAST_DEVICE",
            Some(&t),
            None,
        )
        .await;
    assert_eq!(l.as_array().unwrap().len(), 1);
    let (st, b) = s.call(Method::GET, "/v1/tenants/acme/certificates?filter=nope%3D1", Some(&t), None).await;
    assert_eq!((st, b["message"].as_str().unwrap()), (StatusCode::BAD_REQUEST, "UnknownProperty: nope"));
    let (st, _) = s.call(Method::GET, "/v2/tenants/acme/signers?page_size=4", Some(&t), None).await;
    assert_eq!(st, StatusCode::BAD_REQUEST);
    // A fresh signer that issued nothing can be deleted; afterwards there is no current one.
    let fresh = issued_signer(&s, &t, Some("fresh")).await;
    let (st, _) = s.call(Method::DELETE, "/v2/tenants/acme/signers/current", Some(&t), None).await;
    assert_eq!(st, StatusCode::NO_CONTENT);
    let (st, _) = s
        .call(Method::GET, &format!("/v2/tenants/acme/signers/{}", fresh["id"].as_str().unwrap()), Some(&t), None)
        .await;
    assert_eq!(st, StatusCode::NOT_FOUND);
    let (st, _) = s.call(Method::GET, "/v2/tenants/acme/signers/current", Some(&t), None).await;
    assert_eq!(st, StatusCode::NOT_FOUND);
    let (st, b) = s.call(Method::GET, "/v2/tenants/acme/signers/not-a-ulid", Some(&t), None).await;
    assert_eq!(st, StatusCode::BAD_REQUEST, "{b}");
    s.shutdown().await;
}

fn crl_serials(der: &[u8], issuer: &[u8]) -> Vec<String> {
    let (_, crl) = parse_x509_crl(der).unwrap();
    let (_, i) = parse_x509_certificate(issuer).unwrap();
    crl.verify_signature(i.public_key()).expect("the CRL is signed by its issuer");
    crl.iter_revoked_certificates().map(|r| hex::encode(r.raw_serial())).collect()
}

async fn crl(s: &TestServer, t: &str, spec: &str) -> Vec<u8> {
    let resp = s.http.get(s.url(&format!("/v2/tenants/acme/signers/{spec}/crl"))).bearer_auth(t).send().await.unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(resp.headers()["content-type"], "application/pkix-crl");
    resp.bytes().await.unwrap().to_vec()
}

#[tokio::test]
async fn revocation_erases_and_lists_in_the_crl() {
    let (s, t) = server().await;
    let r = Receiver::start(vec![]).await;
    let (st, b) = s
        .call(
            Method::POST,
            "/v1/tenants/acme/webhooks",
            Some(&t),
            Some(json!({"filter": "type=signer", "callbackUrl": r.url})),
        )
        .await;
    assert_eq!(st, StatusCode::CREATED, "{b}");
    let signer = issued_signer(&s, &t, None).await;
    let id = signer["id"].as_str().unwrap().to_string();
    let signer_der = chain(&s, &t, &id).await[0].clone();
    let root = der(&std::fs::read_to_string(s.data_dir().join("root-ca.pem")).unwrap());
    let (client, ct) = device(&s, &t).await;
    let cert = client_cert(&s, &t, &ct, &csr(false).1).await;
    let cert_ref = cert["certRef"].as_str().unwrap();
    let serial = cert["serialNumber"].as_str().unwrap().to_string();
    assert!(crl_serials(&crl(&s, &t, &id).await, &signer_der).is_empty());

    // A client sees its own request; another client does not.
    let (st, own) = s.call(Method::GET, &format!("/v1/tenants/acme/certificates/{cert_ref}"), Some(&ct), None).await;
    assert_eq!((st, own["client"].as_str()), (StatusCode::OK, Some(client.as_str())));
    let (_, other) = device(&s, &t).await;
    let (st, _) = s.call(Method::GET, &format!("/v1/tenants/acme/certificates/{cert_ref}"), Some(&other), None).await;
    assert_eq!(st, StatusCode::NOT_FOUND);

    // Client certificate revocation: erased, and in the signer's CRL.
    let (st, b) =
        s.call(Method::POST, &format!("/v1/tenants/acme/certificates/{cert_ref}/revoke"), Some(&t), None).await;
    assert_eq!((st, b["status"].as_str()), (StatusCode::OK, Some("REVOKED")), "{b}");
    let (_, after) = s.call(Method::GET, &format!("/v1/tenants/acme/certificates/{cert_ref}"), Some(&t), None).await;
    assert!(after.get("certificate").is_none(), "{after}");
    assert_eq!(crl_serials(&crl(&s, &t, "current").await, &signer_der), vec![serial]);

    // Signer revocation: certificate erased, unusable, its serial in the root's CRL.
    let signer_serial = hex::encode(parse_x509_certificate(&signer_der).unwrap().1.raw_serial());
    let (st, b) = s.call(Method::POST, &format!("/v2/tenants/acme/signers/{id}/revoke"), Some(&t), None).await;
    assert_eq!((st, b["state"].as_str()), (StatusCode::OK, Some("REVOKED")), "{b}");
    let (st, got) = s.call(Method::GET, &format!("/v2/tenants/acme/signers/{id}"), Some(&t), None).await;
    assert_eq!(st, StatusCode::OK);
    assert!(got["certificate"].is_null(), "erased: {got}");
    let (st, _) = s.call(Method::GET, &format!("/v2/tenants/acme/signers/{id}/chain"), Some(&t), None).await;
    assert_eq!(st, StatusCode::PRECONDITION_FAILED);
    let (st, _) = s.call(Method::GET, "/v2/tenants/acme/signers/current", Some(&t), None).await;
    assert_eq!(st, StatusCode::NOT_FOUND, "a revoked signer is not current");
    assert!(crl_serials(&crl(&s, &t, "root").await, &root).contains(&signer_serial));
    let (st, _) =
        s.call(Method::POST, "/v1/tenants/acme/certificates", Some(&ct), Some(json!({"csr": csr(false).1}))).await;
    assert_eq!(st, StatusCode::PRECONDITION_FAILED, "nothing signs without an ACTIVE signer");

    // Webhooks heard the signer's life.
    let got = r.wait_for(3, 15).await;
    let events: Vec<String> = got
        .iter()
        .map(|g| serde_json::from_str::<Value>(&g.body).unwrap()["event"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(events, vec!["SIGNER_CREATED", "CERTIFICATE_ISSUED", "SIGNER_REVOKED"]);
    let issued: Value = serde_json::from_str(&got[1].body).unwrap();
    assert_eq!(issued["data"]["certRef"], cert_ref);
    s.shutdown().await;
}

#[tokio::test]
async fn the_ca_chooses_subject_and_extensions() {
    let (s, t) = server().await;
    let (client, ct) = device(&s, &t).await;
    let (st, b) =
        s.call(Method::POST, "/v1/tenants/acme/certificates", Some(&ct), Some(json!({"csr": csr(false).1}))).await;
    assert_eq!(st, StatusCode::PRECONDITION_FAILED, "no signer yet: {b}");
    issued_signer(&s, &t, None).await;
    let (key, ca_csr) = csr(true);
    let cert = client_cert(&s, &t, &ct, &ca_csr).await;
    let d = der(cert["certificate"].as_str().unwrap());
    let (_, x) = parse_x509_certificate(&d).unwrap();
    let bc = x.basic_constraints().unwrap().map(|b| b.value.ca).unwrap_or(false);
    assert!(!bc, "never a CA, whatever the CSR asked");
    let ku = x.key_usage().unwrap().unwrap().value;
    assert!(ku.digital_signature() && !ku.key_cert_sign() && !ku.crl_sign());
    assert!(x.extended_key_usage().unwrap().unwrap().value.client_auth);
    assert_eq!(cn(&d), client, "the subject names the client");
    assert!(x.subject_alternative_name().unwrap().is_none(), "nothing copied from the CSR");
    assert_eq!(x.public_key().raw, rcgen::PublicKeyData::subject_public_key_info(&key).as_slice());
    let days = (x.validity().not_after.timestamp() - x.validity().not_before.timestamp()) / 86_400;
    assert_eq!(days, 365, "validity from config (default one year)");

    // Bad requests name the field; an admin cannot submit a CSR.
    let (st, b) = s.call(Method::POST, "/v1/tenants/acme/certificates", Some(&ct), Some(json!({"csr": "nope"}))).await;
    assert_eq!((st, field(&b)), (StatusCode::BAD_REQUEST, "csr".to_string()), "{b}");
    let mut tampered = der(&csr(false).1);
    let n = tampered.len();
    tampered[n - 3] ^= 1; // inside the signature
    let pem = format!(
        "-----BEGIN CERTIFICATE REQUEST-----\n{}\n-----END CERTIFICATE REQUEST-----\n",
        STANDARD.encode(&tampered)
    );
    let (st, b) = s.call(Method::POST, "/v1/tenants/acme/certificates", Some(&ct), Some(json!({"csr": pem}))).await;
    assert_eq!(st, StatusCode::BAD_REQUEST, "a bad signature is refused: {b}");
    let (st, _) =
        s.call(Method::POST, "/v1/tenants/acme/certificates", Some(&t), Some(json!({"csr": csr(false).1}))).await;
    assert_eq!(st, StatusCode::FORBIDDEN);
    // The client reads the current signer and chain.
    let (st, _) = s.call(Method::GET, "/v2/tenants/acme/signers/current/chain", Some(&ct), None).await;
    assert_eq!(st, StatusCode::OK);
    let (st, _) = s.call(Method::GET, "/v2/tenants/acme/signers", Some(&ct), None).await;
    assert_eq!(st, StatusCode::FORBIDDEN);
    s.shutdown().await;
}

fn verify_jws(jws: &str) -> Result<Value, String> {
    let parts: Vec<&str> = jws.split('.').collect();
    let header: Value = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts[0]).unwrap()).unwrap();
    assert_eq!(header["alg"], "ES256");
    let x5c: Vec<Vec<u8>> =
        header["x5c"].as_array().unwrap().iter().map(|c| STANDARD.decode(c.as_str().unwrap()).unwrap()).collect();
    if !(signed_by(&x5c[0], &x5c[1]) && signed_by(&x5c[1], &x5c[1])) {
        return Err("chain".into());
    }
    let (_, leaf) = parse_x509_certificate(&x5c[0]).unwrap();
    let key = ring::signature::UnparsedPublicKey::new(
        &ring::signature::ECDSA_P256_SHA256_FIXED,
        leaf.public_key().subject_public_key.data.to_vec(),
    );
    let sig = URL_SAFE_NO_PAD.decode(parts[2]).unwrap();
    key.verify(format!("{}.{}", parts[0], parts[1]).as_bytes(), &sig).map_err(|_| "signature".to_string())?;
    serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts[1]).map_err(|_| "payload".to_string())?)
        .map_err(|e| e.to_string())
}

#[tokio::test]
async fn sdk_config_is_a_jws_verifiable_with_its_x5c_chain() {
    let (s, t) = server().await;
    let tls = rcgen::generate_simple_self_signed(vec!["api.example".to_string()]).unwrap();
    let cert_b64 = URL_SAFE_NO_PAD.encode(tls.cert.der());
    let body = json!({"tlsBundle": [cert_b64], "astUrl": "https://ast.example/api", "services": [{"name": "tms", "url": "https://tms.example"}]});
    let (st, b) = s.call(Method::POST, "/v1/tenants/acme/sdkconfig", Some(&t), Some(body.clone())).await;
    assert_eq!(st, StatusCode::PRECONDITION_FAILED, "no signer: {b}");
    assert_eq!(b["subsystem"], 518);
    issued_signer(&s, &t, None).await;
    for (bad, path) in [
        (json!({"tlsBundle": []}), "tlsBundle"),
        (json!({"tlsBundle": [STANDARD.encode(tls.cert.der()), "bm90IGEgY2VydA"]}), "tlsBundle[1]"),
        (json!({"tlsBundle": [cert_b64], "astUrl": "ftp://x"}), "astUrl"),
        (json!({"tlsBundle": [cert_b64], "astUrl": format!("https://{}", "a".repeat(250))}), "astUrl"),
        (json!({"tlsBundle": [cert_b64], "services": [{"name": "", "url": "https://x"}]}), "services[0].name"),
    ] {
        let (st, b) = s.call(Method::POST, "/v1/tenants/acme/sdkconfig", Some(&t), Some(bad)).await;
        assert_eq!((st, field(&b)), (StatusCode::BAD_REQUEST, path.to_string()), "{b}");
    }
    let (st, b) = s.call(Method::POST, "/v1/tenants/acme/sdkconfig", Some(&t), Some(body)).await;
    assert_eq!(st, StatusCode::OK, "{b}");
    let jws = b["sdkConfig"].as_str().unwrap();
    let payload = verify_jws(jws).expect("verifies with x5c");
    assert_eq!(payload["astUrl"], "https://ast.example/api");
    assert_eq!(payload["services"][0]["name"], "tms");
    // The x5c chain is the tenant's signer chain.
    let header: Value =
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(jws.split('.').next().unwrap()).unwrap()).unwrap();
    let c = chain(&s, &t, "current").await;
    assert_eq!(STANDARD.decode(header["x5c"][0].as_str().unwrap()).unwrap(), c[0]);
    // One byte of the payload changed: the signature fails.
    let parts: Vec<&str> = jws.split('.').collect();
    let mut p = URL_SAFE_NO_PAD.decode(parts[1]).unwrap();
    let i = p.iter().position(|b| *b == b'a').unwrap();
    p[i] = b'b';
    let forged = format!("{}.{}.{}", parts[0], URL_SAFE_NO_PAD.encode(&p), parts[2]);
    assert_eq!(verify_jws(&forged).unwrap_err(), "signature");
    s.shutdown().await;
}

#[tokio::test]
async fn concurrent_creates_leave_exactly_one_active_signer() {
    let (s, t) = server().await;
    let s = std::sync::Arc::new(s);
    let started = Instant::now();
    let tasks: Vec<_> = (0..32)
        .map(|_| {
            let (s, t) = (s.clone(), t.clone());
            tokio::spawn(async move { s.call(Method::POST, "/v2/tenants/acme/signers", Some(&t), None).await.0 })
        })
        .collect();
    for task in tasks {
        assert_eq!(task.await.unwrap(), StatusCode::ACCEPTED);
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    let list = loop {
        let (_, list) = s.call(Method::GET, "/v2/tenants/acme/signers?page_size=100", Some(&t), None).await;
        let all = list.as_array().unwrap().clone();
        if all.iter().all(|v| v["status"] == "ISSUED") || Instant::now() > deadline {
            break all;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    println!("32 concurrent creates: all issued after {:?}", started.elapsed());
    assert_eq!(list.len(), 32);
    assert!(list.iter().all(|v| v["status"] == "ISSUED"), "all issued");
    assert_eq!(list.iter().filter(|v| v["state"] == "ACTIVE").count(), 1, "{list:?}");
    assert_eq!(list.iter().filter(|v| v["state"] == "RETIRED").count(), 31);
    let mut generations: Vec<u64> = list.iter().map(|v| v["generation"].as_u64().unwrap()).collect();
    generations.sort();
    assert_eq!(generations, (1..=32).collect::<Vec<_>>());
    let active = list.iter().find(|v| v["state"] == "ACTIVE").unwrap();
    assert_eq!(active["generation"], 32, "the last created is the ACTIVE one");
}

#[tokio::test]
async fn v1_forms_map_onto_current_and_are_deprecated() {
    let (s, t) = server().await;
    let (st, _) = s.call(Method::GET, "/v1/tenants/acme/signer", Some(&t), None).await;
    assert_eq!(st, StatusCode::NOT_FOUND);
    let (st, b) = s.call(Method::POST, "/v1/tenants/acme/signer", Some(&t), Some(json!({}))).await;
    assert_eq!((st, field(&b)), (StatusCode::BAD_REQUEST, "request body".to_string()), "name is required: {b}");
    let resp = s
        .http
        .post(s.url("/v1/tenants/acme/signer"))
        .bearer_auth(&t)
        .json(&json!({"name": "legacy"}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::ACCEPTED);
    assert_eq!(resp.headers()["deprecation"], "true");
    let (st, _) = s.call(Method::POST, "/v1/tenants/acme/signer", Some(&t), Some(json!({"name": "again"}))).await;
    assert_eq!(st, StatusCode::CONFLICT, "one signer in the v1 form");
    let got = poll(&s, &t, "/v1/tenants/acme/signer", "/info/status", "ISSUED").await;
    assert_eq!(got["info"]["name"], "legacy");
    let resp = s.http.get(s.url("/v1/tenants/acme/signer")).bearer_auth(&t).send().await.unwrap();
    assert_eq!(resp.headers()["deprecation"], "true");
    let resp = s
        .http
        .post(s.url("/v1/tenants/acme/signer/reissue"))
        .bearer_auth(&t)
        .json(&json!({"ignoreNotIssued": false}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::ACCEPTED);
    assert_eq!(resp.headers()["deprecation"], "true");
    let (st, _) =
        s.call(Method::POST, "/v1/tenants/acme/signer/reissue", Some(&t), Some(json!({"ignoreNotIssued": true}))).await;
    assert_eq!(st, StatusCode::ACCEPTED);
    poll(&s, &t, "/v1/tenants/acme/signer", "/info/status", "ISSUED").await;
    let resp = s.http.delete(s.url("/v1/tenants/acme/signer")).bearer_auth(&t).send().await.unwrap();
    assert_eq!(resp.status(), StatusCode::NO_CONTENT);
    assert_eq!(resp.headers()["deprecation"], "true");
    let (st, _) = s.call(Method::GET, "/v1/tenants/acme/signer", Some(&t), None).await;
    assert_eq!(st, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn an_operator_ca_can_be_the_root() {
    let dir = tempfile::tempdir().unwrap();
    // An operator CA: signers chain under it.
    let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
    let mut p = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    p.distinguished_name.push(rcgen::DnType::CommonName, "Operator CA");
    p.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    p.key_usages = vec![rcgen::KeyUsagePurpose::KeyCertSign, rcgen::KeyUsagePurpose::CrlSign];
    let ca = p.self_signed(&key).unwrap();
    std::fs::write(dir.path().join("ca.pem"), ca.pem()).unwrap();
    std::fs::write(dir.path().join("ca.key"), key.serialize_pem()).unwrap();
    let files = (dir.path().join("ca.pem"), dir.path().join("ca.key"));
    let s = TestServer::start_with(move |c| c.pki.ca = Some(files)).await;
    s.create_tenant("acme").await;
    let t = s.admin_token("acme").await;
    issued_signer(&s, &t, None).await;
    let c = chain(&s, &t, "current").await;
    assert_eq!(c[1], ca.der().to_vec());
    assert!(signed_by(&c[0], ca.der()));
    s.shutdown().await;
}

#[tokio::test]
async fn openssl_verifies_a_client_certificate_and_its_revocation() {
    if std::process::Command::new("openssl").arg("version").output().is_err() {
        println!("SKIPPED: the openssl CLI is not installed");
        return;
    }
    let (s, t) = server().await;
    let dir = tempfile::tempdir().unwrap();
    let path = |n: &str| dir.path().join(n);
    let openssl = |args: &[&str]| {
        let out = std::process::Command::new("openssl").args(args).current_dir(dir.path()).output().unwrap();
        (
            out.status.success(),
            format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)),
        )
    };
    // The device makes its key and CSR with openssl.
    let (ok, out) = openssl(&[
        "req",
        "-new",
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:P-256",
        "-nodes",
        "-keyout",
        "device.key",
        "-subj",
        "/CN=whatever",
        "-out",
        "device.csr",
    ]);
    assert!(ok, "{out}");
    issued_signer(&s, &t, None).await;
    let (_, ct) = device(&s, &t).await;
    let cert = client_cert(&s, &t, &ct, &std::fs::read_to_string(path("device.csr")).unwrap()).await;
    let chain: Vec<&str> = cert["chain"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
    std::fs::write(path("device.pem"), chain[0]).unwrap();
    std::fs::write(path("signer.pem"), chain[1]).unwrap();
    std::fs::write(path("root.pem"), chain[2]).unwrap();
    let (ok, out) =
        openssl(&["verify", "-CAfile", "root.pem", "-untrusted", "signer.pem", "-purpose", "sslclient", "device.pem"]);
    assert!(ok && out.contains("device.pem: OK"), "{out}");
    // The certificate matches the device's key.
    let (_, a) = openssl(&["x509", "-in", "device.pem", "-noout", "-pubkey"]);
    let (_, b) = openssl(&["pkey", "-in", "device.key", "-pubout"]);
    assert_eq!(a, b);
    // After revocation, openssl's CRL check refuses it.
    let cert_ref = cert["certRef"].as_str().unwrap();
    let (st, _) =
        s.call(Method::POST, &format!("/v1/tenants/acme/certificates/{cert_ref}/revoke"), Some(&t), None).await;
    assert_eq!(st, StatusCode::OK);
    std::fs::write(path("signer.crl"), crl(&s, &t, "current").await).unwrap();
    std::fs::write(path("root.crl"), crl(&s, &t, "root").await).unwrap();
    assert!(openssl(&["crl", "-inform", "DER", "-in", "signer.crl", "-out", "signer.crl.pem"]).0);
    assert!(openssl(&["crl", "-inform", "DER", "-in", "root.crl", "-out", "root.crl.pem"]).0);
    let (ok, out) = openssl(&[
        "verify",
        "-crl_check_all",
        "-CAfile",
        "root.pem",
        "-untrusted",
        "signer.pem",
        "-CRLfile",
        "signer.crl.pem",
        "-CRLfile",
        "root.crl.pem",
        "device.pem",
    ]);
    assert!(!ok && out.contains("revoked"), "{out}");
    s.shutdown().await;
}

/// An ACTIVE signer left REQUESTED (as after a crash before issuance), written
/// straight into storage; answers its id.
fn requested_signer(engine: &herald::Engine, name: &str) -> String {
    let id = ulid::Ulid::generate().to_string();
    let pending = herald_storage::signers::Signer {
        id: id.clone(),
        name: name.into(),
        generation: engine.store.signers().generation("acme").unwrap() + 1,
        state: "ACTIVE".into(),
        status: "REQUESTED".into(),
        failure: None,
        key: None,
        cert_pem: None,
        serials: vec![],
        issued: 0,
        crl_der: None,
        crl_number: 0,
        created_ms: 1,
        updated_ms: 1,
    };
    // The tenant has no signer yet: nothing to retire.
    engine.store.transact(|tx| tx.insert_signer("acme", &pending)).unwrap();
    id
}

#[tokio::test]
async fn a_signer_not_yet_issued_has_no_chain_and_renews_only_when_told() {
    let (s, t) = server().await;
    let engine = &s.running.as_ref().unwrap().engine;
    let id = requested_signer(engine, "pending");
    let (st, b) = s.call(Method::GET, &format!("/v2/tenants/acme/signers/{id}/chain"), Some(&t), None).await;
    assert_eq!(st, StatusCode::PRECONDITION_FAILED, "{b}");
    let (st, b) = s.call(Method::POST, "/v1/tenants/acme/sdkconfig", Some(&t), Some(json!({"tlsBundle": [STANDARD.encode(rcgen::generate_simple_self_signed(vec!["x.example".to_string()]).unwrap().cert.der())]}))).await;
    assert_eq!(st, StatusCode::PRECONDITION_FAILED, "{b}");
    let (st, b) = s.call(Method::POST, "/v2/tenants/acme/signers/current/renew", Some(&t), None).await;
    assert_eq!(st, StatusCode::PRECONDITION_FAILED, "{b}");
    let (st, b) = s
        .call(Method::POST, "/v2/tenants/acme/signers/current/renew", Some(&t), Some(json!({"ignoreNotIssued": true})))
        .await;
    assert_eq!(st, StatusCode::ACCEPTED, "{b}");
    let got = poll(&s, &t, &format!("/v2/tenants/acme/signers/{id}"), "/info/status", "ISSUED").await;
    assert_eq!(cn(&der(got["certificate"].as_str().unwrap())), "pending");
    assert_eq!(chain(&s, &t, &id).await.len(), 2);
    s.shutdown().await;
}

#[tokio::test]
async fn issuance_left_requested_resumes_on_recovery() {
    let (s, t) = server().await;
    let engine = &s.running.as_ref().unwrap().engine;
    let id = requested_signer(engine, "interrupted");
    // What the engine does at start-up.
    engine.pki.recover().unwrap();
    let got = poll(&s, &t, &format!("/v2/tenants/acme/signers/{id}"), "/info/status", "ISSUED").await;
    assert_eq!(cn(&der(got["certificate"].as_str().unwrap())), "interrupted");
    s.shutdown().await;
}

/// Invariant: however two signer creations (rotations) of one tenant
/// interleave, afterwards the tenant has exactly one ACTIVE signer, the
/// latest, and no two signers share a generation (1, 2, ... with no gap).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_rotations_leave_exactly_one_active_signer_and_distinct_generations() {
    let (s, t) = server().await;
    let create =
        |name: String| s.call(Method::POST, "/v2/tenants/acme/signers", Some(&t), Some(json!({ "name": name })));
    for round in 0..25u64 {
        let (a, b) = tokio::join!(create(format!("a{round}")), create(format!("b{round}")));
        assert_eq!((a.0, b.0), (StatusCode::ACCEPTED, StatusCode::ACCEPTED), "round {round}: {a:?} {b:?}");
        let (st, list) = s.call(Method::GET, "/v2/tenants/acme/signers?page_size=100", Some(&t), None).await;
        assert_eq!(st, StatusCode::OK, "{list}");
        let list = list.as_array().unwrap();
        let active: Vec<&Value> = list.iter().filter(|v| v["state"] == "ACTIVE").collect();
        assert_eq!(active.len(), 1, "round {round}: exactly one ACTIVE signer: {list:?}");
        let mut generations: Vec<u64> = list.iter().map(|v| v["generation"].as_u64().unwrap()).collect();
        generations.sort();
        assert_eq!(generations, (1..=2 * (round + 1)).collect::<Vec<_>>(), "round {round}: distinct generations");
        assert_eq!(active[0]["generation"], 2 * (round + 1), "round {round}: the latest is the ACTIVE one");
        let created: Vec<&str> = [&a.1, &b.1].iter().map(|v| v["id"].as_str().unwrap()).collect();
        assert!(created.contains(&active[0]["id"].as_str().unwrap()), "round {round}: one of the two is ACTIVE");
    }
    s.shutdown().await;
}

/// Invariant: a client certificate is never stored as issued by a signer
/// that was deleted before it was stored. Issuance counts the certificate
/// on its signer in the transaction that stores it, and a signer that has
/// issued is not deleted, so after CSRs race the deletion of the signer that
/// would issue them: either the delete answered 409, the signer is still
/// stored and every certificate issued names it; or the delete answered 204
/// and no certificate is, or ever was, issued by it (each request was
/// refused 412 or ends FAILED).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_certificate_is_never_issued_by_a_signer_deleted_before_it_was_stored() {
    let (s, t) = server().await;
    let (_, ct) = device(&s, &t).await;
    let (_, csr_pem) = csr(false);
    let submit = || async {
        let body = json!({ "csr": csr_pem.clone() });
        s.call(Method::POST, "/v1/tenants/acme/certificates", Some(&ct), Some(body)).await
    };
    // Outcomes of requests: refused (deleted before), FAILED (deleted before issuance), ISSUED.
    let (mut refused, mut failed, mut issued, mut deleted) = (0, 0, 0, 0);
    for round in 0..30u64 {
        let signer = issued_signer(&s, &t, Some(&format!("s{round}"))).await;
        let id = signer["id"].as_str().unwrap().to_string();
        // Sixteen requests, and the delete sent with them or once the first
        // was accepted (the issuance of all is under way then).
        let accepted = tokio::sync::Notify::new();
        let requests = futures::future::join_all((0..16).map(|_| async {
            let answer = submit().await;
            accepted.notify_one();
            answer
        }));
        let delete = async {
            if round % 2 == 1 {
                accepted.notified().await;
            }
            s.call(Method::DELETE, &format!("/v2/tenants/acme/signers/{id}"), Some(&t), None).await
        };
        let (requests, (del, body)) = tokio::join!(requests, delete);
        assert!(matches!(del, StatusCode::NO_CONTENT | StatusCode::CONFLICT), "round {round}: {del} {body}");
        let mut certs = Vec::new();
        for (st, request) in requests {
            if st == StatusCode::PRECONDITION_FAILED {
                refused += 1;
                continue;
            }
            assert_eq!(st, StatusCode::ACCEPTED, "round {round}: {request}");
            let path = format!("/v1/tenants/acme/certificates/{}", request["certRef"].as_str().unwrap());
            let deadline = Instant::now() + Duration::from_secs(20);
            let c = loop {
                let (_, c) = s.call(Method::GET, &path, Some(&t), None).await;
                if c["status"] != "REQUESTED" {
                    break c;
                }
                assert!(Instant::now() < deadline, "round {round}: never issued: {c}");
                tokio::time::sleep(Duration::from_millis(10)).await;
            };
            match c["status"].as_str().unwrap() {
                "ISSUED" => issued += 1,
                "FAILED" => failed += 1,
                other => panic!("round {round}: {other}: {c}"),
            }
            certs.push(c);
        }
        let issued_here: Vec<&Value> = certs.iter().filter(|c| c["status"] == "ISSUED").collect();
        let (st, _) = s.call(Method::GET, &format!("/v2/tenants/acme/signers/{id}"), Some(&t), None).await;
        let (_, by) = s.call(Method::GET, &format!("/v1/tenants/acme/certificates/admin/{id}"), Some(&t), None).await;
        if del == StatusCode::NO_CONTENT {
            deleted += 1;
            assert_eq!(st, StatusCode::NOT_FOUND, "round {round}");
            assert!(issued_here.is_empty(), "round {round}: issued by a deleted signer: {issued_here:?}");
            assert_eq!(by, json!([]), "round {round}: no certificate names the deleted signer");
        } else {
            assert_eq!(st, StatusCode::OK, "round {round}: a signer that issued stays");
            assert!(!issued_here.is_empty(), "round {round}: 409 without an issued certificate: {body}");
            assert!(issued_here.iter().all(|c| c["signer"] == id.as_str()), "round {round}: {issued_here:?}");
            assert_eq!(by.as_array().unwrap().len(), issued_here.len(), "round {round}: {by}");
        }
    }
    println!("{deleted} deletes won; requests refused {refused}, failed {failed}, issued {issued}");
    s.shutdown().await;
}

/// Polls `get` until `done` holds of its answer (at most 20 s).
async fn until<T, F, Fut>(what: &str, mut get: F, done: impl Fn(&T) -> bool) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, herald::Error>>,
{
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let got = get().await.unwrap_or_else(|e| panic!("{what}: {e}"));
        if done(&got) {
            return got;
        }
        assert!(Instant::now() < deadline, "{what} never happened");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The library API (no HTTP) checks the caller as the routes do and answers
/// typed views: signers, a client certificate's life, the SDK config.
#[tokio::test]
async fn the_library_checks_the_caller_and_answers_typed_views() {
    use herald::models::signer::{CreateSigner, CsrBody, Renew, SdkConfigRequest};
    use herald::{Caller, ErrorKind};
    let (s, t) = server().await;
    let (client, _) = device(&s, &t).await;
    let engine = &s.running.as_ref().unwrap().engine;
    let (signers, certificates) = (engine.signers(), engine.certificates());
    let (admin, reader, device) = (Caller::admin("acme"), Caller::reader("acme"), Caller::client("acme", &client));

    // Creating a signer is an administrator's act, of its own tenant.
    let named = || CreateSigner { name: Some("lib".into()) };
    for (who, kind) in [
        (&reader, ErrorKind::Forbidden),
        (&device, ErrorKind::Forbidden),
        (&Caller::admin("other"), ErrorKind::Forbidden),
        (&Caller::Anonymous, ErrorKind::Unauthenticated),
        (&Caller::Operator, ErrorKind::Unauthenticated),
    ] {
        assert_eq!(signers.create(who, "acme", named()).await.unwrap_err().kind(), kind, "{who:?}");
    }
    let bad = CreateSigner { name: Some(String::new()) };
    assert_eq!(signers.create(&admin, "acme", bad).await.unwrap_err().field.as_deref(), Some("name"));
    let created = signers.create(&admin, "acme", named()).await.unwrap();
    assert_eq!((created.name.as_str(), created.state.as_str(), created.generation), ("lib", "ACTIVE", 1));
    assert_eq!(created.tenant, "acme");

    // Any principal of the tenant reads it; readers list, clients do not.
    let detail = until("issuance", || signers.get(&device, "acme", "current"), |d| d.info.status == "ISSUED").await;
    assert_eq!(detail.info.id, created.id);
    assert_eq!(cn(&der(detail.certificate.as_deref().unwrap())), "lib");
    assert_eq!(signers.list(&device, "acme").await.unwrap_err().kind(), ErrorKind::Forbidden);
    let listed = signers.list(&reader, "acme").await.unwrap();
    assert_eq!(listed.iter().map(|v| v.id.as_str()).collect::<Vec<_>>(), [created.id.as_str()]);
    let chain = signers.chain(&device, "acme", &created.id).await.unwrap().chain;
    assert_eq!(chain.len(), 2);
    assert!(signed_by(&der(&chain[0]), &der(&chain[1])));
    let renew = || Renew { ignore_not_issued: false };
    assert_eq!(signers.renew(&reader, "acme", "current", renew()).await.unwrap_err().kind(), ErrorKind::Forbidden);
    assert_eq!(
        signers
            .create_first(&admin, "acme", serde_json::from_value(json!({"name": "again"})).unwrap())
            .await
            .unwrap_err()
            .kind(),
        ErrorKind::Conflict,
        "the v1 form does not replace an ACTIVE signer"
    );

    // Only a device client submits a CSR; it checks its own request, not another's.
    let (_, pem) = csr(false);
    let err = certificates.submit(&admin, "acme", CsrBody { csr: pem.clone() }).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Forbidden);
    let requested = certificates.submit(&device, "acme", CsrBody { csr: pem }).await.unwrap();
    assert_eq!((requested.status.as_str(), requested.client.as_str()), ("REQUESTED", client.as_str()));
    let stranger = Caller::client("acme", &ulid::Ulid::generate().to_string());
    let err = certificates.get(&stranger, "acme", &requested.cert_ref).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotFound, "another client's request is not shown");
    let issued =
        until("certificate", || certificates.get(&device, "acme", &requested.cert_ref), |c| c.status == "ISSUED").await;
    let leaf = der(issued.certificate.as_deref().unwrap());
    assert_eq!(issued.chain.as_ref().unwrap().len(), 3, "leaf, signer, root");
    assert!(signed_by(&leaf, &der(&chain[0])));
    assert_eq!(certificates.list(&device, "acme").await.unwrap_err().kind(), ErrorKind::Forbidden);
    assert_eq!(certificates.of_signer(&reader, "acme", &created.id).await.unwrap().len(), 1);

    // Revoking is an administrator's act; the signer's CRL then lists it.
    let err = certificates.revoke(&device, "acme", &requested.cert_ref).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Forbidden);
    let revoked = certificates.revoke(&admin, "acme", &requested.cert_ref).await.unwrap();
    assert_eq!(revoked.status, "REVOKED");
    let crl = signers.crl(&device, "acme", &created.id).await.unwrap();
    assert_eq!(crl_serials(&crl, &der(&chain[0])), [revoked.serial_number.unwrap()]);

    // The SDK config: administrators only, its payload the request's.
    let tls = rcgen::generate_simple_self_signed(vec!["api.example".to_string()]).unwrap();
    let request = |bundle: &str| SdkConfigRequest {
        tls_bundle: vec![bundle.to_string()],
        ast_url: Some("https://ast.example/api".into()),
        services: vec![],
    };
    let good = STANDARD.encode(tls.cert.der());
    let err = signers.sdk_config(&reader, "acme", request(&good)).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Forbidden);
    let err = signers.sdk_config(&admin, "acme", request("bm90IGEgY2VydA")).await.unwrap_err();
    assert_eq!((err.kind(), err.field.as_deref()), (ErrorKind::Invalid, Some("tlsBundle[0]")));
    let config = signers.sdk_config(&admin, "acme", request(&good)).await.unwrap();
    let payload = verify_jws(&config.sdk_config).expect("verifies with x5c");
    assert_eq!(
        (payload["tenant"].as_str(), payload["astUrl"].as_str()),
        (Some("acme"), Some("https://ast.example/api"))
    );
    assert_eq!(payload["tlsBundle"][0].as_str(), Some(good.as_str()));
    s.shutdown().await;
}

/// A reissue asked while the issuance before still holds its lease (its
/// task finishing) is issued once the lease is free, not left to the
/// recovery pass 30 s later. The test holds the lease for 300 ms.
#[tokio::test]
async fn a_reissue_while_the_last_issuance_holds_its_lease_is_issued() {
    let (s, t) = server().await;
    let (st, b) = s.call(Method::POST, "/v1/tenants/acme/signer", Some(&t), Some(json!({"name": "quick"}))).await;
    assert_eq!(st, StatusCode::ACCEPTED, "{b}");
    let issued = poll(&s, &t, "/v1/tenants/acme/signer", "/info/status", "ISSUED").await;
    let id = issued["info"]["id"].as_str().unwrap().to_string();
    let store = s.running.as_ref().unwrap().engine.store.clone();
    let name = format!("signer/acme/{id}");
    let held = loop {
        if let Some(lease) = store.leases().acquire(&name).unwrap() {
            break lease;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    let (st, b) = s
        .call(Method::POST, "/v1/tenants/acme/signer/reissue", Some(&t), Some(json!({"ignoreNotIssued": false})))
        .await;
    assert_eq!(st, StatusCode::ACCEPTED, "{b}");
    let (_, b) = s.call(Method::GET, "/v1/tenants/acme/signer", Some(&t), None).await;
    assert_eq!(b["info"]["status"], "REQUESTED", "{b}");
    tokio::time::sleep(Duration::from_millis(300)).await;
    store.leases().release(&held).unwrap();
    let started = Instant::now();
    let deadline = started + Duration::from_secs(5);
    loop {
        let (_, b) = s.call(Method::GET, "/v1/tenants/acme/signer", Some(&t), None).await;
        if b["info"]["status"] == "ISSUED" {
            break;
        }
        assert!(Instant::now() < deadline, "not issued within 5 s of the lease's release: {b}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
