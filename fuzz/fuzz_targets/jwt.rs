//! JWT parsing and verification. Mode 0: the input is a token and must not verify
//! (unless it is the one valid token). Modes 1 and 2: the input replaces the header
//! or the payload segment of a valid token, which must then fail verification.
#![no_main]
use herald::auth::{tokens, AccessClaims, KeyCache};
use herald::models::tenant::CreateTenant;
use herald_storage::{Store, StoreOptions};
use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;

const URL: &str = "http://fuzz.invalid";

struct World {
    store: Store,
    keys: KeyCache,
    valid: String,
}

fn world() -> &'static World {
    static WORLD: OnceLock<World> = OnceLock::new();
    WORLD.get_or_init(|| {
        herald::engine::install_crypto_providers();
        let dir = std::env::temp_dir().join(format!("herald-fuzz-jwt-{}", std::process::id()));
        let store = Store::open(&StoreOptions::new(&dir)).expect("store opens");
        let body = CreateTenant {
            tenant_id: "acme".into(),
            admin_username: "admin".into(),
            admin_password: "fuzz-password-1".into(),
        };
        herald::api::tenants::create_tenant(&store, &body).expect("tenant created");
        let keys = KeyCache::default();
        let key = keys.get(&store, "acme").expect("key read").expect("key exists");
        let now = herald_storage::now_ms() / 1000;
        let claims = AccessClaims {
            exp: now + 86_400,
            iat: now,
            iat_ms: now * 1000,
            jti: "j".into(),
            iss: tokens::issuer(URL, "acme"),
            aud: "account".into(),
            sub: "s".into(),
            typ: tokens::TYP_ACCESS.into(),
            azp: "herald-cli".into(),
            session_state: "x".into(),
            scope: "openid".into(),
            realm_access: tokens::RoleSet { roles: vec!["admin".into()] },
            resource_access: Default::default(),
            preferred_username: "admin".into(),
            email: None,
            ast_client_id: None,
        };
        let valid = tokens::sign(&key, &claims).expect("signs");
        tokens::verify(&store, &keys, URL, &valid, tokens::TYP_ACCESS).expect("the valid token verifies");
        World { store, keys, valid }
    })
}

fuzz_target!(|data: &[u8]| {
    let w = world();
    let Some((&mode, rest)) = data.split_first() else { return };
    let rest = String::from_utf8_lossy(rest).into_owned();
    let token = match mode % 3 {
        0 => rest,
        m => {
            let mut parts: Vec<String> = w.valid.split('.').map(str::to_string).collect();
            let i = usize::from(m - 1);
            if parts[i] == rest {
                return;
            }
            parts[i] = rest;
            parts.join(".")
        }
    };
    if token == w.valid {
        return;
    }
    let verified = tokens::verify(&w.store, &w.keys, URL, &token, tokens::TYP_ACCESS);
    assert!(verified.is_err(), "a forged token verified: {token}");
});
