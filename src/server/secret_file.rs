//! Secret files: created new (never over an existing one), mode 0600 from
//! the start, written and synced.

use std::io::Write as _;
use std::path::Path;

/// Writes `bytes` to a new file at `path` with mode 0600 (on Unix), and
/// syncs it; an existing file is an error.
pub(crate) fn create_secret(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600);
    }
    let mut f = opts.open(path)?;
    f.write_all(bytes)?;
    f.sync_all()
}
