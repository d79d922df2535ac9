//! Realm settings: login configuration, LDAP federation, app settings, OTP locks, and the token endpoint's sessions and login failures.
