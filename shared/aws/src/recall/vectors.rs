//! Memories' vectors in one Amazon S3 Vectors index (cosine distance) shared by every
//! principal of the deployment.
//!
//! A vector's key is `<pseudonym>/<memory id>` and its filterable metadata says whose it is
//! (`principal`: the pseudonym), which model made it (`model`), whether nothing replaced
//! it (`current`), and the memory's `kind`, `origin`, `created` and `expires` (epoch ms;
//! [`NEVER`] for none) and, when it has them, `episode` and `specialist`. Every query
//! filters on `principal` and `model`, so one principal never sees another's vectors and a
//! query never meets another model's; what a memory filter asks is filtered in the index
//! too, so that history and other kinds do not take the top K. The memory items stay the
//! truth: the store reads every hit's item and drops what its filter does not admit (a
//! replaced memory whose `current` could not be updated, a vector a failed save left).

use std::collections::HashMap;

use aws_sdk_s3vectors::types::{PutInputVector, VectorData};
use aws_smithy_types::{Document, Number};
use baton_core::ports::store::StoreError;
use baton_core::recall::embed::Embedding;
use baton_core::recall::{Memory, MemoryFilter};

use super::DynamoMemory;
use super::error;
use super::keys;

/// `expires` of a memory without an end: 2^53, exact as the float S3 Vectors compares.
pub const NEVER: u64 = 1 << 53;
/// QueryVectors answers at most this many neighbours.
pub const MAX_TOP_K: usize = 100;
/// DeleteVectors takes at most this many keys.
const DELETE_BATCH: usize = 500;

fn text(value: &str) -> Document {
    Document::String(value.to_owned())
}

fn number(value: u64) -> Document {
    Document::Number(Number::PosInt(value))
}

fn clause(key: &str, op: &str, value: Document) -> Document {
    Document::Object(HashMap::from([(
        key.to_owned(),
        Document::Object(HashMap::from([(op.to_owned(), value)])),
    )]))
}

/// The filterable metadata of `memory`'s vector.
pub(crate) fn metadata(pseudonym: &str, memory: &Memory, model: &str) -> Document {
    let mut map = HashMap::from([
        ("principal".to_owned(), text(pseudonym)),
        ("model".to_owned(), text(model)),
        (
            "current".to_owned(),
            Document::Bool(memory.replaced_by.is_none()),
        ),
        ("kind".to_owned(), text(memory.kind.as_str())),
        ("origin".to_owned(), text(memory.origin.as_str())),
        ("created".to_owned(), number(memory.created_ms)),
        (
            "expires".to_owned(),
            number(memory.expires_ms.unwrap_or(NEVER).min(NEVER)),
        ),
    ]);
    if let Some(episode) = &memory.source.episode_id {
        map.insert("episode".to_owned(), text(episode));
    }
    if let Some(specialist) = &memory.source.specialist {
        map.insert("specialist".to_owned(), text(specialist));
    }
    Document::Object(map)
}

/// The QueryVectors filter of a search: the principal's vectors of `model` that `filter`
/// admits.
pub(crate) fn query_filter(pseudonym: &str, model: &str, filter: &MemoryFilter) -> Document {
    let mut all = vec![
        clause("principal", "$eq", text(pseudonym)),
        clause("model", "$eq", text(model)),
    ];
    if !filter.include_history {
        all.push(clause("current", "$eq", Document::Bool(true)));
        all.push(clause("expires", "$gt", number(filter.now_ms.min(NEVER))));
    }
    if !filter.kinds.is_empty() {
        let kinds = filter.kinds.iter().map(|k| text(k.as_str())).collect();
        all.push(clause("kind", "$in", Document::Array(kinds)));
    }
    if let Some(since) = filter.since_ms {
        all.push(clause("created", "$gte", number(since.min(NEVER))));
    }
    if let Some(until) = filter.until_ms {
        all.push(clause("created", "$lt", number(until.min(NEVER))));
    }
    if let Some(episode) = &filter.episode_id {
        all.push(clause("episode", "$eq", text(episode)));
    }
    if let Some(specialist) = &filter.specialist {
        all.push(clause("specialist", "$eq", text(specialist)));
    }
    Document::Object(HashMap::from([("$and".to_owned(), Document::Array(all))]))
}

impl DynamoMemory {
    /// Whether the index can hold `embedding`: the index's dimensions, finite, not zero
    /// (cosine distance has no meaning for a zero vector).
    pub(crate) fn fits_index(&self, embedding: &Embedding) -> bool {
        embedding.vector.len() == self.config.dimensions
            && embedding.vector.iter().all(|x| x.is_finite())
            && embedding.vector.iter().any(|x| *x != 0.0)
    }

