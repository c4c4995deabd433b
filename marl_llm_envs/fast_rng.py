"""``numpy.random.default_rng(entropy).random()``, bit for bit, without building a generator.

Building a NumPy ``Generator`` costs about 100 us (a ``SeedSequence``, a ``PCG64``, the ``Generator``), which is
most of a decision's cost where a fresh generator is seeded per decision (the MLP policy seeds each sampled action
from its request key; voting-v0 draws its tie-break from a per-episode seed). :func:`first_uniform` computes the same
first ``random()`` double directly, in about half that time:

1. NumPy's ``SeedSequence`` (numpy/random/bit_generator.pyx, after M. O'Neill's ``seed_seq`` design): the entropy's
   integers as little-endian 32-bit words, hashed into a pool of 4 words (``hashmix``/``mix`` with the constants
   below), then ``generate_state(4, uint64)``.
2. ``PCG64`` seeding (numpy/random/src/pcg64: ``pcg_setseq_128_srandom_r``): ``inc = (seq << 1) | 1``, the state
   stepped, ``+= seed``, stepped, with the 128-bit LCG ``state * MULT + inc``.
3. One ``next_uint64`` (step, then the XSL-RR 128/64 output: ``rotr64(hi ^ lo, state >> 122)``, O'Neill 2014,
   "PCG: A Family of Simple Fast Space-Efficient Statistically Good Algorithms for Random Number Generation"), then
   ``next_double = (x >> 11) * 2**-53``.

``tests/equivalence/test_speed_same_results.py`` checks it against NumPy on thousands of keys, so a NumPy that changed
``default_rng`` would fail that test rather than change results silently.

Reseeding a live generator. :func:`pcg64_seed_state` is the PCG64 ``(state, inc)`` that ``default_rng(seed)`` starts
in (NumPy's SeedSequence pool, then step 1's state words and step 2): an env sets its generator's
``bit_generator.state`` to it at each ``reset(seed)`` instead of building a new generator (``TextEnv.np_random``),
the same draws after. :func:`pcg64_integer` makes ``int(rng.integers(n))`` from such a state in plain ints and
returns the state after it (``TextEnv._random_index``: a deal drawn at ``reset`` needs no NumPy generator at all).

Draws from a live generator. ``Generator.choice`` costs 50-120 us per scalar draw (argument checks and array
conversions), against 1-15 us for the draw it makes. :func:`weighted_choice` and :func:`uniform_choice` make the same
draw from the same stream as ``rng.choice(items, p=p)`` and ``rng.choice(items)`` (NumPy's ``choice`` with
``replace=True``: with ``p``, one ``random()`` looked up in ``cumsum(p) / cumsum(p)[-1]`` by
``searchsorted(..., side="right")``; without, ``integers(0, len(items))``), so the generator's state afterwards is
the same too (tested against NumPy, the state compared after mixed sequences of draws).
"""

from __future__ import annotations

import struct
from bisect import bisect_right
from typing import Any, Iterable, Sequence

import numpy as np

__all__ = ["choice_cdf", "first_uniform", "first_uniforms", "pcg64_integer", "pcg64_seed_state", "uniform_choice",
           "weighted_choice"]

_M32 = 0xFFFFFFFF
_M64 = 0xFFFFFFFFFFFFFFFF
_M128 = (1 << 128) - 1
_INIT_A, _MULT_A, _INIT_B, _MULT_B = 0x43B0D7E5, 0x931E8875, 0x8B51F9DD, 0x58F38DED
_MIX_L, _MIX_R = 0xCA01F9DD, 0x4973F715
_PCG_MULT = 0x2360ED051FC65DA44385DF649FCCF645   # PCG_DEFAULT_MULTIPLIER_128


def _words(entropy: Iterable[int]) -> list[int]:
    """The entropy as SeedSequence reads it: each non-negative int split into 32-bit words, low word first (0 is one
    word)."""
    words: list[int] = []
    for v in entropy:
        v = int(v)
        if v < 0:
            raise ValueError(f"entropy must be non-negative ints, got {v}")
        if v == 0:
            words.append(0)
        while v:
            words.append(v & _M32)
            v >>= 32
    return words


