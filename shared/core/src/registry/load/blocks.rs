//! `blocks/*.md`: prompt blocks, Markdown with `---` front matter naming owner and category.
//!
//! Every prompt starts with the platform's required blocks, and those must say who the
//! assistant is, how it writes and what it must never do: a registry needs a platform block
//! of each of [`REQUIRED_CATEGORIES`] marked `required: true`. More platform blocks of those
//! categories may stay optional, for the cards that list them.

use std::sync::Arc;

use super::Loader;
use crate::registry::raw::RawBlockMeta;
use crate::registry::{Block, BlockOwner, SourceFile};

/// The categories a block may have.
const CATEGORIES: [&str; 6] = [
    "persona",
    "instructions",
    "capabilities",
    "safety",
    "format",
    "context",
];

/// The categories every prompt starts with a required platform block of.
const REQUIRED_CATEGORIES: [&str; 3] = ["persona", "format", "safety"];

/// Where a registry's blocks live: the file a missing block is reported at.
const BLOCKS_DIR: &str = "blocks/";

impl Loader<'_> {
    /// Loads every block, then orders the platform-required ones as every prompt starts.
    pub(super) fn load_blocks(&mut self, files: &[SourceFile]) {
        for file in files {
            if let Some(block) = self.read_block(file) {
                self.blocks.insert(block.id.to_string(), Arc::new(block));
            }
        }
        let mut required: Vec<Arc<Block>> = self
            .blocks
            .values()
            .filter(|b| b.required)
            .cloned()
            .collect();
        required.sort_by_key(|b| (category_rank(&b.category), b.id.clone()));
        self.required_blocks = required;
        self.check_required_categories();
    }

    /// A required platform block of each of [`REQUIRED_CATEGORIES`]. Without one, the
    /// platform blocks of that category marked not required are named (the fix is there),
    /// or, when there are none, the category itself.
    fn check_required_categories(&mut self) {
        for category in REQUIRED_CATEGORIES {
            let present = self
                .required_blocks
                .iter()
                .any(|b| b.owner == BlockOwner::Platform && &*b.category == category);
            if present {
                continue;
            }
            let optional: Vec<Arc<str>> = self
                .blocks
                .values()
                .filter(|b| b.owner == BlockOwner::Platform && &*b.category == category)
                .map(|b| b.file.clone())
                .collect();
            if optional.is_empty() {
                self.problems.add(
                    BLOCKS_DIR,
                    "category",
                    category,
                    format!(
                        "no platform {category} block with required: true; every prompt \
                         starts with the platform's persona, format and safety blocks"
                    ),
                );
            }
            for file in optional {
                self.problems.add(
                    &file,
                    "required",
                    "false",
                    format!(
                        "the registry has no required platform {category} block; every \
                         prompt starts with the platform's persona, format and safety \
                         blocks, so one {category} block must be required: true"
                    ),
                );
            }
        }
    }

    /// One block; `None` when its front matter, owner or id leave nothing to keep.
    fn read_block(&mut self, file: &SourceFile) -> Option<Block> {
        let (meta, body) = self.front_matter(file)?;
        let stem = file
            .path
            .rsplit('/')
            .next()
            .unwrap_or(&file.path)
            .trim_end_matches(".md")
            .to_owned();
        let id = meta.id.unwrap_or(stem);
        let owner = match meta.owner.as_str() {
            "platform" => BlockOwner::Platform,
            "vertical" => BlockOwner::Vertical,
            other => {
                self.problems
                    .add(&file.path, "owner", other, "must be platform or vertical");
                return None;
            }
        };
        self.check_block(file, owner, meta.required, &meta.category, body);
        if let Some(other) = self.blocks.get(&id) {
            self.problems.add(
                &file.path,
                "id",
                &id,
                format!("duplicate block id, also defined in {}", other.file),
            );
            return None;
        }
        Some(Block {
            id: Arc::from(id.as_str()),
            owner,
            category: Arc::from(meta.category),
            required: meta.required,
            text: Arc::from(body.trim()),
            file: Arc::from(file.path.as_str()),
        })
    }

    /// The typed front matter and the body after it.
    fn front_matter<'f>(&mut self, file: &'f SourceFile) -> Option<(RawBlockMeta, &'f str)> {
        let Some((meta, body)) = split_front_matter(&file.text) else {
            self.problems.add(
                &file.path,
                "(front matter)",
                "",
                "a block starts with '---' front matter naming owner and category",
            );
            return None;
        };
        match serde_norway::from_str(meta) {
            Ok(meta) => Some((meta, body)),
            Err(e) => {
                self.problems.add(
                    &file.path,
                    "(front matter)",
                    "",
                    format!("invalid front matter: {e}"),
                );
                None
            }
        }
    }

    /// The problems that still leave the block loaded: who may require it, its category
    /// and its text.
    fn check_block(
        &mut self,
        file: &SourceFile,
        owner: BlockOwner,
        required: bool,
        category: &str,
        body: &str,
    ) {
        if required && owner != BlockOwner::Platform {
            self.problems.add(
                &file.path,
                "required",
                "true",
                "only platform-owned blocks can be required",
            );
        }
        if !CATEGORIES.contains(&category) {
            self.problems.add(
                &file.path,
                "category",
                category,
                format!("must be one of {}", CATEGORIES.join(", ")),
            );
        }
        if body.trim().is_empty() {
            self.problems
                .add(&file.path, "(body)", "", "the block has no text");
        }
    }
}

/// Splits `---` front matter from a Markdown body.
fn split_front_matter(text: &str) -> Option<(&str, &str)> {
    let rest = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))?;
    let end = rest.find("\n---")?;
    let meta = &rest[..end];
    let after = &rest[end + 4..];
    let body = after.split_once('\n').map(|(_, b)| b).unwrap_or("");
    Some((meta, body))
}

/// Where a required block's category puts it in the prompt: persona, format, safety, then
/// the rest.
fn category_rank(category: &str) -> u8 {
    match category {
        "persona" => 0,
        "format" => 1,
        "safety" => 2,
        _ => 3,
    }
}
