#!/usr/bin/env bash
# Bad input to `llmplan simulate`: each case must exit non-zero with exactly
# one line on stderr that names the file, the key and what was expected.
#   bad_input.sh LLMPLAN SRCDIR SCRATCH
set -u
bin=$1 src=$2 dir=$3
rm -rf "$dir" && mkdir -p "$dir"
pass=0 fail=0

good='"model": "gpt3-1.3b", "system": "dgx-a100-80gb",
  "parallel": {"tp": 1, "pp": 1, "dp": 8, "micro_batch": 4},
  "training": {"global_batch": 256, "precision": "bf16"}'

# case NAME JSON-TEXT EXPECTED-SUBSTRING...
case_() {
  local name=$1 text=$2
  shift 2
  local f="$dir/$name.json"
  printf '%s\n' "$text" >"$f"
  local out rc
  out=$("$bin" simulate "$f" --profile roofline 2>&1 >/dev/null)
  rc=$?
  local ok=1
  [ $rc -ne 0 ] || ok=0
  [ "$(printf '%s\n' "$out" | wc -l)" -eq 1 ] || ok=0
  for want in "$f" "$@"; do
    case "$out" in *"$want"*) ;; *) ok=0 ;; esac
  done
  if [ $ok -eq 1 ]; then
    pass=$((pass + 1)); echo "ok   $name: $out"
  else
    fail=$((fail + 1)); echo "FAIL $name (rc $rc): $out (wanted: $*)"
  fi
}

case_ malformed '{ "model": "gpt3-1.3b", ' "malformed JSON" "line"
case_ unknown_key "{ $good, \"paralel\": {} }" "unknown key 'paralel'" "expected one of"
# a stray training_config does not make a run description a plan (whose
# other keys are not read): its keys are still checked
case_ unknown_key_beside_training_config "{ $good, \"training_config\": {}, \"paralel\": {} }" \
  "unknown key"
case_ price_name_is_date "{ \"model\": \"gpt3-1.3b\", \"system\": {\"preset\": \"a40-8x-pcie\",
  \"prices\": [{\"name\": \"2024\", \"date\": \"2024\", \"usd_per_gpu_hour\": 1}]},
  \"training\": {\"global_batch\": 8} }" "system.prices[0].name" "is a date"
case_ unknown_nested "{ \"model\": \"gpt3-1.3b\", \"system\": \"dgx-a100-80gb\",
  \"parallel\": {\"tp\": 1, \"tpp\": 2}, \"training\": {\"global_batch\": 8} }" "unknown key 'parallel.tpp'"
case_ wrong_type "{ \"model\": \"gpt3-1.3b\", \"system\": \"dgx-a100-80gb\",
  \"parallel\": {\"tp\": \"eight\"}, \"training\": {\"global_batch\": 8} }" "'parallel.tp'" "positive integer" '"eight"'
case_ negative "{ \"model\": \"gpt3-1.3b\", \"system\": \"dgx-a100-80gb\",
  \"parallel\": {\"pp\": -2}, \"training\": {\"global_batch\": 8} }" "'parallel.pp'" "positive integer" "-2"
case_ zero_size "{ \"model\": \"gpt3-1.3b\", \"system\": \"dgx-a100-80gb\",
  \"training\": {\"global_batch\": 0} }" "'training.global_batch'" "positive integer" "got 0"
case_ non_integer "{ \"model\": \"gpt3-1.3b\", \"system\": \"dgx-a100-80gb\",
  \"parallel\": {\"micro_batch\": 2.5}, \"training\": {\"global_batch\": 8} }" "'parallel.micro_batch'" "integer" "2.5"
case_ not_a_preset "{ \"model\": \"gpt-9000\", \"system\": \"dgx-a100-80gb\",
  \"training\": {\"global_batch\": 8} }" "key 'model'" "gpt-9000" "not a models preset"
case_ bad_enum "{ \"model\": \"gpt3-1.3b\", \"system\": \"dgx-a100-80gb\",
  \"parallel\": {\"recompute\": \"some\"}, \"training\": {\"global_batch\": 8} }" "'parallel.recompute'" "\"selective\"" '"some"'
