//! Known-answer vectors from scripts/gen_kat.py (filled in by the KAT generator).
