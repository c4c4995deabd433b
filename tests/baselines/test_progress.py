"""Progress output (issue 21): a bar on a terminal only; written to a file or a pipe, plain lines with no carriage
returns: a summary line every N seconds of a long run and one line when it ends."""

import io

from baselines.progress import Progress


def test_progress_off_a_terminal_writes_lines_without_carriage_returns():
    out = io.StringIO()                                      # a file: isatty() is False
    with Progress(3, "train kuhn broadcast", unit="step", file=out, every_s=0.0) as p:
        for r in (0.1, 0.2, 0.3):
            p.update(1, reward=f"{r:+.1f}")
    text = out.getvalue()
    assert "\r" not in text
    lines = text.splitlines()
    assert lines[:2] == ["train kuhn broadcast: 1/3 steps, 0 s (reward=+0.1)",
                         "train kuhn broadcast: 2/3 steps, 0 s (reward=+0.2)"]
    assert lines[2] == "train kuhn broadcast: done, 3 steps in 0 s (reward=+0.3)" and len(lines) == 3


def test_progress_off_a_terminal_is_one_line_per_run_when_it_is_short():
    out = io.StringIO()
    p = Progress(100, "rollout", unit="episode", file=out)            # every_s = 30: no summary in a short run
    p.update(40)
    p.close()
    p.close()                                                          # closing twice writes nothing more
    assert out.getvalue() == "rollout: stopped at 40/100, 40 episodes in 0 s\n"


def test_progress_on_a_terminal_draws_a_bar():
    out = io.StringIO()
    with Progress(3, "train", unit="step", file=out, tty=True) as p:
        p.update(3)
    assert "\r" in out.getvalue() and "done" not in out.getvalue()    # tqdm's frames, not our lines
