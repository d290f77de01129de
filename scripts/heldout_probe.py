#!/usr/bin/env python3
"""Published training measurements that are NOT in the validation set
(../shared/validation), set beside llmplan's prediction: a held-out check
that nothing is fitted to.

usage: scripts/heldout_probe.py [--build DIR] [--csv FILE] [--set FW:KEY=VALUE ...]
                               [--whole-batch]

Each row below is one published run: its source, what was measured, and the
run description llmplan simulates for it, with every setting the source
leaves unstated named in `assumed`. The script prints, per row, the measured
and predicted iteration time and predicted / measured - 1 (- = predicted too
fast), then the mean absolute error per group (source and GPU). No constant
of llmplan may be tuned on these rows (docs/calibration.md: calibration uses
the validation set's calib half only); they exist so that each stop can say
how far the model is from measurements it was not fitted on, with one
command, instead of a scratch script. --set overrides a framework option
on every row of that framework (as scripts/validate's --set), e.g.
`--set fsdp1:fused_kernels=true` for fms-fsdp's rows with fused kernels.
--whole-batch gives the rows whose source leaves the micro-batch unstated
(UNSTATED_MB: Megatron-LM's table) the rank's whole batch as one micro-batch
where they have no pipeline: the other end from the assumed 1.
"""
import argparse
import csv
import json
import os
import statistics
import sys

import lp_batch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def system(name, gpu, inter_gbps_per_gpu, intra_gbps=None):
    """A cluster described by its source rather than a preset: 8 GPUs per
    node on NVLink/NVSwitch, the inter-node bandwidth the source gives."""
    return {"name": name, "gpu": gpu, "gpus_per_node": 8,
            "intra_node": {"bw_GBps": intra_gbps or (450 if gpu.startswith("h100") else 300),
                           "latency_us": 2.5},
            "inter_node": {"bw_GBps_per_gpu": inter_gbps_per_gpu, "latency_us": 5},
            "price_per_gpu_hour_usd": 0}


# IBM's fms-fsdp (PyTorch blog "Maximizing training throughput using PyTorch
# FSDP", 2024-03-13, Table 1): 128 A100-80GB with 400 Gb/s per node, 96 H100
# with 800 Gb/s per node; batch 2 x 4,096 tokens per GPU; tokens/s per GPU.
IBM_A100 = system("ibm-a100", "a100-80gb", 400 / 8 / 8)
IBM_H100 = system("ibm-h100", "h100-sxm", 800 / 8 / 8)
CODELLAMA_34B = {"name": "codellama-34b", "layers": 48, "hidden": 8192, "heads": 64,
                 "kv_heads": 8, "ffn_hidden": 22016, "vocab": 32000, "seq_len": 4096,
                 "ffn_act": "swiglu", "norm": "rmsnorm", "position": "rotary",
                 "tied_embeddings": False, "bias": False, "dropout": False}


def fms(model, sysd, gpus, recompute, tok_s):
    run = {"model": model, "system": sysd,
           "parallel": {"tp": 1, "pp": 1, "dp": gpus, "micro_batch": 2, "recompute": recompute,
                        "zero": 3},
           "training": {"global_batch": 2 * gpus, "precision": "bf16",
                        "flash_attention": True},
           "framework": "fsdp1"}
    return run, 2 * 4096 / tok_s


# MT-NLG 530B (Smith et al. 2022, Table 1: iteration time per node count) on
# DGX A100 80GB; the run of scripts/mtnlg_vtrain.py (fp16, Megatron-DeepSpeed
# of 2021, full recomputation, micro-batch 1, global batch 1920).
def mtnlg(dp):
    return {"model": "mt-nlg-530b", "system": "dgx-a100-80gb",
            "parallel": {"tp": 8, "pp": 35, "dp": dp, "micro_batch": 1, "recompute": "full",
                         "zero": 0, "sequence_parallel": False, "schedule": "1f1b"},
            "training": {"global_batch": 1920, "precision": "fp16", "flash_attention": False},
            "framework": "megatron-deepspeed"}


