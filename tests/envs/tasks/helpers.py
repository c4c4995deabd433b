"""Task files and independent checks for the task sources' tests: GSM8K- and MATH-style rows, every built-in
source, and an arithmetic question evaluated by Python."""

from __future__ import annotations

import json
import re
import string
from pathlib import Path

from marl_llm_envs.tasks import (
    ArithmeticTasks,
    CountdownTasks,
    DatasetTasks,
    KnightsKnavesTasks,
)

PRINTABLE = set(string.printable)


GSM8K_ROWS = [
    {"question": "Tom has 3 apples and buys 4 more. How many apples does he have?",
     "answer": "He has 3 + 4 = 7 apples.\n#### 7"},
    {"question": "A box holds 12 eggs. How many eggs are in 6 boxes?",
     "answer": "12 * 6 = 72\n#### 72"},
    {"question": "Sara reads 20 pages a day for 5 days. How many pages?",
     "answer": "20 * 5 = 100\n#### 100"},
    {"question": "A shirt costs 15 dollars. How much do 3 shirts cost?",
     "answer": "15 * 3 = 45\n#### 45"},
    {"question": "There were 50 birds; 18 flew away. How many are left?",
     "answer": "50 - 18 = 32\n#### 32"},
    {"question": "A farm has 1,200 sheep and sells 200. How many remain?",
     "answer": "1200 - 200 = 1000\n#### 1,000"},
]


MATH_ROWS = [
    {"problem": "What is $\\frac{2}{4}$ in lowest terms?",
     "solution": "Divide by 2 to get $\\boxed{\\frac{1}{2}}$."},
    {"problem": "Simplify $\\sqrt{8}$.",
     "solution": "We have $\\sqrt{8} = \\boxed{2\\sqrt{2}}$."},
    {"problem": "Expand $(x+1)^2 - 2x - 1$.",
     "solution": "The result is $\\boxed{x^{2}}$."},
    {"problem": "Compute $3 \\cdot 4$.", "solution": "$\\boxed{12}$"},
    {"problem": "What is $\\frac{3}{4} + \\frac{1}{4}$? Caf\u00e9 \u20ac",
     "solution": "First \\boxed{7} was wrong; the answer is $\\boxed{1}$."},
]


def write_jsonl(path: Path, rows) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def all_sources(gsm8k_file=None):
    sources = [ArithmeticTasks(d) for d in range(1, 6)]
    sources += [KnightsKnavesTasks(p) for p in range(2, 5)]
    sources += [CountdownTasks(3), CountdownTasks(5)]
    if gsm8k_file is not None:
        sources.append(DatasetTasks(gsm8k_file, test_fraction=0.5))
    return sources


def available_splits(src):
    if isinstance(src, DatasetTasks):
        return [s for s in ("train", "test") if src.num_problems(s)]
    return ["train", "test"]


def arith_value(question: str) -> int:
    """Independent evaluation: check the character set, then let Python evaluate it."""
    m = re.fullmatch(r"Compute the value of (.+)\.", question)
    assert m, question
    expr = m.group(1)
    assert set(expr) <= set("0123456789+-*() "), expr
    return eval(expr, {"__builtins__": {}}, {})  # noqa: S307 - restricted charset checked above
