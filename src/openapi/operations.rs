//! What the router does not know of a route: its request body, answers and query parameters,
//! as Rust types whose schemas utoipa derives. Keyed by method and path; `tests/openapi.rs`
//! fails when this table and the router's disagree.

use super::schema::{query_integer, query_string_list, query_strings};
use super::Components;
use crate::models::{
    address::AddressWrite, app::AppBody, app::AppView, catalogue::CatalogueService, client::LinkBody, client::LinkView,
    client::LockBody, client::RegisterClient, client::Registered, client::SelectClients, client::UnlinkOne,
    client::UpdateClient, ldap::LdapBody, nonce::CreateNonce, nonce::LoginEvent, property::PropertyBody,
    push::NotificationResponse, push::PushNotificationEvent, push_token::PushTokenView, push_token::PutPushToken,
    signer::CertView, signer::CreateSigner, signer::CreateSignerV1, signer::CsrBody, signer::Renew,
    signer::SdkConfigRequest, signer::SignerView, tenant::CreateTenant, user::ProfileWrite, user::RevokeActions,
    user::RevokeRoles, user::UserWrite, version::ArchView, version::LockBody as VersionLock, version::PolicyBody,
    version::VersionBody, version::VersionView, version::VoteBody, webhook::DomainEvent, webhook::WebhookBody,
    webhook::WebhookView,
};
use crate::paging::MAX_PAGE;
use http::Method;
use serde_json::{json, Value};
use utoipa::ToSchema;

/// Registers a schema (and what it refers to) and answers how to refer to it.
pub type SchemaFn = fn(&mut Components) -> Value;

/// `T`, by reference to its component schema.
pub fn one<T: ToSchema>(c: &mut Components) -> Value {
    let name = T::name().to_string();
    if !c.iter().any(|(n, _)| *n == name) {
        c.push((name.clone(), T::schema()));
        T::schemas(c);
    }
    json!({ "$ref": format!("#/components/schemas/{name}") })
}

/// An array of `T`.
pub fn many<T: ToSchema>(c: &mut Components) -> Value {
    json!({ "type": "array", "items": one::<T>(c) })
}

/// A JSON object whose members the handler assembles (documented in the spec, not typed here).
pub fn object(_: &mut Components) -> Value {
    json!({ "type": "object" })
}

/// An array of such objects.
pub fn objects(_: &mut Components) -> Value {
    json!({ "type": "array", "items": { "type": "object" } })
}