# BLOOM 176B (BigScience 2022: 384 A100-80GB of Jean Zay, four 100 Gb/s
# Omni-Path links per node; ~150 TFLOP/s per GPU as reported, iteration
# time by Narayanan et al.'s Eq. 3; CUDA_LAUNCH_BLOCKING=1 in its slurm script).
BLOOM = {"model": "bloom-176b", "system": system("jean-zay-a100", "a100-80gb", 400 / 8 / 8),
         "parallel": {"tp": 4, "pp": 12, "dp": 8, "micro_batch": 2, "recompute": "full",
                      "zero": 1, "sequence_parallel": False, "schedule": "1f1b"},
         "training": {"global_batch": 2048, "precision": "bf16", "flash_attention": False},
         "framework": {"name": "megatron-deepspeed", "host_overlap": 1}}

# torchtitan (pytorch/torchtitan docs/performance.md at d4c86e375, 2025-01-30,
# its Table 1; software torch 1963fc8 / torchtitan 9dec370 of 2024-12): Llama
# 3.1 8B on 8 H100 of Meta's Grand Teton, FSDP2, bf16, local batch 2 of 8,192
# tokens (global 16), selective op-level checkpointing, eager: 5,762
# tokens/s/GPU. Not a DGX H100: the source gives "96GB HBM2e with 2.4 TB/sec",
# "the default 500W power limit", 400 Gb/s per GPU between hosts, and "the
# actual peak TFLOPs number is between SXM and NVL, and we don't know its exact
# value" (its footnote 2). The GPU below is that description: the SXM preset
# with 2.4 TB/s, 95 GiB (its earlier text: "H100 GPUs with 95 GiB memory"),
# 500 W and a tensor peak halfway between the SXM's 989.4 and the H100 NVL
# datasheet's 835 dense BF16 TFLOP/s (1,671 with sparsity); no sustained
# fraction of its own (the H100 SXM's 0.89 is a 700 W fit), so the
# calibration's.
def _gpu(name):
    with open(os.path.join(ROOT, "data", "gpus", name + ".json")) as f:
        return json.load(f)


def grand_teton_gpu():
    g = _gpu("h100-sxm")
    g.pop("sustained_frac", None)
    mid = (989.4 + 835.0) / 2
    g.update(name="h100-grand-teton", memory_GiB=95.0, memory_bw_GBps=2400, tdp_w=500,
             source="pytorch/torchtitan docs/performance.md (d4c86e375): HBM2e 2.4 TB/s, "
                    "500 W; peak between H100 SXM and NVL (taken halfway)",
             notes="held-out probe only")
    g["peak_tflops"] = dict(g["peak_tflops"], bf16=mid, fp16=mid, fp8=2 * mid, tf32=mid / 2)
    return g


GRAND_TETON = dict(system("grand-teton-h100", "h100-sxm", 400 / 8), gpu=grand_teton_gpu(),
                   profile="synth")
TORCHTITAN = {"model": "llama3-8b", "system": GRAND_TETON,
              "parallel": {"tp": 1, "pp": 1, "dp": 8, "micro_batch": 2,
                           "recompute": "selective", "recompute_modules": ["op"], "zero": 3},
              "training": {"global_batch": 16, "precision": "bf16", "flash_attention": True},
              "framework": "fsdp2"}
# its Table 3: the same run on 128 GPUs (16 hosts, 400 Gb/s per GPU between
# them), local batch 2, global 256: 5,605 tokens/s/GPU
TORCHTITAN_128 = json.loads(json.dumps(TORCHTITAN))
TORCHTITAN_128["parallel"]["dp"] = 128
TORCHTITAN_128["training"]["global_batch"] = 256

# torchtitan on 64 A100 80GB (docs/performance.md at 4d88a8a44, 2024-12-03,
# "Llama 3 performance numbers", FSDP2, local batch 1 of 8,192 tokens, eager,
# train_configs llama3_8b.toml / llama3_70b.toml: norm_type "rmsnorm"):
# Llama 3 8B with selective op checkpointing 2,973 tokens/s/GPU, 70B with
# full checkpointing 331. The network is not stated: assumed 200 Gb/s per GPU
# (HDR InfiniBand, one NIC per A100, as Meta's RSC); the 8B's gathers hide
# behind its compute at any rate above ~50 Gb/s.
TT_A100 = system("torchtitan-a100", "a100-80gb", 200 / 8)


