"""Progress output that suits where it goes: a ``tqdm`` bar on a terminal, plain lines elsewhere.

A bar redraws itself with carriage returns; written to a log file or a pipe, every redraw stays in the file (a
7-minute demo log was mostly progress frames). So :class:`Progress` draws a bar only when its stream is a TTY
(``stream.isatty()``); otherwise it prints a summary line every ``every_s`` seconds of a long run and one line when
the run finishes, each ending in a newline, never a carriage return:

    train kuhn_poker-v0 broadcast: 40/100 steps, 12 s (reward=+0.120)
    train kuhn_poker-v0 broadcast: done, 100 steps in 31 s (reward=+0.250)

``tqdm`` is optional: without it a terminal gets the plain lines too.
"""

from __future__ import annotations

import sys
import time
from typing import IO, Any

try:
    from tqdm.auto import tqdm
except ImportError:          # progress bars are optional
    tqdm = None

__all__ = ["Progress"]


class Progress:
    """``Progress(total, desc, unit)``; ``update(n, **postfix)`` after each unit of work; ``close()`` at the end
    (or use it as a context manager). ``tty`` overrides the stream's own answer (tests)."""

    def __init__(self, total: int, desc: str, unit: str = "it", file: IO[str] | None = None, initial: int = 0,
                 every_s: float = 30.0, tty: bool | None = None, bar_format: str | None = None) -> None:
        self.total, self.desc, self.unit, self.every_s = total, desc, unit, every_s
        self.file = file if file is not None else sys.stderr
        self.n = initial
        self.postfix: dict[str, Any] = {}
        self._start = self._last = time.monotonic()
        self._closed = False
        self._bar = None
        if tty is None:
            tty = bool(getattr(self.file, "isatty", lambda: False)())
        if tty and tqdm is not None:
            kwargs = {"bar_format": bar_format} if bar_format else {}
            self._bar = tqdm(total=total, initial=initial, desc=desc, unit=unit, leave=False, file=self.file,
                             **kwargs)

    def _line(self, text: str) -> None:
        print(text, file=self.file, flush=True)

    def _postfix(self) -> str:
        return f" ({', '.join(f'{k}={v}' for k, v in self.postfix.items())})" if self.postfix else ""

    def update(self, n: int = 1, **postfix: Any) -> None:
        self.n += n
        self.postfix.update(postfix)
        if self._bar is not None:
            if postfix:
                self._bar.set_postfix(**postfix, refresh=False)
            self._bar.update(n)
            return
        now = time.monotonic()
        if now - self._last >= self.every_s and self.n < self.total:
            self._last = now
            self._line(f"{self.desc}: {self.n}/{self.total} {self.unit}s, {now - self._start:.0f} s{self._postfix()}")

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._bar is not None:
            self._bar.close()
            return
        what = "done" if self.n >= self.total else f"stopped at {self.n}/{self.total}"
        self._line(f"{self.desc}: {what}, {self.n} {self.unit}s in {time.monotonic() - self._start:.0f} s"
                   f"{self._postfix()}")

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
