"""``python -m baselines.rollout ...`` (see ``--help``)."""

from baselines.rollout.cli import main

main()
