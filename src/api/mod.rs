//! Handlers, one file per interface area, and the route table of API.md.

pub mod addresses;
pub mod apps;
pub mod catalogue;
pub mod certificates;
pub mod client_locks;
pub mod clients;
pub mod nonces;
pub mod oidc;
pub mod ops;
pub mod otp_lock;
pub mod properties;
pub mod push;
pub mod push_tokens;
pub mod realm_settings;
pub mod schedules;
pub mod sdk_config;
pub mod signers;
pub mod tenants;
pub mod user_clients;
pub mod user_lists;
pub mod users;
pub mod versions;
pub mod webhooks;

use crate::api::users::{
    AddressesEnvelope, CreatedUserEnvelope, LdapEnvelope, OtpLockEnvelope, OtpResentEnvelope, OtpUnlockedEnvelope,
    RealmEnvelope, UserEnvelope, UserPageEnvelope, UserTenantEnvelope, UsersEnvelope,
};
use crate::api::{nonces::LoginConfigBody, ops::Status, tenants::TenantCreated};
use crate::auth::Access;
use crate::error::{subsystem, Family};
use crate::library as lib;
use crate::models::{
    address::AddressWrite, app::AppBody, app::AppView, catalogue::CatalogueService, client::ClientDetail,
    client::ClientOverview, client::ClientUser, client::LinkBody, client::LinkView, client::LockBody,
    client::RegisterClient, client::Registered, client::SelectClients, client::UnlinkOne, client::UpdateClient,
    ldap::AppSettings, ldap::AppSettingsWrite, ldap::LdapBody, limits::LimitsBody, limits::LimitsView,
    nonce::CreateNonce, nonce::LoginEvent, nonce::LoginRecorded, nonce::NonceView, property::PropertyBody,
    property::PropertyView, push::BatchAnswer, push::DeliveryReport, push::NotificationResponse,
    push::PushNotificationEvent, push::SendBatch, push_token::PushTokenView, push_token::PutPushToken,
    schedule::ScheduleBody, schedule::ScheduleView, signer::CertView, signer::CreateSigner, signer::CreateSignerV1,
    signer::CsrBody, signer::Renew, signer::SdkConfig, signer::SdkConfigRequest, signer::SignerChain,
    signer::SignerDetail, signer::SignerView, tenant::CreateTenant, user::CredentialView, user::ProfileWrite,
    user::RevokeActions, user::RevokeRoles, user::UserRepresentation, user::UserWrite, version::AppsLatest,
    version::ArchView, version::LockBody as VersionLock, version::PolicyBody, version::PolicyView,
    version::VersionBody, version::VersionNumbers, version::VersionView, version::VoteBody, version::VoteList,
    version::VoteSummary, webhook::AttemptView, webhook::DomainEvent, webhook::Published, webhook::Replayed,
    webhook::WebhookBody, webhook::WebhookView,
};
use crate::openapi::doc::{many, one};
use crate::openapi::schema::{query_integer, query_string_list, query_strings};
use crate::route;
use crate::router::Route;
use serde_json::json;

const OPS: Family = Family::Ops;
/// The OAuth endpoints: errors as RFC 6749 §5.2 shapes them.
const OAUTH: Family = Family::OAuth;
const REALM: Family = Family::Realm { subsystem: subsystem::USERS };
const LDAP: Family = Family::Realm { subsystem: 9 };
const PUSH: Family = Family::Admin { subsystem: subsystem::PUSH };
const WEBHOOKS: Family = Family::Admin { subsystem: subsystem::WEBHOOKS };
const TENANT: Family = Family::Admin { subsystem: subsystem::TENANT };
const VERSIONS: Family = Family::Admin { subsystem: subsystem::VERSIONS };
const SIGNERS: Family = Family::Admin { subsystem: subsystem::SIGNERS };

