#!/usr/bin/env python3
"""A fine-tuning dataset's length distribution as llmplan's
training.dataset histogram (docs/simulator.md, "Dataset-shaped fine-tuning").

usage: scripts/dataset_lengths.py SOURCE [SOURCE ...] --fields question,answer
           (--median-tokens 148 | --tokens) [--pad 8] [--source TEXT] [-o OUT.json]

SOURCE is [FORMAT:]PATH[@COUNT] ("-" as PATH: stdin). FORMAT is
  json       (the default) one query per line (JSON Lines), or a JSON array of
             queries (a file whose first character is "["), each an object
             holding the --fields;
  hellaswag  HellaSwag as klosax/hellaswag_text_data's hellaswag_val_full.txt
             lays it out (six lines a task: "activity_label: ctx", the gold
             label 0-3, the four endings), each task rendered as LLM-Adapters'
             commonsense prompt (its dataset/hellaswag/*.json): an
             "instruction" holding the sentence, the four endings and the
             answer format, and an "output" naming the gold ending.
A dataset mixed from several sources (LLM-Adapters' commonsense_170k, and its
15k sample, hold eight tasks' training sets) takes each source with @COUNT,
the number of queries that source gives the dataset: each of its queries then
weighs COUNT / (queries in the file), so a source read from another split (a
test or validation set where the training set is not at hand) keeps its
share. Without @COUNT every query weighs 1.

A query's length is the characters of the named fields together. Without a
tokenizer the lengths are scaled so that their (weighted) median is
--median-tokens (the median a paper states in tokens): an assumption that
tokens per character are the same for every query of the dataset. With
--tokens the fields already hold tokens (a count, or a list of token ids as
a tokenizer writes input_ids) and are summed unscaled. Each query
is rounded up to a multiple of --pad tokens (LLaMA-Factory's collator pads to
a multiple of 8); at most 32 bins (LP_DATASET_BINS) are kept by merging the
neighbours that move the expected padded length of a batch of 1-32 least.
The output is {"source", "queries", "median_len", "median_chars" (not with
--tokens), "histogram": [[len, fraction], ...]}: pass its "histogram" (and
"source") as training.dataset.
"""
import argparse
import json
import math
import os
import sys

MAX_BINS = 32  # include/llmplan/config.h LP_DATASET_BINS
FORMATS = ("json", "hellaswag")


def parse_source(spec):
    """[FORMAT:]PATH[@COUNT] -> (format, path, count or None)."""
    fmt, path = "json", spec
    head, sep, rest = spec.partition(":")
    if sep and head in FORMATS:
        fmt, path = head, rest
    count = None
    base, at, tail = path.rpartition("@")
    if at and tail.isdigit():
        path, count = base, int(tail)
        if count <= 0:
            sys.exit(f"dataset_lengths: {spec}: @COUNT must be a positive number of queries")
    if not path:
        sys.exit(f"dataset_lengths: {spec}: no file named")
    return fmt, path, count


def json_queries(name, text):
    """The objects of a JSON array, or of JSON Lines, with where each came
    from (for the error of a bad one)."""
    if text.lstrip().startswith("["):
        try:
            items = json.loads(text)
        except ValueError as e:
            sys.exit(f"dataset_lengths: {name}: expected a JSON array of queries ({e})")
        return [(f"{name}: query {i}", d) for i, d in enumerate(items, 1)]
    out = []
    for i, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            out.append((f"{name}: line {i}", json.loads(line)))
        except ValueError as e:
            sys.exit(f"dataset_lengths: {name}: line {i}: expected a JSON object ({e})")
    return out


# LLM-Adapters' HellaSwag prompt (dataset/hellaswag/test.json: "Please choose
# the correct ending to complete the given sentence: <activity_label>:
# <ctx>\n\nEnding1: <e1> Ending2: <e2> Ending3: <e3> Ending4: <e4>\n\nAnswer
# format: ending1/ending2/ending3/ending4", output "the correct answer is
# ending<label + 1>")
HS_ASK = "Please choose the correct ending to complete the given sentence: "
HS_FORMAT = "\n\nAnswer format: ending1/ending2/ending3/ending4"


