#!/usr/bin/env bash
# Fine-tuning under the hf framework (Xia et al. 2024's setting: Mixtral-8x7B
# QLoRA on one GPU): the MoE layer dominates the step, sparse (top-2) beats
# dense (all 8 experts) at equal batch and fits a larger batch, throughput
# grows sub-linearly with the batch, the optimizer is a small share under
# QLoRA, dynamic padding follows the length histogram, dated prices are
# picked by name or date, and bad input is refused with the key named.
#   finetune_hf.sh LLMPLAN SRCDIR SCRATCH
set -u
bin=$1 src=$2 dir=$3
rm -rf "$dir" && mkdir -p "$dir"
export LLMPLAN_DATA="$src/data"
python3 - "$bin" "$dir" "$src" <<'PY'
import json, subprocess, sys
bin_, d, src = sys.argv[1], sys.argv[2], sys.argv[3]
def run(batch=1, top_k=2, system="a40-8x-pcie", dataset=None, prices=None, fw="hf"):
    m = {"name": "mixtral-8x7b-ft", "layers": 32, "hidden": 4096, "heads": 32, "kv_heads": 8,
         "ffn_hidden": 14336, "vocab": 32000, "seq_len": 148, "ffn_act": "swiglu",
         "norm": "rmsnorm", "position": "rotary", "tied_embeddings": False, "bias": False,
         "dropout": False, "moe": {"experts": 8, "top_k": top_k, "ffn_hidden": 14336}}
    t = {"global_batch": batch, "finetune": {"method": "lora", "rank": 16, "base_bits": 4,
                                             "targets": "moe"},
         "dataset": dataset or {"queries": 15000, "epochs": 10, "median_len": 148}}
    r = {"model": m, "system": system, "parallel": {"micro_batch": batch, "recompute": "full"},
         "training": t, "framework": fw}
    if prices:
        r["prices"] = prices
    return r
def sim(runs):
    p = subprocess.run([bin_, "simulate", "--batch", "-", "--max-batch"], capture_output=True,
                       text=True, input="\n".join(json.dumps(r) for r in runs) + "\n")
    assert p.returncode == 0, p.stderr
    return [json.loads(x) for x in p.stdout.splitlines()]
fails = 0
def check(name, ok, detail):
    global fails
    print(("ok   " if ok else "FAIL ") + name + ": " + detail)
    fails += not ok
s1, s2, s8, d2 = sim([run(1), run(2), run(8), run(2, top_k=8)])
st = s1["stages_s"]
share = st["moe"] / s1["iteration_time_s"]
check("MoE layer share >= 0.75 (Xia Fig. 5: 0.85)", share >= 0.75, f"{share:.3f}")
check("stages add up", abs(st["forward"] + st["backward"] + st["optimizer"]
                           - s1["iteration_time_s"]) <= 0.02 * s1["iteration_time_s"],
      f"{st['forward']:.3f} + {st['backward']:.3f} + {st['optimizer']:.4f} vs "
      f"{s1['iteration_time_s']:.3f}")
check("QLoRA optimizer share small", st["optimizer"] < 0.05 * s1["iteration_time_s"],
      f"{st['optimizer'] / s1['iteration_time_s']:.4f}")
check("sparse faster than dense at batch 2", s2["iteration_time_s"] < d2["iteration_time_s"],
      f"{s2['iteration_time_s']:.3f} s < {d2['iteration_time_s']:.3f} s")
check("sparse fits a larger batch than dense", s2["max_batch"] > d2["max_batch"],
      f"{s2['max_batch']} > {d2['max_batch']}")
