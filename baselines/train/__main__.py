"""``python -m baselines.train ...`` (see ``--help``)."""

import sys

from baselines.train import TrainConfig, train


def main(argv=None) -> int:
    cfg = TrainConfig.from_args(argv)
    try:
        train(cfg)
    except (ValueError, ImportError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
