//! all-MiniLM-L6-v2's cost on this machine's CPU: one short sentence (what a turn's memory
//! search embeds: the user's message), a batch of sixteen (what saving a turn's memories
//! embeds at most), and loading the model.
//!
//! `BATON_MINILM="$(./infra/minilm.sh)" cargo bench -p baton-minilm --bench embed`

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::path::PathBuf;
use std::time::Duration;

use baton_minilm::MiniLm;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

fn model_dir() -> PathBuf {
    std::env::var_os("BATON_MINILM")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(baton_minilm::default_dir)
        .expect("set BATON_MINILM to the folder ./infra/minilm.sh prints")
}

const SENTENCES: [&str; 16] = [
    "do you remember what my dog is called?",
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
    "I ride my bicycle to work and back every day, rain or shine, about twelve kilometres",
];

fn embed(c: &mut Criterion) {
    let dir = model_dir();
    let model = MiniLm::load(&dir).unwrap();
    let mut group = c.benchmark_group("minilm");
    group.measurement_time(Duration::from_secs(10));
    group.throughput(Throughput::Elements(1));
    group.bench_function("one sentence", |b| {
        b.iter(|| model.embed_now(&SENTENCES[..1]).unwrap())
    });
    group.throughput(Throughput::Elements(SENTENCES.len() as u64));
    group.bench_function("16 sentences", |b| {
        b.iter(|| model.embed_now(&SENTENCES).unwrap())
    });
    group.sample_size(10);
    group.throughput(Throughput::Elements(1));
    group.bench_function("load", |b| b.iter(|| MiniLm::load(&dir).unwrap()));
    group.finish();
}

criterion_group!(benches, embed);
criterion_main!(benches);