/// Every route the engine serves, with what the OpenAPI document says of it.
pub fn routes() -> Vec<Route> {
    use Access::Public;
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
        route!(GET, "/healthz", OPS, Public, ops::healthz).summary("Liveness").json(200, one::<Status>),
        route!(GET, "/readyz", OPS, Public, ops::readyz).summary("Readiness: storage answers").json(200, one::<Status>),
        route!(GET, "/metrics", OPS, Public, ops::metrics).summary("Prometheus metrics").text(200, "text/plain"),
        route!(GET, "/openapi.json", OPS, Public, crate::openapi::serve)
            .summary("This document")
            .json(200, one::<crate::openapi::OpenApiDocument>),
        route!(POST, "/v1/tenants", OPS, lib::tenants::access::CREATE, tenants::create)
            .summary("Create a tenant (operator)")
            .body(one::<CreateTenant>)
            .json(201, one::<TenantCreated>),
        route!(PUT, "/v1/tenants/{tenantId}/limits", TENANT, lib::tenants::access::SET_LIMITS, tenants::set_limits)
            .summary("Set the tenant's quotas (ext, operator)")
            .body(one::<LimitsBody>)
            .json(200, one::<LimitsView>),
        route!(GET, "/v1/tenants/{tenantId}/limits", TENANT, lib::tenants::access::READ_LIMITS, tenants::limits)
            .summary("The tenant's quotas and usage (ext)")
            .json(200, one::<LimitsView>),
        // Identity: the realm's OIDC endpoints.
        route!(POST, "/auth/realms/{tenantId}/protocol/openid-connect/token", OAUTH, Public, oidc::token::token)
            .summary("Access token (password, refresh_token, client_credentials grants)")
            .body(one::<oidc::TokenRequest>)
            .form()
            .json(200, one::<crate::auth::tokens::TokenPair>),
        route!(
            GET,
            "/auth/realms/{tenantId}/.well-known/openid-configuration",
            REALM,
            Public,
            oidc::discovery::discovery
        )
        .summary("OpenID discovery")
        .json(200, one::<oidc::discovery::Discovery>),
        route!(GET, "/auth/realms/{tenantId}/protocol/openid-connect/certs", REALM, Public, oidc::discovery::certs)
            .summary("JWKS of the realm")
            .json(200, one::<oidc::discovery::Jwks>),
        route!(GET, "/auth/realms/{tenantId}", REALM, Public, oidc::discovery::realm_info)
            .summary("Realm info with its public key (Keycloak's)")
            .json(200, one::<oidc::discovery::RealmInfo>),
        route!(
            GET,
            "/auth/realms/{tenantId}/protocol/openid-connect/userinfo",
            OAUTH,
            Public,
            oidc::userinfo::userinfo
        )
        .summary("Claims of the bearer's user")
        .json(200, one::<oidc::userinfo::UserInfo>),
        route!(
            POST,
            "/auth/realms/{tenantId}/protocol/openid-connect/userinfo",
            OAUTH,
            Public,
            oidc::userinfo::userinfo
        )
        .summary("Claims of the bearer's user")
        .json(200, one::<oidc::userinfo::UserInfo>),
        route!(
            POST,
            "/auth/realms/{tenantId}/protocol/openid-connect/token/introspect",
            OAUTH,
            Public,
            oidc::introspection::introspect
        )
        .summary("Token introspection (RFC 7662)")
        .body(one::<oidc::params::TokenParams>)
        .form()
        .json(200, one::<crate::models::introspection::Introspection>),
        route!(POST, "/auth/realms/{tenantId}/protocol/openid-connect/revoke", OAUTH, Public, oidc::revocation::revoke)
            .summary("Token revocation (RFC 7009)")
            .body(one::<oidc::params::TokenParams>)
            .form()
            .empty(200),
        route!(GET, "/auth/realms/{tenantId}/protocol/openid-connect/logout", OAUTH, Public, oidc::logout::logout)
            .summary("End the login session")
            .query(&["refresh_token", "id_token_hint", "client_id"])
            .empty(204),
        route!(POST, "/auth/realms/{tenantId}/protocol/openid-connect/logout", OAUTH, Public, oidc::logout::logout)
            .summary("End the login session")
            .body(one::<oidc::logout::LogoutRequest>)
            .form()
            .empty(204),
        // Identity: users and addresses of the realm.
        route!(POST, "/auth/realms/{tenantId}/users", REALM, lib::users::access::ADMINISTER, users::create)
            .summary("Create user")
            .body(one::<UserWrite>)
            .json(200, one::<CreatedUserEnvelope>),
        route!(GET, "/auth/realms/{tenantId}/users", REALM, lib::users::access::READ, users::search)
            .summary("Search users")
            .query(&["key"])
            .typed(&user_list)
            .json(200, one::<UserPageEnvelope>),
        route!(GET, "/auth/realms/{tenantId}/users/by-attribute", REALM, lib::users::access::READ, users::by_attribute)
            .summary("Search users by attribute")
            .required(&["key", "value"])
            .json(200, one::<UsersEnvelope>),
        route!(GET, "/auth/realms/{tenantId}/users/id/{id}", REALM, lib::users::access::READ, users::get_by_id)
            .summary("Get user by UUID (bare object)")
            .json(200, one::<UserRepresentation>),
        route!(GET, "/auth/realms/{tenantId}/users/{userId}", REALM, lib::users::access::READ, users::info)
            .summary("Get user info")
            .json(200, one::<UserEnvelope>),
        route!(PUT, "/auth/realms/{tenantId}/users/{userId}", REALM, lib::users::access::ADMINISTER, users::update)
            .summary("Update user")
            .body(one::<UserWrite>)
            .json(200, one::<RealmEnvelope>),
        route!(
            PUT,
            "/auth/realms/{tenantId}/users/{userId}/profile",
            REALM,
            lib::users::access::ADMINISTER,
            users::update_profile
        )
        .summary("Update profile")
        .body(one::<ProfileWrite>)
        .json(200, one::<RealmEnvelope>),
        route!(
            PUT,
            "/auth/realms/{tenantId}/users/{userId}/enable",
            REALM,
            lib::users::access::ADMINISTER,
            users::enable
        )
        .summary("Enable user")
        .json(200, one::<RealmEnvelope>),
        route!(
            PUT,
            "/auth/realms/{tenantId}/users/{userId}/disable",
            REALM,
            lib::users::access::ADMINISTER,
            users::disable
        )
        .summary("Disable user")
        .json(200, one::<RealmEnvelope>),
        route!(
            PUT,
            "/auth/realms/{tenantId}/users/{userId}/admin",
            REALM,
            lib::users::access::ADMINISTER,
            users::promote
        )
        .summary("Promote user to admin")
        .json(200, one::<RealmEnvelope>),
        route!(
            DELETE,
            "/auth/realms/{tenantId}/users/{userId}/admin",
            REALM,
            lib::users::access::ADMINISTER,
            users::revoke_admin
        )
        .summary("Revoke admin access")
        .json(200, one::<RealmEnvelope>),
        route!(
            POST,
            "/auth/realms/{tenantId}/users/{userId}/revoke-roles",
            REALM,
            lib::users::access::ADMINISTER,
            users::revoke_roles
        )
        .summary("Revoke roles")
        .body(one::<RevokeRoles>)
        .json(200, one::<RealmEnvelope>),
        route!(
            POST,
            "/auth/realms/{tenantId}/users/{userId}/revoke-required-actions",
            REALM,
            lib::users::access::ADMINISTER,
            users::revoke_required_actions
        )
        .summary("Revoke required actions")
        .body(one::<RevokeActions>)
        .json(200, one::<RealmEnvelope>),
        route!(
            GET,
            "/auth/realms/{tenantId}/users/{userId}/credentials",
            REALM,
            lib::users::access::READ,
            users::credentials
        )
        .summary("Get credentials")
        .json(200, many::<CredentialView>),
        route!(GET, "/auth/realms/{tenantId}/users/{userId}/tenants", REALM, lib::users::access::READ, users::tenants)
            .summary("User tenant list")
            .json(200, one::<UserTenantEnvelope>),
        route!(GET, "/auth/realms/{tenantId}/admins", REALM, lib::users::access::READ, users::admins)
            .summary("List admin users")
            .json(200, one::<UsersEnvelope>),
        route!(GET, "/auth/realms/{tenantId}/roles/{role}/users", REALM, lib::users::access::READ, users::by_role)
            .summary("Users with a role")
            .typed(&user_list)
            .json(200, one::<UserPageEnvelope>),
        route!(
            GET,
            "/auth/realms/{tenantId}/clients/{clientid}/roles/{assignedRole}/users",
            REALM,
            lib::users::access::READ,
            users::by_client_role
        )
        .summary("Users with a client role")
        .typed(&user_list)
        .json(200, one::<UserPageEnvelope>),
        route!(GET, "/auth/realms/{tenantId}/groups/{groupID}/users", REALM, lib::users::access::READ, users::by_group)
            .summary("Users of a group")
            .typed(&user_list)
            .json(200, one::<UserPageEnvelope>),
        route!(
            POST,
            "/auth/realms/{tenantId}/address/{userName}/add",
            REALM,
            lib::users::access::ADMINISTER,
            addresses::add
        )
        .summary("Add an address")
        .body(one::<AddressWrite>)
        .json(200, one::<RealmEnvelope>),
        route!(GET, "/auth/realms/{tenantId}/address/{userName}", REALM, lib::users::access::READ, addresses::get)
            .summary("Addresses of a user")
            .json(200, one::<AddressesEnvelope>),
        route!(
            PUT,
            "/auth/realms/{tenantId}/address/{userName}/edit",
            REALM,
            lib::users::access::ADMINISTER,
            addresses::edit
        )
        .summary("Edit an address")
        .body(one::<AddressWrite>)
        .json(200, one::<RealmEnvelope>),
        route!(
            POST,
            "/auth/realms/{tenantId}/users/{userId}/otp/resend",
            REALM,
            lib::realm::access::OTP_RESEND,
            otp_lock::resend
        )
        .summary("Count an OTP resend")
        .json(200, one::<OtpResentEnvelope>),
        route!(
            GET,
            "/auth/realms/{tenantId}/users/{userId}/otp-lock",
            REALM,
            lib::realm::access::READ,
            otp_lock::status
        )
        .summary("OTP resend lock status")
        .json(200, one::<OtpLockEnvelope>),
        route!(
            DELETE,
            "/auth/realms/{tenantId}/users/{userId}/otp-lock",
            REALM,
            lib::realm::access::OTP_UNLOCK,
            otp_lock::unlock
        )
        .summary("Unlock a user's OTP resend")
        .json(200, one::<RealmEnvelope>),
        route!(DELETE, "/auth/realms/{tenantId}/otp-lock", REALM, lib::realm::access::OTP_UNLOCK, otp_lock::unlock_all)
            .summary("Unlock all users")
            .json(200, one::<OtpUnlockedEnvelope>),
        // Identity: realm configuration.
        route!(
            POST,
            "/auth/realms/{tenantId}/v3_ldap/components",
            LDAP,
            lib::realm::access::CONFIGURE,
            realm_settings::create_ldap
        )
        .summary("Create the LDAP component")
        .body(one::<LdapBody>)
        .json(200, one::<LdapEnvelope>),
        route!(
            GET,
            "/auth/realms/{tenantId}/v3_ldap/components/{componentId}",
            LDAP,
            lib::realm::access::READ,
            realm_settings::get_ldap
        )
        .summary("Get the LDAP component")
        .json(200, one::<LdapEnvelope>),
        route!(
            PUT,
            "/auth/realms/{tenantId}/v3_ldap/components/{componentId}",
            LDAP,
            lib::realm::access::CONFIGURE,
            realm_settings::update_ldap
        )
        .summary("Update the LDAP component")
        .body(one::<LdapBody>)
        .json(200, one::<LdapEnvelope>),
        route!(
            GET,
            "/auth/realms/{tenantId}/v4_realm/appsettings",
            REALM,
            lib::realm::access::READ_APP_SETTINGS,
            realm_settings::get_app_settings
        )
        .summary("App settings")
        .json(200, one::<AppSettings>),
        route!(
            PUT,
            "/auth/realms/{tenantId}/v4_realm/appsettings",
            REALM,
            lib::realm::access::CONFIGURE,
            realm_settings::put_app_settings
        )
        .summary("Update app settings")
        .body(one::<AppSettingsWrite>)
        .json(200, one::<AppSettings>),
        route!(
            PUT,
            "/auth/realms/{tenantId}/core/v1/migrate/affiliations",
            REALM,
            lib::realm::access::CONFIGURE,
            realm_settings::migrate_affiliations
        )
        .summary("Migrate affiliations")
        .empty(204),
        // Apps and push configuration.
        route!(GET, "/v1/tenants/{tenantId}/apps", TENANT, lib::apps::access::READ, apps::list)
            .summary("List apps")
            .paged("pageSize", 1, 100)
            .query(&["appName"])
            .json(200, many::<AppView>),
        route!(POST, "/v1/tenants/{tenantId}/apps/{appName}", TENANT, lib::apps::access::ADMINISTER, apps::save)
            .summary("Save app configuration")
            .body(one::<AppBody>)
            .json(201, one::<AppView>),
        route!(PUT, "/v1/tenants/{tenantId}/apps/{appName}", TENANT, lib::apps::access::ADMINISTER, apps::update)
            .summary("Update app configuration")
            .body(one::<AppBody>)
            .json(200, one::<AppView>),
        route!(GET, "/v1/tenants/{tenantId}/apps/{appName}", TENANT, lib::apps::access::READ, apps::get)
            .summary("Get app configuration")
            .json(200, one::<AppView>),
        route!(DELETE, "/v1/tenants/{tenantId}/apps/{appName}", TENANT, lib::apps::access::ADMINISTER, apps::delete)
            .summary("Delete app and its versions")
            .empty(204),
        // App versions, registration policies and integrity voting.
        route!(GET, "/v1/tenants/{tenantId}/apps-latest", TENANT, lib::versions::access::READ, versions::apps_latest)
            .summary("Apps with their latest version")
            .paged("pageSize", 1, 100)
            .query(&["appName", "platform"])
            .typed(&[
                ("category", query_string_list(&crate::models::app::CATEGORIES, 3)),
                ("credential", query_string_list(&crate::library::versions::CREDENTIALS, 3)),
                ("isTextSearch", boolean()),
            ])
            .query(&["textSearch"])
            .json(200, one::<AppsLatest>),
        route!(POST, "/v1/tenants/{tenantId}/versions", VERSIONS, lib::versions::access::ADMINISTER, versions::create)
            .summary("Create a version")
            .body(one::<VersionBody>)
            .json(201, one::<VersionView>),
        route!(GET, "/v1/tenants/{tenantId}/versions", VERSIONS, lib::versions::access::READ, versions::list)
            .summary("Distinct version numbers")
            .paged("pageSize", 1, 100)
            .query(&["appName", "platform"])
            .typed(&[("versionLock", boolean()), ("isCheckIntegrity", boolean())])
            .query(&["versionStr"])
            .typed(&[("orderByVersion", asc_desc())])
            .json(200, one::<VersionNumbers>),
        route!(
            GET,
            "/v1/tenants/{tenantId}/versions/{versionId}",
            VERSIONS,
            lib::versions::access::READ,
            versions::get
        )
        .summary("Get a version")
        .json(200, one::<VersionView>),
        route!(
            PUT,
            "/v1/tenants/{tenantId}/versions/{versionId}",
            VERSIONS,
            lib::versions::access::ADMINISTER,
            versions::update
        )
        .summary("Update a version")
        .body(one::<VersionBody>)
        .json(200, one::<VersionView>),
        route!(
            DELETE,
            "/v1/tenants/{tenantId}/versions/{versionId}",
            VERSIONS,
            lib::versions::access::ADMINISTER,
            versions::delete
        )
        .summary("Delete a version")
        .empty(204),
        route!(
            PUT,
            "/v1/tenants/{tenantId}/versions/{versionId}/lock",
            VERSIONS,
            lib::versions::access::ADMINISTER,
            versions::lock
        )
        .summary("Lock or unlock a version")
        .body(one::<VersionLock>)
        .json(200, one::<VersionView>),
        route!(
            GET,
            "/v1/tenants/{tenantId}/versions/{versionId}/architectures",
            VERSIONS,
            lib::versions::access::READ,
            versions::architectures
        )
        .summary("Registered architectures")
        .json(200, many::<ArchView>),
        route!(
            DELETE,
            "/v1/tenants/{tenantId}/versions/{versionId}/registration",
            VERSIONS,
            lib::versions::access::ADMINISTER,
            versions::delete_registration
        )
        .summary("Delete an app registration")
        .required(&["architectureName"])
        .empty(204),
        route!(
            POST,
            "/v1/tenants/{tenantId}/versions/{versionId}/votes",
            VERSIONS,
            lib::versions::access::VOTE,
            versions::vote
        )
        .summary("Cast an integrity vote")
        .body(one::<VoteBody>)
        .json(200, one::<ArchView>),
        route!(
            GET,
            "/v1/tenants/{tenantId}/versions/{versionId}/votes",
            VERSIONS,
            lib::versions::access::READ,
            versions::votes
        )
        .summary("Votes of a version")
        .paged("pageSize", 1, 100)
        .required(&["architectureName"])
        .query(&["integrityCheckId"])
        .json(200, one::<VoteList>),
        route!(
            DELETE,
            "/v1/tenants/{tenantId}/versions/{versionId}/votes",
            VERSIONS,
            lib::versions::access::ADMINISTER,
            versions::reset
        )
        .summary("Reset voting")
        .query(&["architectureName"])
        .empty(204),
        route!(
            GET,
            "/v1/tenants/{tenantId}/versions/{versionId}/votes/summary",
            VERSIONS,
            lib::versions::access::READ,
            versions::summary
        )
        .summary("Vote summary")
        .required(&["architectureName"])
        .json(200, one::<VoteSummary>),
        route!(
            POST,
            "/v1/tenants/{tenantId}/policies",
            TENANT,
            lib::versions::access::ADMINISTER,
            versions::create_policy
        )
        .summary("Create a registration policy")
        .body(one::<PolicyBody>)
        .json(201, one::<PolicyView>),
        route!(GET, "/v1/tenants/{tenantId}/policies", TENANT, lib::versions::access::READ, versions::list_policies)
            .summary("List registration policies")
            .json(200, many::<PolicyView>),
        route!(
            GET,
            "/v1/tenants/{tenantId}/policies/{policyId}",
            TENANT,
            lib::versions::access::READ,
            versions::get_policy
        )
        .summary("Get a registration policy")
        .json(200, one::<PolicyView>),
        route!(
            DELETE,
            "/v1/tenants/{tenantId}/policies/{policyId}",
            TENANT,
            lib::versions::access::ADMINISTER,
            versions::delete_policy
        )
        .summary("Delete a registration policy")
        .empty(204),
        // Clients, links and push tokens.
        route!(POST, "/v1/tenants/{tenantId}/clients", TENANT, lib::clients::access::REGISTER, clients::register)
            .summary("Register a client")
            .body(one::<RegisterClient>)
            .json(201, one::<Registered>),
        route!(
            PUT,
            "/v1/tenants/{tenantId}/users/{userId}/clients/{astClientId}",
            TENANT,
            lib::clients::access::ADMINISTER,
            clients::link
        )
        .summary("Link a user to a client")
        .optional_body(one::<LinkBody>)
        .json(200, one::<LinkView>),
        route!(
            GET,
            "/v1/tenants/{tenantId}/users/{userId}/clients",
            TENANT,
            lib::clients::access::LIST,
            clients::of_user
        )
        .summary("Clients linked to a user")
        .json(200, many::<LinkView>),
        route!(GET, "/v1/tenants/{tenantId}/clients/overview", TENANT, lib::clients::access::LIST, clients::overview)
            .summary("Overview of a user's linked clients")
            .required(&["userId"])
            .query(&["filter"])
            .json(200, many::<ClientOverview>),
        route!(
            GET,
            "/v1/tenants/{tenantId}/clients/{astClientId}",
            TENANT,
            lib::clients::access::READ,
            clients::detail
        )
        .summary("Client detail")
        .json(200, one::<ClientDetail>),
        route!(
            PUT,
            "/v1/tenants/{tenantId}/clients/{astClientId}",
            TENANT,
            lib::clients::access::SELF_UPDATE,
            clients::update
        )
        .summary("Update a client's device data")
        .body(one::<UpdateClient>)
        .json(200, one::<ClientDetail>),
        route!(
            DELETE,
            "/v1/tenants/{tenantId}/clients/{astClientId}",
            TENANT,
            lib::clients::access::ADMINISTER,
            clients::delete
        )
        .summary("Delete a client")
        .empty(204),
        route!(GET, "/v1/tenants/{tenantId}/users", TENANT, lib::clients::access::LIST, clients::users_of_client)
            .summary("Users linked to a client")
            .required(&["astClientId"])
            .json(200, many::<ClientUser>),
        route!(
            POST,
            "/v1/tenants/{tenantId}/clients/lock",
            TENANT,
            lib::clients::access::ADMINISTER,
            client_locks::lock
        )
        .summary("Lock a client")
        .body(one::<LockBody>)
        .empty(204),
        route!(
            POST,
            "/v1/tenants/{tenantId}/clients/{astClientId}/unlock",
            TENANT,
            lib::clients::access::ADMINISTER,
            client_locks::unlock
        )
        .summary("Unlock a client")
        .empty(204),
        route!(
            POST,
            "/v1/tenants/{tenantId}/unlink",
            TENANT,
            lib::clients::access::ADMINISTER,
            user_clients::unlink_one
        )
        .summary("Unlink a user from a client (deprecated)")
        .body(one::<UnlinkOne>)
        .empty(204),
        route!(
            POST,
            "/v1/tenants/{tenantId}/users/{userId}/unlink",
            TENANT,
            lib::clients::access::ADMINISTER,
            user_clients::unlink
        )
        .summary("Unlink a user's clients")
        .optional_body(one::<SelectClients>)
        .empty(204),
        route!(
            POST,
            "/v1/tenants/{tenantId}/users/{userId}/disconnect",
            TENANT,
            lib::clients::access::ADMINISTER,
            user_clients::disconnect
        )
        .summary("Force disconnect a user's clients")
        .optional_body(one::<SelectClients>)
        .empty(204),
        route!(
            DELETE,
            "/v1/tenants/{tenantId}/users/{userId}",
            TENANT,
            lib::clients::access::ADMINISTER,
            user_clients::delete_user_data
        )
        .summary("Delete user data")
        .empty(204),
        // Catalogue.
        route!(GET, "/v1/tenants/{tenantId}/catalogue/services", TENANT, lib::catalogue::access::READ, catalogue::list)
            .summary("List catalogue services")
            .paged("page_size", 1, 100)
            .typed(&[
                ("onlySearchable", boolean()),
                ("hideType", json!({ "type": "array", "items": { "type": "string" } })),
                ("MinResourceVersion", query_integer(0, Some(u64::MAX))),
            ])
            .json(200, many::<CatalogueService>),
        route!(
            GET,
            "/v1/tenants/{tenantId}/catalogue/services/{serviceId}",
            TENANT,
            lib::catalogue::access::READ,
            catalogue::get
        )
        .summary("Get a catalogue service")
        .typed(&[("MinResourceVersion", query_integer(0, Some(u64::MAX)))])
        .json(200, one::<CatalogueService>),
        route!(
            PUT,
            "/v1/tenants/{tenantId}/catalogue/services/{serviceId}",
            TENANT,
            lib::catalogue::access::WRITE,
            catalogue::put
        )
        .summary("Create or replace a catalogue service")
        .body(one::<CatalogueService>)
        .json(200, one::<CatalogueService>),
        // Properties.
        route!(
            GET,
            "/v1/tenants/{tenantId}/users/{userId}/properties",
            TENANT,
            lib::properties::access::READ,
            properties::list
        )
        .summary("Properties without a client")
        .paged("page_size", 5, 100)
        .query(&["filter"])
        .json(200, many::<PropertyView>),
        route!(
            POST,
            "/v1/tenants/{tenantId}/users/{userId}/properties",
            TENANT,
            lib::properties::access::WRITE,
            properties::create
        )
        .summary("Create a property without a client")
        .body(one::<PropertyBody>)
        .json(201, one::<PropertyView>),
        route!(
            GET,
            "/v1/tenants/{tenantId}/users/{userId}/clients/{astClientId}/properties",
            TENANT,
            lib::properties::access::READ,
            properties::list
        )
        .summary("Properties of a user and client")
        .paged("page_size", 5, 100)
        .query(&["filter"])
        .json(200, many::<PropertyView>),
        route!(
            POST,
            "/v1/tenants/{tenantId}/users/{userId}/clients/{astClientId}/properties",
            TENANT,
            lib::properties::access::WRITE,
            properties::create
        )
        .summary("Create a property")
        .body(one::<PropertyBody>)
        .json(201, one::<PropertyView>),
        // Nonces, login events, login configuration.
        route!(POST, "/v1/tenants/{tenantId}/nonces", TENANT, lib::nonces::access::CREATE, nonces::create)
            .summary("Create a nonce")
            .typed(&[("type", query_strings(&["default", "short"]))])
            .body(one::<CreateNonce>)
            .json(201, one::<NonceView>),
        route!(
            PUT,
            "/v1/tenants/{tenantId}/clients/events",
            TENANT,
            lib::nonces::access::LOGIN_EVENT,
            nonces::login_event
        )
        .summary("Login event")
        .body(one::<LoginEvent>)
        .json(200, one::<LoginRecorded>),
        route!(GET, "/v1/tenants/{tenantId}/config/login", TENANT, lib::realm::access::READ, nonces::get_login_config)
            .summary("Login runtime configuration")
            .json(200, one::<LoginConfigBody>),
        route!(
            PUT,
            "/v1/tenants/{tenantId}/config/login",
            TENANT,
            lib::realm::access::CONFIGURE,
            nonces::put_login_config
        )
        .summary("Update login runtime configuration")
        .body(one::<LoginConfigBody>)
        .json(200, one::<LoginConfigBody>),
        route!(
            PUT,
            "/v1/tenants/{tenantId}/clients/{astClientId}/pushtoken",
            PUSH,
            lib::clients::access::SET_PUSH_TOKEN,
            push_tokens::put
        )
        .summary("Register or remove a client's push token")
        .body(one::<PutPushToken>)
        .json(200, one::<PushTokenView>)
        .empty(204),
        route!(
            GET,
            "/v1/tenants/{tenantId}/clients/{astClientId}/pushtoken",
            PUSH,
            lib::clients::access::READ_PUSH_TOKEN,
            push_tokens::get
        )
        .summary("A client's push token")
        .json(200, one::<PushTokenView>),
        // Webhooks and events.
        route!(POST, "/v1/tenants/{tenantId}/webhooks", WEBHOOKS, lib::webhooks::access::ADMINISTER, webhooks::create)
            .summary("Create a webhook")
            .body(one::<WebhookBody>)
            .json(201, one::<WebhookView>),
        route!(GET, "/v1/tenants/{tenantId}/webhooks", WEBHOOKS, lib::webhooks::access::READ, webhooks::list)
            .summary("List webhooks")
            .paged("page_size", 5, 100)
            .query(&["filter"])
            .json(200, many::<WebhookView>),
        route!(
            GET,
            "/v1/tenants/{tenantId}/webhooks/{webhookId}",
            WEBHOOKS,
            lib::webhooks::access::READ,
            webhooks::get
        )
        .summary("Get a webhook")
        .json(200, one::<WebhookView>),
        route!(
            PUT,
            "/v1/tenants/{tenantId}/webhooks/{webhookId}",
            WEBHOOKS,
            lib::webhooks::access::ADMINISTER,
            webhooks::update
        )
        .summary("Update a webhook")
        .body(one::<WebhookBody>)
        .json(200, one::<WebhookView>),
        route!(
            DELETE,
            "/v1/tenants/{tenantId}/webhooks/{webhookId}",
            WEBHOOKS,
            lib::webhooks::access::ADMINISTER,
            webhooks::delete
        )
        .summary("Delete a webhook")
        .empty(204),
        route!(
            GET,
            "/v1/tenants/{tenantId}/webhooks/{webhookId}/attempts",
            WEBHOOKS,
            lib::webhooks::access::READ,
            webhooks::attempts
        )
        .summary("Delivery attempts of a webhook")
        .paged("page_size", 5, 100)
        .json(200, many::<AttemptView>),
        route!(
            POST,
            "/v1/tenants/{tenantId}/webhooks/{webhookId}/replay",
            WEBHOOKS,
            lib::webhooks::access::ADMINISTER,
            webhooks::replay
        )
        .summary("Requeue deliveries since a time")
        .required_typed("since", json!({ "type": "string", "format": "date-time" }))
        .json(202, one::<Replayed>),
        route!(POST, "/v1/tenants/{tenantId}/events", WEBHOOKS, lib::webhooks::access::PUBLISH, webhooks::publish)
            .summary("Publish a domain event")
            .body(one::<DomainEvent>)
            .json(202, one::<Published>),
        // Push.
        route!(POST, "/v1/tenants/{tenantId}/push_notification/send", PUSH, lib::push::access::SEND, push::send)
            .summary("Send a push notification")
            .idempotent()
            .typed(&[("maxPerSecond", query_integer(1, Some(crate::models::push::MAX_PER_SECOND.into())))])
            .body(one::<PushNotificationEvent>)
            .json(202, many::<NotificationResponse>),
        route!(
            POST,
            "/v1/tenants/{tenantId}/push_notification/send-batch",
            PUSH,
            lib::push::access::SEND,
            push::send_batch
        )
        .summary("Send up to 500 push notifications (ext)")
        .idempotent()
        .body(one::<SendBatch>)
        .json(202, one::<BatchAnswer>),
        route!(
            POST,
            "/v1/tenants/{tenantId}/push_notification/schedule",
            PUSH,
            lib::schedules::access::SCHEDULE,
            schedules::create
        )
        .summary("Schedule a push notification (ext)")
        .body(one::<ScheduleBody>)
        .json(201, one::<ScheduleView>),
        route!(
            GET,
            "/v1/tenants/{tenantId}/push_notification/schedule",
            PUSH,
            lib::schedules::access::READ,
            schedules::list
        )
        .summary("Scheduled push notifications (ext)")
        .typed(&[("state", query_strings(&crate::models::schedule::STATES))])
        .paged("page_size", 1, 100)
        .json(200, many::<ScheduleView>),
        route!(
            GET,
            "/v1/tenants/{tenantId}/push_notification/schedule/{scheduleId}",
            PUSH,
            lib::schedules::access::READ,
            schedules::get
        )
        .summary("A scheduled push notification (ext)")
        .json(200, one::<ScheduleView>),
        route!(
            DELETE,
            "/v1/tenants/{tenantId}/push_notification/schedule/{scheduleId}",
            PUSH,
            lib::schedules::access::SCHEDULE,
            schedules::cancel
        )
        .summary("Cancel a scheduled push notification before it fires (ext)")
        .json(200, one::<ScheduleView>),
        route!(
            GET,
            "/v1/tenants/{tenantId}/push_notification/{notificationId}",
            PUSH,
            lib::push::access::REPORT,
            push::report
        )
        .summary("Delivery report")
        .paged("page_size", 1, 1000)
        .json(200, one::<DeliveryReport>),
        route!(
            POST,
            "/v1/tenants/{tenantId}/push_notification/{notificationId}/cancel",
            PUSH,
            lib::push::access::CANCEL,
            push::cancel
        )
        .summary("Cancel a running broadcast (ext)")
        .typed(&[("page_size", query_integer(1, Some(1000)))])
        .json(202, one::<DeliveryReport>),
        // Signers, client certificates, the signed SDK config.
        route!(GET, "/v1/tenants/{tenantId}/signer", SIGNERS, lib::signers::access::READ, signers::v1_get)
            .summary("The current signer (deprecated)")
            .json(200, one::<SignerDetail>),
        route!(POST, "/v1/tenants/{tenantId}/signer", SIGNERS, lib::signers::access::ADMINISTER, signers::v1_create)
            .summary("Create the signer (deprecated)")
            .body(one::<CreateSignerV1>)
            .json(202, one::<SignerView>),
        route!(
            POST,
            "/v1/tenants/{tenantId}/signer/reissue",
            SIGNERS,
            lib::signers::access::ADMINISTER,
            signers::v1_reissue
        )
        .summary("Reissue the current signer (deprecated)")
        .optional_body(one::<Renew>)
        .json(202, one::<SignerView>),
        route!(DELETE, "/v1/tenants/{tenantId}/signer", SIGNERS, lib::signers::access::ADMINISTER, signers::v1_delete)
            .summary("Delete the current signer (deprecated)")
            .empty(204),
        route!(GET, "/v2/tenants/{tenantId}/signers", SIGNERS, lib::signers::access::LIST, signers::list)
            .summary("List signers")
            .paged("page_size", 5, 100)
            .query(&["filter"])
            .json(200, many::<SignerView>),
        route!(POST, "/v2/tenants/{tenantId}/signers", SIGNERS, lib::signers::access::ADMINISTER, signers::create)
            .summary("Create a signer (issued asynchronously)")
            .optional_body(one::<CreateSigner>)
            .json(202, one::<SignerView>),
        route!(GET, "/v2/tenants/{tenantId}/signers/{signerSpec}", SIGNERS, lib::signers::access::READ, signers::get)
            .summary("A signer with its certificate")
            .json(200, one::<SignerDetail>),
        route!(
            DELETE,
            "/v2/tenants/{tenantId}/signers/{signerSpec}",
            SIGNERS,
            lib::signers::access::ADMINISTER,
            signers::delete
        )
        .summary("Delete a signer that issued nothing")
        .empty(204),
        route!(
            GET,
            "/v2/tenants/{tenantId}/signers/{signerSpec}/chain",
            SIGNERS,
            lib::signers::access::READ,
            signers::chain
        )
        .summary("A signer's chain, leaf to root")
        .json(200, one::<SignerChain>),
        route!(
            POST,
            "/v2/tenants/{tenantId}/signers/{signerSpec}/renew",
            SIGNERS,
            lib::signers::access::ADMINISTER,
            signers::renew
        )
        .summary("Renew a signer's certificate")
        .optional_body(one::<Renew>)
        .json(202, one::<SignerView>),
        route!(
            POST,
            "/v2/tenants/{tenantId}/signers/{signerSpec}/revoke",
            SIGNERS,
            lib::signers::access::ADMINISTER,
            signers::revoke
        )
        .summary("Revoke a signer")
        .json(200, one::<SignerView>),
        route!(
            GET,
            "/v2/tenants/{tenantId}/signers/{signerSpec}/crl",
            SIGNERS,
            lib::signers::access::READ,
            signers::crl
        )
        .summary("A signer's CRL (DER)")
        .binary(200, "application/pkix-crl"),
        route!(
            POST,
            "/v1/tenants/{tenantId}/certificates",
            SIGNERS,
            lib::certificates::access::SUBMIT,
            certificates::submit
        )
        .summary("Request a client certificate from a CSR")
        .body(one::<CsrBody>)
        .json(202, one::<CertView>),
        route!(
            GET,
            "/v1/tenants/{tenantId}/certificates",
            SIGNERS,
            lib::certificates::access::LIST,
            certificates::list
        )
        .summary("List certificate requests")
        .paged("page_size", 5, 100)
        .query(&["filter"])
        .json(200, many::<CertView>),
        route!(
            GET,
            "/v1/tenants/{tenantId}/certificates/{certRef}",
            SIGNERS,
            lib::certificates::access::READ,
            certificates::check
        )
        .summary("Check a certificate request")
        .json(200, one::<CertView>),
        route!(
            POST,
            "/v1/tenants/{tenantId}/certificates/{certRef}/revoke",
            SIGNERS,
            lib::certificates::access::ADMINISTER,
            certificates::revoke
        )
        .summary("Revoke a client certificate")
        .json(200, one::<CertView>),
        route!(
            GET,
            "/v1/tenants/{tenantId}/certificates/admin/{signerId}",
            SIGNERS,
            lib::certificates::access::LIST,
            certificates::by_signer
        )
        .summary("Certificates issued by a signer")
        .paged("page_size", 5, 100)
        .query(&["filter"])
        .json(200, many::<CertView>),
        route!(POST, "/v1/tenants/{tenantId}/sdkconfig", SIGNERS, lib::signers::access::SDK_CONFIG, sdk_config::create)
            .summary("Create a signed SDK configuration")
            .body(one::<SdkConfigRequest>)
            .json(200, one::<SdkConfig>),
    ]
}
