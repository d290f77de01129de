#!/usr/bin/env python3
"""A fine-tuning dataset's length distribution as llmplan's
training.dataset histogram (docs/simulator.md, "Dataset-shaped fine-tuning").

usage: scripts/dataset_lengths.py SOURCE [SOURCE ...] --fields question,answer
           (--median-tokens 148 | --tokens) [--cutoff N] [--pad 8] [--source TEXT]
           [-o OUT.json]

SOURCE is [FORMAT:]PATH[@COUNT] ("-" as PATH: standard input, "json:-@COUNT"
with a count; a PATH that itself ends in "@" and digits must be given with
its @COUNT). FORMAT is
  json       (the default) one query per line (JSON Lines), or a JSON array of
             queries (a file whose first character is "["), each an object
             holding the --fields;
  hellaswag  HellaSwag as klosax/hellaswag_text_data's hellaswag_val_full.txt
             lays it out (six lines a task: "activity_label: ctx", the gold
             label 0-3, the four endings), each task rendered as LLM-Adapters'
             commonsense prompt (its dataset/hellaswag/*.json): an
             "instruction" holding the sentence, the four endings and the
             answer format, and an "output" naming the gold ending. That
             text's extractor removed the WikiHow tags ([header], [title],
             [step], [substeps]) which LLM-Adapters' files keep.
A dataset mixed from several sources (LLM-Adapters' commonsense_170k, and its
15k sample, hold eight tasks' training sets) takes each source with @COUNT,
the number of queries that source gives the dataset: each of its queries then
weighs COUNT / (queries in the file), so a source read from another split (a
test or validation set where the training set is not at hand) keeps its
share. Without @COUNT every query weighs 1.

Files are read as UTF-8. A query's length is the characters of the named
fields together. Without a
tokenizer the lengths are scaled so that their (weighted) median is
--median-tokens (the median a paper states in tokens): an assumption that
tokens per character are the same for every query of the dataset. With
--tokens the fields already hold tokens (a count, or a list of token ids as
a tokenizer writes input_ids) and are summed unscaled. --cutoff N truncates
every query to N tokens first, as LLaMA-Factory's cutoff_len or a tokenizer's
max_length with truncation do (the median is the dataset's, before it). Each query
is rounded up to a multiple of --pad tokens (LLaMA-Factory's collator pads to
a multiple of 8); at most 32 bins (LP_DATASET_BINS) are kept by merging the
neighbours that move the expected padded length of a batch of 1-32 least.
The output is {"source", "queries" (the queries read), "median_len",
"median_chars" (not with --tokens), "histogram": [[len, fraction], ...]}
(fractions to 6 digits, the largest bin taking the rounding): pass its
"histogram" (and "source") as training.dataset.
"""
import argparse
import json
import math
import os
import re
import sys
import tempfile
from fractions import Fraction

MAX_BINS = 32  # include/llmplan/config.h LP_DATASET_BINS
FORMATS = ("json", "hellaswag")


def parse_source(spec):
    """[FORMAT:]PATH[@COUNT] -> (format, path, count or None)."""
    fmt, path = "json", spec
    head, sep, rest = spec.partition(":")
    if sep and head in FORMATS:
        fmt, path = head, rest
    count = None
    m = re.fullmatch(r"(.*)@(-?[0-9]+)", path, re.S)
    if m:
        path, count = m.group(1), int(m.group(2))
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
        ok = all(isinstance(x, int) and not isinstance(x, bool) for x in v)
        return len(v) if ok else None
    if isinstance(v, int) and not isinstance(v, bool) and v >= 0:
        return v
    return None


def lengths(spec, fields, tokens=False):
    """(characters or tokens, weight) of every query of one SOURCE."""
    fmt, path, count = parse_source(spec)
    try:
        if path == "-":
            text = sys.stdin.buffer.read().decode("utf-8-sig")
        else:
            with open(path, encoding="utf-8-sig") as f:
                text = f.read()
    except OSError as e:
        sys.exit(f"dataset_lengths: {path}: {e.strerror}")
    except UnicodeDecodeError as e:
        sys.exit(f"dataset_lengths: {path}: expected UTF-8 text ({e.reason} at byte {e.start})")
    queries = (hellaswag_queries if fmt == "hellaswag" else json_queries)(path, text)
    out = []
    for where, d in queries:
        if not isinstance(d, dict):
            sys.exit(f"dataset_lengths: {where}: expected a JSON object with {fields}")
        missing = [f for f in fields if f not in d]
        if missing:
            sys.exit(f"dataset_lengths: {where}: key '{missing[0]}': expected the field, "
                     f"absent (fields: {fields})")
        n = [field_len(d[f], tokens) for f in fields]
        if None in n:
            f = fields[n.index(None)]
            sys.exit(f"dataset_lengths: {where}: field '{f}': expected a token count or a list "
                     f"of integer token ids (--tokens), got {type(d[f]).__name__}")
        out.append(sum(n))
    if not out:
        sys.exit(f"dataset_lengths: {path}: no queries")
    w = Fraction(count, len(out)) if count else Fraction(1)
    return [(c, w) for c in out]