def _seed_inc(entropy: Iterable[int]) -> tuple[int, int]:
    """PCG64's 128-bit ``(initstate, inc)`` as ``PCG64(SeedSequence(entropy))`` derives them."""
    words = _words(entropy)
    h = _INIT_A
    pool = []
    for i in range(4):                                   # hashmix of the first 4 words (0 where there are fewer)
        v = (words[i] if i < len(words) else 0) ^ h
        h = (h * _MULT_A) & _M32
        v = (v * h) & _M32
        pool.append(v ^ (v >> 16))
    sources = [(pool, s, d) for s in range(4) for d in range(4) if s != d]   # pool words, then the extra words
    sources += [(words, s, d) for s in range(4, len(words)) for d in range(4)]
    for src, s, d in sources:                            # pool[d] = mix(pool[d], hashmix(src[s]))
        v = src[s] ^ h
        h = (h * _MULT_A) & _M32
        v = (v * h) & _M32
        v ^= v >> 16
        r = (_MIX_L * pool[d] - _MIX_R * v) & _M32
        pool[d] = r ^ (r >> 16)
    hb = _INIT_B
    state = []
    for i in range(8):                                   # generate_state(4, uint64): 8 words
        v = pool[i & 3] ^ hb
        hb = (hb * _MULT_B) & _M32
        v = (v * hb) & _M32
        state.append(v ^ (v >> 16))
    seed = (((state[1] << 32) | state[0]) << 64) | ((state[3] << 32) | state[2])
    inc = ((((((state[5] << 32) | state[4]) << 64) | ((state[7] << 32) | state[6])) << 1) | 1) & _M128
    return seed, inc


def pcg64_seed_state(seed: int) -> tuple[int, int]:
    """PCG64's ``(state, inc)`` in ``numpy.random.default_rng(seed).bit_generator.state`` (a non-negative int seed):
    :func:`_seed_words`, then PCG64's ``srandom`` (state 0 stepped, ``+= seed``, stepped). About two thirds of the
    cost of building the generator (``tests/equivalence/test_env_fast_paths.py`` compares it with NumPy on thousands of
    seeds)."""
    initstate, inc = _seed_words(seed)
    return ((inc + initstate) * _PCG_MULT + inc) & _M128, inc


def _seed_words(seed: int) -> tuple[int, int]:
    """PCG64's 128-bit ``(initstate, inc)`` of ``default_rng(seed)`` (as :func:`_seed_inc` gives them): NumPy's own
    ``SeedSequence(seed)`` mixes the entropy pool (its ``pool``), then ``generate_state(4, uint64)`` is written out
    here (8 ``hashmix`` calls; the literals are the successive ``hash_const`` values, ``(value XOR-ed in,
    multiplier)`` per call, which do not depend on the data: ``_constants(_INIT_B, _MULT_B, 8)``)."""
    p0, p1, p2, p3 = np.random.SeedSequence(seed).pool.tolist()
    m = _M32
    v = ((p0 ^ 0x8B51F9DD) * 0x464A0A99) & m
    s0 = v ^ (v >> 16)
    v = ((p1 ^ 0x464A0A99) * 0x819D14A5) & m
    s1 = v ^ (v >> 16)
    v = ((p2 ^ 0x819D14A5) * 0xD369FDC1) & m
    s2 = v ^ (v >> 16)
    v = ((p3 ^ 0xD369FDC1) * 0x501638AD) & m
    s3 = v ^ (v >> 16)
    v = ((p0 ^ 0x501638AD) * 0xA600C129) & m
    s4 = v ^ (v >> 16)
    v = ((p1 ^ 0xA600C129) * 0x8B0167F5) & m
    s5 = v ^ (v >> 16)
    v = ((p2 ^ 0x8B0167F5) * 0x5C1E2ED1) & m
    s6 = v ^ (v >> 16)
    v = ((p3 ^ 0x5C1E2ED1) * 0x301D747D) & m
    s7 = v ^ (v >> 16)
    return (s1 << 96) | (s0 << 64) | (s3 << 32) | s2, ((s5 << 97) | (s4 << 65) | (s7 << 33) | (s6 << 1) | 1) & _M128