r2 = s2["queries_per_s"] / s1["queries_per_s"]
r8 = s8["queries_per_s"] / s1["queries_per_s"]
check("throughput sub-linear in batch", 1 < r2 < 2 and r2 < r8 < 8, f"x{r2:.2f} at 2, x{r8:.2f} at 8")
# Xia et al. measured x1.9 at batch 2 and x4.8 at batch 8 over batch 1 on
# Commonsense-15K (A40, sparse; rows X12 / X13): with that dataset's lengths
# (data/datasets/commonsense15k-xia2024.json, each batch padded to its
# longest query) within the issue's 15%; every query at the median 79 gives
# x1.96 at 2 (inside too) and x7.3 at 8 (outside): the x8 half discriminates
cs = json.load(open(f"{src}/data/datasets/commonsense15k-xia2024.json"))
csd = {"queries": 15000, "epochs": 10, "histogram": cs["histogram"]}
c1, c2, c8 = sim([run(b, dataset=csd) for b in (1, 2, 8)])
q2 = c2["queries_per_s"] / c1["queries_per_s"]
q8 = c8["queries_per_s"] / c1["queries_per_s"]
check("Commonsense-15K: x1.9 at 2 and x4.8 at 8 within 15%",
      abs(q2 / 1.9 - 1) <= 0.15 and abs(q8 / 4.8 - 1) <= 0.15, f"x{q2:.2f} at 2, x{q8:.2f} at 8")
# dynamic padding: half the queries 100 tokens, half 300; a batch of 1 pads
# to 100 or 300 (expected 200), a batch of 4 to 300 unless all four are
# short (1/16): 300 - 200/16 = 287.5; the memory is set by the longest (300)
h = {"queries": 1000, "pad_multiple": 1, "histogram": [[100, 0.5], [300, 0.5]]}
b1, b4, m300 = sim([run(1, dataset=h), run(4, dataset=h),
                    run(4, dataset={"queries": 1000, "pad_multiple": 1, "median_len": 300})])
check("padded length, batch 1", b1["seq_len"] == 200, str(b1["seq_len"]))
check("padded length, batch 4", b4["seq_len"] == 288, str(b4["seq_len"]))
check("memory set by the longest queries",
      abs(b4["memory_per_gpu_gib"] - m300["memory_per_gpu_gib"]) < 1e-9,
      f"{b4['memory_per_gpu_gib']:.3f} GiB")
