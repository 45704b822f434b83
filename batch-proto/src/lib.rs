//! Being written; see ARCHITECTURE.md.
