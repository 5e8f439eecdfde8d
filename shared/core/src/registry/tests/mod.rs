//! Loader tests: every D-2 error names file, field and value; the shipped registry loads;
//! a new specialist needs data only.
//!
//! One file per area, as `load/` is split; `fixtures` holds the small test registry and
//! the helpers every area shares.

mod ask;
mod blocks;
mod cards;
mod fixtures;
mod memory;
mod models;
mod orchestration;
mod planner;
mod shipped;
mod tools;
mod trust;
mod tuning;