# batching "grouped" (Hugging Face Trainer's group_by_length): megabatches of
# M = mult b accum queries, mult = max(1, min(N // (4 b accum), 50)), sorted
# and cut into n = M / b micro-batches; the k-th pads to the (k b + 1)-th
# longest of M draws. Its mean, counted here directly over the order
# statistics with exact binomials (an independent form of the code's
# E[ceil(B / b)] sum): 1000 queries at batch 4 (n = 50) 201.5 against the
# random batch's 287.5; 30 queries at micro-batch 4 with 4 micro-batches
# per step (mult 1, n = 4: the step's 16 queries are sorted together);
# 10 queries at batch 4 (n = 1): a random batch, 287.5
from fractions import Fraction
from math import comb, ceil
def grouped_exact(hist, N, b, accum):
    mult = max(1, min(N // (4 * b * accum), 50))
    M = mult * b * accum
    n = M // b
    lens = [L for L, _ in hist]
    above = [sum(Fraction(f).limit_denominator(10**6) for _, f in hist[i:]) for i in range(len(hist))]
    def surv(S, r):  # P(Binomial(M, S) >= r)
        return sum(comb(M, j) * S**j * (1 - S)**(M - j) for j in range(r, M + 1))
    e = Fraction(0)
    for k in range(n):
        prev = 0
        for i, L in enumerate(lens):
            e += (L - prev) * (1 if i == 0 else surv(above[i], k * b + 1))
            prev = L
    return float(e / n)
def grouped(b, gb, N):
    r = run(b, dataset=dict(h, batching="grouped", queries=N))
    r["training"]["global_batch"] = gb
    return r
gr, gr_ga, gr10, pk, m800 = sim([grouped(4, 4, 1000), grouped(4, 16, 30), grouped(4, 4, 10),
                                 run(4, dataset=dict(h, batching="packed", pack_len=800)),
                                 run(4, dataset={"queries": 1000, "pad_multiple": 1,
                                                 "median_len": 800})])
want = [grouped_exact(h["histogram"], 1000, 4, 1), grouped_exact(h["histogram"], 30, 4, 4),
        grouped_exact(h["histogram"], 10, 4, 1)]
got = [gr["seq_len"], gr_ga["seq_len"], gr10["seq_len"]]
check("grouped by length: exact order statistics (1000 queries, 4 micro-batches, 10 queries)",
      got == [ceil(w - 1e-9) for w in want] and abs(want[0] - 201.5) < 0.01
      and abs(want[2] - 287.5) < 1e-9, f"{got} vs {[round(w, 3) for w in want]}")
qpr = pk["queries_per_s"] * pk["iteration_time_s"] / 4
check("packed: 800-token rows of 4 queries, as full 800-token sequences",
      pk["seq_len"] == 800 and abs(qpr - 4) < 1e-9
      and abs(pk["memory_per_gpu_gib"] - m800["memory_per_gpu_gib"]) < 1e-9
      and pk["iteration_time_s"] == m800["iteration_time_s"],
      f"{pk['seq_len']} tokens, {qpr:.6f} queries per row, {pk['iteration_time_s']:.4f} s vs "
      f"{m800['iteration_time_s']:.4f} s")
check("batching recorded", pk["training_config"]["dataset"].get("batching") == "packed" and
      pk["training_config"]["dataset"].get("pack_len") == 800 and
      gr["training_config"]["dataset"].get("batching") == "grouped",
      str(pk["training_config"]["dataset"].get("batching")))
# max_len (the longest query, e.g. LLaMA-Factory's cutoff_len): the batch
# that must fit is padded to it; the time stays that of the distribution
lm, l148, l1024 = sim([run(4, dataset={"queries": 1000, "median_len": 148, "max_len": 1024}),
                       run(4), run(4, dataset={"queries": 1000, "median_len": 1024})])
check("max_len sets the memory",
      abs(lm["memory_per_gpu_gib"] - l1024["memory_per_gpu_gib"]) < 1e-9 and
      lm["memory_per_gpu_gib"] > l148["memory_per_gpu_gib"] and
      lm["max_batch"] == l1024["max_batch"] < l148["max_batch"],
      f"{lm['memory_per_gpu_gib']:.3f} GiB, max batch {lm['max_batch']} "
      f"(all at 148: {l148['max_batch']})")
check("max_len leaves the time", lm["iteration_time_s"] == l148["iteration_time_s"],
      f"{lm['iteration_time_s']:.4f} s")
check("max_len recorded", lm["training_config"]["dataset"].get("max_len") == 1024,
      str(lm["training_config"]["dataset"]))
# QLoRA under checkpointing: bitsandbytes' MatMul4Bit keeps its input as
# ctx.tensors, which the non-reentrant checkpoint cannot drop, so each query
# adds, per token and layer, q/k/v's and o_proj's inputs, the router's and
# per routed token w1/w3's and w2's: 2 (3 h + top_k (h + f)) bytes; the
# 8-bit MatMul8bitLt keeps the input and its int8 transpose (3 bytes per
# element); a 16-bit base (F.linear, save_for_backward) has no such term.
# MatMul4Bit keeps nothing whose input needs no gradient: with adapters on
# the experts and routers only, the first layer's q/k/v, o_proj, router and
# w1/w3 inputs (3 h + top_k h) descend from the frozen embeddings alone;
# with adapters on every linear only its q/k/v input (h) does
def q(bits, b, targets="moe"):
    r = run(b, dataset={"queries": 1000, "median_len": 1024})
    r["training"]["finetune"]["base_bits"] = bits
    r["training"]["finetune"]["targets"] = targets
    return r
res = sim([q(bits, b, tg) for tg in ("moe", "all") for bits in (4, 8, 16) for b in (1, 2)])
per = [(res[i + 1]["memory_per_gpu_gib"] - res[i]["memory_per_gpu_gib"]) * 2**30
       for i in (0, 2, 4, 6, 8, 10)]
layer = 3 * 4096 + 2 * (4096 + 14336)
want = 1024 * 2 * (32 * layer - (3 * 4096 + 2 * 4096))
check("targets all: only the first q/k/v input is not held",
      abs(per[3] - per[5] - 1024 * 2 * (32 * layer - 4096)) < 1e-6 * want,
      f"{(per[3] - per[5]) / 1e9:.4f} GB per query vs {1024 * 2 * (32 * layer - 4096) / 1e9:.4f}")
# two dense layers first (moe.first_dense_layers): with adapters on the
# experts and routers nothing in them needs a gradient, nor the first MoE
# layer's inputs but w2's: 30 MoE layers' terms less 3 h + top_k h
def fd(bits, b):
    r = q(bits, b)
    r["model"] = dict(r["model"], moe=dict(r["model"]["moe"], first_dense_layers=2))
    return r
fdr = sim([fd(bits, b) for bits in (4, 16) for b in (1, 2)])
per_fd = ((fdr[1]["memory_per_gpu_gib"] - fdr[0]["memory_per_gpu_gib"]) -
          (fdr[3]["memory_per_gpu_gib"] - fdr[2]["memory_per_gpu_gib"])) * 2**30
want_fd = 1024 * 2 * (30 * layer - (3 * 4096 + 2 * 4096))
check("dense layers before the first MoE layer hold nothing", abs(per_fd - want_fd) < 1e-6 * want_fd,
      f"{per_fd / 1e9:.4f} GB per query vs {want_fd / 1e9:.4f}")
# Transformers' upcast loss holds 12 bytes per logit at its peak (fp32
# logits, the shifted copy, log_softmax's output; the Trainer drops the
# outputs before the backward); PyTorch's native loss on 16-bit logits
# 2 + 4. The loss and the recomputed layer are never alive together
# (sim_memory.c hf_lora_peak): at batches 8 and 9 the upcast loss (12 x
# 32000 = 384000 bytes per token) sets the peak, the native one (6 x 32000)
# does not, the recomputed layer's 356352 bytes per token (below) do, so a
# 1024-token query differs by 1024 x (384000 - 356352) bytes
def nat(b):
    return dict(q(16, b), framework={"name": "hf", "cross_entropy": "native"})
u8, u9, n8, n9 = sim([q(16, 8), q(16, 9), nat(8), nat(9)])
per_u = (u9["memory_per_gpu_gib"] - u8["memory_per_gpu_gib"]) * 2**30
per_n = (n9["memory_per_gpu_gib"] - n8["memory_per_gpu_gib"]) * 2**30
check("upcast loss: 12 bytes per logit, the native loss under the recomputed layer",
      abs(per_u - per_n - 1024 * (384000 - 356352)) < 1e-3,
      f"{(per_u - per_n) / 1e6:.3f} MB per query vs {1024 * (384000 - 356352) / 1e6:.3f}")
check("4-bit inputs held across checkpointed layers", abs(per[0] - per[2] - want) < 1e-6 * want,
      f"{(per[0] - per[2]) / 1e9:.3f} GB per 1024-token query vs {want / 1e9:.3f}")
check("8-bit: the input and its int8 transpose",
      abs(per[1] - per[2] - 1.5 * want) < 1e-6 * want, f"{(per[1] - per[2]) / 1e9:.3f} GB")
# reentrant checkpointing (ckpt_reentrant: LLaMA-Factory 0.6+ passes
# use_reentrant True) runs each checkpointed forward under no_grad: the
# 4-bit inputs die with it, so a query costs what the 16-bit base's does;
# the key is written back only where it is not the framework's default
def reent(r, v=True):
    r["framework"] = {"name": "hf", "ckpt_reentrant": v}
    return r
rr = sim([reent(q(4, b)) for b in (1, 2)] + [reent(q(4, 1), False)])
per_r = (rr[1]["memory_per_gpu_gib"] - rr[0]["memory_per_gpu_gib"]) * 2**30
check("reentrant checkpointing holds no 4-bit inputs", abs(per_r - per[2]) < 1e-6 * want,
      f"{per_r / 1e9:.3f} GB per query vs {per[2] / 1e9:.3f} (16-bit base)")
check("reentrant: the time unchanged",
      abs(rr[0]["iteration_time_s"] / res[0]["iteration_time_s"] - 1) < 1e-12,
      f"{rr[0]['iteration_time_s']:.4f} s")
check("ckpt_reentrant recorded only where not the default",
      rr[0]["framework"].get("ckpt_reentrant") is True and
      "ckpt_reentrant" not in json.dumps(rr[2]["framework"]) and
      rr[2]["memory_per_gpu_gib"] == res[0]["memory_per_gpu_gib"],
      f"{rr[0]['framework']['ckpt_reentrant']} / {rr[2]['framework']}")
# The QLoRA step's peak by hand (sim_memory.c hf_lora_peak), 1024-token
# queries, Mixtral top-2, adapters on the experts and routers:
#  - adapters: 32 layers x (8 experts x 16 x (2 (h + f) + (f + h)) + 16 (h +
#    8)) = 228,593,664 parameters, fp32 (LLaMA-Factory casts them), fp32
#    gradients, AdamW m and v fp32: 4 + 4 + 8 bytes;
#  - per token: the held 4-bit inputs (above, 2 (32 layer - (3 h + 2 h))),
#    the 32 checkpoints' inputs (2 h each), the embedding output and its
#    mask (3 h), the comm buffers (2 x 2 h), the recomputed layer (two
#    RMSNorms 2 (4 + 2) h, attention 2 h + 2 (2 h + 2 g d) + 2 h, MoE 2 h +
#    2 (2 h + 4 x 2 f + 2 h): 356352 bytes) and the loss (12 x 32000);
#  - the loss and the recomputed layer are never alive together; the
#    gradients do not exist before the backward (zero_grad set_to_none);
#    autocast's bf16 copies of the adapters (2 bytes each) live through the
#    forward: at batch 14 the loss's moment is the peak (no gradients,
#    temporaries 1 GiB + comm + one dequantised expert h f x 2 + loss +
#    copies), at batch 1 the last layer's backward (all gradients, one
#    checkpoint input, the recomputed layer)
h, f, V, T = 4096, 14336, 32000, 1024
trained = 32 * (8 * 16 * (2 * (h + f) + (f + h)) + 16 * (h + 8))
held = T * 2 * (32 * layer - (3 * h + 2 * h))
redo = T * (2 * 6 * h + (2 * h + 2 * (2 * h + 2 * 1024) + 2 * h) + (2 * h + 2 * (4 * h + 8 * f)))
pk1, pk14, pk15 = sim([q(4, 1), q(4, 14), q(4, 15)])
g1, g14 = pk1["memory_gib"], pk14["memory_gib"]
check("adapters fp32: weights, gradients, AdamW m and v (8 bytes)",
      abs(g14["optimizer"] * 2**30 - 8 * trained) < 1 and abs(g1["gradients"] * 2**30 - 4 * trained) < 1,
      f"optimizer {g14['optimizer']:.4f} GiB, gradients at batch 1 {g1['gradients']:.4f} GiB "
      f"(adapters {trained})")
want_t = 2**30 + 14 * T * 4 * h + 2 * h * f + 14 * T * 12 * V + 2 * trained
check("batch 14: the loss's moment, no gradients, the adapters' autocast copies",
      g14["gradients"] == 0 and abs(g14["temporary"] * 2**30 - want_t) < 1,
      f"gradients {g14['gradients']}, temporary {g14['temporary'] * 2**30:.0f} vs {want_t}")
want_a = held + T * 3 * h + T * 2 * h + redo
check("batch 1: the last layer's backward, every gradient, one checkpoint input",
      abs(g1["activations"] * 2**30 - want_a) < 1 and abs(g1["temporary"] * 2**30 - (2**30 + T * 4 * h + 2 * h * f)) < 1,
      f"activations {g1['activations'] * 2**30:.0f} vs {want_a}")
per_q = (pk15["memory_per_gpu_gib"] - pk14["memory_per_gpu_gib"]) * 2**30
want_q = held + T * (32 * 2 * h + 3 * h + 4 * h + 12 * V)
check("per query at the loss: held inputs, checkpoints, loss; not the recomputed layer",
      abs(per_q - want_q) < 1e-3, f"{per_q / 1e9:.4f} GB vs {want_q / 1e9:.4f}")
# cost of the dataset: queries x epochs / queries per second x price
c, cd = sim([run(4, prices="cudo-2024"), run(4, prices="2024")])
want = 15000 * 10 / c["queries_per_s"] / 3600 * 0.79
check("dataset cost at CUDO 2024 ($0.79/h)", abs(c["training"]["cost_usd"] - want) < 1e-6 * want,
      f"${c['training']['cost_usd']:.2f}")
check("price picked by date", cd["training"]["cost_usd"] == c["training"]["cost_usd"], "2024")
check("the picked price is recorded", c.get("prices") == "cudo-2024", str(c.get("prices")))
# any other date picks the price in effect then: the a40 preset's prices are
# dated 2024 ($0.79, CUDO) and 2024-06 ($0.50, current)
e1, e2, e3 = sim([run(4, prices="2024-03-15"), run(4, prices="2024-06-30"), run(4, prices="2031")])
check("a date picks the price in effect then", e1.get("prices") == "cudo-2024"
      and e2.get("prices") == "current" and e3.get("prices") == "current",
      f"{e1.get('prices')}, {e2.get('prices')}, {e3.get('prices')}")
def refused(r, key):
    p = subprocess.run([bin_, "simulate", "--batch", "-"], capture_output=True, text=True,
                       input=json.dumps(r) + "\n")
    check(f"refused: {key}", p.returncode != 0 and key in p.stderr, p.stderr.strip()[:160])
refused(run(1, prices="aws-1999"), "'prices'")
refused(run(1, prices="2023-12"), "nor one dated before it")
sysd = json.load(open(f"{src}/data/systems/a40-8x-pcie.json"))
sysd["prices"][0]["date"] = "June 2024"
refused(run(1, system=sysd, prices="current"), "prices[0].date'")
refused(run(1, dataset={"queries": 10, "histogram": [[100, 0.5], [90, 0.5]]}), "histogram")
refused(run(1, dataset={"queries": 10, "histogram": [[100, 0.5], [200, 0.2]]}), "summing to 1")
refused(run(1, dataset={"queries": 10}), "median_len")
refused(run(1, dataset={"queries": 10, "median_len": 148, "max_len": 100}), "max_len")
refused(run(1, dataset={"queries": 10, "median_len": 148, "batching": "sorted"}), "dataset.batching'")
refused(run(1, dataset={"queries": 10, "median_len": 148, "batching": "packed"}), "dataset.pack_len'")
refused(run(1, dataset={"queries": 10, "median_len": 148, "pack_len": 512}), "dataset.pack_len'")
bad = run(1); bad["framework"] = {"name": "hf", "moe_impl": "loop"}
refused(bad, "moe_impl")
bad = run(1); bad["framework"] = {"name": "hf", "ckpt_reentrant": "yes"}
refused(bad, "ckpt_reentrant")
bad = run(1); bad["training"]["finetune"]["targets"] = "attention"
refused(bad, "targets")
bad = run(1); bad["model"]["moe"]["imbalance"] = 0.5
refused(bad, "moe.imbalance")
# imbalance: the busiest expert gets imbalance x the mean tokens, the rest
# share what is left; the eager loop runs them one after another
i1, i3 = sim([run(8), dict(run(8), model=dict(run(8)["model"], moe=dict(
    run(8)["model"]["moe"], imbalance=3.0)))])
check("imbalance changes the eager MoE time", i1["iteration_time_s"] != i3["iteration_time_s"],
      f"{i1['iteration_time_s']:.4f} vs {i3['iteration_time_s']:.4f} s")
# BlackMamba full fine-tuning (Xia et al.: every weight trained, batch 1,
# 128 tokens): under hf the parameters, gradients and AdamW's m and v stay
# 16-bit (2 + 2 + 4 bytes per parameter), and the step is torch.optim.AdamW's
# foreach path plus clip_grad_norm_ (21 accesses of 2 bytes = 42 bytes per
# parameter) where Megatron's fused Adam moves 34 (sim_dp.c)
def bm(fw, system="a40-8x-pcie"):
    return {"model": "blackmamba-630m-2.8b", "system": system, "framework": fw,
            "parallel": {"micro_batch": 1},
            "training": {"global_batch": 1, "dataset": {"queries": 1000, "median_len": 128}}}
b1, bh, bmeg = sim([bm("hf"), bm("hf", "h100-pcie-8x"), bm("megatron", "h100-pcie-8x")])
mg = b1["memory_gib"]
check("BlackMamba hf: 16-bit weights, gradients, AdamW states",
      abs(mg["gradients"] / mg["weights"] - 1) < 1e-9 and abs(mg["optimizer"] / mg["weights"] - 2) < 1e-9,
      f"{mg['weights']:.2f} / {mg['gradients']:.2f} / {mg['optimizer']:.2f} GiB")
# the step's _foreach_sqrt list (2 bytes per trained parameter, = the
# weights here) is live once the activations are freed: with the 1 GiB
# runtime reserve it sets the temporaries at batch 1
want = 1.0 + mg["weights"] - mg["activations"]
check("AdamW's sqrt list at the step", abs(mg["temporary"] - want) < 1e-9 * want,
      f"{mg['temporary']:.3f} GiB vs {want:.3f}")
ratio = bh["stages_s"]["optimizer"] / bmeg["stages_s"]["optimizer"]
check("foreach AdamW + clipping over fused Adam: 42 / 34 bytes", abs(ratio / (42 / 34) - 1) < 0.03,
      f"{ratio:.3f}")
bshare = b1["stages_s"]["optimizer"] / b1["iteration_time_s"]
qshare = s1["stages_s"]["optimizer"] / s1["iteration_time_s"]
check("full fine-tuning's optimizer share >> QLoRA's (Xia Fig. 4)", bshare > 10 * qshare,
      f"{bshare:.3f} vs {qshare:.4f} (Xia: up to 0.53 vs negligible)")
bst = b1["stages_s"]
check("BlackMamba's mixer time is Mamba's, not attention's",
      bst["attention"] == 0 and bst["mamba"] > 0
      and bst["mamba"] + bst["moe"] + bst["mlp"] + bst["embedding_and_loss"]
      <= bst["forward"] + bst["backward"] + 1e-9,
      f"Mamba {bst['mamba']:.4f} s, attention {bst['attention']}, MoE {bst['moe']:.4f} s")
check("Mixtral has no Mamba time", s1["stages_s"]["mamba"] == 0, str(s1["stages_s"]["mamba"]))
check("full fine-tuning's optimizer >= 30% of BlackMamba's step at batch 1 (issue #14)",
      bshare >= 0.30, f"{bshare:.3f}")
# Table IV at Xia's CUDO prices: each GPU at its measured maximum batch (A40
# 4, A100 80GB and H100 17) on GSM8K's lengths, 10 epochs of 15k queries;
# Xia found the H100 cheapest ($17.9 vs $25.4 and $32.7). llmplan's margin
# over the A100 is small (its A100 row X05 runs faster than Xia's Eq. 2 fit)
gsm = json.load(open(f"{src}/data/datasets/gsm8k-xia2024.json"))["histogram"]
def xia_cost(system, b):
    return run(b, system=system, prices="cudo-2024",
               dataset={"queries": 15000, "epochs": 10, "histogram": gsm})
ca40, ca100, ch100 = sim([xia_cost("a40-8x-pcie", 4), xia_cost("dgx-a100-80gb", 17),
                          xia_cost("h100-pcie-8x", 17)])
costs = [x["training"]["cost_usd"] for x in (ca40, ca100, ch100)]
check("H100 cheapest at Xia's CUDO prices (Table IV)", costs[2] < min(costs[:2]),
      "A40 $%.2f, A100 $%.2f, H100 $%.2f" % tuple(costs))
sys.exit(1 if fails else 0)
PY
