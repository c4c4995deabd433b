"""One GPU check in one call: decode speed, training-step speed, a credit-gpu protocol smoke run and vLLM, as JSON.

    python benchmarks/gpu_check.py --out runs/gpu_check.json      # about 5 minutes on one H200 (budget: < 8)

Without CUDA it writes ``{"status": "skipped", "reason": ...}`` and exits 0 (the CPU test checks this).

What it measures, each section on its own (a section that fails records ``{"error": ...}`` and the rest still run):

* ``decode``: a 0.5B Qwen2-shaped model (Qwen2.5-0.5B's config: hidden 896, 24 layers, 14 heads, 2 KV heads,
  vocab 151936), random init (downloads nothing), bf16 on the GPU; ``--batch`` (256) random prompts of
  ``--prompt-len`` tokens, ``--new-tokens`` sampled tokens each (EOS never ends a row early: a random model rarely
  emits it, and the rate counts the tokens actually produced). New tokens/s of ``model.generate`` (HF sampling,
  dynamic cache) against :func:`baselines.policies.decoding.sample_batch` plain (dynamic cache) and with
  ``static_cache=True`` (fixed-shape cache, the step captured in a CUDA graph: ``graph_error`` says when capture fell
  back to eager). Each after one warm-up call.
* ``train``: tokens/s of the trainer's free-generation update step (``sequence_logprobs`` -> ``policy_loss`` ->
  backward -> AdamW, float32 weights under bf16 autocast, as ``--dtype bfloat16``) against a bare loop on the same
  batch (forward, cross-entropy of the same completion tokens, backward, AdamW).
* ``credit_gpu_smoke``: ``python -m leaderboard benchmark-credit broadcast --tier gpu`` on a copy of the credit-gpu
  protocol cut to 3 steps x 2 tasks x 2 samples, one seed and a few evaluation seeds (``--smoke-model``, default
  ``tiny``), in a subprocess: return code, wall time, tail of the output.
* ``vllm``: where vLLM imports, :class:`~baselines.policies.vllm.VLLMPolicy` against :class:`TransformersPolicy`
  (``static_cache=True``) on the same 0.5B model saved to a folder, the same requests: new tokens/s of each.

Its figures go into ``benchmarks/RESULTS.md``; on a machine without CUDA it writes a report that says so and exits.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
QWEN2_05B = dict(hidden_size=896, intermediate_size=4864, num_hidden_layers=24, num_attention_heads=14,
                 num_key_value_heads=2, vocab_size=151936, max_position_embeddings=32768, rope_theta=1_000_000.0,
                 tie_word_embeddings=True, rms_norm_eps=1e-6)


def _section(report: dict, name: str, fn, *args) -> None:
    t0 = time.perf_counter()
    try:
        report[name] = fn(*args)
    except Exception as e:  # one broken section must not hide the others
        report[name] = {"error": f"{type(e).__name__}: {e}", "traceback": traceback.format_exc()[-3000:]}
    report[name]["section_s"] = time.perf_counter() - t0
    print(f"[gpu_check] {name}: {json.dumps({k: v for k, v in report[name].items() if k != 'traceback'})[:800]}",
          file=sys.stderr, flush=True)


def _model(args):
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    from baselines.models import build_tiny_tokenizer

    tok = build_tiny_tokenizer()   # byte ids < 262 < the model's vocab; eos id 2 ends nothing a random model writes
    config = Qwen2Config(**QWEN2_05B, bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
                         pad_token_id=tok.pad_token_id)
    torch.manual_seed(0)
    with torch.device("cuda"):
        model = Qwen2ForCausalLM(config)
    return model.to(torch.bfloat16).eval(), tok


def _sync():
    import torch

    torch.cuda.synchronize()


def decode(args) -> dict:
    import torch

    from baselines.policies.decoding import DecodeStats, sample_batch

    model, tok = _model(args)
    g = torch.Generator().manual_seed(1)
    prompts = torch.randint(10, 250, (args.batch, args.prompt_len), generator=g).tolist()
    out: dict = {"batch": args.batch, "prompt_len": args.prompt_len, "new_tokens": args.new_tokens,
                 "params_m": sum(p.numel() for p in model.parameters()) / 1e6}

    def hf_generate(n):
        ids = torch.tensor(prompts[:n], device="cuda")
        res = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), do_sample=True, top_p=1.0,
                             temperature=1.0, max_new_tokens=args.new_tokens, min_new_tokens=args.new_tokens,
                             pad_token_id=tok.pad_token_id)
        return (res.shape[1] - ids.shape[1]) * n

    def ours(n, static):
        stats = DecodeStats()
        rows = sample_batch(model, prompts[:n], list(range(n)), seed=0, temperature=1.0, top_p=1.0,
                            max_new_tokens=args.new_tokens, pad_id=tok.pad_token_id, eos_ids=set(),
                            static_cache=static, stats=stats)
        return sum(len(r.tokens) for r in rows)

    from baselines.policies import static_decode

    decoders: list = []          # the StaticDecoders sample_batch builds: did the CUDA graph capture work?
    original_init = static_decode.StaticDecoder.__init__

    def recording_init(self, *a, **k):
        original_init(self, *a, **k)
        decoders.append(self)

    static_decode.StaticDecoder.__init__ = recording_init
    variants = {"hf_generate": hf_generate, "sample_batch_plain": lambda n: ours(n, False),
                "sample_batch_static_cuda_graph": lambda n: ours(n, True)}
    for name, fn in variants.items():
        try:
            with torch.inference_mode():
                fn(min(8, args.batch))                       # warm-up (and the CUDA graph capture)
                _sync()
                t0 = time.perf_counter()
                n_tokens = fn(args.batch)
                _sync()
            dt = time.perf_counter() - t0
            out[name] = {"s": dt, "new_tokens": n_tokens, "tok_s": n_tokens / dt}
        except Exception as e:
            out[name] = {"error": f"{type(e).__name__}: {e}"}
    static_decode.StaticDecoder.__init__ = original_init
    if decoders:
        out["static_cuda_graph_captured"] = decoders[-1].graph is not None
        out["static_graph_error"] = decoders[-1].graph_error
    base = out.get("hf_generate", {}).get("tok_s")
    for name in ("sample_batch_plain", "sample_batch_static_cuda_graph"):
        if base and "tok_s" in out.get(name, {}):
            out[name]["vs_hf_generate"] = out[name]["tok_s"] / base
    del model
    torch.cuda.empty_cache()
    return out


def train_step(args) -> dict:
    import torch

    from baselines.policies.hf import sequence_logprobs
    from baselines.train.loss import policy_loss

    model, tok = _model(args)
    model = model.float().train()
    g = torch.Generator().manual_seed(2)
    B, P, C = args.train_batch, args.train_prompt_len, args.train_completion_len
    prompts = torch.randint(10, 250, (B, P), generator=g).tolist()
    completions = torch.randint(10, 250, (B, C), generator=g).tolist()
    tokens = B * (P + C)
    out: dict = {"batch": B, "prompt_len": P, "completion_len": C}
    opt = torch.optim.AdamW(model.parameters(), lr=1e-6)
    adv = torch.randn(B * C, device="cuda")
    w = torch.full((B * C,), 1.0 / (B * C), device="cuda")

    def ours():
        with torch.autocast("cuda", dtype=torch.bfloat16):
            lp = torch.cat(sequence_logprobs(model, prompts, completions, pad_id=tok.pad_token_id)).float()
        loss, _ = policy_loss(lp, lp.detach(), adv, w, clip_low=0.2, clip_high=0.28)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    ids = torch.tensor([p + c for p, c in zip(prompts, completions)], device="cuda")
    target = ids[:, P:]

    def bare():
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = model(input_ids=ids).logits[:, P - 1:-1]
        loss = torch.nn.functional.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), target.reshape(-1))
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    for name, fn in (("bare_loop", bare), ("trainer_step", ours)):
        fn()
        _sync()
        t0 = time.perf_counter()
        for _ in range(args.train_iters):
            fn()
        _sync()
        dt = (time.perf_counter() - t0) / args.train_iters
        out[name] = {"s_per_step": dt, "tok_s": tokens / dt}
    out["trainer_vs_bare"] = out["trainer_step"]["tok_s"] / out["bare_loop"]["tok_s"]
    out["peak_mem_gib"] = torch.cuda.max_memory_allocated() / 2**30
    del model, opt
    torch.cuda.empty_cache()
    return out


def credit_smoke(args) -> dict:
    proto = json.loads((ROOT / "leaderboard" / "protocols" / "credit-gpu.json").read_text())
    proto["id"] = "credit-gpu-smoke"
    proto["description"] = "gpu_check smoke: credit-gpu cut to 3 steps x 2 tasks x 2 samples, one seed"
    proto["seeds"]["count"] = args.smoke_eval_seeds
    proto["train"].update(steps=3, tasks_per_step=2, group_size=2, seeds=[0], max_tokens=200_000)
    folder = Path(args.work) / "credit_smoke"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "credit-gpu-smoke.json"
    path.write_text(json.dumps(proto, indent=1))
    cmd = [sys.executable, "-m", "leaderboard", "benchmark-credit", "broadcast", "--tier", "gpu", "--protocol",
           str(path), "--model", args.smoke_model, "--baselines", "", "--out", str(folder / "runs"), "--no-progress"]
    t0 = time.perf_counter()
    p = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=args.smoke_timeout,
                       env={**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")})
    return {"cmd": " ".join(cmd), "returncode": p.returncode, "wall_s": time.perf_counter() - t0,
            "stdout_tail": p.stdout[-2000:], "stderr_tail": p.stderr[-2000:]}


def vllm_vs_transformers(args) -> dict:
    import importlib.util

    if importlib.util.find_spec("vllm") is None:
        return {"skipped": "vllm is not installed"}
    import torch

    from baselines.policies.base import Request
    from baselines.policies.hf import TransformersPolicy
    from baselines.policies.vllm import VLLMPolicy

    model, tok = _model(args)
    folder = Path(args.work) / "qwen2-0.5b-random"
    model.save_pretrained(folder, safe_serialization=True)
    tok.save_pretrained(folder)
    g = torch.Generator().manual_seed(3)
    texts = ["".join(chr(int(c)) for c in torch.randint(97, 123, (args.prompt_len,), generator=g))
             for _ in range(args.batch)]
    requests = [Request(env_id="gpu_check", agent="a", role="r", text=t) for t in texts]
    out: dict = {}
    hf = TransformersPolicy(model, tok, max_new_tokens=args.new_tokens, static_cache=True)
    hf.generate(requests[:8], seed=0)
    _sync()
    t0 = time.perf_counter()
    gens = hf.generate(requests, seed=1)
    _sync()
    dt = time.perf_counter() - t0
    out["transformers_static"] = {"s": dt, "tok_s": sum(len(x.completion_ids) for x in gens) / dt}
    del hf, model
    torch.cuda.empty_cache()
    pol = VLLMPolicy(str(folder), max_new_tokens=args.new_tokens, gpu_memory_utilization=0.4, max_model_len=2048,
                     enable_weight_updates=False)
    pol.generate(requests[:8], seed=0)
    t0 = time.perf_counter()
    gens = pol.generate(requests, seed=1)
    dt = time.perf_counter() - t0
    out["vllm"] = {"s": dt, "tok_s": sum(len(x.completion_ids) for x in gens) / dt}
    out["vllm_vs_transformers"] = out["vllm"]["tok_s"] / out["transformers_static"]["tok_s"]
    pol.close()
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", default="runs/gpu_check.json")
    p.add_argument("--work", default="runs/gpu_check", help="scratch folder (smoke runs, the saved model)")
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--prompt-len", type=int, default=128)
    p.add_argument("--new-tokens", type=int, default=128)
    p.add_argument("--train-batch", type=int, default=16)
    p.add_argument("--train-prompt-len", type=int, default=384)
    p.add_argument("--train-completion-len", type=int, default=128)
    p.add_argument("--train-iters", type=int, default=5)
    p.add_argument("--smoke-model", default="tiny")
    p.add_argument("--smoke-eval-seeds", type=int, default=4)
    p.add_argument("--smoke-timeout", type=int, default=180)
    p.add_argument("--sections", nargs="+", default=["decode", "train", "credit_gpu_smoke", "vllm"])
    args = p.parse_args(argv)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    report: dict = {"schema": "marl_llm_gpu_check", "version": 1}
    try:
        import torch
    except ImportError:
        torch = None
    if torch is None or not torch.cuda.is_available():
        report.update(status="skipped", reason="no CUDA device (torch.cuda.is_available() is False)")
        out.write_text(json.dumps(report, indent=1))
        print(f"gpu_check: skipped (no CUDA); wrote {out}")
        return 0
    report.update(status="ran", device=torch.cuda.get_device_name(0), torch=torch.__version__)
    import transformers

    report["transformers"] = transformers.__version__
    t0 = time.perf_counter()
    sections = {"decode": decode, "train": train_step, "credit_gpu_smoke": credit_smoke, "vllm": vllm_vs_transformers}
    for name in args.sections:
        _section(report, name, sections[name], args)
        report["wall_s"] = time.perf_counter() - t0
        out.write_text(json.dumps(report, indent=1))
    print(f"gpu_check: wrote {out} ({report['wall_s']:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
