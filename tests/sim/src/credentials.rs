//! Credentials: generating a complete set for a fake app (`--gen-credentials`), and the
//! registry of public material the simulators verify against.
//!
//! The secret halves go to the output directory, for Herald; the public halves are registered
//! in the simulators' cert dir as `creds/<name>/registration.json` (see [`Registration`]). Every
//! simulator sharing that cert dir accepts them, including one already running: a lookup that
//! misses reloads the directory, so credentials generated after `start` work at once.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use rcgen::{KeyPair, PKCS_ECDSA_P256_SHA256};
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::files::{read_string, write_atomic};
use crate::jwt::spki_pem_key_bytes;
use crate::tls::Ca;
use crate::util::{random_digits, random_hex, random_upper_alnum};
use crate::SimError;

/// The bundle id of generated APNs credentials.
pub const DEMO_BUNDLE_ID: &str = "com.herald.demo";

/// Where the simulators are, and which cert dir they use: what credential generation needs
/// to know. [`crate::Simulators::urls`] gives it for running simulators.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SimUrls {
    /// The simulators' cert dir: its CA signs the APNs client certificate and the public
    /// keys are registered there.
    pub cert_dir: PathBuf,
    /// Base URL of the APNs simulator, e.g. `https://127.0.0.1:8443`.
    pub apns_url: String,
    /// Base URL of the FCM simulator.
    pub fcm_url: String,
    /// Base URL of the HMS simulator.
    pub hms_url: String,
    /// Base URL of the Web Push simulator: the subscriptions' endpoints.
    pub webpush_url: String,
}

impl SimUrls {
    /// The Google OAuth token endpoint of the FCM simulator (the service account's `token_uri`).
    pub fn fcm_token_url(&self) -> String {
        format!("{}/token", self.fcm_url.trim_end_matches('/'))
    }

    /// The Huawei OAuth token endpoint of the HMS simulator.
    pub fn hms_token_url(&self) -> String {
        format!("{}/oauth2/v3/token", self.hms_url.trim_end_matches('/'))
    }
}

/// What [`generate_credentials`] wrote, with the values Herald needs.
#[derive(Debug, Clone)]
pub struct Credentials {
    /// The output directory.
    pub dir: PathBuf,
    /// The name of the registration in the cert dir (`creds/<name>/`).
    pub name: String,
    /// APNs key id (10 characters, the JWT `kid`).
    pub apns_key_id: String,
    /// APNs team id (10 characters, the JWT `iss`).
    pub apns_team_id: String,
    /// The bundle id (`apns-topic`) the credentials may push to.
    pub bundle_id: String,
    /// `apns_key.p8`: PKCS#8 PEM P-256 key.
    pub apns_key_path: PathBuf,
    /// The contents of `apns_key.p8`.
    pub apns_key_pem: String,
    /// `apns_cert.pem`: client certificate for certificate-based APNs auth.
    pub apns_cert_path: PathBuf,
    /// `apns_cert_key.pem`: its PKCS#8 PEM key.
    pub apns_cert_key_path: PathBuf,
    /// `fcm_service_account.json`.
    pub fcm_service_account_path: PathBuf,
    /// The contents of `fcm_service_account.json`.
    pub fcm_service_account_json: String,
    /// The service account's `project_id`.
    pub fcm_project_id: String,
    /// The service account's `client_email`.
    pub fcm_client_email: String,
    /// The service account's `private_key_id`.
    pub fcm_private_key_id: String,
    /// The service account's `token_uri`.
    pub fcm_token_uri: String,
    /// HMS client id (= app id).
    pub hms_client_id: String,
    /// HMS client secret.
    pub hms_client_secret: String,
    /// `webpush_subscriptions.json`: ten browser subscriptions of the Web Push simulator,
    /// the first one dead (its endpoint's path starts with `dead`: 410).
    pub webpush_subscriptions_path: PathBuf,
    /// The contents of `webpush_subscriptions.json`.
    pub webpush_subscriptions: Vec<serde_json::Value>,
    /// `webpush_subscription_keys.json`: what the browsers keep of them (the private key
    /// and auth secret, base64url), for tests that decrypt on their own.
    pub webpush_keys_path: PathBuf,
    /// `app.json`: the body of Herald's "save app" request.
    pub app_json_path: PathBuf,
    /// The contents of `app.json`.
    pub app_json: serde_json::Value,
}