def titan_a100(model, recompute, tok_s):
    par = {"tp": 1, "pp": 1, "dp": 64, "micro_batch": 1, "recompute": recompute, "zero": 3}
    if recompute == "selective":
        par["recompute_modules"] = ["op"]
    run = {"model": model, "system": TT_A100, "parallel": par,
           "training": {"global_batch": 64, "precision": "bf16", "flash_attention": True},
           "framework": "fsdp2"}
    return run, 8192 / tok_s


# Megatron-LM's README benchmark table (NVIDIA/Megatron-LM images/model_table.png,
# f2e5db402c, 2024-07-15; README "Benchmark Configuration": vocabulary 131,072,
# sequence 4,096, DP/TP/PP overlap flags --overlap-grad-reduce,
# --overlap-param-gather, --tp-comm-overlap): GPT models of 1.7B-462B on
# 48-6,144 H100s, weak scaling at data-parallel size 48, per-GPU TFLOP/s by
# Megatron's num_floating_point_operations (megatron/training/training.py at
# 1a76b3cb: 12 B s L h^2 (2 + s/h + f/h + V / (2 L h)) for GPT's MHA and 4h
# MLP), so the iteration time is that count over GPUs x TFLOP/s. The table
# gives no micro-batch, precision, recomputation or interleaving: assumed
# micro-batch 1, bf16 (its MFU is against 989 TFLOP/s), no recomputation, no
# interleaving; untied embeddings (Megatron ties them by default, but the
# table's parameter counts are untied ones: 7.1B = 12 L h^2 + 2 V h), and
# otherwise GPT as Megatron's defaults build it (learned positions, biases,
# LayerNorm, GeLU, dropout 0.1), Transformer Engine's cuDNN attention, DGX
# H100 (NVIDIA's EOS: 8 x 400 Gb/s per node).
def megatron_readme(size, heads, hidden, layers, tp, pp, gpus, gb, tflops):
    V, S = 131072, 4096
    model = {"name": f"gpt-{size}", "layers": layers, "hidden": hidden, "heads": heads,
             "ffn_hidden": 4 * hidden, "vocab": V, "seq_len": S, "ffn_act": "gelu",
             "norm": "layernorm", "position": "learned", "tied_embeddings": False,
             "bias": True, "dropout": True}
    run = {"model": model, "system": "dgx-h100",
           "parallel": {"tp": tp, "pp": pp, "dp": gpus // (tp * pp), "micro_batch": 1,
                        "recompute": "none", "sequence_parallel": tp > 1, "zero": 1,
                        "schedule": "1f1b"},
           "training": {"global_batch": gb, "precision": "bf16", "attention": "cudnn"},
           "framework": {"name": "megatron", "tp_overlap": tp > 1}}
    flops = 12 * gb * S * layers * hidden**2 * (2 + S / hidden + 4 + V / (2 * layers * hidden))
    return run, flops / (gpus * tflops * 1e12)


MEGATRON_README = "micro-batch 1, bf16, no recomputation, no interleaving"
UNSTATED_MB = {"Megatron-LM H100"}  # groups whose source states no micro-batch

