//! all-MiniLM-L6-v2 itself, from the folder `./infra/minilm.sh` fetches: the vectors'
//! shape, that they are the model's (against published values), that similar sentences
//! land near each other, batching, truncation, the async runtime left free, and a broken
//! folder said plainly.
//!
//! The folder is `BATON_MINILM`, else where the script puts it; a test fails, saying how to
//! fetch it, when it is missing: these tests do not skip.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

use baton_core::ports::memory::Embedder;
use baton_core::recall::embed::cosine;
use baton_minilm::{DIMENSIONS, LoadError, MIN_SIMILARITY, MODEL_ID, MiniLm};

/// The model's folder: `BATON_MINILM`, else `./infra/minilm.sh`'s.
fn model_dir() -> PathBuf {
    let dir = std::env::var_os("BATON_MINILM")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(baton_minilm::default_dir)
        .expect("neither BATON_MINILM nor HOME is set");
    assert!(
        dir.join("model.safetensors").is_file(),
        "all-MiniLM-L6-v2 is not there ({} has no model.safetensors): run ./infra/minilm.sh, or set BATON_MINILM to the folder it prints",
        dir.display()
    );
    dir
}

/// The model, loaded once for all the tests of this binary.
fn model() -> &'static MiniLm {
    static MODEL: OnceLock<MiniLm> = OnceLock::new();
    MODEL.get_or_init(|| MiniLm::load(&model_dir()).unwrap())
}

fn one(text: &str) -> Vec<f32> {
    model().embed_now(&[text]).unwrap().remove(0).vector
}

#[tokio::test]
async fn vectors_are_384_numbers_of_unit_length_with_the_models_id() {
    let texts = [
        "My dog is called Biscuit",
        "",
        "?",
        "I'm saving for a Trek FX 2 🚲",
    ];
    let vectors = model().embed(&texts).await.unwrap();
    assert_eq!(vectors.len(), texts.len());
    for (text, e) in texts.iter().zip(&vectors) {
        assert_eq!(e.model, MODEL_ID);
        assert_eq!(model().model(), MODEL_ID);
        assert_eq!(e.vector.len(), DIMENSIONS, "{text:?}");
        let norm: f32 = e.vector.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-5, "{text:?}: length {norm}");
    }
    assert!(model().embed(&[]).await.unwrap().is_empty());
}

#[test]
fn the_same_text_gets_the_same_vector() {
    let a = one("remember that my locker code is 4417");
    let b = one("remember that my locker code is 4417");
    assert_eq!(a, b);
    let again = MiniLm::load(&model_dir()).unwrap();
    let c = again
        .embed_now(&["remember that my locker code is 4417"])
        .unwrap()
        .remove(0)
        .vector;
    assert_eq!(a, c);
}

/// The vector sentence-transformers gives for its documentation's example sentence (its
/// first eight values, as published with the model and reproduced by an independent numpy
/// forward pass over the same weights, `tests/reference.py`): the same weights, tokens,
/// layers and pooling.
#[test]
fn the_vectors_are_all_minilm_l6_v2s() {
    let published = [
        0.067_657, 0.063_496, 0.048_713, 0.079_305, 0.037_448, 0.002_653, 0.039_375, -0.007_098,
    ];
    let v = one("This is an example sentence");
    for (i, (got, want)) in v.iter().zip(published).enumerate() {
        assert!(
            (got - want).abs() < 1e-4,
            "value {i}: {got}, published {want}"
        );
    }
    // tests/reference.py's similarities (float64) of three sentences.
    let bicycle = one("I ride my bicycle to work");
    let bike = one("my bike commute");
    let dog = one("my dog is called Biscuit");
    for (a, b, want) in [
        (&bicycle, &bike, 0.683_366),
        (&bicycle, &dog, 0.162_194),
        (&bike, &dog, 0.111_116),
    ] {
        let got = cosine(a, b);
        assert!((got - want).abs() < 1e-4, "cosine {got}, reference {want}");
    }
}

#[test]
fn a_sentence_is_nearer_one_that_means_the_same_than_one_that_does_not() {
    let bicycle = one("I ride my bicycle to work");
    let bike = one("my bike commute");
    let dog = one("my dog is called Biscuit");
    assert!(cosine(&bicycle, &bike) > cosine(&bicycle, &dog) + 0.3);
    let pup = one("what's my pup's name?");
    assert!(cosine(&pup, &dog) > cosine(&pup, &bicycle));
    let spouse = one("my spouse's name");
    let wife = one("my wife is called Ana");
    assert!(cosine(&spouse, &wife) > cosine(&spouse, &dog));
}