/// The public material of one credential set, as stored in
/// `<cert_dir>/creds/<name>/registration.json`. Each part is optional, so a file can register
/// only an APNs key, for instance. Write one by hand (or with [`register_credentials`]) to make
/// the simulators accept keys generated elsewhere.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Registration {
    /// An APNs signing key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub apns: Option<ApnsRegistration>,
    /// A Google service account.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fcm: Option<FcmRegistration>,
    /// A Huawei app's OAuth client.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hms: Option<HmsRegistration>,
}

/// An APNs token-auth key: JWTs with `kid = key_id` and `iss = team_id` verify against
/// `public_key_pem` and may push to `bundle_id` (and its `.voip`, `.complication`… topics).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApnsRegistration {
    /// The 10-character key id.
    pub key_id: String,
    /// The 10-character team id.
    pub team_id: String,
    /// The app's bundle id.
    pub bundle_id: String,
    /// The P-256 public key, SPKI PEM (`-----BEGIN PUBLIC KEY-----`).
    pub public_key_pem: String,
}

/// A Google service account: assertions with `kid = private_key_id`, `iss = client_email`
/// verify against `public_key_pem`, and the access token granted may send for `project_id`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FcmRegistration {
    /// The Firebase project id.
    pub project_id: String,
    /// The key id (the JWT header's `kid`).
    pub private_key_id: String,
    /// The service account's e-mail (the JWT's `iss`).
    pub client_email: String,
    /// The RSA public key, SPKI PEM.
    pub public_key_pem: String,
}

/// A Huawei Push Kit OAuth client; the client id is also the app id in send URLs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HmsRegistration {
    /// The client (app) id.
    pub client_id: String,
    /// The client secret.
    pub client_secret: String,
}

/// Writes `registration` as `<cert_dir>/creds/<name>/registration.json`.
pub fn register_credentials(cert_dir: &Path, name: &str, registration: &Registration) -> Result<PathBuf, SimError> {
    let safe: String =
        name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '_' }).collect();
    let path = cert_dir.join("creds").join(safe).join("registration.json");
    write_atomic(&path, &serde_json::to_vec_pretty(registration)?, false)?;
    Ok(path)
}

