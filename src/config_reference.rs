//! The configuration reference: every option of [`Settings`] with its flag,
//! environment variable, default and help, read from the clap definitions and
//! from what [`Config::resolve`] makes of no settings at all, so `herald config
//! defaults` and the README's table can never drift from the code.

use crate::config::{Config, Settings};
use clap::{Args, Command};

/// One option of `herald serve`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OptionDoc {
    /// The TOML key (the field name).
    pub key: String,
    /// The command-line flag, with its dashes (`--listen`).
    pub flag: String,
    /// The environment variable (`HERALD_LISTEN`).
    pub env: String,
    /// The default as a TOML value; None when unset by default.
    pub default: Option<String>,
    /// The default follows `listen` (so a file should not pin it by accident).
    pub derived: bool,
    /// The flag's help text, as `herald serve --help` prints it.
    pub help: String,
}

/// Every option, in declaration order.
pub fn options() -> Vec<OptionDoc> {
    let resolved =
        |s: Settings| toml::Table::try_from(Config::resolve(s).map(|c| c.to_settings()).ok()).unwrap_or_default();
    let defaults = resolved(Settings::default());
    let elsewhere = resolved(Settings { listen: Some(([127, 0, 0, 2], 9).into()), ..Settings::default() });
    Settings::augment_args(Command::new("herald"))
        .get_arguments()
        .map(|arg| {
            let key = arg.get_id().as_str().to_string();
            OptionDoc {
                flag: arg.get_long().map(|l| format!("--{l}")).unwrap_or_default(),
                env: arg.get_env().map(|e| e.to_string_lossy().into_owned()).unwrap_or_default(),
                default: defaults.get(&key).map(|v| v.to_string()),
                derived: key != "listen" && defaults.get(&key) != elsewhere.get(&key),
                help: arg.get_help().map(|h| h.to_string()).unwrap_or_default(),
                key,
            }
        })
        .collect()
}

/// The complete commented TOML of the defaults (`herald config defaults`).
pub fn defaults_toml() -> String {
    let mut out = String::from(
        "# Herald configuration: every option of `herald serve` with its default.\n\
         # Precedence: command-line flags, then HERALD_* environment variables, then\n\
         # this file (`herald serve --config FILE`), then the defaults below.\n",
    );
    for o in options() {
        out.push_str(&format!("\n# {}\n# flag {}, env {}\n", o.help, o.flag, o.env));
        match &o.default {
            Some(v) if o.derived => out.push_str(&format!("# {} = {v} (derived from listen)\n", o.key)),
            Some(v) => out.push_str(&format!("{} = {v}\n", o.key)),
            None => out.push_str(&format!("# {} = (unset by default)\n", o.key)),
        }
    }
    out
}

/// The README's configuration table (its test checks the README holds exactly this).
pub fn markdown_table() -> String {
    let mut out = String::from("| TOML key | flag | env | default | meaning |\n|---|---|---|---|---|\n");
    for o in options() {
        let default = match (&o.default, o.derived) {
            (Some(d), true) => format!("`{d}`, derived from `listen`"),
            (Some(d), false) => format!("`{d}`"),
            (None, _) => "unset".into(),
        };
        out.push_str(&format!(
            "| `{}` | `{}` | `{}` | {default} | {} |\n",
            o.key,
            o.flag,
            o.env,
            o.help.replace('|', "\\|")
        ));
    }
    out
}

