//! File helpers: atomic writes, so a simulator reloading the cert dir never reads half a file.

use std::fs;
use std::io::Write;
use std::path::Path;

use crate::SimError;

/// Writes `contents` to `path` through a temporary file and a rename.
/// `private` files (keys, secrets) are created readable by the owner only.
pub(crate) fn write_atomic(path: &Path, contents: &[u8], private: bool) -> Result<(), SimError> {
    let dir = path.parent().unwrap_or_else(|| Path::new("."));
    fs::create_dir_all(dir).map_err(|e| SimError::io(dir, e))?;
    let file_name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "file".to_owned());
    let tmp = dir.join(format!(".{file_name}.{}.{}.tmp", std::process::id(), crate::util::random_hex(8)));
    let mut opts = fs::OpenOptions::new();
    opts.write(true).create_new(true);
    #[cfg(unix)]
    if private {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600);
    }
    #[cfg(not(unix))]
    let _ = private;
    let mut f = opts.open(&tmp).map_err(|e| SimError::io(&tmp, e))?;
    f.write_all(contents).map_err(|e| SimError::io(&tmp, e))?;
    f.sync_all().map_err(|e| SimError::io(&tmp, e))?;
    drop(f);
    fs::rename(&tmp, path).map_err(|e| {
        let _ = fs::remove_file(&tmp);
        SimError::io(path, e)
    })
}

/// Reads a UTF-8 file.
pub(crate) fn read_string(path: &Path) -> Result<String, SimError> {
    fs::read_to_string(path).map_err(|e| SimError::io(path, e))
}
