#!/usr/bin/env python3
"""A fine-tuning dataset's length distribution as llmplan's
training.dataset histogram (docs/simulator.md, "Dataset-shaped fine-tuning").

usage: scripts/dataset_lengths.py FILE.jsonl --fields question,answer
           --median-tokens 148 [--pad 8] [--source TEXT] [-o OUT.json]

Each line of FILE.jsonl ("-": stdin) is one query; its length is the
characters of the named fields together. Without a tokenizer the lengths
are scaled so that their median is --median-tokens (the median a paper
states in tokens): an assumption that tokens per character are the same for
every query of the dataset. Each query is rounded up to a multiple of --pad
tokens (LLaMA-Factory's collator pads to a multiple of 8); at most 32 bins
(LP_DATASET_BINS) are kept by merging the neighbours that move the expected
padded length of a batch of 1-32 least. The output is
{"source", "queries", "median_len", "histogram": [[len, fraction], ...]}:
pass its "histogram" (and "source") as training.dataset.
"""
import argparse
import json
import math
import os
import sys

MAX_BINS = 32  # include/llmplan/config.h LP_DATASET_BINS


def lengths(lines, fields):
    out = []
    for i, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            d = json.loads(line)
            out.append(sum(len(str(d[f])) for f in fields))
        except (ValueError, KeyError) as e:
            sys.exit(f"dataset_lengths: line {i}: expected a JSON object with {fields} ({e})")
    if not out:
        sys.exit("dataset_lengths: no queries")
    return out


BATCHES = (1, 2, 4, 8, 16, 32)  # the batches whose padded length the merge keeps


def padded(bins, n, b):
    """Expected longest of b queries (docs/simulator.md, lp_dataset_batch_len)."""
    e = F = 0.0
    for t, c in bins:
        e += t * ((F + c / n) ** b - F ** b)
        F += c / n
    return e


def histogram(chars, median_tokens, pad):
    """Lengths in tokens, each rounded up to a multiple of pad (the collator's
    pad_to_multiple_of); while there are more than MAX_BINS lengths, the two
    neighbours whose merging (into the longer one) raises the expected padded
    length of the BATCHES least are merged."""
    s = sorted(chars)
    n = len(s)
    med = s[n // 2] if n % 2 else 0.5 * (s[n // 2 - 1] + s[n // 2])
    scale = median_tokens / med
    counts = {}
    for c in s:
        t = int(math.ceil(c * scale / pad)) * pad
        counts[t] = counts.get(t, 0) + 1
    bins = [[t, counts[t]] for t in sorted(counts)]
    while len(bins) > MAX_BINS:
        base = sum(padded(bins, n, b) for b in BATCHES)
        best = None
        for i in range(len(bins) - 1):
            m = bins[:i] + [[bins[i + 1][0], bins[i][1] + bins[i + 1][1]]] + bins[i + 2:]
            cost = sum(padded(m, n, b) for b in BATCHES) - base
            if best is None or cost < best[0]:
                best = (cost, m)
        bins = best[1]
    # fractions rounded to 6 digits, the last bin takes the rest so they sum to 1
    out = [[t, round(c / n, 6)] for t, c in bins]
    out[-1][1] = round(1.0 - sum(f for _, f in out[:-1]), 6)
    return out, med


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("file")
    ap.add_argument("--fields", required=True, help="comma-separated fields of each query")
    ap.add_argument("--median-tokens", type=float, required=True)
    ap.add_argument("--pad", type=int, default=8)
    ap.add_argument("--source", default="")
    ap.add_argument("-o", "--out")
    a = ap.parse_args()
    f = sys.stdin if a.file == "-" else open(a.file)
    chars = lengths(f, a.fields.split(","))
    hist, med = histogram(chars, a.median_tokens, a.pad)
    doc = {"source": a.source, "queries": len(chars), "median_len": a.median_tokens,
           "median_chars": med, "histogram": hist}
    text = json.dumps(doc, indent=1) + "\n"
    if a.out:  # atomically: temp + rename
        tmp = a.out + ".tmp"
        with open(tmp, "w") as o:
            o.write(text)
        os.replace(tmp, a.out)
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main()