def pcg64_integer(pcg: tuple[int, int, int, int], n: int) -> tuple[int, tuple[int, int, int, int]]:
    """``int(rng.integers(n))`` for ``1 <= n <= 2**32`` on a PCG64 generator whose state is ``pcg = (state, inc,
    has_uint32, uinteger)`` (its ``bit_generator.state``), and that state after the draw: the same number and the
    same stream, without a generator. NumPy draws a scalar int64 below ``n`` from 32-bit words
    (numpy/random/src/distributions: ``random_bounded_uint64_fill`` with ``rng = n - 1``: no word at all for
    ``n = 1``, one word for ``n = 2**32``, else Lemire's ``buffered_bounded_lemire_uint32``, which redraws while the
    low half of ``word * n`` is below ``(2**32 - n) % n``); ``next_uint32`` hands out a buffered upper half first,
    else steps the LCG, keeps the output's upper half and returns its lower one."""
    state, inc, has32, word32 = pcg
    if n == 1:
        return 0, pcg
    threshold = -1
    while True:
        if has32:
            word, has32 = word32, 0
        else:
            state = (state * _PCG_MULT + inc) & _M128
            w = ((state >> 64) ^ state) & _M64          # XSL-RR output
            r = state >> 122
            out = ((w >> r) | (w << ((-r) & 63))) & _M64
            word, word32, has32 = out & _M32, out >> 32, 1
        if n == 1 << 32:
            return word, (state, inc, has32, word32)
        m = word * n
        leftover = m & _M32
        if leftover >= n:                                # the common case: no threshold to compute
            return m >> 32, (state, inc, has32, word32)
        if threshold < 0:
            threshold = ((1 << 32) - n) % n
        if leftover >= threshold:
            return m >> 32, (state, inc, has32, word32)


def first_uniform(entropy: Iterable[int]) -> float:
    """The first ``random()`` of ``numpy.random.default_rng(list(entropy))`` (non-negative ints, as NumPy takes).
    One int (a seed, as voting's tie-break draws from): ``default_rng([seed])`` is ``default_rng(seed)``, whose
    words :func:`_seed_words` computes with NumPy's own pool hashing, about twice as fast as :func:`_seed_inc`."""
    entropy = entropy if type(entropy) is list else list(entropy)
    if len(entropy) == 1 and type(entropy[0]) is int and entropy[0] >= 0:
        return _draw(*_seed_words(entropy[0]))
    return _draw(*_seed_inc(entropy))


def _constants(init: int, mult: int, n: int) -> list[tuple[int, int]]:
    """The hash constants of ``n`` successive hashmix calls: the value XOR-ed in and the multiplier of each call
    (``hash_const`` before and after its update). They do not depend on the data, so they are computed once."""
    out, h = [], init
    for _ in range(n):
        xor = h
        h = (h * mult) & _M32
        out.append((xor, h))
    return out


_POOL_CONSTANTS = _constants(_INIT_A, _MULT_A, 4 + 12 + 4 * 64)   # pool words, pool mixing, up to 64 extra words
_STATE_CONSTANTS = _constants(_INIT_B, _MULT_B, 8)
_MIX_R_NEG = (1 << 32) - _MIX_R       # - _MIX_R * y = _MIX_R_NEG * y (mod 2**32), without a borrow between lanes


def first_uniforms(entropies: list[Iterable[int]]) -> list[float]:
    """:func:`first_uniform` of each entropy list; the same doubles, bit for bit.

    The SeedSequence hashing of the entries with the same number of 32-bit words is done for all of them at once,
    in lanes: each word of the pool is one Python int that holds every entry's word in its own 64-bit lane (entry
    ``i`` at bit ``64 i``), and a hashmix or mix is a few operations on those ints (:func:`_hash_in_lanes`). On this
    hardware a whole-int operation on a batch of 32 costs about a tenth of a NumPy call on a 32-row array, and the
    hashing takes about 30 of them. PCG64's first draw is then made per entry (:func:`_draw`)."""
    out = [0.0] * len(entropies)
    if not all(type(e) is list for e in entropies):
        entropies = [list(e) for e in entropies]     # read each iterable once
    try:        # the common case: equally long lists of ints below 2**32 (each one word), no per-entry splitting
        columns = list(zip(*entropies))
        plain = len(columns) > 0 and len(set(map(len, entropies))) == 1 and \
            all(type(v) is int for v in entropies[0]) and \
            all(min(column) >= 0 and max(column) <= _M32 for column in columns)
    except TypeError:
        plain = False
    if plain:
        groups = {len(columns): (range(len(entropies)), columns)}
    else:
        by_length: dict[int, tuple[list[int], list[list[int]]]] = {}
        for n, entropy in enumerate(entropies):
            words = _words(entropy)
            if len(words) > 4 + 64:
                out[n] = _draw(*_seed_inc(words))
                continue
            where, rows = by_length.setdefault(len(words), ([], []))
            where.append(n)
            rows.append(words)
        groups = {length: (where, list(zip(*rows))) for length, (where, rows) in by_length.items()}
    for length, (where, columns) in groups.items():
        for at, seed_hi, seed_lo, seq_hi, seq_lo in zip(where, *_hash_in_lanes(len(where), length, columns)):
            out[at] = _draw((seed_hi << 64) | seed_lo, ((((seq_hi << 64) | seq_lo) << 1) | 1) & _M128)
    return out


_LANE_CONSTANTS: dict[int, tuple] = {}     # batch size -> (ones, masks, hash constants with the XOR-ed value in every lane)


