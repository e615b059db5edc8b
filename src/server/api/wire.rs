//! The keys framing and the checks every client ciphertext passes.

use crate::bfv::{Ciphertext, Params};

use super::{ApiError, ApiResult, ErrorCode};

/// Splits the keys body: `u32 LE pk_len`, pk, `u32 LE rk_len`, rk (`rk_len`
/// may be 0: no relinearization key), and nothing after.
pub fn split_keys(body: &[u8]) -> ApiResult<(&[u8], Option<&[u8]>)> {
    fn field<'a>(body: &'a [u8], pos: &mut usize, what: &str) -> ApiResult<&'a [u8]> {
        let truncated = || {
            ApiError::new(
                ErrorCode::Truncated,
                format!("keys body ends inside the {what}"),
            )
        };
        let len_bytes = body.get(*pos..*pos + 4).ok_or_else(truncated)?;
        let len = u32::from_le_bytes(len_bytes.try_into().expect("4 bytes")) as usize;
        let start = *pos + 4;
        let end = start.checked_add(len).ok_or_else(truncated)?;
        let out = body.get(start..end).ok_or_else(truncated)?;
        *pos = end;
        Ok(out)
    }
    let mut pos = 0;
    let pk = field(body, &mut pos, "public key")?;
    let rk = field(body, &mut pos, "relinearization key")?;
    if pos != body.len() {
        return Err(ApiError::new(
            ErrorCode::Malformed,
            format!("keys body: {} trailing bytes", body.len() - pos),
        ));
    }
    if pk.is_empty() {
        return Err(ApiError::new(
            ErrorCode::Malformed,
            "keys body: the public key is required",
        ));
    }
    Ok((pk, if rk.is_empty() { None } else { Some(rk) }))
}

/// Frames a public key and an optional relinearization key as the keys body.
pub fn frame_keys(pk: &[u8], rk: Option<&[u8]>) -> Vec<u8> {
    let rk = rk.unwrap_or(&[]);
    let mut out = Vec::with_capacity(8 + pk.len() + rk.len());
    out.extend_from_slice(&(pk.len() as u32).to_le_bytes());
    out.extend_from_slice(pk);
    out.extend_from_slice(&(rk.len() as u32).to_le_bytes());
    out.extend_from_slice(rk);
    out
}

/// A client ciphertext for matching: untrusted parse (refuses transparent
/// ones), then size 2 over every prime of Q.
pub(super) fn parse_fresh_ciphertext(
    params: &Params,
    what: &str,
    bytes: &[u8],
) -> ApiResult<Ciphertext> {
    let ct =
        Ciphertext::from_bytes_untrusted(params, bytes).map_err(|e| ApiError::format(what, e))?;
    if ct.size() != 2 || ct.level() != params.limbs() {
        return Err(ApiError::new(ErrorCode::BadCiphertext, format!(
                "{what}: a fresh ciphertext of size 2 over {} primes is expected (got size {}, {} primes)",
                params.limbs(),
                ct.size(),
                ct.level()
            ),
        ));
    }
    Ok(ct)
}
