#!/usr/bin/env python3
# The independent reference behind tests/model.rs: all-MiniLM-L6-v2's sentence vectors computed
# with numpy (float64) from the same folder, following Hugging Face's BertModel forward pass,
# their `tokenizers`, mean pooling and L2 normalisation. It reproduces the published
# sentence-transformers values for "This is an example sentence".
#
#   python3 -m venv /tmp/ref && /tmp/ref/bin/pip install numpy tokenizers safetensors
#   /tmp/ref/bin/python shared/minilm/tests/reference.py "$(./infra/minilm.sh)" "text one" "text two"
import json, math, sys
import numpy as np
from safetensors.numpy import load_file
from tokenizers import Tokenizer

d = sys.argv[1]
w = {k: v.astype(np.float64) for k, v in load_file(f"{d}/model.safetensors").items()}
tok = Tokenizer.from_file(f"{d}/tokenizer.json")
tok.no_padding()
tok.enable_truncation(256)
erf = np.vectorize(math.erf)

def ln(x, p):
    m = x.mean(-1, keepdims=True); v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) / np.sqrt(v + 1e-12) * w[p + ".weight"] + w[p + ".bias"]

def lin(x, p):
    return x @ w[p + ".weight"].T + w[p + ".bias"]

def embed(text):
    ids = np.array(tok.encode(text).ids)
    n = len(ids)
    x = w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][:n] + w["embeddings.token_type_embeddings.weight"][0]
    x = ln(x, "embeddings.LayerNorm")
    for l in range(6):
        p = f"encoder.layer.{l}."
        q, k, v = (lin(x, p + "attention.self." + t).reshape(n, 12, 32).transpose(1, 0, 2) for t in ("query", "key", "value"))
        s = q @ k.transpose(0, 2, 1) / math.sqrt(32)
        s = np.exp(s - s.max(-1, keepdims=True)); s /= s.sum(-1, keepdims=True)
        c = (s @ v).transpose(1, 0, 2).reshape(n, 384)
        x = ln(lin(c, p + "attention.output.dense") + x, p + "attention.output.LayerNorm")
        h = lin(x, p + "intermediate.dense"); h = 0.5 * h * (1 + erf(h / math.sqrt(2)))
        x = ln(lin(h, p + "output.dense") + x, p + "output.LayerNorm")
    m = x.mean(0)
    return m / np.linalg.norm(m)

texts = sys.argv[2:]
vs = [embed(t) for t in texts]
for t, v in zip(texts, vs):
    print(json.dumps({"text": t, "first8": [round(float(a), 6) for a in v[:8]]}))
for i in range(len(texts)):
    for j in range(i + 1, len(texts)):
        print(f"cos {i} {j} {float(vs[i] @ vs[j]):.6f}")