/// One answer of an operation.
pub enum Answer {
    Json(SchemaFn),
    Text(&'static str),
    /// Raw bytes of this media type (`type: string, format: binary`).
    Binary(&'static str),
    Empty,
}

/// A query parameter.
pub struct Query {
    pub name: &'static str,
    pub required: bool,
    /// Its JSON schema: free text unless the handler parses it (integers with
    /// their bounds, booleans, closed sets, timestamps).
    pub value: Value,
}

impl Query {
    pub fn schema(&self) -> Value {
        self.value.clone()
    }
}

/// One operation: a route of the router (same method and path) and its types.
pub struct Op {
    pub method: Method,
    pub path: &'static str,
    pub summary: &'static str,
    pub body: Option<SchemaFn>,
    pub body_optional: bool,
    pub media: &'static [&'static str],
    pub responses: Vec<(u16, Answer)>,
    pub query: Vec<Query>,
}

impl Op {
    pub fn new(method: Method, path: &'static str, summary: &'static str) -> Op {
        Op {
            method,
            path,
            summary,
            body: None,
            body_optional: false,
            media: &["application/json"],
            responses: Vec::new(),
            query: Vec::new(),
        }
    }
    /// A required JSON body.
    pub fn body(mut self, f: SchemaFn) -> Op {
        self.body = Some(f);
        self
    }
    /// A JSON body that may be left out.
    pub fn optional_body(mut self, f: SchemaFn) -> Op {
        self.body_optional = true;
        self.body(f)
    }
    /// Declared form-encoded only (the OAuth endpoints: RFC 6749 §4, RFC 7009, RFC 7662).
    pub fn form(mut self) -> Op {
        self.media = &["application/x-www-form-urlencoded"];
        self
    }
    pub fn json(mut self, status: u16, f: SchemaFn) -> Op {
        self.responses.push((status, Answer::Json(f)));
        self
    }
    pub fn text(mut self, status: u16, media: &'static str) -> Op {
        self.responses.push((status, Answer::Text(media)));
        self
    }
    /// Raw bytes of `media` (a DER CRL).
    pub fn binary(mut self, status: u16, media: &'static str) -> Op {
        self.responses.push((status, Answer::Binary(media)));
        self
    }
    pub fn empty(mut self, status: u16) -> Op {
        self.responses.push((status, Answer::Empty));
        self
    }
    /// Optional free-text parameters.
    pub fn query(mut self, names: &[&'static str]) -> Op {
        self.query.extend(names.iter().map(|&name| Query {
            name,
            required: false,
            value: json!({ "type": "string" }),
        }));
        self
    }
    /// Required free-text parameters.
    pub fn required(mut self, names: &[&'static str]) -> Op {
        self.query.extend(names.iter().map(|&name| Query { name, required: true, value: json!({ "type": "string" }) }));
        self
    }
    /// Optional parameters the handler parses, with their schemas.
    pub fn typed(mut self, params: &[(&'static str, Value)]) -> Op {
        self.query.extend(params.iter().map(|(name, value)| Query { name, required: false, value: value.clone() }));
        self
    }
    /// A required parameter the handler parses.
    pub fn required_typed(mut self, name: &'static str, value: Value) -> Op {
        self.query.push(Query { name, required: true, value });
        self
    }
    /// `page` (from 1) and the route's page-size parameter (`size`, from `min` to `max`),
    /// as `crate::paging::Paging::from_query` reads them.
    pub fn paged(mut self, size: &'static str, min: u64, max: u64) -> Op {
        self.query.push(Query { name: "page", required: false, value: query_integer(1, Some(MAX_PAGE as u64)) });
        self.query.push(Query { name: size, required: false, value: query_integer(min, Some(max)) });
        self
    }
}

/// Every operation of the route table.
pub fn operations() -> Vec<Op> {
    use crate::api::{nonces::LoginConfigBody, oidc, users::RealmEnvelope};
    use crate::api::{ops::Status, tenants::TenantCreated};
    use Method as M;
    let boolean = || json!({ "type": "boolean" });
    let asc_desc = || query_strings(&["asc", "desc"]);
    // The list query of user lists (`models::user::UserListQuery::from_params`).
    let user_list = [
        ("limit", query_integer(1, Some(crate::models::user::MAX_LIMIT as u64))),
        ("offset", query_integer(0, Some((usize::MAX >> 1) as u64))),
        ("isUserEnabled", boolean()),
        ("isEmailVerified", boolean()),
        ("firstName", json!({ "type": "string" })),
        ("lastName", json!({ "type": "string" })),
        ("email", json!({ "type": "string" })),
        ("username", json!({ "type": "string" })),
        ("genericSearchVal", json!({ "type": "string" })),
        // Creation time bounds, in milliseconds since the epoch.
        ("from", query_integer(0, None)),
        ("to", query_integer(0, None)),
        ("orderByKey", query_strings(&["username", "firstName", "lastName", "email"])),
        // Read case-insensitively.
        ("orderBy", asc_desc()),
    ];
    vec![
        // Operations.
        Op::new(M::GET, "/healthz", "Liveness").json(200, one::<Status>),
        Op::new(M::GET, "/readyz", "Readiness: storage answers").json(200, one::<Status>),
        Op::new(M::GET, "/metrics", "Prometheus metrics").text(200, "text/plain"),
        Op::new(M::GET, "/openapi.json", "This document").json(200, object),
        Op::new(M::POST, "/v1/tenants", "Create a tenant (operator)")
            .body(one::<CreateTenant>)
            .json(201, one::<TenantCreated>),
        // Identity: OIDC.
        Op::new(
            M::POST,
            "/auth/realms/{tenantId}/protocol/openid-connect/token",
            "Access token (password, refresh_token, client_credentials grants)",
        )
        .body(one::<oidc::TokenRequest>)
        .form()
        .json(200, one::<crate::auth::tokens::TokenPair>),
        Op::new(M::GET, "/auth/realms/{tenantId}/.well-known/openid-configuration", "OpenID discovery")
            .json(200, one::<oidc::discovery::Discovery>),
        Op::new(M::GET, "/auth/realms/{tenantId}/protocol/openid-connect/certs", "JWKS of the realm")
            .json(200, one::<oidc::discovery::Jwks>),
        Op::new(M::GET, "/auth/realms/{tenantId}", "Realm info with its public key (Keycloak's)")
            .json(200, one::<oidc::discovery::RealmInfo>),
        Op::new(M::GET, "/auth/realms/{tenantId}/protocol/openid-connect/userinfo", "Claims of the bearer's user")
            .json(200, one::<oidc::userinfo::UserInfo>),
        Op::new(M::POST, "/auth/realms/{tenantId}/protocol/openid-connect/userinfo", "Claims of the bearer's user")
            .json(200, one::<oidc::userinfo::UserInfo>),
        Op::new(
            M::POST,
            "/auth/realms/{tenantId}/protocol/openid-connect/token/introspect",
            "Token introspection (RFC 7662)",
        )
        .body(one::<oidc::params::TokenParams>)
        .form()
        .json(200, one::<crate::models::introspection::Introspection>),
        Op::new(M::POST, "/auth/realms/{tenantId}/protocol/openid-connect/revoke", "Token revocation (RFC 7009)")
            .body(one::<oidc::params::TokenParams>)
            .form()
            .empty(200),
        Op::new(M::GET, "/auth/realms/{tenantId}/protocol/openid-connect/logout", "End the login session")
            .query(&["refresh_token", "id_token_hint", "client_id"])
            .empty(204),
        Op::new(M::POST, "/auth/realms/{tenantId}/protocol/openid-connect/logout", "End the login session")
            .body(one::<oidc::logout::LogoutRequest>)
            .form()
            .empty(204),
        // Identity: users.
        Op::new(M::POST, "/auth/realms/{tenantId}/users", "Create user")
            .body(one::<UserWrite>)
            .json(200, one::<RealmEnvelope>),
        Op::new(M::GET, "/auth/realms/{tenantId}/users", "Search users")
            .query(&["key"])
            .typed(&user_list)
            .json(200, one::<RealmEnvelope>),
        Op::new(M::GET, "/auth/realms/{tenantId}/users/by-attribute", "Search users by attribute")
            .required(&["key", "value"])
            .json(200, one::<RealmEnvelope>),
        Op::new(M::GET, "/auth/realms/{tenantId}/users/id/{id}", "Get user by UUID (bare object)").json(200, object),
        Op::new(M::GET, "/auth/realms/{tenantId}/users/{userId}", "Get user info").json(200, one::<RealmEnvelope>),
        Op::new(M::PUT, "/auth/realms/{tenantId}/users/{userId}", "Update user")
            .body(one::<UserWrite>)
            .json(200, one::<RealmEnvelope>),
        Op::new(M::PUT, "/auth/realms/{tenantId}/users/{userId}/profile", "Update profile")
            .body(one::<ProfileWrite>)
            .json(200, one::<RealmEnvelope>),
        Op::new(M::PUT, "/auth/realms/{tenantId}/users/{userId}/enable", "Enable user").json(200, one::<RealmEnvelope>),
        Op::new(M::PUT, "/auth/realms/{tenantId}/users/{userId}/disable", "Disable user")
            .json(200, one::<RealmEnvelope>),
        Op::new(M::PUT, "/auth/realms/{tenantId}/users/{userId}/admin", "Promote user to admin")
            .json(200, one::<RealmEnvelope>),
        Op::new(M::DELETE, "/auth/realms/{tenantId}/users/{userId}/admin", "Revoke admin access")
            .json(200, one::<RealmEnvelope>),
        Op::new(M::POST, "/auth/realms/{tenantId}/users/{userId}/revoke-roles", "Revoke roles")
            .body(one::<RevokeRoles>)
            .json(200, one::<RealmEnvelope>),
        Op::new(M::POST, "/auth/realms/{tenantId}/users/{userId}/revoke-required-actions", "Revoke required actions")
            .body(one::<RevokeActions>)
            .json(200, one::<RealmEnvelope>),
        Op::new(M::GET, "/auth/realms/{tenantId}/users/{userId}/credentials", "Get credentials").json(200, objects),
        Op::new(M::GET, "/auth/realms/{tenantId}/users/{userId}/tenants", "User tenant list")
            .json(200, one::<RealmEnvelope>),
        Op::new(M::GET, "/auth/realms/{tenantId}/admins", "List admin users").json(200, one::<RealmEnvelope>),
        Op::new(M::GET, "/auth/realms/{tenantId}/roles/{role}/users", "Users with a role")
            .typed(&user_list)
            .json(200, one::<RealmEnvelope>),
        Op::new(
            M::GET,
            "/auth/realms/{tenantId}/clients/{clientid}/roles/{assignedRole}/users",
            "Users with a client role",
        )
        .typed(&user_list)
        .json(200, one::<RealmEnvelope>),
        Op::new(M::GET, "/auth/realms/{tenantId}/groups/{groupID}/users", "Users of a group")
            .typed(&user_list)
            .json(200, one::<RealmEnvelope>),
        Op::new(M::POST, "/auth/realms/{tenantId}/address/{userName}/add", "Add an address")
            .body(one::<AddressWrite>)
            .json(200, one::<RealmEnvelope>),
        Op::new(M::GET, "/auth/realms/{tenantId}/address/{userName}", "Addresses of a user")
            .json(200, one::<RealmEnvelope>),
        Op::new(M::PUT, "/auth/realms/{tenantId}/address/{userName}/edit", "Edit an address")
            .body(one::<AddressWrite>)
            .json(200, one::<RealmEnvelope>),
        Op::new(M::POST, "/auth/realms/{tenantId}/users/{userId}/otp/resend", "Count an OTP resend")
            .json(200, one::<RealmEnvelope>),
        Op::new(M::GET, "/auth/realms/{tenantId}/users/{userId}/otp-lock", "OTP resend lock status")
            .json(200, one::<RealmEnvelope>),
        Op::new(M::DELETE, "/auth/realms/{tenantId}/users/{userId}/otp-lock", "Unlock a user's OTP resend")
            .json(200, one::<RealmEnvelope>),
        Op::new(M::DELETE, "/auth/realms/{tenantId}/otp-lock", "Unlock all users").json(200, one::<RealmEnvelope>),
        // Identity: realm configuration.
        Op::new(M::POST, "/auth/realms/{tenantId}/v3_ldap/components", "Create the LDAP component")
            .body(one::<LdapBody>)
            .json(200, one::<RealmEnvelope>),
        Op::new(M::GET, "/auth/realms/{tenantId}/v3_ldap/components/{componentId}", "Get the LDAP component")
            .json(200, one::<RealmEnvelope>),
        Op::new(M::PUT, "/auth/realms/{tenantId}/v3_ldap/components/{componentId}", "Update the LDAP component")
            .body(one::<LdapBody>)
            .json(200, one::<RealmEnvelope>),
        Op::new(M::GET, "/auth/realms/{tenantId}/v4_realm/appsettings", "App settings").json(200, object),
        Op::new(M::PUT, "/auth/realms/{tenantId}/v4_realm/appsettings", "Update app settings")
            .body(object)
            .json(200, object),
        Op::new(M::PUT, "/auth/realms/{tenantId}/core/v1/migrate/affiliations", "Migrate affiliations").empty(204),
        // Apps.
        Op::new(M::GET, "/v1/tenants/{tenantId}/apps", "List apps")
            .paged("pageSize", 1, 100)
            .query(&["appName"])
            .json(200, many::<AppView>),
        Op::new(M::POST, "/v1/tenants/{tenantId}/apps/{appName}", "Save app configuration")
            .body(one::<AppBody>)
            .json(201, one::<AppView>),
        Op::new(M::PUT, "/v1/tenants/{tenantId}/apps/{appName}", "Update app configuration")
            .body(one::<AppBody>)
            .json(200, one::<AppView>),
        Op::new(M::GET, "/v1/tenants/{tenantId}/apps/{appName}", "Get app configuration").json(200, one::<AppView>),
        Op::new(M::DELETE, "/v1/tenants/{tenantId}/apps/{appName}", "Delete app and its versions").empty(204),
        // Versions, policies, votes.
        Op::new(M::GET, "/v1/tenants/{tenantId}/apps-latest", "Apps with their latest version")
            .paged("pageSize", 1, 100)
            .query(&["appName", "platform"])
            .typed(&[
                ("category", query_string_list(&crate::models::app::CATEGORIES, 3)),
                ("credential", query_string_list(&crate::library::versions::CREDENTIALS, 3)),
                ("isTextSearch", boolean()),
            ])
            .query(&["textSearch"])
            .json(200, object),
        Op::new(M::POST, "/v1/tenants/{tenantId}/versions", "Create a version")
            .body(one::<VersionBody>)
            .json(201, one::<VersionView>),
        Op::new(M::GET, "/v1/tenants/{tenantId}/versions", "Distinct version numbers")
            .paged("pageSize", 1, 100)
            .query(&["appName", "platform"])
            .typed(&[("versionLock", boolean()), ("isCheckIntegrity", boolean())])
            .query(&["versionStr"])
            .typed(&[("orderByVersion", asc_desc())])
            .json(200, object),
        Op::new(M::GET, "/v1/tenants/{tenantId}/versions/{versionId}", "Get a version").json(200, one::<VersionView>),
        Op::new(M::PUT, "/v1/tenants/{tenantId}/versions/{versionId}", "Update a version")
            .body(one::<VersionBody>)
            .json(200, one::<VersionView>),
        Op::new(M::DELETE, "/v1/tenants/{tenantId}/versions/{versionId}", "Delete a version").empty(204),
        Op::new(M::PUT, "/v1/tenants/{tenantId}/versions/{versionId}/lock", "Lock or unlock a version")
            .body(one::<VersionLock>)
            .json(200, one::<VersionView>),
        Op::new(M::GET, "/v1/tenants/{tenantId}/versions/{versionId}/architectures", "Registered architectures")
            .json(200, many::<ArchView>),
        Op::new(M::DELETE, "/v1/tenants/{tenantId}/versions/{versionId}/registration", "Delete an app registration")
            .required(&["architectureName"])
            .empty(204),
        Op::new(M::POST, "/v1/tenants/{tenantId}/versions/{versionId}/votes", "Cast an integrity vote")
            .body(one::<VoteBody>)
            .json(200, one::<ArchView>),
        Op::new(M::GET, "/v1/tenants/{tenantId}/versions/{versionId}/votes", "Votes of a version")
            .paged("pageSize", 1, 100)
            .required(&["architectureName"])
            .query(&["integrityCheckId"])
            .json(200, object),
        Op::new(M::DELETE, "/v1/tenants/{tenantId}/versions/{versionId}/votes", "Reset voting")
            .query(&["architectureName"])
            .empty(204),
        Op::new(M::GET, "/v1/tenants/{tenantId}/versions/{versionId}/votes/summary", "Vote summary")
            .required(&["architectureName"])
            .json(200, object),
        Op::new(M::POST, "/v1/tenants/{tenantId}/policies", "Create a registration policy")
            .body(one::<PolicyBody>)
            .json(201, object),
        Op::new(M::GET, "/v1/tenants/{tenantId}/policies", "List registration policies").json(200, objects),
        Op::new(M::GET, "/v1/tenants/{tenantId}/policies/{policyId}", "Get a registration policy").json(200, object),
        Op::new(M::DELETE, "/v1/tenants/{tenantId}/policies/{policyId}", "Delete a registration policy").empty(204),
        // Clients and links.
        Op::new(M::POST, "/v1/tenants/{tenantId}/clients", "Register a client")
            .body(one::<RegisterClient>)
            .json(201, one::<Registered>),
        Op::new(M::PUT, "/v1/tenants/{tenantId}/users/{userId}/clients/{astClientId}", "Link a user to a client")
            .optional_body(one::<LinkBody>)
            .json(200, one::<LinkView>),
        Op::new(M::GET, "/v1/tenants/{tenantId}/users/{userId}/clients", "Clients linked to a user")
            .json(200, many::<LinkView>),
        Op::new(M::GET, "/v1/tenants/{tenantId}/clients/overview", "Overview of a user's linked clients")
            .required(&["userId"])
            .query(&["filter"])
            .json(200, objects),
        Op::new(M::GET, "/v1/tenants/{tenantId}/clients/{astClientId}", "Client detail").json(200, object),
        Op::new(M::PUT, "/v1/tenants/{tenantId}/clients/{astClientId}", "Update a client's device data")
            .body(one::<UpdateClient>)
            .json(200, object),
        Op::new(M::DELETE, "/v1/tenants/{tenantId}/clients/{astClientId}", "Delete a client").empty(204),
        Op::new(M::GET, "/v1/tenants/{tenantId}/users", "Users linked to a client")
            .required(&["astClientId"])
            .json(200, objects),
        Op::new(M::POST, "/v1/tenants/{tenantId}/clients/lock", "Lock a client").body(one::<LockBody>).empty(204),
        Op::new(M::POST, "/v1/tenants/{tenantId}/clients/{astClientId}/unlock", "Unlock a client").empty(204),
        Op::new(M::POST, "/v1/tenants/{tenantId}/unlink", "Unlink a user from a client (deprecated)")
            .body(one::<UnlinkOne>)
            .empty(204),
        Op::new(M::POST, "/v1/tenants/{tenantId}/users/{userId}/unlink", "Unlink a user's clients")
            .optional_body(one::<SelectClients>)
            .empty(204),
        Op::new(M::POST, "/v1/tenants/{tenantId}/users/{userId}/disconnect", "Force disconnect a user's clients")
            .optional_body(one::<SelectClients>)
            .empty(204),
        Op::new(M::DELETE, "/v1/tenants/{tenantId}/users/{userId}", "Delete user data").empty(204),
        // Catalogue.
        Op::new(M::GET, "/v1/tenants/{tenantId}/catalogue/services", "List catalogue services")
            .paged("page_size", 1, 100)
            .typed(&[
                ("onlySearchable", boolean()),
                ("hideType", json!({ "type": "array", "items": { "type": "string" } })),
                ("MinResourceVersion", query_integer(0, Some(u64::MAX))),
            ])
            .json(200, many::<CatalogueService>),
        Op::new(M::GET, "/v1/tenants/{tenantId}/catalogue/services/{serviceId}", "Get a catalogue service")
            .typed(&[("MinResourceVersion", query_integer(0, Some(u64::MAX)))])
            .json(200, one::<CatalogueService>),
        Op::new(
            M::PUT,
            "/v1/tenants/{tenantId}/catalogue/services/{serviceId}",
            "Create or replace a catalogue service",
        )
        .body(one::<CatalogueService>)
        .json(200, one::<CatalogueService>),
        // Properties.
        Op::new(M::GET, "/v1/tenants/{tenantId}/users/{userId}/properties", "Properties without a client")
            .paged("page_size", 5, 100)
            .query(&["filter"])
            .json(200, objects),
        Op::new(M::POST, "/v1/tenants/{tenantId}/users/{userId}/properties", "Create a property without a client")
            .body(one::<PropertyBody>)
            .json(201, object),
        Op::new(
            M::GET,
            "/v1/tenants/{tenantId}/users/{userId}/clients/{astClientId}/properties",
            "Properties of a user and client",
        )
        .paged("page_size", 5, 100)
        .query(&["filter"])
        .json(200, objects),
        Op::new(M::POST, "/v1/tenants/{tenantId}/users/{userId}/clients/{astClientId}/properties", "Create a property")
            .body(one::<PropertyBody>)
            .json(201, object),
        // Nonces and login.
        Op::new(M::POST, "/v1/tenants/{tenantId}/nonces", "Create a nonce")
            .typed(&[("type", query_strings(&["default", "short"]))])
            .body(one::<CreateNonce>)
            .json(201, object),
        Op::new(M::PUT, "/v1/tenants/{tenantId}/clients/events", "Login event")
            .body(one::<LoginEvent>)
            .json(200, object),
        Op::new(M::GET, "/v1/tenants/{tenantId}/config/login", "Login runtime configuration").json(200, object),
        Op::new(M::PUT, "/v1/tenants/{tenantId}/config/login", "Update login runtime configuration")
            .body(one::<LoginConfigBody>)
            .json(200, object),
        // Push tokens.
        Op::new(
            M::PUT,
            "/v1/tenants/{tenantId}/clients/{astClientId}/pushtoken",
            "Register or remove a client's push token",
        )
        .body(one::<PutPushToken>)
        .json(200, one::<PushTokenView>)
        .empty(204),
        Op::new(M::GET, "/v1/tenants/{tenantId}/clients/{astClientId}/pushtoken", "A client's push token")
            .json(200, one::<PushTokenView>),
        // Webhooks and events.
        Op::new(M::POST, "/v1/tenants/{tenantId}/webhooks", "Create a webhook")
            .body(one::<WebhookBody>)
            .json(201, one::<WebhookView>),
        Op::new(M::GET, "/v1/tenants/{tenantId}/webhooks", "List webhooks")
            .paged("page_size", 5, 100)
            .query(&["filter"])
            .json(200, many::<WebhookView>),
        Op::new(M::GET, "/v1/tenants/{tenantId}/webhooks/{webhookId}", "Get a webhook").json(200, one::<WebhookView>),
        Op::new(M::PUT, "/v1/tenants/{tenantId}/webhooks/{webhookId}", "Update a webhook")
            .body(one::<WebhookBody>)
            .json(200, one::<WebhookView>),
        Op::new(M::DELETE, "/v1/tenants/{tenantId}/webhooks/{webhookId}", "Delete a webhook").empty(204),
        Op::new(M::GET, "/v1/tenants/{tenantId}/webhooks/{webhookId}/attempts", "Delivery attempts of a webhook")
            .paged("page_size", 5, 100)
            .json(200, objects),
        Op::new(M::POST, "/v1/tenants/{tenantId}/webhooks/{webhookId}/replay", "Requeue deliveries since a time")
            .required_typed("since", json!({ "type": "string", "format": "date-time" }))
            .json(202, object),
        Op::new(M::POST, "/v1/tenants/{tenantId}/events", "Publish a domain event")
            .body(one::<DomainEvent>)
            .json(202, object),
        // Push.
        Op::new(M::POST, "/v1/tenants/{tenantId}/push_notification/send", "Send a push notification")
            .body(one::<PushNotificationEvent>)
            .json(202, many::<NotificationResponse>),
        Op::new(M::GET, "/v1/tenants/{tenantId}/push_notification/{notificationId}", "Delivery report")
            .paged("page_size", 1, 1000)
            .json(200, object),
        // Signers and certificates.
        Op::new(M::GET, "/v2/tenants/{tenantId}/signers", "List signers")
            .paged("page_size", 5, 100)
            .query(&["filter"])
            .json(200, many::<SignerView>),
        Op::new(M::POST, "/v2/tenants/{tenantId}/signers", "Create a signer (issued asynchronously)")
            .optional_body(one::<CreateSigner>)
            .json(202, one::<SignerView>),
        Op::new(M::GET, "/v2/tenants/{tenantId}/signers/{signerSpec}", "A signer with its certificate")
            .json(200, object),
        Op::new(M::DELETE, "/v2/tenants/{tenantId}/signers/{signerSpec}", "Delete a signer that issued nothing")
            .empty(204),
        Op::new(M::GET, "/v2/tenants/{tenantId}/signers/{signerSpec}/chain", "A signer's chain, leaf to root")
            .json(200, object),
        Op::new(M::POST, "/v2/tenants/{tenantId}/signers/{signerSpec}/renew", "Renew a signer's certificate")
            .optional_body(one::<Renew>)
            .json(202, one::<SignerView>),
        Op::new(M::POST, "/v2/tenants/{tenantId}/signers/{signerSpec}/revoke", "Revoke a signer")
            .json(200, one::<SignerView>),
        Op::new(M::GET, "/v2/tenants/{tenantId}/signers/{signerSpec}/crl", "A signer's CRL (DER)")
            .binary(200, "application/pkix-crl"),
        Op::new(M::GET, "/v1/tenants/{tenantId}/signer", "The current signer (deprecated)").json(200, object),
        Op::new(M::POST, "/v1/tenants/{tenantId}/signer", "Create the signer (deprecated)")
            .body(one::<CreateSignerV1>)
            .json(202, one::<SignerView>),
        Op::new(M::POST, "/v1/tenants/{tenantId}/signer/reissue", "Reissue the current signer (deprecated)")
            .optional_body(one::<Renew>)
            .json(202, one::<SignerView>),
        Op::new(M::DELETE, "/v1/tenants/{tenantId}/signer", "Delete the current signer (deprecated)").empty(204),
        Op::new(M::POST, "/v1/tenants/{tenantId}/certificates", "Request a client certificate from a CSR")
            .body(one::<CsrBody>)
            .json(202, one::<CertView>),
        Op::new(M::GET, "/v1/tenants/{tenantId}/certificates", "List certificate requests")
            .paged("page_size", 5, 100)
            .query(&["filter"])
            .json(200, many::<CertView>),
        Op::new(M::GET, "/v1/tenants/{tenantId}/certificates/{certRef}", "Check a certificate request")
            .json(200, one::<CertView>),
        Op::new(M::GET, "/v1/tenants/{tenantId}/certificates/admin/{signerId}", "Certificates issued by a signer")
            .paged("page_size", 5, 100)
            .query(&["filter"])
            .json(200, many::<CertView>),
        Op::new(M::POST, "/v1/tenants/{tenantId}/certificates/{certRef}/revoke", "Revoke a client certificate")
            .json(200, one::<CertView>),
        Op::new(M::POST, "/v1/tenants/{tenantId}/sdkconfig", "Create a signed SDK configuration")
            .body(one::<SdkConfigRequest>)
            .json(200, object),
    ]
}