def _hash_in_lanes(n: int, length: int, columns: list[Sequence[int]]) -> list[tuple[int, ...]]:
    """SeedSequence's ``generate_state(4, uint64)`` for ``n`` entropies of ``length`` 32-bit words each (given as
    their ``length`` columns), as PCG64 reads it: four tuples of ``n`` 64-bit halves, the seed's high and low, the
    sequence's high and low (as :func:`_seed_inc` assembles them).

    Lanes: a 32-bit word times a 32-bit constant fits its 64-bit lane, so ``& (2**32 - 1)`` in every lane is the
    product mod 2**32; a right shift is masked so that no bit comes down from the next lane; ``mix``'s subtraction
    is an addition of the negated multiplier mod 2**32, with each product reduced first, so no carry or borrow
    crosses a lane."""
    lanes = _LANE_CONSTANTS.get(n)
    if lanes is None:
        ones = int.from_bytes(b"\1\0\0\0\0\0\0\0" * n, "little")
        lanes = (_M32 * ones, 0xFFFF * ones, [(x * ones, m) for x, m in _POOL_CONSTANTS],
                 [(x * ones, m) for x, m in _STATE_CONSTANTS])
        if len(_LANE_CONSTANTS) < 1024:
            _LANE_CONSTANTS[n] = lanes
    m32, m16, pool_constants, state_constants = lanes
    words = [int.from_bytes(struct.pack(f"<{n}Q", *column), "little") for column in columns]
    consts = iter(pool_constants)
    pool = []
    for i in range(4):                                       # hashmix of the first 4 words (0 where there are fewer)
        xor, mul = next(consts)
        v = (((words[i] if i < length else 0) ^ xor) * mul) & m32
        pool.append(v ^ ((v >> 16) & m16))
    sources = [(s, d) for s in range(4) for d in range(4) if s != d]    # pool words, then the extra words
    sources += [(s, d) for s in range(4, length) for d in range(4)]
    for s, d in sources:                                     # pool[d] = mix(pool[d], hashmix(source s))
        xor, mul = next(consts)
        v = (((pool[s] if s < 4 else words[s]) ^ xor) * mul) & m32
        v ^= (v >> 16) & m16
        r = (((_MIX_L * pool[d]) & m32) + ((_MIX_R_NEG * v) & m32)) & m32
        pool[d] = r ^ ((r >> 16) & m16)
    state = []
    for i, (xor, mul) in enumerate(state_constants):         # generate_state(4, uint64): 8 words
        v = ((pool[i & 3] ^ xor) * mul) & m32
        state.append(v ^ ((v >> 16) & m16))
    return [struct.unpack(f"<{n}Q", ((state[i] << 32) | state[j]).to_bytes(8 * n, "little"))
            for i, j in ((1, 0), (3, 2), (5, 4), (7, 6))]


# srandom (state 0 stepped is inc; += seed; stepped) and next_uint64's own step, folded into one affine map of the
# seed and the increment: state = (inc + seed) * MULT**2 + inc * (MULT + 1) = seed * _A + inc * _B (mod 2**128).
_A = (_PCG_MULT * _PCG_MULT) & _M128
_B = (_A + _PCG_MULT + 1) & _M128


def _draw(seed: int, inc: int) -> float:
    x = (seed * _A + inc * _B) & _M128
    w = ((x >> 64) ^ x) & _M64                           # XSL-RR: rotr64(hi ^ lo, state >> 122)
    r = x >> 122
    out = ((w >> r) | (w << ((-r) & 63))) & _M64
    return (out >> 11) * (1.0 / 9007199254740992.0)


def choice_cdf(p: Sequence[float]) -> tuple[float, ...]:
    """The table ``Generator.choice(..., p=p)`` looks its draw up in: ``cumsum(p) / cumsum(p)[-1]`` in float64."""
    cdf = np.cumsum(np.asarray(p, dtype=np.float64))
    cdf /= cdf[-1]
    return tuple(float(x) for x in cdf)


def weighted_choice(rng: np.random.Generator, items: Sequence[Any], cdf: Sequence[float]) -> Any:
    """``rng.choice(items, p=p)`` for a scalar draw (``cdf = choice_cdf(p)``): the same item and the same stream."""
    return items[bisect_right(cdf, rng.random())]


def uniform_choice(rng: np.random.Generator, items: Sequence[Any]) -> Any:
    """``rng.choice(items)`` for a scalar draw: the same item and the same stream (``integers(0, len(items))``)."""
    return items[int(rng.integers(0, len(items)))]