BATCHES = (1, 2, 4, 8, 16, 32)  # the batches whose padded length the merge keeps


def padded(bins, n, b):
    """Expected longest of b queries (docs/simulator.md, lp_dataset_batch_len)."""
    e = F = 0.0
    for t, c, *_ in bins:
        e += t * ((F + c / n) ** b - F ** b)
        F += c / n
    return e


def median(weighted):
    """The weighted median length: the shortest length at which the weight
    up to it reaches half, or the mean of it and the next length when it
    reaches exactly half (the two middle queries of an even count of equal
    weights). Weights are exact fractions: no rounding moves it."""
    per = {}
    for c, w in weighted:
        per[c] = per.get(c, 0) + w
    lens = sorted(per)
    half, acc = sum(per.values()) / 2, Fraction(0)
    for i, c in enumerate(lens):
        acc += per[c]
        if acc >= half:
            return 0.5 * (c + lens[i + 1]) if acc == half and i + 1 < len(lens) else c
    return lens[-1]


def histogram(weighted, median_tokens, pad, cutoff=None):
    """Lengths in tokens (characters scaled to median_tokens; as they are
    when median_tokens is None), each rounded up to a multiple of pad (the
    collator's pad_to_multiple_of); while there are more than MAX_BINS
    lengths, the two neighbours whose merging (into the longer one) raises the
    expected padded length of the BATCHES least are merged."""
    med = median(weighted)
    if not med > 0:
        sys.exit("dataset_lengths: the median length is 0: expected fields that hold text")
    scale = median_tokens / med if median_tokens is not None else 1.0
    n = sum(w for _, w in weighted)  # exact
    counts = {}
    for c, w in weighted:
        x = c * scale if cutoff is None else min(c * scale, cutoff)
        t = int(math.ceil(x / pad)) * pad
        counts[t] = counts.get(t, 0) + w
    # [length, weight as a float (the merge's arithmetic), exact weight]
    bins = [[t, float(counts[t]), counts[t]] for t in sorted(counts)]
    nf = float(n)
    while len(bins) > MAX_BINS:
        base = sum(padded(bins, nf, b) for b in BATCHES)
        best = None
        for i in range(len(bins) - 1):
            m = bins[:i] + [[bins[i + 1][0], bins[i][1] + bins[i + 1][1],
                             bins[i][2] + bins[i + 1][2]]] + bins[i + 2:]
            cost = sum(padded(m, nf, b) for b in BATCHES) - base
            if best is None or cost < best[0]:
                best = (cost, m)
        bins = best[1]
    # fractions rounded to 6 digits; the largest bin takes the rounding so
    # that they sum to 1 (no bin can turn negative)
    out = [[t, round(float(e / n), 6)] for t, _, e in bins]
    big = max(range(len(out)), key=lambda i: out[i][1])
    out[big][1] = round(1.0 - sum(f for i, (_, f) in enumerate(out) if i != big), 6)
    return out, med


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("sources", nargs="+", metavar="SOURCE", help="[FORMAT:]PATH[@COUNT]")
    ap.add_argument("--fields", required=True, help="comma-separated fields of each query")
    ap.add_argument("--median-tokens", type=float, help="the median in tokens the "
                    "characters are scaled to")
    ap.add_argument("--tokens", action="store_true",
                    help="the fields hold tokens (a count or a list of token ids): no scaling")
    ap.add_argument("--cutoff", type=int, help="truncate every query to this many tokens")
    ap.add_argument("--pad", type=int, default=8, help="pad to a multiple of this (>= 1)")
    ap.add_argument("--source", default="")
    ap.add_argument("-o", "--out")
    a = ap.parse_args()
    if sum(parse_source(s)[1] == "-" for s in a.sources) > 1:
        ap.error("standard input can be read once")
    if a.tokens == (a.median_tokens is not None):
        ap.error("give one of --median-tokens (lengths in characters) and --tokens")
    if a.pad < 1 or (a.median_tokens is not None and not a.median_tokens > 0) or (
            a.cutoff is not None and a.cutoff < 1):
        ap.error("--pad, --median-tokens and --cutoff must be positive")
    weighted = []
    for spec in a.sources:
        weighted += lengths(spec, a.fields.split(","), a.tokens)
    hist, med = histogram(weighted, a.median_tokens, a.pad, a.cutoff)
    doc = {"source": a.source, "queries": len(weighted),
           "median_len": float(med) if a.tokens else a.median_tokens, "median_chars": med,
           "histogram": hist}
    if a.tokens:
        del doc["median_chars"]
    text = json.dumps(doc, indent=1) + "\n"
    if a.out:  # atomically: a temporary file beside it, renamed over it
        tmp = None
        try:
            fd, tmp = tempfile.mkstemp(prefix=".dataset_lengths.",
                                       dir=os.path.dirname(os.path.abspath(a.out)))
            with os.fdopen(fd, "w") as o:
                o.write(text)
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp, 0o666 & ~umask)  # mkstemp's 0600 made what open() would
            os.replace(tmp, a.out)
        except OSError as e:
            if tmp and os.path.exists(tmp):
                os.unlink(tmp)
            sys.exit(f"dataset_lengths: {a.out}: {e.strerror}")
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main()