ROWS = [  # (id, group, source, run, measured iteration time s, assumed)
    ("H01", "fms-fsdp A100", "IBM 2024-03, 7B, 3,700 tok/s/GPU",
     *fms("llama2-7b", IBM_A100, 128, "none", 3700), "FULL_SHARD (HSDP alike within 2%)"),
    ("H02", "fms-fsdp A100", "IBM 2024-03, 34B, 700 tok/s/GPU",
     *fms(CODELLAMA_34B, IBM_A100, 128, "full", 700), "CodeLlama-34B shape; FULL_SHARD"),
    ("H03", "fms-fsdp A100", "IBM 2024-03, 70B, 370 tok/s/GPU",
     *fms("llama2-70b", IBM_A100, 128, "full", 370), "FULL_SHARD"),
    ("H04", "fms-fsdp H100", "IBM 2024-03, 7B, 7,500 tok/s/GPU",
     *fms("llama2-7b", IBM_H100, 96, "none", 7500), "FULL_SHARD"),
    ("H05", "fms-fsdp H100", "IBM 2024-03, 34B, 1,550 tok/s/GPU",
     *fms(CODELLAMA_34B, IBM_H100, 96, "full", 1550), "CodeLlama-34B shape; FULL_SHARD"),
    ("H06", "fms-fsdp H100", "IBM 2024-03, 70B, 800 tok/s/GPU",
     *fms("llama2-70b", IBM_H100, 96, "full", 800), "FULL_SHARD"),
    ("H07", "torchtitan H100", "torchtitan 9dec370, Llama 3.1 8B, 8 H100 (500 W, HBM2e), "
     "5,762 tok/s/GPU", TORCHTITAN, 2 * 8192 / 5762,
     "flash2 attention (PyTorch 2.6 nightly's SDPA order); peak halfway SXM-NVL"),
    ("H23", "torchtitan H100", "torchtitan 9dec370, Llama 3.1 8B, 128 H100 (500 W, HBM2e), "
     "5,605 tok/s/GPU", TORCHTITAN_128, 2 * 8192 / 5605,
     "as H07; FULL_SHARD over the 128 GPUs"),
    ("H08", "MT-NLG A100", "Smith et al. 2022, 280 nodes, 60.1 s", mtnlg(8), 60.1,
     "fp16, ZeRO 0, no partition_activations"),
    ("H09", "MT-NLG A100", "Smith et al. 2022, 350 nodes, 50.2 s", mtnlg(10), 50.2,
     "fp16, ZeRO 0, no partition_activations"),
    ("H10", "MT-NLG A100", "Smith et al. 2022, 420 nodes, 44.4 s", mtnlg(12), 44.4,
     "fp16, ZeRO 0, no partition_activations"),
    ("H11", "BLOOM A100", "BigScience 2022, 384 GPUs, ~150 TFLOP/s", BLOOM, 104.5,
     "iteration time from the reported TFLOP/s (Eq. 3)"),
    ("H12", "torchtitan A100", "torchtitan 2024-12, Llama 3 8B, 64 A100, 2,973 tok/s/GPU",
     *titan_a100("llama3-8b", "selective", 2973), "200 Gb/s per GPU; flash2 attention"),
    ("H13", "torchtitan A100", "torchtitan 2024-12, Llama 3 70B, 64 A100, 331 tok/s/GPU",
     *titan_a100("llama3-70b", "full", 331), "200 Gb/s per GPU; flash2 attention"),
    ("H14", "Megatron-LM H100", "Megatron-LM README 2024-07, GPT 1.7B, 48 H100, 408.8 TFLOP/s",
     *megatron_readme("1.7b", 16, 2048, 24, 1, 1, 48, 192, 408.8), MEGATRON_README),
    ("H15", "Megatron-LM H100", "Megatron-LM README 2024-07, GPT 7.1B, 96 H100, 465.9 TFLOP/s",
     *megatron_readme("7.1b", 32, 4096, 30, 2, 1, 96, 192, 465.9), MEGATRON_README),
    ("H16", "Megatron-LM H100", "Megatron-LM README 2024-07, GPT 16B, 192 H100, 489.1 TFLOP/s",
     *megatron_readme("16b", 48, 6144, 32, 4, 1, 192, 192, 489.1), MEGATRON_README),
    ("H17", "Megatron-LM H100", "Megatron-LM README 2024-07, GPT 32B, 384 H100, 459.6 TFLOP/s",
     *megatron_readme("32b", 56, 7168, 48, 8, 1, 384, 192, 459.6), MEGATRON_README),
    ("H18", "Megatron-LM H100", "Megatron-LM README 2024-07, GPT 70B, 768 H100, 419.7 TFLOP/s",
     *megatron_readme("70b", 64, 8192, 84, 8, 2, 768, 384, 419.7), MEGATRON_README),
    ("H19", "Megatron-LM H100", "Megatron-LM README 2024-07, GPT 119B, 1536 H100, 420.5 TFLOP/s",
     *megatron_readme("119b", 80, 10240, 92, 8, 4, 1536, 768, 420.5), MEGATRON_README),
    ("H20", "Megatron-LM H100", "Megatron-LM README 2024-07, GPT 177B, 2304 H100, 432.8 TFLOP/s",
     *megatron_readme("177b", 96, 12288, 96, 8, 6, 2304, 1152, 432.8), MEGATRON_README),
    ("H21", "Megatron-LM H100", "Megatron-LM README 2024-07, GPT 314B, 3072 H100, 474.4 TFLOP/s",
     *megatron_readme("314b", 128, 16384, 96, 8, 8, 3072, 1536, 474.4), MEGATRON_README),
    ("H22", "Megatron-LM H100", "Megatron-LM README 2024-07, GPT 462B, 6144 H100, 459.9 TFLOP/s",
     *megatron_readme("462b", 144, 18432, 112, 8, 16, 6144, 3072, 459.9), MEGATRON_README),
]


