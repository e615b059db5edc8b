//! ChaCha20 block function kernels (multi-block, per backend).
