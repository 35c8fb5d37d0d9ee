"""numpy's seeded bootstrap in pure Python, number for number, for the small runs most reports are of.

`metrics.bootstrap_pass_hat_k_ci` resamples tasks with `numpy.random.default_rng(seed).integers(0, n,
size)`, averages each resample with `mean(axis=1)` and takes `numpy.quantile`. Importing numpy costs a
process about 0.14 s of CPU, more than a run of a few dozen tasks spends drawing its 2000 resamples in
Python; so small bootstraps are drawn here, with the same numbers numpy gives, and large ones by numpy.
Either way the interval is the same to the last bit (tests/reports hold this module to numpy's own).

What is reproduced, from numpy's sources (random/bit_generator.pyx, random/src/pcg64,
random/src/distributions, core's pairwise summation, lib's quantile):
- SeedSequence(seed).generate_state(4, uint64): the 32-bit hash mixing of the seed into a pool of four
  words, and the four 64-bit words drawn from it;
- PCG64 seeded with them: a 128-bit LCG stepped before each output, XSL-RR output; a 32-bit draw takes the
  low half of a 64-bit output and keeps the high half for the next one;
- integers(0, n) for n <= 2**32: Lemire's bounded method on 32-bit draws, with its rejection threshold;
- a row's mean: numpy's pairwise sum (eight accumulators per block of up to 128) divided by the count;
- quantile with the default "linear" method: the index q * (n - 1), and numpy's lerp (from the upper
  value when the fraction is at least a half).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

MASK32 = 0xFFFFFFFF
MASK64 = 0xFFFFFFFFFFFFFFFF
MASK128 = (1 << 128) - 1
PCG_MULTIPLIER = (2549297995355413924 << 64) + 4865540595714422341

# SeedSequence's hash constants (numpy/random/bit_generator.pyx).
INIT_A = 0x43B0D7E5
MULT_A = 0x931E8875
INIT_B = 0x8B51F9DD
MULT_B = 0x58F38DED
MIX_MULT_L = 0xCA01F9DD
MIX_MULT_R = 0x4973F715
XSHIFT = 16
POOL_SIZE = 4

PAIRWISE_BLOCK = 128  # numpy's PW_BLOCKSIZE


def _seed_words(seed: int) -> list[int]:
    """The seed as numpy coerces it: 32-bit words, least significant first ([0] for 0)."""
    if seed < 0:
        raise ValueError("a bootstrap seed is a non-negative integer")
    words = [seed & MASK32] if seed == 0 else []
    while seed > 0:
        words.append(seed & MASK32)
        seed >>= 32
    return words


def _pool(seed: int) -> list[int]:
    """SeedSequence's entropy pool for `seed` (mix_entropy)."""
    entropy = _seed_words(seed)
    hash_const = INIT_A

    def hashmix(value: int) -> int:
        nonlocal hash_const
        value ^= hash_const
        hash_const = (hash_const * MULT_A) & MASK32
        value = (value * hash_const) & MASK32
        return value ^ (value >> XSHIFT)

    def mix(x: int, y: int) -> int:
        result = (MIX_MULT_L * x - MIX_MULT_R * y) & MASK32
        return result ^ (result >> XSHIFT)

    pool = [hashmix(entropy[i] if i < len(entropy) else 0) for i in range(POOL_SIZE)]
    for source in range(POOL_SIZE):
        for target in range(POOL_SIZE):
            if source != target:
                pool[target] = mix(pool[target], hashmix(pool[source]))
    for source in range(POOL_SIZE, len(entropy)):
        for target in range(POOL_SIZE):
            pool[target] = mix(pool[target], hashmix(entropy[source]))
    return pool


def _state_words(seed: int) -> list[int]:
    """generate_state(4, uint64): eight 32-bit words from the pool, read as four little-endian 64-bit ones."""
    pool = _pool(seed)
    hash_const = INIT_B
    words: list[int] = []
    for index in range(8):
        value = pool[index % POOL_SIZE] ^ hash_const
        hash_const = (hash_const * MULT_B) & MASK32
        value = (value * hash_const) & MASK32
        words.append(value ^ (value >> XSHIFT))
    return [words[i] | (words[i + 1] << 32) for i in range(0, 8, 2)]


class Pcg64:
    """numpy's PCG64 bit generator as `default_rng(seed)` makes it, with its 32-bit draws."""

    def __init__(self, seed: int) -> None:
        words = _state_words(seed)
        initial_state = (words[0] << 64) | words[1]
        sequence = (words[2] << 64) | words[3]
        self._increment = ((sequence << 1) | 1) & MASK128
        # From state 0: one step (0 * multiplier + increment), the initial state added, one more step.
        self._state = ((self._increment + initial_state) * PCG_MULTIPLIER + self._increment) & MASK128
        self._half: int | None = None  # the high half of the last 64-bit output, not yet drawn

    def next64(self) -> int:
        state = self._state = (self._state * PCG_MULTIPLIER + self._increment) & MASK128
        value = ((state >> 64) ^ state) & MASK64
        rotation = state >> 122
        return ((value >> rotation) | (value << (64 - rotation))) & MASK64

    def next32(self) -> int:
        if self._half is not None:
            half, self._half = self._half, None
            return half
        value = self.next64()
        self._half = value >> 32
        return value & MASK32

    def integers(self, high: int, count: int) -> list[int]:
        """`count` draws of integers(0, high), in numpy's order (1 <= high <= 2**32)."""
        if not 1 <= high <= 1 << 32:
            raise ValueError(f"high must be in [1, 2**32], got {high}")
        if high == 1:
            return [0] * count
        if high == 1 << 32:
            return [self.next32() for _ in range(count)]
        threshold = (MASK32 - (high - 1)) % high
        draws: list[int] = []
        next32 = self.next32
        for _ in range(count):
            scaled = next32() * high
            if (scaled & MASK32) < high:
                while (scaled & MASK32) < threshold:
                    scaled = next32() * high
            draws.append(scaled >> 32)
        return draws


def pairwise_sum(values: Sequence[float]) -> float:
    """numpy's sum of a contiguous float64 row (pairwise summation, as `add.reduce` runs it)."""
    n = len(values)
    if n < 8:
        total = -0.0  # numpy starts a float sum at the additive identity, -0.0
        for value in values:
            total += value
        return total
    if n <= PAIRWISE_BLOCK:
        r = list(values[:8])
        whole = n - n % 8
        for start in range(8, whole, 8):
            for j in range(8):
                r[j] += values[start + j]
        total = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]))
        for index in range(whole, n):
            total += values[index]
        return total
    half = n // 2
    half -= half % 8
    return pairwise_sum(values[:half]) + pairwise_sum(values[half:])


def quantile_linear(ordered: Sequence[float], q: float) -> float:
    """numpy.quantile(values, q) (method "linear") of values already sorted ascending."""
    virtual = q * (len(ordered) - 1)
    below = math.floor(virtual)
    fraction = virtual - below
    low = ordered[int(below)]
    high = ordered[min(int(below) + 1, len(ordered) - 1)]
    step = high - low
    return high - step * (1 - fraction) if fraction >= 0.5 else low + step * fraction