/// Generates a complete credential set into `dir` and registers its public half in
/// `sims.cert_dir` (creating the CA there if needed). Files written to `dir`:
/// `apns_key.p8`, `apns.json`, `apns_cert.pem`, `apns_cert_key.pem`,
/// `fcm_service_account.json`, `hms.json`, `app.json`, `endpoints.json` and a copy of `ca.pem`.
///
/// Generating the 2048-bit RSA key takes a moment (longer in debug builds): tests should
/// generate once and share.
pub fn generate_credentials(dir: &Path, sims: &SimUrls) -> Result<Credentials, SimError> {
    let ca = Ca::load_or_create(&sims.cert_dir)?;
    std::fs::create_dir_all(dir).map_err(|e| SimError::io(dir, e))?;

    // APNs token auth: a P-256 key in PKCS#8 PEM, as Apple's AuthKey_<kid>.p8.
    let apns_key = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256)?;
    let apns_key_pem = apns_key.serialize_pem();
    let key_id = random_upper_alnum(10);
    let team_id = random_upper_alnum(10);
    let bundle_id = DEMO_BUNDLE_ID.to_owned();
    let apns_key_path = dir.join("apns_key.p8");
    write_atomic(&apns_key_path, apns_key_pem.as_bytes(), true)?;
    let apns_json = json!({ "keyId": key_id, "teamId": team_id, "bundleId": bundle_id });
    write_atomic(&dir.join("apns.json"), &serde_json::to_vec_pretty(&apns_json)?, false)?;

    // APNs certificate auth: a client certificate signed by the simulators' CA.
    let (cert_pem, cert_key_pem) = ca.issue_apns_client_cert(&bundle_id, &team_id)?;
    let apns_cert_path = dir.join("apns_cert.pem");
    let apns_cert_key_path = dir.join("apns_cert_key.pem");
    write_atomic(&apns_cert_path, cert_pem.as_bytes(), false)?;
    write_atomic(&apns_cert_key_path, cert_key_pem.as_bytes(), true)?;

    // FCM: a Google service account with an RSA-2048 key.
    let (rsa_private_pem, rsa_public_pem) = generate_rsa_2048()?;
    let project_id = format!("herald-demo-{}", random_hex(6));
    let private_key_id = random_hex(40);
    let client_email = format!("firebase-adminsdk-{}@{project_id}.iam.gserviceaccount.com", random_hex(5));
    let client_id = random_digits(21);
    let token_uri = sims.fcm_token_url();
    let service_account = json!({
        "type": "service_account",
        "project_id": project_id,
        "private_key_id": private_key_id,
        "private_key": rsa_private_pem,
        "client_email": client_email,
        "client_id": client_id,
        "auth_uri": "https://accounts.google.com/o/oauth2/auth",
        "token_uri": token_uri,
        "auth_provider_x509_cert_url": "https://www.googleapis.com/oauth2/v1/certs",
        "client_x509_cert_url": format!(
            "https://www.googleapis.com/robot/v1/metadata/x509/{}",
            client_email.replace('@', "%40")
        ),
        "universe_domain": "googleapis.com",
    });
    let fcm_service_account_json = serde_json::to_string_pretty(&service_account)?;
    let fcm_service_account_path = dir.join("fcm_service_account.json");
    write_atomic(&fcm_service_account_path, fcm_service_account_json.as_bytes(), true)?;

    // HMS: an OAuth client id (numeric, like Huawei app ids) and secret.
    let hms_client_id = random_digits(9);
    let hms_client_secret = random_hex(64);
    let hms_json = json!({ "clientId": hms_client_id, "clientSecret": hms_client_secret });
    write_atomic(&dir.join("hms.json"), &serde_json::to_vec_pretty(&hms_json)?, true)?;

    // Web Push: browser subscriptions of the simulator (their keys derive from their ids).
    let wp_keys = crate::webpush::SubscriptionKeys::load_or_create(&sims.cert_dir)?;
    let (mut webpush_subscriptions, mut webpush_secrets) = (Vec::new(), Vec::new());
    for i in 0..10 {
        let id = if i == 0 { format!("dead{}", random_hex(16)) } else { random_hex(20) };
        let (json, secrets) = crate::webpush::subscription_json(&wp_keys, &sims.webpush_url, &id);
        webpush_secrets.push(json!({
            "endpoint": json["endpoint"],
            "privateKey": base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(&secrets.private_key),
            "auth": json["keys"]["auth"],
        }));
        webpush_subscriptions.push(json);
    }
    let webpush_subscriptions_path = dir.join("webpush_subscriptions.json");
    write_atomic(&webpush_subscriptions_path, &serde_json::to_vec_pretty(&webpush_subscriptions)?, false)?;
    let webpush_keys_path = dir.join("webpush_subscription_keys.json");
    write_atomic(&webpush_keys_path, &serde_json::to_vec_pretty(&webpush_secrets)?, true)?;

    // Herald's "save app" body.
    let app_json = json!({
        "categories": ["chat", "payment", "tms"],
        "iosApnsPrivateKey": STANDARD.encode(apns_key_pem.as_bytes()),
        "iosApnsKeyId": key_id,
        "iosApnsTeamId": team_id,
        "iosBundleId": bundle_id,
        "iosIsDevelopment": false,
        "fcmServiceAccountJSON": STANDARD.encode(fcm_service_account_json.as_bytes()),
        "hpkClientId": hms_client_id,
        "hpkClientSecret": hms_client_secret,
        "webPushSubject": "mailto:push@herald.test",
    });
    let app_json_path = dir.join("app.json");
    write_atomic(&app_json_path, &serde_json::to_vec_pretty(&app_json)?, true)?;

    let endpoints = json!({
        "apnsUrl": sims.apns_url,
        "fcmUrl": sims.fcm_url,
        "fcmTokenUrl": sims.fcm_token_url(),
        "hmsUrl": sims.hms_url,
        "hmsTokenUrl": sims.hms_token_url(),
        "caPem": "ca.pem",
    });
    write_atomic(&dir.join("endpoints.json"), &serde_json::to_vec_pretty(&endpoints)?, false)?;
    write_atomic(&dir.join("ca.pem"), ca.cert_pem.as_bytes(), false)?;

    // Register the public half where the simulators look.
    let registration = Registration {
        apns: Some(ApnsRegistration {
            key_id: key_id.clone(),
            team_id: team_id.clone(),
            bundle_id: bundle_id.clone(),
            public_key_pem: apns_key.public_key_pem(),
        }),
        fcm: Some(FcmRegistration {
            project_id: project_id.clone(),
            private_key_id: private_key_id.clone(),
            client_email: client_email.clone(),
            public_key_pem: rsa_public_pem,
        }),
        hms: Some(HmsRegistration { client_id: hms_client_id.clone(), client_secret: hms_client_secret.clone() }),
    };
    register_credentials(&sims.cert_dir, &key_id, &registration)?;

    Ok(Credentials {
        dir: dir.to_path_buf(),
        name: key_id.clone(),
        apns_key_id: key_id,
        apns_team_id: team_id,
        bundle_id,
        apns_key_path,
        apns_key_pem,
        apns_cert_path,
        apns_cert_key_path,
        fcm_service_account_path,
        fcm_service_account_json,
        fcm_project_id: project_id,
        fcm_client_email: client_email,
        fcm_private_key_id: private_key_id,
        fcm_token_uri: token_uri,
        hms_client_id,
        hms_client_secret,
        webpush_subscriptions_path,
        webpush_subscriptions,
        webpush_keys_path,
        app_json_path,
        app_json,
    })
}

