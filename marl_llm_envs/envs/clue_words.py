"""The word pool of think_solve-v0's shortcut-free clue task (``clue_pool="words"``): 243 common English
nouns, in alphabetical order, with a fixed split: every fourth word (positions 3, 7, 11, ...) is held out
(``split="test"``, 60 words), the rest are for training (``split="train"``, 183 words). No word is
``"none"`` (the thinker's no-hint move), and the two splits share no word.
"""

from __future__ import annotations

__all__ = ["CLUE_WORDS", "clue_words"]

CLUE_WORDS: tuple[str, ...] = (
    "acorn", "anchor", "angel", "ankle", "apple", "apron", "arrow", "atlas", "attic", "badge", "bagel", "banana",
    "banjo", "barrel", "basket", "beach", "beard", "beetle", "bell", "bench", "berry", "bicycle", "blanket",
    "blossom", "boat", "bone", "boot", "bottle", "bowl", "bracelet", "branch", "bread", "brick", "bridge", "broom",
    "bubble", "bucket", "butter", "button", "cabin", "cactus", "cake", "camel", "camera", "candle", "canoe",
    "canyon", "carpet", "carrot", "castle", "cave", "cellar", "chain", "chair", "cherry", "chess", "chimney",
    "circus", "cliff", "clock", "cloud", "clover", "coat", "coconut", "coffee", "coin", "comet", "compass", "cookie",
    "copper", "cotton", "crab", "crayon", "crown", "crystal", "cup", "curtain", "daisy", "desert", "diamond",
    "dolphin", "donkey", "door", "dragon", "drum", "eagle", "earth", "elbow", "engine", "envelope", "eraser",
    "falcon", "feather", "fence", "fiddle", "finger", "flag", "flame", "flute", "forest", "fountain", "fox", "frog",
    "garden", "garlic", "ghost", "giant", "glacier", "glove", "goat", "grape", "guitar", "hammer", "harbor", "harp",
    "hat", "hawk", "helmet", "hill", "honey", "horse", "island", "jacket", "jelly", "jungle", "kettle", "key",
    "kitten", "ladder", "lake", "lamp", "lemon", "letter", "lily", "lion", "lizard", "lobster", "locket", "magnet",
    "mango", "maple", "marble", "meadow", "melon", "mirror", "mitten", "monkey", "moon", "mountain", "mouse",
    "mushroom", "needle", "nest", "noodle", "ocean", "olive", "onion", "orange", "otter", "owl", "paddle", "palace",
    "panda", "paper", "parrot", "peach", "peanut", "pearl", "pencil", "pepper", "piano", "pillow", "pirate",
    "planet", "plum", "pocket", "pony", "potato", "pumpkin", "puppet", "puzzle", "quilt", "rabbit", "radio",
    "rainbow", "raven", "ribbon", "river", "robot", "rocket", "rose", "saddle", "sailor", "salmon", "sand", "scarf",
    "shell", "shield", "ship", "shovel", "silver", "skate", "sled", "snail", "spider", "spoon", "squirrel", "stamp",
    "star", "statue", "stone", "storm", "sugar", "sun", "swan", "sword", "table", "teapot", "tent", "thunder",
    "tiger", "toast", "tomato", "tower", "tractor", "train", "tree", "trumpet", "tulip", "turtle", "umbrella",
    "valley", "violin", "volcano", "wagon", "walnut", "whale", "wheel", "whistle", "window", "wizard", "wolf",
    "zebra",
)

_SPLITS = {"train": tuple(w for i, w in enumerate(CLUE_WORDS) if i % 4 != 3),
           "test": tuple(w for i, w in enumerate(CLUE_WORDS) if i % 4 == 3)}


def clue_words(split: str) -> tuple[str, ...]:
    """The words of ``split`` (``"train"`` or ``"test"``), in alphabetical order."""
    try:
        return _SPLITS[split]
    except KeyError:
        raise ValueError(f"split={split!r} is not one of {list(_SPLITS)}") from None