case_ missing_key "{ \"model\": \"gpt3-1.3b\", \"system\": \"dgx-a100-80gb\" }" "missing key 'training'"
case_ inline_model_bad "{ \"model\": {\"name\": \"x\", \"layers\": 2, \"hidden\": 100, \"heads\": 3,
  \"vocab\": 10, \"seq_len\": 8}, \"system\": \"dgx-a100-80gb\", \"training\": {\"global_batch\": 8} }" "'model.heads'" "divide hidden"
case_ inline_system_type "{ \"model\": \"gpt3-1.3b\", \"system\": {\"name\": \"s\", \"gpu\": \"a100-80gb\",
  \"gpus_per_node\": 8, \"intra_node\": {\"bw_GBps\": \"fast\", \"latency_us\": 1},
  \"inter_node\": {\"bw_GBps_per_gpu\": 25, \"latency_us\": 5}, \"price_per_gpu_hour_usd\": 1},
  \"training\": {\"global_batch\": 8} }" "'system.intra_node.bw_GBps'" "positive number"

case_ finetune_method "{ \"model\": \"gpt3-1.3b\", \"system\": \"dgx-a100-80gb\",
  \"training\": {\"global_batch\": 8, \"finetune\": {\"method\": \"prefix\"}} }" "'training.finetune.method'" "\"lora\"" '"prefix"'
case_ finetune_bits "{ \"model\": \"gpt3-1.3b\", \"system\": \"dgx-a100-80gb\",
  \"training\": {\"global_batch\": 8, \"finetune\": {\"method\": \"lora\", \"base_bits\": 6}} }" "'training.finetune.base_bits'" "4, 8 or 16" "got 6"
case_ attention_kernel "{ \"model\": \"gpt3-1.3b\", \"system\": \"dgx-a100-80gb\",
  \"training\": {\"global_batch\": 8, \"attention\": \"flash3\"} }" "'training.attention'" "\"triton\""
case_ attention_contradiction "{ \"model\": \"gpt3-1.3b\", \"system\": \"dgx-a100-80gb\",
  \"training\": {\"global_batch\": 8, \"flash_attention\": false, \"attention\": \"triton\"} }" "contradicts flash_attention"
case_ host_overlap "{ \"model\": \"gpt3-1.3b\", \"system\": \"dgx-a100-80gb\",
  \"training\": {\"global_batch\": 8}, \"framework\": {\"name\": \"fsdp\", \"host_overlap\": 0.5} }" "'framework.host_overlap'" ">= 1"
case_ cross_entropy "{ \"model\": \"gpt3-1.3b\", \"system\": \"dgx-a100-80gb\",
  \"training\": {\"global_batch\": 8}, \"framework\": {\"name\": \"fsdp\", \"cross_entropy\": \"fp64\"} }" "'framework.cross_entropy'" "\"native\""
case_ framework_name "{ \"model\": \"gpt3-1.3b\", \"system\": \"dgx-a100-80gb\",
  \"training\": {\"global_batch\": 8}, \"framework\": \"horovod\" }" "'framework'" "\"ddp\""
case_ fsdp2_zero "{ \"model\": \"gpt3-1.3b\", \"system\": \"dgx-a100-80gb\", \"parallel\": {\"dp\": 8, \"zero\": 1},
  \"training\": {\"global_batch\": 8}, \"framework\": \"fsdp2\" }" "'parallel.zero'" "reshard_after_forward"
case_ hybrid_shard "{ \"model\": \"gpt3-1.3b\", \"system\": \"dgx-a100-80gb\",
  \"training\": {\"global_batch\": 8}, \"framework\": {\"name\": \"fsdp\", \"hybrid_shard\": 1} }" "'framework.hybrid_shard'"
case_ hybrid_shard_megatron "{ \"model\": \"gpt3-1.3b\", \"system\": \"dgx-a100-80gb\", \"parallel\": {\"dp\": 8, \"zero\": 1},
  \"training\": {\"global_batch\": 8}, \"framework\": {\"name\": \"megatron\", \"hybrid_shard\": true} }" "'framework.hybrid_shard'" "FSDP sharding strategy"