/// An RSA-2048 key as (PKCS#8 private PEM, SPKI public PEM). ring cannot generate RSA keys,
/// so the `rsa` crate does; only the simulator needs this.
///
/// Generating one takes seconds in a debug build, so the process generates one key and
/// gives it to every service account it creates (each still has its own `private_key_id`
/// and `client_email`, which is what the simulators key on). These are fake credentials
/// for a simulator: sharing the key costs nothing.
fn generate_rsa_2048() -> Result<(String, String), SimError> {
    static KEY: Mutex<Option<(String, String)>> = Mutex::new(None);
    // Held while generating, so concurrent callers wait for the one key.
    let mut key = KEY.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(k) = key.as_ref() {
        return Ok(k.clone());
    }
    let generated = new_rsa_2048()?;
    *key = Some(generated.clone());
    Ok(generated)
}

fn new_rsa_2048() -> Result<(String, String), SimError> {
    use rsa::pkcs8::{EncodePrivateKey, EncodePublicKey, LineEnding};
    let key = rsa::RsaPrivateKey::new(&mut rsa::rand_core::OsRng, 2048)
        .map_err(|e| SimError::Cert(format!("RSA key generation: {e}")))?;
    let private_pem = key.to_pkcs8_pem(LineEnding::LF).map_err(|e| SimError::Cert(format!("RSA key encoding: {e}")))?;
    let public_pem = key
        .to_public_key()
        .to_public_key_pem(LineEnding::LF)
        .map_err(|e| SimError::Cert(format!("RSA key encoding: {e}")))?;
    Ok((private_pem.to_string(), public_pem))
}

/// A registered APNs key, ready to verify with.
#[derive(Debug)]
pub(crate) struct ApnsKey {
    pub(crate) team_id: String,
    pub(crate) bundle_id: Arc<str>,
    /// The uncompressed SEC1 point.
    pub(crate) point: Vec<u8>,
}

/// A registered service account, ready to verify with.
#[derive(Debug)]
pub(crate) struct FcmAccount {
    pub(crate) project_id: Arc<str>,
    pub(crate) client_email: String,
    /// PKCS#1 `RSAPublicKey` DER.
    pub(crate) rsa_public: Vec<u8>,
}

#[derive(Default)]
struct Loaded {
    apns: HashMap<String, Arc<ApnsKey>>,
    fcm_by_kid: HashMap<String, Arc<FcmAccount>>,
    fcm_by_email: HashMap<String, Arc<FcmAccount>>,
    hms: HashMap<String, Arc<HmsRegistration>>,
}

/// The credentials registered in a cert dir, reloaded when a lookup misses.
pub(crate) struct Registry {
    cert_dir: PathBuf,
    loaded: RwLock<Arc<Loaded>>,
    /// Serialises reloads, so a burst of misses reads the directory once.
    reload_lock: Mutex<()>,
}

