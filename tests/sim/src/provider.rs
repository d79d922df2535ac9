//! The four simulated push services.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// One of the simulated push services.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Provider {
    /// Apple Push Notification service.
    Apns,
    /// Firebase Cloud Messaging HTTP v1.
    Fcm,
    /// Huawei Push Kit.
    Hms,
    /// A Web Push service (RFC 8030), as browsers' push services are.
    Webpush,
}

impl Provider {
    /// All providers, in stats order.
    pub const ALL: [Provider; 4] = [Provider::Apns, Provider::Fcm, Provider::Hms, Provider::Webpush];

    /// `"apns"`, `"fcm"`, `"hms"` or `"webpush"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Provider::Apns => "apns",
            Provider::Fcm => "fcm",
            Provider::Hms => "hms",
            Provider::Webpush => "webpush",
        }
    }

    pub(crate) fn index(self) -> usize {
        match self {
            Provider::Apns => 0,
            Provider::Fcm => 1,
            Provider::Hms => 2,
            Provider::Webpush => 3,
        }
    }
}

impl fmt::Display for Provider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Provider {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "apns" => Ok(Provider::Apns),
            "fcm" => Ok(Provider::Fcm),
            "hms" => Ok(Provider::Hms),
            "webpush" => Ok(Provider::Webpush),
            other => Err(format!("unknown provider {other:?} (apns, fcm, hms or webpush)")),
        }
    }
}
