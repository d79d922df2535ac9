//! Finding PostgreSQL's binaries and the user to run them as.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::error::{Error, Result};

/// Where Debian installs each major version's server binaries.
const DEBIAN_ROOT: &str = "/usr/lib/postgresql";

/// The directory holding `initdb` and `postgres`: `HERALD_PG_BIN` if set, else
/// `pg_config --bindir`, else the highest `/usr/lib/postgresql/*/bin`.
///
/// `pg_config` alone is not enough: on Debian it comes with `libpq-dev`, whose
/// version may differ from the installed server's, so its bindir can lack `initdb`.
pub(crate) fn bin_dir() -> Result<PathBuf> {
    if let Some(dir) = std::env::var_os("HERALD_PG_BIN").filter(|dir| !dir.is_empty()) {
        let dir = PathBuf::from(dir);
        return if has_server(&dir) {
            Ok(dir)
        } else {
            Err(Error::NotInstalled(format!("HERALD_PG_BIN={} holds no initdb and postgres", dir.display())))
        };
    }
    let mut tried = Vec::new();
    match Command::new("pg_config").arg("--bindir").output() {
        Ok(out) if out.status.success() => {
            let dir = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
            if has_server(&dir) {
                return Ok(dir);
            }
            tried.push(format!("pg_config's bindir {} holds no initdb", dir.display()));
        }
        Ok(out) => tried.push(format!("pg_config --bindir failed: {}", String::from_utf8_lossy(&out.stderr).trim())),
        Err(err) => tried.push(format!("no pg_config ({err})")),
    }
    let versions = std::fs::read_dir(DEBIAN_ROOT)
        .map(|entries| {
            entries
                .filter_map(|entry| entry.ok())
                .filter_map(|entry| Some(entry.file_name().to_str()?.to_owned()))
                .collect()
        })
        .unwrap_or_default();
    match highest(versions).map(|version| Path::new(DEBIAN_ROOT).join(version).join("bin")) {
        Some(dir) if has_server(&dir) => Ok(dir),
        Some(dir) => {
            tried.push(format!("{} holds no initdb", dir.display()));
            Err(Error::NotInstalled(tried.join("; ")))
        }
        None => {
            tried.push(format!("no version under {DEBIAN_ROOT}"));
            Err(Error::NotInstalled(tried.join("; ")))
        }
    }
}

fn has_server(dir: &Path) -> bool {
    dir.join("initdb").is_file() && dir.join("postgres").is_file()
}

/// The highest version among directory names such as `9.6`, `15` and `16`
/// (compared as numbers, part by part); names that are not versions are ignored.
fn highest(names: Vec<String>) -> Option<String> {
    names
        .into_iter()
        .filter_map(|name| {
            let parts = name.split('.').map(|part| part.parse::<u32>().ok()).collect::<Option<Vec<u32>>>()?;
            Some((parts, name))
        })
        .max()
        .map(|(_, name)| name)
}

/// The OS user the server runs as when this process is root (initdb and postgres refuse root).
#[derive(Debug, Clone, Copy)]
pub(crate) struct RunAs {
    pub(crate) uid: u32,
    pub(crate) gid: u32,
}

/// `Some(postgres)` when running as root, `None` (run as the current user) otherwise.
pub(crate) fn run_as() -> Result<Option<RunAs>> {
    if !rustix::process::geteuid().is_root() {
        return Ok(None);
    }
    let uid = id("-u")?;
    let gid = id("-g")?;
    Ok(Some(RunAs { uid, gid }))
}

/// `id -u postgres` or `id -g postgres`: `id` asks NSS, as login would.
fn id(flag: &str) -> Result<u32> {
    let out = Command::new("id")
        .args([OsStr::new(flag), OsStr::new("postgres")])
        .output()
        .map_err(|err| Error::NoPostgresUser(format!("`id {flag} postgres` did not run: {err}")))?;
    if !out.status.success() {
        return Err(Error::NoPostgresUser(String::from_utf8_lossy(&out.stderr).trim().to_owned()));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    text.trim().parse().map_err(|_| Error::NoPostgresUser(format!("`id {flag} postgres` printed {text:?}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn highest_compares_versions_as_numbers() {
        let names = ["9.6", "15", "16", "README", "10"].map(String::from).to_vec();
        assert_eq!(highest(names).as_deref(), Some("16"));
        assert_eq!(highest(vec!["9.6".into(), "9.10".into()]).as_deref(), Some("9.10"));
        assert_eq!(highest(vec!["x".into()]), None);
    }
}