def hellaswag_queries(name, text):
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if not lines or len(lines) % 6:
        sys.exit(f"dataset_lengths: {name}: expected six lines per HellaSwag task, "
                 f"got {len(lines)} lines")
    out = []
    for t in range(len(lines) // 6):
        sent, label, *ends = lines[6 * t:6 * t + 6]
        if label not in ("0", "1", "2", "3"):
            sys.exit(f"dataset_lengths: {name}: line {6 * t + 2}: expected the gold label 0-3, "
                     f"got {label!r}")
        endings = " ".join(f"Ending{k + 1}: {e}" for k, e in enumerate(ends))
        out.append((f"{name}: task {t + 1}",
                    {"instruction": HS_ASK + sent + "\n\n" + endings + HS_FORMAT, "input": "",
                     "output": f"the correct answer is ending{int(label) + 1}"}))
    return out


def field_len(v, tokens):
    """A field's length: its characters, or with tokens its token count (an
    integer) or the length of its list of token ids; None if it is neither."""
    if not tokens:
        return len(str(v))
    if isinstance(v, list):
        return len(v)
    if isinstance(v, int) and not isinstance(v, bool) and v >= 0:
        return v
    return None


def lengths(spec, fields, tokens=False):
    """(characters or tokens, weight) of every query of one SOURCE."""
    fmt, path, count = parse_source(spec)
    if path == "-":
        text = sys.stdin.read()
    else:
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except OSError as e:
            sys.exit(f"dataset_lengths: {path}: {e.strerror}")
    queries = (hellaswag_queries if fmt == "hellaswag" else json_queries)(path, text)
    out = []
    for where, d in queries:
        if not isinstance(d, dict) or any(f not in d for f in fields):
            sys.exit(f"dataset_lengths: {where}: expected a JSON object with {fields}")
        n = [field_len(d[f], tokens) for f in fields]
        if None in n:
            f = fields[n.index(None)]
            sys.exit(f"dataset_lengths: {where}: field '{f}': expected a token count or a list "
                     f"of token ids (--tokens), got {type(d[f]).__name__}")
        out.append(sum(n))
    if not out:
        sys.exit(f"dataset_lengths: {path}: no queries")
    w = count / len(out) if count else 1.0
    return [(c, w) for c in out]


BATCHES = (1, 2, 4, 8, 16, 32)  # the batches whose padded length the merge keeps


def padded(bins, n, b):
    """Expected longest of b queries (docs/simulator.md, lp_dataset_batch_len)."""
    e = F = 0.0
    for t, c in bins:
        e += t * ((F + c / n) ** b - F ** b)
        F += c / n
    return e


def median(weighted):
    """The median characters: the middle query (the mean of the two middle
    ones for an even count) when every query weighs the same, else the
    shortest length at which the weight below reaches half."""
    s = sorted(weighted)
    if len({w for _, w in s}) == 1:
        n = len(s)
        return s[n // 2][0] if n % 2 else 0.5 * (s[n // 2 - 1][0] + s[n // 2][0])
    half, acc = 0.5 * sum(w for _, w in s), 0.0
    for c, w in s:
        acc += w
        if acc >= half:
            return c
    return s[-1][0]


def histogram(weighted, median_tokens, pad):
    """Lengths in tokens (characters scaled to median_tokens; as they are
    when median_tokens is None), each rounded up to a multiple of pad (the
    collator's pad_to_multiple_of); while there are more than MAX_BINS
    lengths, the two neighbours whose merging (into the longer one) raises the
    expected padded length of the BATCHES least are merged."""
    med = median(weighted)
    scale = median_tokens / med if median_tokens is not None else 1.0
    n = sum(w for _, w in weighted)
    counts = {}
    for c, w in weighted:
        t = int(math.ceil(c * scale / pad)) * pad
        counts[t] = counts.get(t, 0) + w
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
    ap.add_argument("sources", nargs="+", metavar="SOURCE", help="[FORMAT:]PATH[@COUNT]")
    ap.add_argument("--fields", required=True, help="comma-separated fields of each query")
    ap.add_argument("--median-tokens", type=float, help="the median in tokens the "
                    "characters are scaled to")
    ap.add_argument("--tokens", action="store_true",
                    help="the fields hold tokens (a count or a list of token ids): no scaling")
    ap.add_argument("--pad", type=int, default=8)
    ap.add_argument("--source", default="")
    ap.add_argument("-o", "--out")
    a = ap.parse_args()
    if sum(parse_source(s)[1] == "-" for s in a.sources) > 1:
        ap.error("standard input can be read once")
    if a.tokens == (a.median_tokens is not None):
        ap.error("give one of --median-tokens (lengths in characters) and --tokens")
    weighted = []
    for spec in a.sources:
        weighted += lengths(spec, a.fields.split(","), a.tokens)
    hist, med = histogram(weighted, a.median_tokens, a.pad)
    doc = {"source": a.source, "queries": len(weighted),
           "median_len": float(med) if a.tokens else a.median_tokens, "median_chars": med,
           "histogram": hist}
    if a.tokens:
        del doc["median_chars"]
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