/// Statements a user tells an assistant, paired with each other, and statements with a
/// question about each in other words: the floor ([`MIN_SIMILARITY`]) sits above nine in
/// ten pairs of statements (the rest share a subject: two relatives' names, two drinks) and
/// below every question and its statement.
#[test]
fn the_similarity_floor_parts_unrelated_from_related() {
    let statements = [
        "My dog is called Biscuit",
        "I'm saving for a Trek FX 2",
        "my budget is $650 a month",
        "I live in Springfield",
        "I work at the Riverton library",
        "my favourite coffee is a flat white",
        "remember that my locker code is 4417",
        "my daughter is called Maya",
        "I plan to run a marathon in May",
        "my birthday is on March 3rd",
        "I'm allergic to peanuts",
        "my car is a red Honda Civic",
        "I prefer oat milk",
        "my wife is called Ana",
        "I ride my bicycle to work",
        "I have 12,000 points",
    ];
    let vectors = model().embed_now(&statements).unwrap();
    let mut unrelated = Vec::new();
    for (i, a) in vectors.iter().enumerate() {
        for b in &vectors[i + 1..] {
            unrelated.push(cosine(&a.vector, &b.vector));
        }
    }
    unrelated.sort_by(f32::total_cmp);
    let highest = unrelated.last().copied().unwrap();
    let p90 = unrelated[unrelated.len() * 90 / 100];
    let related = [
        ("what's my pup's name?", "My dog is called Biscuit"),
        (
            "which bike am I putting money aside for?",
            "I'm saving for a Trek FX 2",
        ),
        ("how much can I spend monthly?", "my budget is $650 a month"),
        ("what town is my home in?", "I live in Springfield"),
        ("where is my job?", "I work at the Riverton library"),
        (
            "how do I take my espresso drink?",
            "my favourite coffee is a flat white",
        ),
        ("what nuts can't I eat?", "I'm allergic to peanuts"),
        ("what's my spouse's name?", "my wife is called Ana"),
        ("how do I commute?", "I ride my bicycle to work"),
        ("what vehicle do I drive?", "my car is a red Honda Civic"),
    ];
    let mut lowest_related = f32::MAX;
    for (question, statement) in related {
        let s = cosine(&one(question), &one(statement));
        lowest_related = lowest_related.min(s);
        assert!(
            s > MIN_SIMILARITY,
            "{question:?} ~ {statement:?}: {s} is below the floor {MIN_SIMILARITY}"
        );
    }
    eprintln!(
        "pairs of statements: {} of them, median {:.3}, 90th percentile {p90:.3}, highest {highest:.3}; a question and its statement: lowest {lowest_related:.3}; floor {MIN_SIMILARITY}",
        unrelated.len(),
        unrelated[unrelated.len() / 2],
    );
    assert!(
        p90 < MIN_SIMILARITY,
        "one pair of statements in ten scores {p90} or more, above the floor {MIN_SIMILARITY}"
    );
}

/// More texts than one batch, of many lengths: each vector is the one it gets alone.
#[test]
fn a_batch_gives_each_text_the_vector_it_gets_alone() {
    let texts: Vec<String> = (0..37)
        .map(|i| {
            let words = ["bicycle", "dog", "points", "coffee", "library", "marathon"];
            let mut t = format!("sentence {i}:");
            for j in 0..(i * 7 % 40) {
                t.push(' ');
                t.push_str(words[(i + j) % words.len()]);
            }
            t
        })
        .collect();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let batch = model().embed_now(&refs).unwrap();
    assert_eq!(batch.len(), texts.len());
    for (text, e) in refs.iter().zip(&batch) {
        let alone = one(text);
        let worst = e
            .vector
            .iter()
            .zip(&alone)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0f32, f32::max);
        assert!(worst < 1e-5, "{text:?}: differs by {worst}");
    }
}

