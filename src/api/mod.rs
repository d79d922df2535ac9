//! Handlers, one file per interface area, and the route table of API.md.

pub mod apps;
pub mod clients;
pub mod oidc;
pub mod ops;
pub mod push;
pub mod push_tokens;
pub mod tenants;
pub mod webhooks;

use crate::auth::{Access, ADMIN, ADMIN_OR_CLIENT, ADMIN_OR_READ};
use crate::error::{subsystem, Family};
use crate::route;
use crate::router::Route;

const OPS: Family = Family::Ops;
const REALM: Family = Family::Realm { subsystem: subsystem::USERS };
const PUSH: Family = Family::Admin { subsystem: subsystem::PUSH };
const WEBHOOKS: Family = Family::Admin { subsystem: subsystem::WEBHOOKS };
const TENANT: Family = Family::Admin { subsystem: subsystem::TENANT };

/// Every route the engine serves.
pub fn routes() -> Vec<Route> {
    use Access::{Operator, Public, Tenant};
    vec![
        route!(GET "/healthz", OPS, Public, ops::healthz),
        route!(GET "/readyz", OPS, Public, ops::readyz),
        route!(GET "/metrics", OPS, Public, ops::metrics),
        route!(POST "/v1/tenants", OPS, Operator, tenants::create),
        // Identity: the realm's OIDC endpoints.
        route!(POST "/auth/realms/{tenantId}/protocol/openid-connect/token", Family::OAuth, Public, oidc::token),
        route!(GET "/auth/realms/{tenantId}/.well-known/openid-configuration", REALM, Public, oidc::discovery),
        route!(GET "/auth/realms/{tenantId}/protocol/openid-connect/certs", REALM, Public, oidc::certs),
        // Apps and push configuration.
        route!(GET "/v1/tenants/{tenantId}/apps", TENANT, Tenant(ADMIN_OR_READ), apps::list),
        route!(POST "/v1/tenants/{tenantId}/apps/{appName}", TENANT, Tenant(ADMIN), apps::save),
        route!(PUT "/v1/tenants/{tenantId}/apps/{appName}", TENANT, Tenant(ADMIN), apps::update),
        route!(GET "/v1/tenants/{tenantId}/apps/{appName}", TENANT, Tenant(ADMIN_OR_READ), apps::get),
        route!(DELETE "/v1/tenants/{tenantId}/apps/{appName}", TENANT, Tenant(ADMIN), apps::delete),
        // Clients, links and push tokens.
        route!(POST "/v1/tenants/{tenantId}/clients", TENANT, Tenant(ADMIN), clients::register),
        route!(PUT "/v1/tenants/{tenantId}/users/{userId}/clients/{astClientId}", TENANT, Tenant(ADMIN), clients::link),
        route!(GET "/v1/tenants/{tenantId}/users/{userId}/clients", TENANT, Tenant(ADMIN_OR_READ), clients::of_user),
        route!(PUT "/v1/tenants/{tenantId}/clients/{astClientId}/pushtoken", PUSH, Tenant(ADMIN_OR_CLIENT), push_tokens::put),
        route!(GET "/v1/tenants/{tenantId}/clients/{astClientId}/pushtoken", PUSH, Tenant(ADMIN), push_tokens::get),
        // Webhooks and events.
        route!(POST "/v1/tenants/{tenantId}/webhooks", WEBHOOKS, Tenant(ADMIN), webhooks::create),
        route!(GET "/v1/tenants/{tenantId}/webhooks", WEBHOOKS, Tenant(ADMIN_OR_READ), webhooks::list),
        route!(GET "/v1/tenants/{tenantId}/webhooks/{webhookId}", WEBHOOKS, Tenant(ADMIN_OR_READ), webhooks::get),
        route!(PUT "/v1/tenants/{tenantId}/webhooks/{webhookId}", WEBHOOKS, Tenant(ADMIN), webhooks::update),
        route!(DELETE "/v1/tenants/{tenantId}/webhooks/{webhookId}", WEBHOOKS, Tenant(ADMIN), webhooks::delete),
        route!(GET "/v1/tenants/{tenantId}/webhooks/{webhookId}/attempts", WEBHOOKS, Tenant(ADMIN_OR_READ), webhooks::attempts),
        route!(POST "/v1/tenants/{tenantId}/webhooks/{webhookId}/replay", WEBHOOKS, Tenant(ADMIN), webhooks::replay),
        route!(POST "/v1/tenants/{tenantId}/events", WEBHOOKS, Tenant(ADMIN), webhooks::publish),
        // Push.
        route!(POST "/v1/tenants/{tenantId}/push_notification/send", PUSH, Tenant(ADMIN), push::send),
        route!(GET "/v1/tenants/{tenantId}/push_notification/{notificationId}", PUSH, Tenant(ADMIN_OR_READ), push::report),
    ]
}