impl Registry {
    /// Loads every `creds/*/registration.json` of `cert_dir`. Malformed files are skipped
    /// with a warning, so one bad file does not stop the simulators.
    pub(crate) fn load(cert_dir: &Path) -> Registry {
        let registry = Registry {
            cert_dir: cert_dir.to_path_buf(),
            loaded: RwLock::new(Arc::new(Loaded::default())),
            reload_lock: Mutex::new(()),
        };
        registry.reload();
        registry
    }

    fn current(&self) -> Arc<Loaded> {
        match self.loaded.read() {
            Ok(g) => g.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    fn reload(&self) {
        let loaded = Arc::new(load_dir(&self.cert_dir));
        match self.loaded.write() {
            Ok(mut g) => *g = loaded,
            Err(poisoned) => *poisoned.into_inner() = loaded,
        }
    }

    /// Looks `f` up in the registry, reloading the cert dir once on a miss.
    fn lookup<T>(&self, f: impl Fn(&Loaded) -> Option<T>) -> Option<T> {
        if let Some(found) = f(&self.current()) {
            return Some(found);
        }
        let before = Arc::as_ptr(&self.current());
        let _guard = self.reload_lock.lock().unwrap_or_else(|p| p.into_inner());
        // Another task may have reloaded while we waited.
        if Arc::as_ptr(&self.current()) == before {
            self.reload();
        }
        f(&self.current())
    }

    pub(crate) fn apns_key(&self, kid: &str) -> Option<Arc<ApnsKey>> {
        self.lookup(|l| l.apns.get(kid).cloned())
    }

    /// A service account by `kid`, or by `iss` when the assertion has no `kid`.
    pub(crate) fn fcm_account(&self, kid: Option<&str>, iss: &str) -> Option<Arc<FcmAccount>> {
        self.lookup(|l| match kid {
            Some(kid) => l.fcm_by_kid.get(kid).cloned(),
            None => l.fcm_by_email.get(iss).cloned(),
        })
    }

    pub(crate) fn hms_client(&self, client_id: &str) -> Option<Arc<HmsRegistration>> {
        self.lookup(|l| l.hms.get(client_id).cloned())
    }
}

fn load_dir(cert_dir: &Path) -> Loaded {
    let mut loaded = Loaded::default();
    let creds = cert_dir.join("creds");
    let Ok(entries) = std::fs::read_dir(&creds) else {
        return loaded;
    };
    for entry in entries.flatten() {
        let path = entry.path().join("registration.json");
        if !path.is_file() {
            continue;
        }
        match load_registration(&path) {
            Ok(reg) => add_registration(&mut loaded, &path, reg),
            Err(e) => tracing::warn!("skipping credentials: {e}"),
        }
    }
    loaded
}

fn load_registration(path: &Path) -> Result<Registration, SimError> {
    let text = read_string(path)?;
    serde_json::from_str(&text).map_err(|e| SimError::Credentials { path: path.to_path_buf(), message: e.to_string() })
}

fn add_registration(loaded: &mut Loaded, path: &Path, reg: Registration) {
    if let Some(a) = reg.apns {
        match spki_pem_key_bytes(&a.public_key_pem) {
            Ok(point) => {
                loaded
                    .apns
                    .insert(a.key_id, Arc::new(ApnsKey { team_id: a.team_id, bundle_id: a.bundle_id.into(), point }));
            }
            Err(e) => tracing::warn!("{}: bad APNs public key: {e}", path.display()),
        }
    }
    if let Some(f) = reg.fcm {
        match spki_pem_key_bytes(&f.public_key_pem) {
            Ok(rsa_public) => {
                let account = Arc::new(FcmAccount {
                    project_id: f.project_id.into(),
                    client_email: f.client_email.clone(),
                    rsa_public,
                });
                loaded.fcm_by_kid.insert(f.private_key_id, account.clone());
                loaded.fcm_by_email.insert(f.client_email, account);
            }
            Err(e) => tracing::warn!("{}: bad FCM public key: {e}", path.display()),
        }
    }
    if let Some(h) = reg.hms {
        loaded.hms.insert(h.client_id.clone(), Arc::new(h));
    }
}
