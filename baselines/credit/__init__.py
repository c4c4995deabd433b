"""Credit-assignment methods: given one team reward, which agent and which turn earned it?

    from baselines.credit import make_credit, list_credits
    method = make_credit("ccpo_v2")                      # or "package.module:MyMethod" for your own
    episodes = engine.run("think_solve-v0", num_tasks=16, group_size=4, branches=method.branches("think_solve-v0"))
    advantages = method.advantages(episodes)             # advantages[i][k] for episodes[i].turns[k]

The contract (the trainer, the leaderboard and your code call exactly these):

* ``make_credit(name, **options)``: a registered name (``list_credits()``) or ``"package.module:ClassName"``;
  unknown names and options raise ``ValueError`` listing what exists.
* ``method.advantages(episodes) -> TurnAdvantages``: one call = one training batch; for every episode, in the
  order given, one advantage per entry of ``episode.turns`` (the trainer spreads a turn's advantage over its
  completion tokens). Groups (the G samples of one task) are formed by ``Episode.group_key``, never by list order.
  A method with ``per_token = True`` returns ``TokenAdvantages`` instead: per turn, one value per completion token
  (``marshal`` with ``variant="roll"``); the trainer reads ``per_token`` to know which it got.
* ``method.branches(env_id) -> list[BranchSpec]``: the counterfactual branches the rollout engine must play for it
  (raises ``ValueError`` when the env cannot make them, before any rollout).
* ``method.state_dict()`` / ``method.load_state_dict(state)``: JSON-safe running statistics, so a resumed run gives
  the same next advantages.
* ``method.diagnostics(episodes) -> dict[str, float]`` (optional): numbers worth logging.
* Bad input (an episode with no turns, a missing branch, a NaN reward) raises ``ValueError`` naming the episode
  (position, env, seed, group, sample) and what is missing; never a silent zero.

The methods (each module's docstring states its equation and cites its source):

=============  ===============================================================================================
``broadcast``  GRPO on the shared outcome: ``(R - mean_g R) / (std_g R + 1e-6)`` on every turn
``none``       the raw return ``R`` (no baseline; a control)
``rae``        SPIRAL: ``R - b[env, role]``, ``b`` an EMA (0.95) read before its update
``marshal``    MARSHAL: turn-level return-to-go minus the mean over the role's turns in the batch
``coma``       COMA-style: ``R`` minus the mean outcome of K resamples of the agent's action, others fixed
``loo``        leave-one-out: ``R - R_without_agent`` (voting's recount, or the agent's ablate branch)
``ccpo_v1``    CCPO's history-aware shaping of ``R_joint - R_solo`` (think_solve)
``ccpo_v2``    CCPO's event bonus: thinker ``+0.2`` when it helped, ``-0.2`` when it hurt (think_solve)
``dr_mas``     Dr. MAS: GRPO normalization per role within the group, over the role's turns
``mappo``      MAPPO: GAE(gamma, lambda) on each agent's turns with a learned centralized critic ``V(s_t)``
``ippo``       IPPO: the same with a learned per-agent critic ``V(o_a,t)`` on the agent's own observation
``shuffled``   a negative control: each turn gets broadcast's advantage of a random episode of its group
``oracle``     a positive control: each turn's true advantage ``A*`` from forced-move branches (credit fidelity)
=============  ===============================================================================================

A method with a learned critic (``mappo``, ``ippo``) uses three more hooks, all no-ops on the Monte Carlo methods:

* ``method.needs_state``: ``"global"`` or ``"observation"`` makes the rollout record ``Turn.state`` (``env.state()``,
  or the acting agent's numeric observation) before every turn: ``RolloutEngine(policies,
  record_state=method.needs_state)``;
* ``method.attach(team)``: the trainer hands over its team once, before the first rollout (an LLM value head reads
  the policy model);
* ``method.update(episodes) -> dict[str, float]``: called by the trainer right after ``advantages`` on the same
  whole (gathered) batch, on every process, so the critic stays identical everywhere; it trains ``parameters()``
  with the method's own optimizer and returns numbers to log (``credit/critic_loss``). Its weights and optimizer
  moments go in ``state_dict()`` as lists of floats, so checkpoints and ``--resume`` are exact.

A critic method in full is ``update`` plus ``advantages`` that read the critic; the shape of ``mappo``::

    @register("my_critic")
    class MyCritic(CreditMethod):
        needs_state = "global"

        def __init__(self, lr: float = 1e-3) -> None:
            self.net = None                                        # built at the first batch (state size known)
            self.lr = check_positive("lr", lr)

        def values(self, episodes):                                # V(Turn.state) of every turn, as a tensor
            x = torch.tensor([t.state for e in episodes for t in e.turns])
            if self.net is None:
                self.net = torch.nn.Linear(x.shape[1], 1)
                self.opt = torch.optim.Adam(self.net.parameters(), lr=self.lr)
            return self.net(x)[:, 0]

        def advantages(self, episodes):
            episodes = check_batch(episodes, self.name)
            with torch.no_grad():
                v = iter(self.values(episodes).tolist())
            return fill(episodes, lambda i, k, t: outcome(episodes[i], i, t.agent) - next(v))

        def update(self, episodes):
            target = torch.tensor([outcome(e, i, t.agent) for i, e in enumerate(episodes) for t in e.turns])
            loss = 0.5 * ((self.values(episodes) - target) ** 2).mean()
            self.opt.zero_grad(); loss.backward(); self.opt.step()
            return {"critic_loss": float(loss.detach())}

        def parameters(self):
            return [] if self.net is None else list(self.net.parameters())

(with ``state_dict``/``load_state_dict`` holding the weights and Adam moments; :mod:`baselines.credit.mappo` has
them, and ``gae``, the estimator both critic methods share.)

Writing your own. A method is one small class; register it with ``@register("name")`` (or load it with
``make_credit("package.module:ClassName")``). Dr. MAS's agent-wise normalization, the whole of
``baselines/credit/dr_mas.py`` less its docstring, is a complete example (quoted from that file when the package is
imported, so it is the code itself)::

    {dr_mas}

The helpers it uses live in :mod:`baselines.credit.base`: ``check_batch`` (validation with clear errors),
``groups`` (indices by group key), ``outcome`` (an agent's return), ``normalize`` (GRPO's normalization),
``find_branches`` / ``branch_outcome`` (counterfactual outcomes) and ``fill`` (per-turn lists).

Command line: ``python -m baselines.credit --episodes episodes.jsonl --method ccpo_v2`` prints per-role advantage
statistics and the method's diagnostics for a file written by ``python -m baselines.rollout``.
"""

import inspect
import textwrap

from baselines.credit.base import CreditMethod, TokenAdvantages, TurnAdvantages, list_credits, make_credit, register
from baselines.credit import broadcast, rae, marshal, coma, loo, ccpo, dr_mas, mappo, ippo, shuffled  # noqa: F401,E402
from baselines.credit import oracle  # noqa: F401,E402


def _quote_example(doc: str | None) -> str | None:
    """The package docstring with ``{dr_mas}`` replaced by the source of :class:`~baselines.credit.dr_mas.DrMAS`
    (indented as the literal block); where no source is installed, a pointer to the file."""
    if doc is None:                 # python -OO drops docstrings
        return None
    try:
        example = textwrap.indent(inspect.getsource(dr_mas.DrMAS), "    ").strip()
    except OSError:
        example = "(the source of baselines/credit/dr_mas.py is not installed here)"
    return doc.replace("{dr_mas}", example)


__doc__ = _quote_example(__doc__)

__all__ = ["CreditMethod", "TokenAdvantages", "TurnAdvantages", "list_credits", "make_credit", "register"]