    /// Stores `memory`'s vector (1 PutVectors; a retried save writes it over itself).
    pub(crate) async fn put_vector(
        &self,
        pseudonym: &str,
        memory: &Memory,
        embedding: &Embedding,
    ) -> Result<(), StoreError> {
        let vector = PutInputVector::builder()
            .key(keys::vector_key(pseudonym, memory.id.as_str()))
            .data(VectorData::Float32(embedding.vector.clone()))
            .metadata(metadata(pseudonym, memory, &embedding.model))
            .build()
            .map_err(|e| error::build(&e))?;
        self.vectors
            .put_vectors()
            .vector_bucket_name(&self.config.vector_bucket)
            .index_name(&self.config.vector_index)
            .vectors(vector)
            .send()
            .await
            .map(drop)
            .map_err(|e| error::sdk("storing a memory's vector", &e))
    }

    /// Marks a replaced memory's vector as history (`current` false): 1 GetVectors, and
    /// 1 PutVectors when it has one. The index has no partial update, so the vector is
    /// read and written back whole.
    pub(crate) async fn retire_vector(&self, pseudonym: &str, id: &str) -> Result<(), StoreError> {
        let doing = "marking a replaced memory's vector";
        let key = keys::vector_key(pseudonym, id);
        let got = self
            .vectors
            .get_vectors()
            .vector_bucket_name(&self.config.vector_bucket)
            .index_name(&self.config.vector_index)
            .keys(&key)
            .return_data(true)
            .return_metadata(true)
            .send()
            .await
            .map_err(|e| error::sdk(doing, &e))?;
        let Some(old) = got.vectors().iter().find(|v| v.key() == key) else {
            return Ok(());
        };
        let (Some(data), Some(Document::Object(meta))) = (old.data(), old.metadata()) else {
            return Ok(());
        };
        let mut meta = meta.clone();
        meta.insert("current".to_owned(), Document::Bool(false));
        let vector = PutInputVector::builder()
            .key(key)
            .data(data.clone())
            .metadata(Document::Object(meta))
            .build()
            .map_err(|e| error::build(&e))?;
        self.vectors
            .put_vectors()
            .vector_bucket_name(&self.config.vector_bucket)
            .index_name(&self.config.vector_index)
            .vectors(vector)
            .send()
            .await
            .map(drop)
            .map_err(|e| error::sdk(doing, &e))
    }

    /// Deletes the vectors of these memories of the principal (1 DeleteVectors per 500;
    /// a key the index does not hold is no error).
    pub(crate) async fn delete_vectors(
        &self,
        pseudonym: &str,
        ids: &[String],
    ) -> Result<(), StoreError> {
        let keys: Vec<String> = ids
            .iter()
            .map(|id| keys::vector_key(pseudonym, id))
            .collect();
        for chunk in keys.chunks(DELETE_BATCH) {
            self.vectors
                .delete_vectors()
                .vector_bucket_name(&self.config.vector_bucket)
                .index_name(&self.config.vector_index)
                .set_keys(Some(chunk.to_vec()))
                .send()
                .await
                .map_err(|e| error::sdk("erasing memories' vectors", &e))?;
        }
        Ok(())
    }

    /// The principal's nearest vectors of `query`'s model that `filter` admits in the
    /// index, as (memory id, cosine similarity), nearest first (1 QueryVectors).
    pub(crate) async fn nearest(
        &self,
        pseudonym: &str,
        query: &Embedding,
        filter: &MemoryFilter,
        top_k: usize,
    ) -> Result<Vec<(String, f32)>, StoreError> {
        let top_k = i32::try_from(top_k.clamp(1, MAX_TOP_K)).unwrap_or(1);
        let out = self
            .vectors
            .query_vectors()
            .vector_bucket_name(&self.config.vector_bucket)
            .index_name(&self.config.vector_index)
            .query_vector(VectorData::Float32(query.vector.clone()))
            .top_k(top_k)
            .filter(query_filter(pseudonym, &query.model, filter))
            .return_distance(true)
            .send()
            .await
            .map_err(|e| error::sdk("searching memories by similarity", &e))?;
        Ok(out
            .vectors()
            .iter()
            .filter_map(|hit| {
                // Cosine distance is 1 - similarity.
                let similarity = 1.0 - hit.distance()?;
                let id = keys::vector_id(pseudonym, hit.key())?;
                Some((id.to_owned(), similarity))
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use baton_core::recall::MemoryKind;

    #[test]
    fn a_search_filters_on_whose_and_which_model_always() {
        let filter = MemoryFilter {
            kinds: vec![MemoryKind::Goal],
            ..MemoryFilter::current(5)
        };
        let Document::Object(top) = query_filter("p", "m", &filter) else {
            panic!("not an object");
        };
        let Some(Document::Array(all)) = top.get("$and") else {
            panic!("no $and");
        };
        assert_eq!(all[0], clause("principal", "$eq", text("p")));
        assert_eq!(all[1], clause("model", "$eq", text("m")));
        assert!(all.contains(&clause("current", "$eq", Document::Bool(true))));
        assert!(all.contains(&clause("kind", "$in", Document::Array(vec![text("goal")]))));
        let history = MemoryFilter {
            include_history: true,
            ..MemoryFilter::current(5)
        };
        let Document::Object(top) = query_filter("p", "m", &history) else {
            panic!("not an object");
        };
        assert!(matches!(top.get("$and"), Some(Document::Array(a)) if a.len() == 2));
    }
}