case_ fsdp_pipeline "{ \"model\": \"gpt3-1.3b\", \"system\": \"dgx-a100-80gb\", \"parallel\": {\"dp\": 4, \"pp\": 2, \"zero\": 2},
  \"training\": {\"global_batch\": 8}, \"framework\": \"fsdp2\" }" "'parallel.pp'" "pipeline parallelism"

# llmplan loss: bad numbers and an unknown fit are usage errors (exit 2)
for args in "1e9" "1e9 -5" "1e9 2e10 --fit kaplan"; do
  out=$("$bin" loss $args 2>&1 >/dev/null); rc=$?
  if [ $rc -eq 2 ] && [ -n "$out" ]; then
    pass=$((pass + 1)); echo "ok   loss '$args': $(printf '%s' "$out" | head -1)"
  else
    fail=$((fail + 1)); echo "FAIL loss '$args' (rc $rc): $out"
  fi
done
out=$(printf '1e9 x\n' | "$bin" loss --batch 2>&1 >/dev/null); rc=$?
if [ $rc -eq 1 ] && [[ "$out" == *"stdin line 1"* ]]; then
  pass=$((pass + 1)); echo "ok   loss_batch: $out"
else
  fail=$((fail + 1)); echo "FAIL loss_batch (rc $rc): $out"
fi

# a missing file
out=$("$bin" simulate "$dir/nope.json" 2>&1 >/dev/null); rc=$?
if [ $rc -ne 0 ] && [[ "$out" == *"$dir/nope.json"*"cannot open"* ]]; then
  pass=$((pass + 1)); echo "ok   missing_file: $out"
else
  fail=$((fail + 1)); echo "FAIL missing_file (rc $rc): $out"
fi

# infeasible is a result, exit 0
f="$dir/infeasible.json"
printf '{ "model": "gpt3-1.3b", "system": "dgx-a100-80gb", "parallel": {"tp": 3}, "training": {"global_batch": 8} }\n' >"$f"
out=$("$bin" simulate "$f" --profile roofline --json); rc=$?
if [ $rc -eq 0 ] && [[ "$out" == *'"feasible":	false'* ]] && [[ "$out" == *'tp (3) does not divide heads'* ]]; then
  pass=$((pass + 1)); echo "ok   infeasible_is_a_result"
else
  fail=$((fail + 1)); echo "FAIL infeasible_is_a_result (rc $rc): $out"
fi

# a preset file that is itself broken names the preset file
mkdir -p "$dir/data/models" "$dir/data/systems" "$dir/data/gpus"
cp "$src"/data/systems/dgx-a100-80gb.json "$dir/data/systems/"
cp "$src"/data/gpus/a100-80gb.json "$dir/data/gpus/"
printf '{ "name": "broken", "layers": "many" }\n' >"$dir/data/models/broken.json"
printf '{ "model": "broken", "system": "dgx-a100-80gb", "training": {"global_batch": 8} }\n' >"$dir/b.json"
out=$(LLMPLAN_DATA="$dir/data" "$bin" simulate "$dir/b.json" --profile roofline 2>&1 >/dev/null); rc=$?
if [ $rc -ne 0 ] && [[ "$out" == *"data/models/broken.json"*"'layers'"*"positive integer"* ]]; then
  pass=$((pass + 1)); echo "ok   broken_preset: $out"
else
  fail=$((fail + 1)); echo "FAIL broken_preset (rc $rc): $out"
fi

# the architecture keys of #13 (docs/presets.md)
mdl='"name": "m", "layers": 4, "hidden": 64, "heads": 4, "vocab": 100, "seq_len": 64'
tr='"system": "dgx-h100", "training": {"global_batch": 8}'
case_ pattern_length "{ \"model\": {$mdl, \"layer_pattern\": \"*-*\"}, $tr }" \
  "'model.layer_pattern'" "one symbol per layer (4)" "got 3"
case_ pattern_symbol "{ \"model\": {$mdl, \"layer_pattern\": \"*-x-\"}, $tr }" \
  "'model.layer_pattern'" "got 'x' at 2"
case_ pattern_no_mamba "{ \"model\": {$mdl, \"layer_pattern\": \"M-*-\"}, $tr }" \
  "'model.layer_pattern'" "no 'mamba'"
