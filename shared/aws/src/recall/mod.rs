//! The `MemoryStore` port (D-43) on the journal's DynamoDB table and one Amazon S3 Vectors
//! index: [`DynamoMemory`].
//!
//! Under the principal's partition `PR#<principal>` (see `keys`): one item per memory,
//! current or history (`MEM#I#<id>`); one pointer per subject to its current memory
//! (`MEM#S#<subject>`, with a hash of the statement's words and its end), which is what
//! keeps one subject to one current memory; one posting per (stem, memory) for full-text
//! search (`MEM#T#<stem>#<id>`); the count of memories nothing replaced (`MEM#N`, changed
//! only by `ADD` inside the transactions that change it); the setting (`MEMSET`). Vectors
//! live in the S3 Vectors index (`vectors`). Nothing here has a TTL: an expired memory is
//! history the user can still see, and erasing is explicit.
//!
//! **Saving** reads the memory's own item and its subject's pointer (1 BatchGetItem); the
//! same words again, or the id already saved, change nothing. Otherwise it writes the
//! postings (1 BatchWriteItem per 25 stems), then the vector (1 PutVectors), then one
//! transaction (1 TransactWriteItems): the memory (if absent), the pointer (if it still
//! points where it was read to), the replaced memory's `replaced_by` (if nothing replaced
//! it yet) and `ADD 1` to the count when nothing is replaced. A condition that failed
//! (a concurrent save of the subject) re-reads and tries again, up to 4 times; postings and
//! the vector are keyed by the memory id, so a retry writes the same ones. Then the count
//! is read (1 GetItem): past the cap, the principal's memories are read (1 Query per MB)
//! and the oldest extracted ones erased, then the oldest said. A replacement also marks the
//! replaced vector as history (1 GetVectors + 1 PutVectors), best effort: search checks
//! every hit against its item anyway.
//!
//! **The cap's overshoot**: the count is read after the save's own transaction, so of
//! saves running at once the last to read sees them all and evicts for all; the cap is
//! exceeded only between a save's commit and its eviction, and after a save that failed
//! in between (the next save evicts for it). An expired memory still counts until the
//! count passes the cap, when the exact number of current ones is taken from the items.
//!
//! **Searching**: full text is one Query per distinct stem (at most [`MAX_TERMS`], in
//! parallel), ranked by a BM25-like inverse document frequency over the postings, then the
//! best memories' items are read (1 BatchGetItem per 100) until `limit` pass the filter.
//! Similarity is 1 QueryVectors (filtered in the index by principal, model and the memory
//! filter) and 1 BatchGetItem of the hits' items.
//!
//! **Erasing** (forget, eviction, forget all) deletes the postings and the vectors first
//! and the memory items last, so a failure part way leaves the memory findable and a retry
//! finishes; a memory's history (what it replaced, transitively) goes with it. Forgetting
//! one memory: 1 GetItem per item of its chain plus 1 for its subject's pointer,
//! 1 BatchWriteItem per 25 postings, 1 DeleteVectors, 1 TransactWriteItems (the memory,
//! its pointer, `ADD -1`; its history first with BatchWriteItem). Forgetting everything:
//! 1 Query per MB of the principal's memory, 1 DeleteVectors per 500 memories,
//! 1 BatchWriteItem per 25 items.
//!
//! Every call names the principal; items are under their partition and checked for their
//! `owner`; vector keys and filters carry their pseudonym (`keys::pseudonym`). Reads are
//! strongly consistent.

mod deployed;
mod erase;
mod error;
mod items;
pub mod keys;
mod read;
mod save;
mod search;
mod store;
mod table;
pub mod vectors;

pub use deployed::{DeployedMemory, MemoryParts, deployed};

/// The most distinct stems a text search looks up (one Query each); the rest are left
/// out, so that a long message costs a bounded number of requests.
pub const MAX_TERMS: usize = 12;

/// Where long-term memory lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryConfig {
    table: String,
    vector_bucket: String,
    vector_index: String,
    dimensions: usize,
}

impl MemoryConfig {
    /// The journal's table, the vector bucket and its index, of `dimensions` dimensions
    /// (what the index was created with; a vector of another length is not stored).
    pub fn new(
        table: impl Into<String>,
        vector_bucket: impl Into<String>,
        vector_index: impl Into<String>,
        dimensions: usize,
    ) -> Self {
        MemoryConfig {
            table: table.into(),
            vector_bucket: vector_bucket.into(),
            vector_index: vector_index.into(),
            dimensions,
        }
    }

    /// As [`MemoryConfig::new`], the index named by its ARN
    /// (`arn:<partition>:s3vectors:<region>:<account>:bucket/<bucket>/index/<index>`, what
    /// the SAM template passes); `None` for anything else.
    pub fn from_index_arn(
        table: impl Into<String>,
        index_arn: &str,
        dimensions: usize,
    ) -> Option<Self> {
        let resource = index_arn.splitn(6, ':').nth(5)?;
        let (bucket, index) = resource.strip_prefix("bucket/")?.split_once("/index/")?;
        let named = |s: &str| !s.is_empty() && !s.contains('/');
        (index_arn.starts_with("arn:") && named(bucket) && named(index))
            .then(|| MemoryConfig::new(table, bucket, index, dimensions))
    }

    /// The table's name.
    pub fn table(&self) -> &str {
        &self.table
    }

    /// The vector bucket's name.
    pub fn vector_bucket(&self) -> &str {
        &self.vector_bucket
    }

    /// The vector index's name.
    pub fn vector_index(&self) -> &str {
        &self.vector_index
    }

    /// The index's dimensions.
    pub fn dimensions(&self) -> usize {
        self.dimensions
    }
}

/// Long-term memory on DynamoDB and S3 Vectors; see the module docs.
///
/// Cheap to clone: the SDK clients share their connections.
#[derive(Debug, Clone)]
pub struct DynamoMemory {
    dynamodb: aws_sdk_dynamodb::Client,
    vectors: aws_sdk_s3vectors::Client,
    config: MemoryConfig,
}

impl DynamoMemory {
    /// A store over these clients (build the DynamoDB one as the journal does:
    /// [`crate::journal::dynamodb_config`]).
    pub fn new(
        dynamodb: aws_sdk_dynamodb::Client,
        vectors: aws_sdk_s3vectors::Client,
        config: MemoryConfig,
    ) -> Self {
        DynamoMemory {
            dynamodb,
            vectors,
            config,
        }
    }

    /// The configuration.
    pub fn config(&self) -> &MemoryConfig {
        &self.config
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_index_arn_names_the_bucket_and_the_index() {
        let arn = "arn:aws:s3vectors:eu-west-1:123456789012:bucket/baton-memory/index/memories";
        let config = MemoryConfig::from_index_arn("t", arn, 256).unwrap();
        assert_eq!(config.vector_bucket(), "baton-memory");
        assert_eq!(config.vector_index(), "memories");
        assert_eq!(MemoryConfig::from_index_arn("t", "memories", 256), None);
        assert_eq!(
            MemoryConfig::from_index_arn("t", "arn:aws:s3:::bucket/b/index/", 256),
            None
        );
    }
}