impl Config {
    /// The settings that resolve to this configuration (the inverse of
    /// [`Config::resolve`], for the options a file can hold).
    pub fn to_settings(&self) -> Settings {
        let e = &self.push.endpoints;
        let w = &self.webhooks;
        let schedule: Vec<String> = w.retry_schedule.iter().map(|d| format!("{}", d.as_secs_f64())).collect();
        Settings {
            listen: Some(self.listen),
            data_dir: Some(self.data_dir.clone()),
            store: self.store.clone(),
            store_connections: Some(self.store_connections),
            node_id: self.node_id.clone(),
            lease_ttl: Some(humantime::format_duration(self.lease_ttl).to_string()),
            broadcast_partition: Some(self.push.partition_size),
            report_retention: Some(retention_text(self.retention.reports)),
            event_retention: Some(retention_text(self.retention.events)),
            master_key_file: self.master_key_file.clone(),
            cache_mib: Some(self.cache_bytes >> 20),
            operator_token: self.operator_token.clone(),
            tls_cert: self.tls.as_ref().map(|(c, _)| c.clone()),
            tls_key: self.tls.as_ref().map(|(_, k)| k.clone()),
            public_url: Some(self.public_url.clone()),
            body_limit: Some(self.body_limit),
            access_token_ttl: Some(self.access_token_ttl),
            refresh_token_ttl: Some(self.refresh_token_ttl),
            log_format: Some(if self.log_json { "json" } else { "text" }.into()),
            apns_url: Some(e.apns.clone()),
            apns_sandbox_url: Some(e.apns_sandbox.clone()),
            fcm_url: Some(e.fcm.clone()),
            hms_url: Some(e.hms.clone()),
            hms_token_url: Some(e.hms_token.clone()),
            // Only the certificates are kept, not the file they came from.
            extra_ca_file: None,
            max_retry_after_s: Some(self.push.max_retry_after.as_secs()),
            allow_private_provider_endpoints: Some(self.push.allow_private_endpoints),
            bulk_in_flight: Some(self.push.bulk_in_flight),
            tenant_idle_stop_s: Some(self.push.tenant_idle_stop.map_or(0, |d| d.as_secs())),
            bulk_nice: self.push.bulk_nice,
            send_deadline_ms: Some(self.send_deadline.as_millis() as u64),
            webhook_retry_schedule: Some(schedule.join(",")),
            webhook_timeout_ms: Some(w.timeout.as_millis() as u64),
            webhook_allow_private: Some(w.allow_private),
            webhook_concurrency: Some(w.concurrency),
            metrics_tenant_label: Some(self.metrics_tenant_label.to_string()),
            ca_cert: self.pki.ca.as_ref().map(|(c, _)| c.clone()),
            ca_key: self.pki.ca.as_ref().map(|(_, k)| k.clone()),
            client_cert_validity_days: Some(self.pki.client_cert_validity.as_secs() / 86_400),
            header_read_timeout_ms: Some(self.limits.header_read_timeout.as_millis() as u64),
            header_limit: Some(self.limits.header_limit),
            max_connections: self.limits.max_connections,
            max_connections_per_ip: Some(self.limits.max_connections_per_ip),
            idle_timeout_s: Some(self.limits.idle_timeout.as_secs()),
            body_timeout_ms: Some(u64::try_from(self.limits.body_timeout.as_millis()).unwrap_or(u64::MAX)),
            min_body_rate: Some(self.limits.min_body_rate),
            ops_listen: self.ops_listen,
            disk_reserve_mib: Some(self.disk_reserve_bytes >> 20),
            send_rate: Some(self.limits.send_rate),
            send_burst: Some(self.limits.send_burst),
            token_rate_per_user: Some(self.limits.token_rate_per_user),
            token_burst_per_user: Some(self.limits.token_burst_per_user),
            token_rate_per_ip: Some(self.limits.token_rate_per_ip),
            token_burst_per_ip: Some(self.limits.token_burst_per_ip),
        }
    }
}

/// A retention as `--report-retention` takes it: whole seconds, `0` for ever.
fn retention_text(d: Option<std::time::Duration>) -> String {
    d.map_or_else(
        || "0".to_string(),
        |d| humantime::format_duration(std::time::Duration::from_secs(d.as_secs())).to_string(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_option_is_documented_and_the_defaults_parse_back() {
        let options = options();
        assert!(options.len() >= 20);
        for o in &options {
            assert!(!o.help.is_empty() && o.flag.starts_with("--") && o.env.starts_with("HERALD_"), "{o:?}");
        }
        let text = defaults_toml();
        let parsed: Settings = toml::from_str(&text).expect("the printed defaults parse");
        let again = Config::resolve(parsed).expect("and resolve").to_settings();
        let first = Config::resolve(Settings::default()).unwrap().to_settings();
        assert_eq!(toml::Table::try_from(again).unwrap(), toml::Table::try_from(first).unwrap());
        assert!(text.contains("\nlisten = \"127.0.0.1:8080\"\n"), "{text}");
        assert!(text.contains("# operator_token = (unset by default)"), "{text}");
        assert!(text.contains("# public_url = \"http://127.0.0.1:8080\" (derived from listen)"), "{text}");
    }
}