case_ mla_kv_heads "{ \"model\": {$mdl, \"kv_heads\": 2, \"mla\": {\"kv_lora_rank\": 8,
  \"qk_nope_head_dim\": 8, \"qk_rope_head_dim\": 4, \"v_head_dim\": 8}}, $tr }" \
  "'model.kv_heads'" "kv_heads = heads"
case_ qk_norm_mla "{ \"model\": {$mdl, \"qk_norm\": true, \"mla\": {\"kv_lora_rank\": 8,
  \"qk_nope_head_dim\": 8, \"qk_rope_head_dim\": 4, \"v_head_dim\": 8}}, $tr }" \
  "'model.qk_norm'" "expected false with 'mla'"
case_ qk_norm_type "{ \"model\": {$mdl, \"qk_norm\": 1}, $tr }" "'model.qk_norm'"
case_ moe_imbalance "{ \"model\": {$mdl, \"moe\": {\"experts\": 4, \"imbalance\": 0.5}}, $tr }" \
  "'model.moe.imbalance'" ">= 1" "0.5"
case_ window_without "{ \"model\": {$mdl, \"global_every\": 2}, $tr }" \
  "'model.global_every'" "attention_window"
case_ scale_up "{ \"model\": \"gpt3-1.3b\", \"system\": {\"name\": \"s\", \"gpu\": \"b200\",
  \"gpus_per_node\": 4, \"scale_up_gpus\": 6, \"intra_node\": {\"bw_GBps\": 900, \"latency_us\": 3},
  \"inter_node\": {\"bw_GBps_per_gpu\": 50, \"latency_us\": 5}, \"price_per_gpu_hour_usd\": 1},
  \"training\": {\"global_batch\": 8} }" "'system.scale_up_gpus'" "multiple of gpus_per_node (4)"
case_ segment "{ \"model\": \"gpt3-1.3b\", \"system\": {\"name\": \"s\", \"gpu\": \"b200\",
  \"gpus_per_node\": 4, \"scale_up_gpus\": 72, \"segment_gpus\": 76,
  \"intra_node\": {\"bw_GBps\": 900, \"latency_us\": 3},
  \"inter_node\": {\"bw_GBps_per_gpu\": 50, \"latency_us\": 5}, \"price_per_gpu_hour_usd\": 1},
  \"training\": {\"global_batch\": 8} }" "'system.segment_gpus'" "up to scale_up_gpus (72)" "got 76"
case_ optim_bf16 "{ $good, \"framework\": {\"name\": \"megatron\", \"optim_bf16\": \"bf16\"} }" \
  "'framework.optim_bf16'"
case_ tp_overlap_rs "{ $good, \"framework\": {\"name\": \"megatron\", \"tp_overlap_rs\": \"ring\"} }" \
  "'framework.tp_overlap_rs'" "\"ring_exchange\"" '"ring"'
case_ dispatcher "{ $good, \"framework\": {\"name\": \"megatron\", \"moe_dispatcher\": \"deepep2\"} }" \
  "'framework.moe_dispatcher'" "\"hybridep\""
case_ dispatcher_sms "{ $good, \"framework\": {\"name\": \"megatron\", \"moe_dispatcher_sms\": -4} }" \
  "'framework.moe_dispatcher_sms'" "non-negative integer"
case_ graph_scope "{ $good, \"framework\": {\"name\": \"megatron\", \"cuda_graphs\": [\"mlp\"]} }" \
  "'framework.cuda_graphs'" "\"moe_router\"" "mlp"
case_ graph_scope_dropless "{ \"model\": \"qwen3-30b-a3b\", \"system\": \"dgx-h100\",
  \"parallel\": {\"tp\": 1, \"pp\": 1, \"dp\": 8, \"ep\": 8, \"micro_batch\": 1},
  \"training\": {\"global_batch\": 64, \"precision\": \"bf16\"},
  \"framework\": {\"name\": \"megatron\", \"cuda_graphs\": [\"moe\"]} }" \
  "'framework.cuda_graphs'" "dropless" "qwen3-30b-a3b"
case_ precision_name "{ \"model\": \"gpt3-1.3b\", \"system\": \"dgx-b200\",
  \"training\": {\"global_batch\": 8, \"precision\": \"fp4\"} }" "'training.precision'" "\"nvfp4\""

echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
