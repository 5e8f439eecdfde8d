//! The `Store` port on one DynamoDB table plus an S3 bucket of large bodies and pictures
//! (D-24 … D-26, D-42).
//!
//! [`DynamoStore`] keeps the same contracts as the memory and embedded stores (the
//! conformance suite in `baton_runtime::testkit` runs against it unchanged). The table's
//! items and keys are the contract of D-24, shared with the history writer; see `keys`.
//!
//! Every write is conditional (a PICTURE put on its commit's META condition) and every
//! multi-item change is one `TransactWriteItems`, so there is no read-modify-write race: a
//! claim is one transaction (TURN-ID + META), a commit is one (META + TURN + TURN-ID +
//! BODYs + PICTUREs), a checkpoint's save is one (META checked + CKPT; the item is never
//! deleted: TTL removes it, and a committed turn's is not read). Reads are strongly
//! consistent.
//!
//! Requests per operation (what a turn costs):
//!
//! | operation | DynamoDB | S3 |
//! |---|---|---|
//! | claim, new episode | 1 TransactWriteItems | 0 |
//! | claim, existing episode | 1 TransactWriteItems + 1 GetItem | 0 |
//! | claim answered `Completed` | 1 TransactWriteItems + 1 GetItem | 0 |
//! | claim answered `InFlight` / `Busy` / `NotFound` / `Conflict` | 1 TransactWriteItems | 0 |
//! | commit, bodies inline | 1 TransactWriteItems | 0 |
//! | commit with k large bodies | 1 GetItem + 1 TransactWriteItems | k PutObject |
//! | commit with p pictures (and k large bodies) | 1 GetItem + 1 TransactWriteItems | p (+ k) PutObject |
//! | release | 1 UpdateItem + 1 DeleteItem (1 UpdateItem for an unknown episode) | 0 |
//! | episode | 1 GetItem | 0 |
//! | turns | 1 Query (one more per further MB of turns) | 0 |
//! | turns_after | 1 Query (+1 GetItem when it finds no turn) | 0 |
//! | save_summary | 1 UpdateItem | 0 |
//! | due_episodes | 1 Query of the `compaction-due` index | 0 |
//! | body | 1 GetItem | +1 GetObject if stored in S3 |
//! | picture | 1 GetItem | +1 GetObject when the picture is there |
//! | save_checkpoint | 1 TransactWriteItems | +1 PutObject past 300 KiB |
//! | checkpoint, none | 1 GetItem | 0 |
//! | checkpoint, claim held | 2 GetItem | +1 GetObject if stored in S3 |
//! | checkpoint, claim not held | 3 GetItem | +1 GetObject if stored in S3 |
//! | upstream_conversation | 1 GetItem (+1 GetItem of META when there is none) | 0 |
//! | save_upstream_conversation, refresh | 1 PutItem | 0 |
//! | save_upstream_conversation, first save or `NotFound` | 1 PutItem + 1 TransactWriteItems | 0 |
//!
//! TTL: a claimed TURN-ID item carries `expires_at` (its lease's end plus a day), so
//! abandoned claims disappear; DynamoDB deletes expired items late, so every read of such
//! an item checks `expires_at` itself. An UPSTREAM item carries one a day past its
//! conversation's expiry, which its caller checks from `expires_ms`.

mod account_links;
mod bodies;
mod checkpoint;
mod claim;
mod commit;
mod config;
mod error;
mod items;
pub mod keys;
mod memory;
mod read;
pub mod schema;
mod store;
mod transact;
mod upstream;

pub use config::{DynamoStore, JournalConfig, dynamodb_config, retry_config, s3_config};
pub use schema::{SchemaError, create_table, create_table_without_ttl};
