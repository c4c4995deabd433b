"""Throughput of the batched rollout engine (baselines.rollout) against one env at a time.

CPU mode (default): episodes/s and generated tokens/s of ``RolloutEngine`` playing all envs at once versus the same
engine with ``max_concurrent=1`` (one env at a time, one request per ``generate`` call), for the tiny test model and,
when it is installed, SmolLM2-135M. Prints a markdown table with the speed-up ratios.

    python benchmarks/rollout_throughput.py                       # tiny (+ smollm2-135m if installed), think_solve-v0
    python benchmarks/rollout_throughput.py --models tiny --episodes 64 --seq-episodes 8

CUDA mode: tokens/s of a randomly initialised model shaped like Qwen2-0.5B (built from a config: nothing is
downloaded) with the engine at a batch of 256 envs versus a plain ``model.generate`` call on the same 256 prompts.

    python benchmarks/rollout_throughput.py --device cuda [--batch 256 --max-new-tokens 64]
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def _versions() -> str:
    import numpy
    import torch
    import transformers

    import marl_llm_envs

    return (f"python {platform.python_version()}, torch {torch.__version__}, transformers {transformers.__version__}, "
            f"numpy {numpy.__version__}, marl_llm_envs {marl_llm_envs.__version__}")


def _header(device_line: str) -> None:
    print(f"# Rollout engine throughput ({datetime.datetime.now().isoformat(timespec='seconds')})\n")
    print(f"- machine: {platform.platform()}, {os.cpu_count()} CPU cores; {device_line}")
    print(f"- versions: {_versions()}")
    print(f"- command: python benchmarks/rollout_throughput.py {' '.join(sys.argv[1:])}\n")


def _measure(engine, env_id: str, episodes: int, env_kwargs: dict) -> dict:
    t0 = time.perf_counter()
    eps = engine.run(env_id, num_tasks=episodes, group_size=1, seed=0, env_kwargs=env_kwargs)
    wall = time.perf_counter() - t0
    tokens = sum(e.tokens_generated for e in eps)
    return {"episodes": len(eps), "wall": wall, "eps_s": len(eps) / wall, "tok_s": tokens / wall, "tokens": tokens}


def run_cpu(args) -> None:
    from baselines.policies.hf import TransformersPolicy
    from baselines.rollout import RolloutEngine

    import torch

    torch.set_num_threads(args.threads or torch.get_num_threads())
    _header(f"device cpu, {torch.get_num_threads()} torch threads")
    print(f"env `{args.env}` (kwargs {args.env_kwargs}), free generation, temperature 1.0, "
          f"max_new_tokens {args.max_new_tokens}; sequential = the same engine with `max_concurrent=1`\n")
    rows = []
    for name in args.models.split(","):
        try:
            policy = TransformersPolicy.from_name(name, device="cpu", max_new_tokens=args.max_new_tokens)
        except Exception as e:  # noqa: BLE001 - an optional model that is not installed is reported, not fatal
            print(f"({name}: skipped, {type(e).__name__}: {str(e).splitlines()[0][:160]})\n")
            continue
        n, n_seq = (args.episodes, args.seq_episodes) if name == "tiny" else (args.big_episodes, args.big_seq_episodes)
        RolloutEngine(policy, show_progress=False).run(args.env, 2, 1, seed=123, env_kwargs=args.kw)  # warm-up
        batched = _measure(RolloutEngine(policy, show_progress=False), args.env, n, args.kw)
        seq = _measure(RolloutEngine(policy, show_progress=False, max_concurrent=1), args.env, n_seq, args.kw)
        rows.append((name, batched, seq))
        policy.close()
        print(f"({name}: done, batched {batched['eps_s']:.2f} episodes/s, one at a time {seq['eps_s']:.2f})",
              flush=True)
    print("\n| model | engine | episodes | wall (s) | episodes/s | tokens/s | episodes/s ratio | tokens/s ratio |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for name, b, s in rows:
        print(f"| {name} | one env at a time | {s['episodes']} | {s['wall']:.1f} | {s['eps_s']:.2f} | "
              f"{s['tok_s']:.0f} | 1.0x | 1.0x |")
        print(f"| {name} | batched ({b['episodes']} envs) | {b['episodes']} | {b['wall']:.1f} | {b['eps_s']:.2f} | "
              f"{b['tok_s']:.0f} | {b['eps_s'] / s['eps_s']:.1f}x | {b['tok_s'] / s['tok_s']:.1f}x |")


def _qwen2_05b_like(vocab_size: int):
    from transformers import Qwen2Config

    return Qwen2Config(vocab_size=vocab_size, hidden_size=896, intermediate_size=4864, num_hidden_layers=24,
                       num_attention_heads=14, num_key_value_heads=2, max_position_embeddings=32768,
                       rope_theta=1_000_000.0, tie_word_embeddings=True, rms_norm_eps=1e-6)


def run_cuda(args) -> None:
    import torch

    if not torch.cuda.is_available():
        print("--device cuda needs a CUDA GPU, and torch.cuda.is_available() is False on this machine "
              f"(torch {torch.__version__}). Run the CPU mode (no --device) here, or this mode on a GPU machine.")
        raise SystemExit(2)
    from transformers import AutoModelForCausalLM

    from baselines.models import build_tiny_tokenizer
    from baselines.policies.hf import TransformersPolicy
    from baselines.rollout import RolloutEngine
    from marl_llm_envs import make

    _header(f"device {torch.cuda.get_device_name(0)}")
    torch.manual_seed(0)
    config = _qwen2_05b_like(151936)
    model = AutoModelForCausalLM.from_config(config, torch_dtype=torch.bfloat16).to("cuda").eval()
    n_params = sum(p.numel() for p in model.parameters())
    tok = build_tiny_tokenizer()  # byte-level ids < 262; the model's other ids decode to nothing
    policy = TransformersPolicy(model, tok, max_new_tokens=args.max_new_tokens, temperature=1.0, name="qwen2-0.5b-like")
    B, M = args.batch, args.max_new_tokens
    print(f"model: random-init Qwen2-0.5B-shaped ({n_params / 1e6:.0f}M params, bf16), byte-level prompts; "
          f"batch {B}, max_new_tokens {M}, env `{args.env}`\n")

    # Plain transformers generate on the first-turn prompts of B envs.
    env = make(args.env, **args.kw)
    prompts = []
    for i in range(B):
        env.reset(seed=i)
        agent = env.agent_selection
        prompts.append(policy.encode_prompt(env.observe(agent)["text"]))
    width = max(map(len, prompts))
    pad = policy.pad_id
    ids = torch.tensor([[pad] * (width - len(p)) + p for p in prompts], device="cuda")
    mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts], device="cuda")
    eos = sorted(policy.eos_ids) or None

    def plain() -> tuple[float, int]:
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        with torch.inference_mode():
            out = model.generate(input_ids=ids, attention_mask=mask, do_sample=True, temperature=1.0, top_k=0,
                                 max_new_tokens=M, pad_token_id=pad, eos_token_id=eos)
        torch.cuda.synchronize()
        new = out[:, width:]
        count = 0
        for row in new.tolist():
            for n, t in enumerate(row):
                if eos and t in eos:
                    count += n + 1
                    break
            else:
                count += len(row)
        return time.perf_counter() - t0, count

    plain()  # warm-up
    wall_plain, tok_plain = plain()
    engine = RolloutEngine(policy, show_progress=False)
    engine.run(args.env, 8, 1, seed=10_000, env_kwargs=args.kw)  # warm-up
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    eps = engine.run(args.env, B, 1, seed=0, env_kwargs=args.kw)
    torch.cuda.synchronize()
    wall_engine = time.perf_counter() - t0
    tok_engine = sum(e.tokens_generated for e in eps)
    turns = sum(len(e.turns) for e in eps)
    print("| what | requests | tokens | wall (s) | tokens/s | ratio |")
    print("|---|---:|---:|---:|---:|---:|")
    print(f"| plain `model.generate` (batch {B}, one turn) | {B} | {tok_plain} | {wall_plain:.2f} | "
          f"{tok_plain / wall_plain:.0f} | 1.00x |")
    print(f"| RolloutEngine ({B} envs, full episodes) | {turns} | {tok_engine} | {wall_engine:.2f} | "
          f"{tok_engine / wall_engine:.0f} | {(tok_engine / wall_engine) / (tok_plain / wall_plain):.2f}x |")


def main(argv=None) -> None:
    import json

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    p.add_argument("--env", default="think_solve-v0")
    p.add_argument("--env-kwargs", default="{}")
    p.add_argument("--models", default="tiny,smollm2-135m", help="CPU mode: comma-separated model names")
    p.add_argument("--episodes", type=int, default=64, help="CPU, tiny: episodes of the batched run")
    p.add_argument("--seq-episodes", type=int, default=8, help="CPU, tiny: episodes of the one-at-a-time run")
    p.add_argument("--big-episodes", type=int, default=16, help="CPU, other models: batched episodes")
    p.add_argument("--big-seq-episodes", type=int, default=4, help="CPU, other models: one-at-a-time episodes")
    p.add_argument("--max-new-tokens", type=int, default=None, help="default 16 on CPU, 64 on CUDA")
    p.add_argument("--batch", type=int, default=256, help="CUDA: envs / prompts per batch")
    p.add_argument("--threads", type=int, default=None, help="CPU: torch threads")
    args = p.parse_args(argv)
    args.kw = json.loads(args.env_kwargs)
    if args.max_new_tokens is None:
        args.max_new_tokens = 64 if args.device == "cuda" else 16
    (run_cuda if args.device == "cuda" else run_cpu)(args)


if __name__ == "__main__":
    main()