/// A text longer than 256 tokens counts up to its 256th: what follows changes nothing.
#[test]
fn a_long_text_is_cut_at_256_tokens() {
    let long = "my dog Biscuit likes long walks in the park ".repeat(40);
    let longer = format!("{long} and I also own a red Honda Civic that I drive to work");
    let a = one(&long);
    let b = one(&longer);
    assert_eq!(a.len(), DIMENSIONS);
    assert_eq!(a, b);
    let short = one("my dog Biscuit likes long walks in the park");
    assert_ne!(a, short);
}

/// The forward pass runs on a blocking thread: a runtime with one worker thread keeps
/// running its other tasks while a large batch is embedded.
#[tokio::test(flavor = "current_thread")]
async fn embedding_leaves_the_async_runtime_free() {
    let model = model().clone();
    let ticks = std::sync::Arc::new(AtomicUsize::new(0));
    let counter = ticks.clone();
    let ticker = tokio::spawn(async move {
        loop {
            counter.fetch_add(1, Ordering::Relaxed);
            tokio::time::sleep(std::time::Duration::from_millis(1)).await;
        }
    });
    let text = "my favourite coffee is a flat white, with oat milk, never sugar ".repeat(6);
    let texts: Vec<&str> = std::iter::repeat_n(text.as_str(), 64).collect();
    let started = std::time::Instant::now();
    let vectors = model.embed(&texts).await.unwrap();
    let took = started.elapsed();
    ticker.abort();
    assert_eq!(vectors.len(), 64);
    let ticked = ticks.load(Ordering::Relaxed);
    assert!(
        took.as_millis() < 20 || ticked >= 5,
        "the runtime's thread ticked {ticked} times in the {took:?} the batch took"
    );
}

fn copy(from: &Path, to: &Path, files: &[&str]) {
    for f in files {
        std::fs::copy(from.join(f), to.join(f)).unwrap();
    }
}

fn load_error(dir: &Path) -> LoadError {
    MiniLm::load(dir).expect_err("a broken folder loaded")
}

#[test]
fn a_missing_or_broken_folder_is_a_plain_error_naming_the_file() {
    let source = model_dir();
    let tmp = tempfile::tempdir().unwrap();

    let nowhere = tmp.path().join("nowhere");
    let err = load_error(&nowhere);
    assert!(matches!(err, LoadError::NoFolder(_)), "{err:?}");
    let message = err.to_string();
    assert!(
        message.contains("does not exist") && message.contains("./infra/minilm.sh"),
        "{message}"
    );

    let dir = tmp.path().join("model");
    std::fs::create_dir(&dir).unwrap();
    let err = load_error(&dir);
    assert_eq!(err.path(), dir.join("model.safetensors"));
    assert!(
        err.to_string().contains("model.safetensors is missing"),
        "{err}"
    );

    // Weights cut short.
    copy(&source, &dir, &["config.json", "tokenizer.json"]);
    let weights = std::fs::read(source.join("model.safetensors")).unwrap();
    std::fs::write(dir.join("model.safetensors"), &weights[..4096]).unwrap();
    let err = load_error(&dir);
    assert!(matches!(err, LoadError::Corrupt { .. }), "{err:?}");
    assert_eq!(err.path(), dir.join("model.safetensors"));
    assert!(
        err.to_string().contains("model.safetensors is not a valid"),
        "{err}"
    );

    // Not a safetensors file at all.
    std::fs::write(dir.join("model.safetensors"), b"not weights").unwrap();
    assert_eq!(load_error(&dir).path(), dir.join("model.safetensors"));

    // A tokenizer that is not JSON.
    std::fs::write(dir.join("tokenizer.json"), b"{\"version\": ").unwrap();
    let err = load_error(&dir);
    assert_eq!(err.path(), dir.join("tokenizer.json"));
    assert!(err.to_string().contains("tokenizer.json"), "{err}");

    // Another model's configuration.
    copy(&source, &dir, &["tokenizer.json"]);
    let config = std::fs::read_to_string(source.join("config.json"))
        .unwrap()
        .replace("\"hidden_size\": 384", "\"hidden_size\": 768");
    std::fs::write(dir.join("config.json"), config).unwrap();
    let err = load_error(&dir);
    assert_eq!(err.path(), dir.join("config.json"));
    assert!(err.to_string().contains("768 dimensions"), "{err}");

    // A configuration that is not JSON.
    std::fs::write(dir.join("config.json"), b"garbage").unwrap();
    assert_eq!(load_error(&dir).path(), dir.join("config.json"));
}
