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
pub mod sdk_config;
pub mod signers;
pub mod tenants;
pub mod user_clients;
pub mod user_lists;
pub mod users;
pub mod versions;
pub mod webhooks;

use crate::auth::Access;
use crate::error::{subsystem, Family};
use crate::library as lib;
use crate::route;
use crate::router::Route;

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

/// Every route the engine serves.
pub fn routes() -> Vec<Route> {
    use Access::Public;
    vec![
        route!(GET "/healthz", OPS, Public, ops::healthz),
        route!(GET "/readyz", OPS, Public, ops::readyz),
        route!(GET "/metrics", OPS, Public, ops::metrics),
        route!(GET "/openapi.json", OPS, Public, crate::openapi::serve),
        route!(POST "/v1/tenants", OPS, lib::tenants::access::CREATE, tenants::create),
        // Identity: the realm's OIDC endpoints.
        route!(POST "/auth/realms/{tenantId}/protocol/openid-connect/token", OAUTH, Public, oidc::token::token),
        route!(GET "/auth/realms/{tenantId}/.well-known/openid-configuration", REALM, Public, oidc::discovery::discovery),
        route!(GET "/auth/realms/{tenantId}/protocol/openid-connect/certs", REALM, Public, oidc::discovery::certs),
        route!(GET "/auth/realms/{tenantId}", REALM, Public, oidc::discovery::realm_info),
        route!(GET "/auth/realms/{tenantId}/protocol/openid-connect/userinfo", OAUTH, Public, oidc::userinfo::userinfo),
        route!(POST "/auth/realms/{tenantId}/protocol/openid-connect/userinfo", OAUTH, Public, oidc::userinfo::userinfo),
        route!(POST "/auth/realms/{tenantId}/protocol/openid-connect/token/introspect", OAUTH, Public, oidc::introspection::introspect),
        route!(POST "/auth/realms/{tenantId}/protocol/openid-connect/revoke", OAUTH, Public, oidc::revocation::revoke),
        route!(GET "/auth/realms/{tenantId}/protocol/openid-connect/logout", OAUTH, Public, oidc::logout::logout),
        route!(POST "/auth/realms/{tenantId}/protocol/openid-connect/logout", OAUTH, Public, oidc::logout::logout),
        // Identity: users and addresses of the realm.
        route!(POST "/auth/realms/{tenantId}/users", REALM, lib::users::access::ADMINISTER, users::create),
        route!(GET "/auth/realms/{tenantId}/users", REALM, lib::users::access::READ, users::search),
        route!(GET "/auth/realms/{tenantId}/users/by-attribute", REALM, lib::users::access::READ, users::by_attribute),
        route!(GET "/auth/realms/{tenantId}/users/id/{id}", REALM, lib::users::access::READ, users::get_by_id),
        route!(GET "/auth/realms/{tenantId}/users/{userId}", REALM, lib::users::access::READ, users::info),
        route!(PUT "/auth/realms/{tenantId}/users/{userId}", REALM, lib::users::access::ADMINISTER, users::update),
        route!(PUT "/auth/realms/{tenantId}/users/{userId}/profile", REALM, lib::users::access::ADMINISTER, users::update_profile),
        route!(PUT "/auth/realms/{tenantId}/users/{userId}/enable", REALM, lib::users::access::ADMINISTER, users::enable),
        route!(PUT "/auth/realms/{tenantId}/users/{userId}/disable", REALM, lib::users::access::ADMINISTER, users::disable),
        route!(PUT "/auth/realms/{tenantId}/users/{userId}/admin", REALM, lib::users::access::ADMINISTER, users::promote),
        route!(DELETE "/auth/realms/{tenantId}/users/{userId}/admin", REALM, lib::users::access::ADMINISTER, users::revoke_admin),
        route!(POST "/auth/realms/{tenantId}/users/{userId}/revoke-roles", REALM, lib::users::access::ADMINISTER, users::revoke_roles),
        route!(POST "/auth/realms/{tenantId}/users/{userId}/revoke-required-actions", REALM, lib::users::access::ADMINISTER, users::revoke_required_actions),
        route!(GET "/auth/realms/{tenantId}/users/{userId}/credentials", REALM, lib::users::access::READ, users::credentials),
        route!(GET "/auth/realms/{tenantId}/users/{userId}/tenants", REALM, lib::users::access::READ, users::tenants),
        route!(GET "/auth/realms/{tenantId}/admins", REALM, lib::users::access::READ, users::admins),
        route!(GET "/auth/realms/{tenantId}/roles/{role}/users", REALM, lib::users::access::READ, users::by_role),
        route!(GET "/auth/realms/{tenantId}/clients/{clientid}/roles/{assignedRole}/users", REALM, lib::users::access::READ, users::by_client_role),
        route!(GET "/auth/realms/{tenantId}/groups/{groupID}/users", REALM, lib::users::access::READ, users::by_group),
        route!(POST "/auth/realms/{tenantId}/address/{userName}/add", REALM, lib::users::access::ADMINISTER, addresses::add),
        route!(GET "/auth/realms/{tenantId}/address/{userName}", REALM, lib::users::access::READ, addresses::get),
        route!(PUT "/auth/realms/{tenantId}/address/{userName}/edit", REALM, lib::users::access::ADMINISTER, addresses::edit),
        route!(POST "/auth/realms/{tenantId}/users/{userId}/otp/resend", REALM, lib::realm::access::OTP_RESEND, otp_lock::resend),
        route!(GET "/auth/realms/{tenantId}/users/{userId}/otp-lock", REALM, lib::realm::access::READ, otp_lock::status),
        route!(DELETE "/auth/realms/{tenantId}/users/{userId}/otp-lock", REALM, lib::realm::access::OTP_UNLOCK, otp_lock::unlock),
        route!(DELETE "/auth/realms/{tenantId}/otp-lock", REALM, lib::realm::access::OTP_UNLOCK, otp_lock::unlock_all),
        // Identity: realm configuration.
        route!(POST "/auth/realms/{tenantId}/v3_ldap/components", LDAP, lib::realm::access::CONFIGURE, realm_settings::create_ldap),
        route!(GET "/auth/realms/{tenantId}/v3_ldap/components/{componentId}", LDAP, lib::realm::access::READ, realm_settings::get_ldap),
        route!(PUT "/auth/realms/{tenantId}/v3_ldap/components/{componentId}", LDAP, lib::realm::access::CONFIGURE, realm_settings::update_ldap),
        route!(GET "/auth/realms/{tenantId}/v4_realm/appsettings", REALM, lib::realm::access::READ_APP_SETTINGS, realm_settings::get_app_settings),
        route!(PUT "/auth/realms/{tenantId}/v4_realm/appsettings", REALM, lib::realm::access::CONFIGURE, realm_settings::put_app_settings),
        route!(PUT "/auth/realms/{tenantId}/core/v1/migrate/affiliations", REALM, lib::realm::access::CONFIGURE, realm_settings::migrate_affiliations),
        // Apps and push configuration.
        route!(GET "/v1/tenants/{tenantId}/apps", TENANT, lib::apps::access::READ, apps::list),
        route!(POST "/v1/tenants/{tenantId}/apps/{appName}", TENANT, lib::apps::access::ADMINISTER, apps::save),
        route!(PUT "/v1/tenants/{tenantId}/apps/{appName}", TENANT, lib::apps::access::ADMINISTER, apps::update),
        route!(GET "/v1/tenants/{tenantId}/apps/{appName}", TENANT, lib::apps::access::READ, apps::get),
        route!(DELETE "/v1/tenants/{tenantId}/apps/{appName}", TENANT, lib::apps::access::ADMINISTER, apps::delete),
        // App versions, registration policies and integrity voting.
        route!(GET "/v1/tenants/{tenantId}/apps-latest", TENANT, lib::versions::access::READ, versions::apps_latest),
        route!(POST "/v1/tenants/{tenantId}/versions", VERSIONS, lib::versions::access::ADMINISTER, versions::create),
        route!(GET "/v1/tenants/{tenantId}/versions", VERSIONS, lib::versions::access::READ, versions::list),
        route!(GET "/v1/tenants/{tenantId}/versions/{versionId}", VERSIONS, lib::versions::access::READ, versions::get),
        route!(PUT "/v1/tenants/{tenantId}/versions/{versionId}", VERSIONS, lib::versions::access::ADMINISTER, versions::update),
        route!(DELETE "/v1/tenants/{tenantId}/versions/{versionId}", VERSIONS, lib::versions::access::ADMINISTER, versions::delete),
        route!(PUT "/v1/tenants/{tenantId}/versions/{versionId}/lock", VERSIONS, lib::versions::access::ADMINISTER, versions::lock),
        route!(GET "/v1/tenants/{tenantId}/versions/{versionId}/architectures", VERSIONS, lib::versions::access::READ, versions::architectures),
        route!(DELETE "/v1/tenants/{tenantId}/versions/{versionId}/registration", VERSIONS, lib::versions::access::ADMINISTER, versions::delete_registration),
        route!(POST "/v1/tenants/{tenantId}/versions/{versionId}/votes", VERSIONS, lib::versions::access::VOTE, versions::vote),
        route!(GET "/v1/tenants/{tenantId}/versions/{versionId}/votes", VERSIONS, lib::versions::access::READ, versions::votes),
        route!(DELETE "/v1/tenants/{tenantId}/versions/{versionId}/votes", VERSIONS, lib::versions::access::ADMINISTER, versions::reset),
        route!(GET "/v1/tenants/{tenantId}/versions/{versionId}/votes/summary", VERSIONS, lib::versions::access::READ, versions::summary),
        route!(POST "/v1/tenants/{tenantId}/policies", TENANT, lib::versions::access::ADMINISTER, versions::create_policy),
        route!(GET "/v1/tenants/{tenantId}/policies", TENANT, lib::versions::access::READ, versions::list_policies),
        route!(GET "/v1/tenants/{tenantId}/policies/{policyId}", TENANT, lib::versions::access::READ, versions::get_policy),
        route!(DELETE "/v1/tenants/{tenantId}/policies/{policyId}", TENANT, lib::versions::access::ADMINISTER, versions::delete_policy),
        // Clients, links and push tokens.
        route!(POST "/v1/tenants/{tenantId}/clients", TENANT, lib::clients::access::REGISTER, clients::register),
        route!(PUT "/v1/tenants/{tenantId}/users/{userId}/clients/{astClientId}", TENANT, lib::clients::access::ADMINISTER, clients::link),
        route!(GET "/v1/tenants/{tenantId}/users/{userId}/clients", TENANT, lib::clients::access::LIST, clients::of_user),
        route!(GET "/v1/tenants/{tenantId}/clients/overview", TENANT, lib::clients::access::LIST, clients::overview),
        route!(GET "/v1/tenants/{tenantId}/clients/{astClientId}", TENANT, lib::clients::access::READ, clients::detail),
        route!(PUT "/v1/tenants/{tenantId}/clients/{astClientId}", TENANT, lib::clients::access::SELF_UPDATE, clients::update),
        route!(DELETE "/v1/tenants/{tenantId}/clients/{astClientId}", TENANT, lib::clients::access::ADMINISTER, clients::delete),
        route!(GET "/v1/tenants/{tenantId}/users", TENANT, lib::clients::access::LIST, clients::users_of_client),
        route!(POST "/v1/tenants/{tenantId}/clients/lock", TENANT, lib::clients::access::ADMINISTER, client_locks::lock),
        route!(POST "/v1/tenants/{tenantId}/clients/{astClientId}/unlock", TENANT, lib::clients::access::ADMINISTER, client_locks::unlock),
        route!(POST "/v1/tenants/{tenantId}/unlink", TENANT, lib::clients::access::ADMINISTER, user_clients::unlink_one),
        route!(POST "/v1/tenants/{tenantId}/users/{userId}/unlink", TENANT, lib::clients::access::ADMINISTER, user_clients::unlink),
        route!(POST "/v1/tenants/{tenantId}/users/{userId}/disconnect", TENANT, lib::clients::access::ADMINISTER, user_clients::disconnect),
        route!(DELETE "/v1/tenants/{tenantId}/users/{userId}", TENANT, lib::clients::access::ADMINISTER, user_clients::delete_user_data),
        // Catalogue.
        route!(GET "/v1/tenants/{tenantId}/catalogue/services", TENANT, lib::catalogue::access::READ, catalogue::list),
        route!(GET "/v1/tenants/{tenantId}/catalogue/services/{serviceId}", TENANT, lib::catalogue::access::READ, catalogue::get),
        route!(PUT "/v1/tenants/{tenantId}/catalogue/services/{serviceId}", TENANT, lib::catalogue::access::WRITE, catalogue::put),
        // Properties.
        route!(GET "/v1/tenants/{tenantId}/users/{userId}/properties", TENANT, lib::properties::access::READ, properties::list),
        route!(POST "/v1/tenants/{tenantId}/users/{userId}/properties", TENANT, lib::properties::access::WRITE, properties::create),
        route!(GET "/v1/tenants/{tenantId}/users/{userId}/clients/{astClientId}/properties", TENANT, lib::properties::access::READ, properties::list),
        route!(POST "/v1/tenants/{tenantId}/users/{userId}/clients/{astClientId}/properties", TENANT, lib::properties::access::WRITE, properties::create),
        // Nonces, login events, login configuration.
        route!(POST "/v1/tenants/{tenantId}/nonces", TENANT, lib::nonces::access::CREATE, nonces::create),
        route!(PUT "/v1/tenants/{tenantId}/clients/events", TENANT, lib::nonces::access::LOGIN_EVENT, nonces::login_event),
        route!(GET "/v1/tenants/{tenantId}/config/login", TENANT, lib::realm::access::READ, nonces::get_login_config),
        route!(PUT "/v1/tenants/{tenantId}/config/login", TENANT, lib::realm::access::CONFIGURE, nonces::put_login_config),
        route!(PUT "/v1/tenants/{tenantId}/clients/{astClientId}/pushtoken", PUSH, lib::clients::access::SET_PUSH_TOKEN, push_tokens::put),
        route!(GET "/v1/tenants/{tenantId}/clients/{astClientId}/pushtoken", PUSH, lib::clients::access::READ_PUSH_TOKEN, push_tokens::get),
        // Webhooks and events.
        route!(POST "/v1/tenants/{tenantId}/webhooks", WEBHOOKS, lib::webhooks::access::ADMINISTER, webhooks::create),
        route!(GET "/v1/tenants/{tenantId}/webhooks", WEBHOOKS, lib::webhooks::access::READ, webhooks::list),
        route!(GET "/v1/tenants/{tenantId}/webhooks/{webhookId}", WEBHOOKS, lib::webhooks::access::READ, webhooks::get),
        route!(PUT "/v1/tenants/{tenantId}/webhooks/{webhookId}", WEBHOOKS, lib::webhooks::access::ADMINISTER, webhooks::update),
        route!(DELETE "/v1/tenants/{tenantId}/webhooks/{webhookId}", WEBHOOKS, lib::webhooks::access::ADMINISTER, webhooks::delete),
        route!(GET "/v1/tenants/{tenantId}/webhooks/{webhookId}/attempts", WEBHOOKS, lib::webhooks::access::READ, webhooks::attempts),
        route!(POST "/v1/tenants/{tenantId}/webhooks/{webhookId}/replay", WEBHOOKS, lib::webhooks::access::ADMINISTER, webhooks::replay),
        route!(POST "/v1/tenants/{tenantId}/events", WEBHOOKS, lib::webhooks::access::PUBLISH, webhooks::publish),
        // Push.
        route!(POST "/v1/tenants/{tenantId}/push_notification/send", PUSH, lib::push::access::SEND, push::send),
        route!(GET "/v1/tenants/{tenantId}/push_notification/{notificationId}", PUSH, lib::push::access::REPORT, push::report),
        // Signers, client certificates, the signed SDK config.
        route!(GET "/v1/tenants/{tenantId}/signer", SIGNERS, lib::signers::access::READ, signers::v1_get),
        route!(POST "/v1/tenants/{tenantId}/signer", SIGNERS, lib::signers::access::ADMINISTER, signers::v1_create),
        route!(POST "/v1/tenants/{tenantId}/signer/reissue", SIGNERS, lib::signers::access::ADMINISTER, signers::v1_reissue),
        route!(DELETE "/v1/tenants/{tenantId}/signer", SIGNERS, lib::signers::access::ADMINISTER, signers::v1_delete),
        route!(GET "/v2/tenants/{tenantId}/signers", SIGNERS, lib::signers::access::LIST, signers::list),
        route!(POST "/v2/tenants/{tenantId}/signers", SIGNERS, lib::signers::access::ADMINISTER, signers::create),
        route!(GET "/v2/tenants/{tenantId}/signers/{signerSpec}", SIGNERS, lib::signers::access::READ, signers::get),
        route!(DELETE "/v2/tenants/{tenantId}/signers/{signerSpec}", SIGNERS, lib::signers::access::ADMINISTER, signers::delete),
        route!(GET "/v2/tenants/{tenantId}/signers/{signerSpec}/chain", SIGNERS, lib::signers::access::READ, signers::chain),
        route!(POST "/v2/tenants/{tenantId}/signers/{signerSpec}/renew", SIGNERS, lib::signers::access::ADMINISTER, signers::renew),
        route!(POST "/v2/tenants/{tenantId}/signers/{signerSpec}/revoke", SIGNERS, lib::signers::access::ADMINISTER, signers::revoke),
        route!(GET "/v2/tenants/{tenantId}/signers/{signerSpec}/crl", SIGNERS, lib::signers::access::READ, signers::crl),
        route!(POST "/v1/tenants/{tenantId}/certificates", SIGNERS, lib::certificates::access::SUBMIT, certificates::submit),
        route!(GET "/v1/tenants/{tenantId}/certificates", SIGNERS, lib::certificates::access::LIST, certificates::list),
        route!(GET "/v1/tenants/{tenantId}/certificates/{certRef}", SIGNERS, lib::certificates::access::READ, certificates::check),
        route!(POST "/v1/tenants/{tenantId}/certificates/{certRef}/revoke", SIGNERS, lib::certificates::access::ADMINISTER, certificates::revoke),
        route!(GET "/v1/tenants/{tenantId}/certificates/admin/{signerId}", SIGNERS, lib::certificates::access::LIST, certificates::by_signer),
        route!(POST "/v1/tenants/{tenantId}/sdkconfig", SIGNERS, lib::signers::access::SDK_CONFIG, sdk_config::create),
    ]
}
