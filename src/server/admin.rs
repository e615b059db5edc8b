//! The subcommands besides `serve` and `bench`: `keygen` (the service key
//! pair), and `backup` and `audit`, which read a database that a server may
//! be serving.

use std::io::Write as _;
use std::path::Path;

use crate::bfv::{PublicKey, SecretKey};

use super::cli::{AuditArgs, BackupArgs, KeygenArgs};
use super::{params, store};

pub(super) fn audit(args: &AuditArgs) -> Result<(), String> {
    let rows = store::audit_log(&args.db, args.user.as_deref(), args.since, args.limit)
        .map_err(|e| format!("audit of {}: {e}", args.db.display()))?;
    let mut out = std::io::stdout().lock();
    for row in &rows {
        let line = serde_json::to_string(row).map_err(|e| e.to_string())?;
        writeln!(out, "{line}").map_err(|e| e.to_string())?;
    }
    Ok(())
}

pub(super) fn backup(args: &BackupArgs) -> Result<(), String> {
    let copied = store::backup(&args.db, &args.out).map_err(|e| {
        format!(
            "backup of {} to {}: {e}",
            args.db.display(),
            args.out.display()
        )
    })?;
    println!(
        "backed up {} to {}: schema {}, {} users, {} gallery ciphertexts, {} bytes",
        args.db.display(),
        args.out.display(),
        copied.schema_version,
        copied.users,
        copied.gallery_ciphertexts,
        copied.bytes
    );
    Ok(())
}

fn write_file(path: &Path, bytes: &[u8], secret: bool, force: bool) -> Result<(), String> {
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true);
    if force {
        opts.create(true).truncate(true);
    } else {
        opts.create_new(true);
    }
    #[cfg(unix)]
    if secret {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600);
    }
    let _ = secret;
    let mut f = opts
        .open(path)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    // An existing file (`--force`) keeps its mode on open: set it before
    // any secret byte goes in.
    #[cfg(unix)]
    if secret {
        use std::os::unix::fs::PermissionsExt;
        f.set_permissions(std::fs::Permissions::from_mode(0o600))
            .map_err(|e| format!("{}: {e}", path.display()))?;
    }
    f.write_all(bytes)
        .and_then(|_| f.sync_all())
        .map_err(|e| format!("{}: {e}", path.display()))
}

pub(super) fn keygen(args: &KeygenArgs) -> Result<(), String> {
    let params = params();
    std::fs::create_dir_all(&args.out).map_err(|e| format!("{}: {e}", args.out.display()))?;
    let sk = SecretKey::generate(&params).map_err(|e| e.to_string())?;
    let pk = PublicKey::new(&sk).map_err(|e| e.to_string())?;
    let sk_path = args.out.join("service.sk");
    let pk_path = args.out.join("service.pk");
    let mut sk_bytes = sk.to_bytes();
    let r = write_file(&sk_path, &sk_bytes, true, args.force);
    zeroize::Zeroize::zeroize(&mut sk_bytes);
    r?;
    write_file(&pk_path, &pk.to_bytes(), false, args.force)?;
    println!(
        "wrote {} (secret, keep it on the server) and {} (parameters {})",
        sk_path.display(),
        pk_path.display(),
        params.id_hex()
    );
    Ok(())
}