def framework_set(runs, items):
    """Apply FW:KEY=VALUE overrides to the rows whose framework is FW."""
    for item in items or []:
        try:
            fw, kv = item.split(":", 1)
            key, val = kv.split("=", 1)
        except ValueError:
            sys.exit(f"heldout_probe: --set {item!r}: expected FW:KEY=VALUE")
        val = {"true": True, "false": False}.get(val.lower(), val)
        if isinstance(val, str):
            try:
                val = float(val)
            except ValueError:
                pass
        for run in runs:
            f = run["framework"]
            name = f if isinstance(f, str) else f["name"]
            if name == fw:
                run["framework"] = dict({"name": name} if isinstance(f, str) else f, **{key: val})


def whole_batch(runs):
    """--whole-batch: UNSTATED_MB's rows without a pipeline run the rank's
    batch as one micro-batch."""
    for row, run in zip(ROWS, runs):
        p = run["parallel"]
        if row[1] in UNSTATED_MB and p["pp"] == 1:
            p["micro_batch"] = run["training"]["global_batch"] // p["dp"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--csv", help="write every row (id, group, measured_s, predicted_s, error)")
    ap.add_argument("--set", action="append", metavar="FW:KEY=VALUE",
                    help="a framework option on every row of framework FW")
    ap.add_argument("--whole-batch", action="store_true",
                    help="rows whose source states no micro-batch (and have no pipeline): "
                         "the rank's whole batch as one")
    a = ap.parse_args()
    llmplan = os.path.join(a.build, "search", "llmplan")
    if not os.path.exists(llmplan):
        sys.exit(f"heldout_probe: {llmplan} not found (build first: scripts/setup.sh)")
    runs = [json.loads(json.dumps(r[3])) for r in ROWS]
    framework_set(runs, a.set)
    if a.whole_batch:
        whole_batch(runs)
    res = lp_batch.simulate(llmplan, runs, "heldout_probe")
    out, groups = [], {}
    print("held-out probe: published runs not in the validation set, nothing fitted to them")
    print(f"{'row':4} {'group':16} {'measured_s':>10} {'predicted_s':>11} {'error':>7}  source")
    for (rid, group, src, _, meas, assumed), run, r in zip(ROWS, runs, res):
        if group in UNSTATED_MB and a.whole_batch:
            assumed = assumed.replace("micro-batch 1", f"micro-batch {run['parallel']['micro_batch']}")
        if not r.get("feasible"):
            sys.exit(f"heldout_probe: {rid} ({src}) infeasible: {r.get('reason')}")
        pred = r["iteration_time_s"]
        err = pred / meas - 1
        groups.setdefault(group, []).append(err)
        out.append((rid, group, meas, pred, err))
        print(f"{rid:4} {group:16} {meas:10.3f} {pred:11.3f} {100 * err:+6.1f}%  {src}; "
              f"assumed: {assumed}")
    print("\ngroup             rows  MAPE%  bias%")
    for g, errs in groups.items():
        print(f"{g:16} {len(errs):5} {100 * statistics.mean(map(abs, errs)):6.1f} "
              f"{100 * statistics.mean(errs):+6.1f}")
    allerr = [e for errs in groups.values() for e in errs]
    print(f"{'all':16} {len(allerr):5} {100 * statistics.mean(map(abs, allerr)):6.1f} "
          f"{100 * statistics.mean(allerr):+6.1f}")
    if a.csv:
        with open(a.csv, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["row_id", "group", "measured_s", "predicted_s", "error"])
            for row in out:
                w.writerow([row[0], row[1], f"{row[2]:.6g}", f"{row[3]:.6g}", f"{row[4]:.4f}"])


if __name__ == "__main__":
    main()
